"""Tests for urbex.scene._kernels: the BEV scatter equals a plain numpy reference, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from urbex.scene import _kernels as K

RES = 0.5


def _points(n: int, seed: int) -> np.ndarray:
    """Cache-frame float32 points on a 20 × 10 m extent; z on a coarse grid (many ties)."""
    rng = np.random.default_rng(seed)
    xyz = np.empty((n, 3), np.float32)
    xyz[:, 0] = rng.uniform(0, 20, n)
    xyz[:, 1] = rng.uniform(0, 10, n)
    xyz[:, 2] = rng.integers(-3, 4, n) * np.float32(0.25)
    xyz[:4] = [[0, 0, 1], [20, 10, 1], [20, 0, -1], [0, 10, 0]]  # the clamped far edges
    return xyz


def _reference(xyz: np.ndarray, width: int, height: int, by1: float):
    """z max, z min and the first index of the highest point per pixel (−1: empty), numpy."""
    inv = 1.0 / RES
    col = np.minimum((xyz[:, 0].astype(np.float64) * inv).astype(np.int64), width - 1)
    row = np.minimum(((by1 - xyz[:, 1].astype(np.float64)) * inv).astype(np.int64), height - 1)
    flat = row * width + col
    z = xyz[:, 2]
    zmax = np.full(width * height, -np.inf, np.float32)
    zmin = np.full(width * height, np.inf, np.float32)
    np.maximum.at(zmax, flat, z)
    np.minimum.at(zmin, flat, z)
    order = np.lexsort((np.arange(len(z)), -z, flat))  # by pixel, highest z, then first index
    first = np.r_[True, flat[order][1:] != flat[order][:-1]]
    winner = np.full(width * height, -1, np.int64)
    winner[flat[order][first]] = order[first]
    return (a.reshape(height, width) for a in (zmax, zmin, winner))


@pytest.mark.parametrize("seed,shuffle", [(0, False), (1, True)])
def test_scatter_band_matches_numpy_reference_in_any_band_with_reused_buffers(
    seed: int, shuffle: bool
) -> None:
    xyz = _points(3_000, seed)
    if not shuffle:  # the build's order: sorted by raster row band, bottom rows first
        xyz = xyz[np.argsort(xyz[:, 1], kind="stable")]
    width, height, by1 = 40, 20, 10.0
    ref_max, ref_min, ref_win = _reference(xyz, width, height, by1)
    rng = np.random.default_rng(seed)
    # junk from a previous band: the kernel must not read anything it did not write
    zmax = rng.standard_normal((height, width)).astype(np.float32)
    zmin = rng.standard_normal((height, width)).astype(np.float32)
    winner = rng.integers(-5, 5, (height, width)).astype(np.int32)
    for row0, rows in [(0, height), (3, 7), (13, 7)]:
        zm, zn, wn = zmax[:rows], zmin[:rows], winner[:rows]
        K.scatter_band(xyz, 0, len(xyz), 0.0, by1, RES, width, height, row0, zm, zn, wn)
        want = slice(row0, row0 + rows)
        assert zm.tobytes() == ref_max[want].tobytes()
        hit = zm != -np.inf
        assert zn[hit].tobytes() == ref_min[want][hit].tobytes()
        np.testing.assert_array_equal(wn[hit], ref_win[want][hit])
        assert np.array_equal(hit, ref_win[want] >= 0)


def test_scatter_band_ties_keep_the_first_point_and_ranges_are_half_open() -> None:
    xyz = np.array(
        [[0.1, 9.9, 1.0], [0.2, 9.8, 2.0], [0.3, 9.7, 2.0], [0.4, 9.6, -1.0], [5.0, 5.0, 7.0]],
        np.float32,
    )
    zmax = np.empty((20, 40), np.float32)
    zmin = np.empty((20, 40), np.float32)
    winner = np.empty((20, 40), np.int32)
    K.scatter_band(xyz, 0, 4, 0.0, 10.0, RES, 40, 20, 0, zmax, zmin, winner)  # point 4 excluded
    assert (zmax[0, 0], zmin[0, 0], winner[0, 0]) == (2.0, -1.0, 1)
    assert np.count_nonzero(zmax != -np.inf) == 1


def test_resolve_band_takes_the_winners_attributes_and_marks_empty_pixels() -> None:
    xyz = np.array([[0, 0, 1.0], [0, 0, 3.0]], np.float32)
    zmax = np.array([[3.0, -np.inf]], np.float32)
    zmin = np.array([[1.0, 5.0]], np.float32)  # 5.0: junk in an empty pixel
    winner = np.array([[1, 7]], np.int32)  # 7: junk in an empty pixel, never dereferenced
    rgb = np.array([[1, 2, 3], [4, 5, 6]], np.uint8)
    ids = np.array([10, 11], np.int32)
    out_rgb = np.full((1, 2, 3), 99, np.uint8)
    out_sem = np.full((1, 2), 99, np.int16)
    out_inst = np.full((1, 2), 99, np.int32)
    K.resolve_band(
        zmax, zmin, winner, xyz, rgb, True, ids, True, ids, True, 0.0, 1.0, 100.0,
        out_rgb, out_sem, out_inst,
    )  # fmt: skip
    assert out_rgb.tolist() == [[[4, 5, 6], [0, 0, 0]]]
    assert out_sem.tolist() == [[11, -1]] and out_inst.tolist() == [[11, -1]]
    assert zmax[0, 0] == 103.0 and zmin[0, 0] == 101.0  # to world metres
    assert np.isnan(zmax[0, 1]) and np.isnan(zmin[0, 1])


def _sorted_cloud(n: int, seed: int, cell: float, extent: tuple[float, float]):
    """Clustered cache-frame points (ties in z) sorted into ``cell``-metre grid cells."""
    from urbex.scene._points import grid_sort

    rng = np.random.default_rng(seed)
    centres = rng.random((12, 2)) * np.array(extent)
    xy = centres[rng.integers(0, 12, n)] + rng.normal(0, 1.5, (n, 2))
    xy = np.clip(xy, 0, np.array(extent))
    xyz = np.c_[xy, rng.integers(-3, 4, n) * 0.25].astype(np.float32)
    xyz[:2] = [[0, 0, 0], [extent[0], extent[1], 0]]  # the far corners: the extent is exact
    ncx, ncy = (max(1, int(np.ceil(e / cell))) for e in extent)
    out, _, _, _, offsets = grid_sort(xyz, np.zeros(3), (0.0, 0.0, cell, ncx, ncy), None, None,
                                      None)  # fmt: skip
    return out, offsets, ncx, ncy


@pytest.mark.parametrize(
    "cell,res,seed", [(8.0, 0.1, 0), (3.0, 0.25, 1), (0.5, 0.2, 2), (20.0, 0.07, 3), (1.0, 1.0, 4)]
)
def test_scatter_cells_same_bytes_as_scatter_band_in_any_band(cell: float, res: float, seed: int):
    extent = (37.3, 29.9)
    xyz, offsets, ncx, ncy = _sorted_cloud(20_000, seed, cell, extent)
    width, height = int(np.ceil(extent[0] / res)), int(np.ceil(extent[1] / res))
    by1 = extent[1]
    rng = np.random.default_rng(seed)
    for row0, rows in [(0, height), (0, min(height, 7)), (height // 3, max(1, height // 4)),
                       (height - 5, 5)]:  # fmt: skip
        rows = min(rows, height - row0)
        y_top, y_bot = by1 - row0 * res + 1e-3 * res, by1 - (row0 + rows) * res - 1e-3 * res
        cy_lo, cy_hi = (
            max(0, int(np.floor(y_bot / cell))),
            min(ncy - 1, int(np.floor(y_top / cell))),
        )
        lo, hi = int(offsets[cy_lo * ncx]), int(offsets[(cy_hi + 1) * ncx])
        want = [rng.standard_normal((rows, width)).astype(np.float32) for _ in range(2)]
        want.append(rng.integers(-5, 5, (rows, width)).astype(np.int32))
        got = [a.copy() for a in want]  # the same junk in both: neither may read it
        K.scatter_band(xyz, lo, hi, 0.0, by1, res, width, height, row0, *want)
        ok = K.scatter_cells(xyz, offsets, 0.0, 0.0, cell, ncx, cy_lo, cy_hi, 0.0, by1, res,
                             width, height, row0, *got)  # fmt: skip
        assert ok
        assert got[0].tobytes() == want[0].tobytes()
        hit = want[0] != -np.inf
        assert got[1][hit].tobytes() == want[1][hit].tobytes()
        np.testing.assert_array_equal(got[2][hit], want[2][hit])


def test_scatter_cells_refuses_a_point_outside_its_cells_pixels() -> None:
    xyz = np.array([[0.5, 0.5, 1.0], [9.5, 9.5, 2.0]], np.float32)
    offsets = np.array([0, 2, 2, 2, 2], np.int64)  # both points filed under cell 0 (2 × 2 grid)
    bufs = (np.empty((20, 20), np.float32), np.empty((20, 20), np.float32),
            np.empty((20, 20), np.int32))  # fmt: skip
    assert not K.scatter_cells(xyz, offsets, 0.0, 0.0, 5.0, 2, 0, 1, 0.0, 10.0, 0.5, 20, 20, 0,
                               *bufs)  # fmt: skip


def _fill_reference(zmax, zmin, winner, filled, iterations):
    """The hole fill as specified, one pixel at a time (picks before copies, scan order)."""
    h, w = zmax.shape
    for _ in range(iterations):
        picks = []
        for r in range(h):
            for c in range(w):
                if zmax[r, c] != -np.inf:
                    continue
                best, src = -np.inf, None
                for dr in (-1, 0, 1):
                    for dc in (-1, 0, 1):
                        rr, cc = r + dr, c + dc
                        if 0 <= rr < h and 0 <= cc < w and zmax[rr, cc] > best:
                            best, src = zmax[rr, cc], (rr, cc)
                if src is not None:
                    picks.append(((r, c), src))
        if not picks:
            return
        for dst, src in picks:
            zmax[dst], zmin[dst], winner[dst] = zmax[src], zmin[src], winner[src]
            filled[dst] = True


@pytest.mark.parametrize("shape,density,iterations", [((1, 1), 0.0, 3), ((1, 9), 0.3, 3),
                         ((9, 1), 0.3, 2), ((23, 31), 0.05, 3), ((17, 40), 0.3, 1),
                         ((30, 30), 0.01, 9), ((12, 70), 0.5, 3)])  # fmt: skip
def test_fill_holes_matches_the_pixel_by_pixel_reference(shape, density, iterations) -> None:
    rng = np.random.default_rng(7)
    zmax = np.where(rng.random(shape) < density, rng.integers(0, 3, shape) * 0.5, -np.inf)
    zmax = zmax.astype(np.float32)  # few distinct heights: ties decided by scan order
    zmin = (zmax - rng.random(shape)).astype(np.float32)
    winner = rng.integers(0, 1000, shape).astype(np.int32)
    want = [zmax.copy(), zmin.copy(), winner.copy(), np.zeros(shape, bool)]
    got = [a.copy() for a in want]
    _fill_reference(*want, iterations)
    K.fill_holes(*got, iterations)
    for a, b in zip(got, want):
        assert a.tobytes() == b.tobytes()
