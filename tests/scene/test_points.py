"""Tests for urbex.scene._points: the grid sort and the bounds, against plain numpy."""

from __future__ import annotations

import numpy as np
import pytest

from urbex.scene import _points as P


def _cloud(n: int, seed: int, dtype: type = np.float64) -> np.ndarray:
    rng = np.random.default_rng(seed)
    xyz = (rng.random((n, 3)) * [50.0, 30.0, 10.0] + [1000.0, 2000.0, 5.0]).astype(dtype)
    xyz[rng.integers(0, n, 5)] = np.nan  # dropped
    xyz[7, 2] = np.inf
    return xyz


def _reference(xyz, shift, grid):
    """Finite points by (cell, index), shifted to float32, and the cell offsets, in numpy."""
    gx0, gy0, cell, ncx, ncy = grid
    ok = np.isfinite(xyz).all(axis=1)
    rel = (xyz.astype(np.float64) - shift).astype(np.float32)
    safe = np.where(ok[:, None], rel, 0.0).astype(np.float64)  # cells of finite points only
    cx = np.clip(np.floor((safe[:, 0] - gx0) / cell), 0, ncx - 1).astype(int)
    cy = np.clip(np.floor((safe[:, 1] - gy0) / cell), 0, ncy - 1).astype(int)
    cells = np.where(ok, cy * ncx + cx, ncx * ncy)
    order = np.argsort(cells, kind="stable")[: int(ok.sum())]
    offsets = np.zeros(ncx * ncy + 1, np.int64)
    np.cumsum(np.bincount(cells[ok], minlength=ncx * ncy), out=offsets[1:])
    return rel[order], order, offsets


@pytest.mark.parametrize("threads,dtype", [(1, np.float64), (2, np.float64), (3, np.float32)])
def test_grid_sort_orders_by_cell_then_index_for_any_thread_count(threads, dtype) -> None:
    xyz = _cloud(20_000, 0, dtype)
    rng = np.random.default_rng(1)
    rgb = rng.integers(0, 256, (len(xyz), 3), dtype=np.uint8)
    sem = rng.integers(-1, 13, len(xyz)).astype(np.int32)
    shift = np.array([1000.0, 2000.0, 5.0])
    grid = (0.25, 0.5, 4.0, 13, 8)
    out, o_rgb, o_sem, o_inst, offsets = P.grid_sort(
        xyz, shift, grid, rgb, sem, None, threads=threads
    )
    ref_xyz, order, ref_off = _reference(xyz, shift, grid)
    assert out.dtype == np.float32 and out.tobytes() == ref_xyz.tobytes()
    np.testing.assert_array_equal(o_rgb, rgb[order])
    np.testing.assert_array_equal(o_sem, sem[order])
    assert o_inst.shape == (0,)
    np.testing.assert_array_equal(offsets, ref_off)


@pytest.mark.parametrize("threads", [1, 2, 5])
def test_finite_bounds_counts_nonfinite_rows_and_bounds_the_rest(threads) -> None:
    xyz = _cloud(10_001, 2)
    bad, lo, hi = P.finite_bounds(xyz, threads)
    ok = np.isfinite(xyz).all(axis=1)
    assert bad == int((~ok).sum())
    np.testing.assert_array_equal(lo, xyz[ok].min(axis=0))
    np.testing.assert_array_equal(hi, xyz[ok].max(axis=0))


def test_label_counts_and_lut_index_skip_negative_labels() -> None:
    v = np.array([3, -1, 3, 0, -7], np.int32)
    assert P.label_counts(v, 4).tolist() == [1, 0, 0, 2]
    lut = np.array([0, -1, -1, 1], np.int32)
    assert P.lut_index(v, lut).tolist() == [1, -1, 1, 0, -1]
