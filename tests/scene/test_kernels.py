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
