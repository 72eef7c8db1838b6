"""Numba kernels over the point arrays of a scene cache: bounds, the grid sort, instance sums.

Private module: :mod:`urbex.scene.build` and :mod:`urbex.scene.instances` wrap these. Frames:

* **cloud frame**: the input cloud's ``xyz`` (any float dtype), world = ``xyz + offset``.
* **cache frame**: world metres minus the cache origin, float32:
  ``xyz_rel = float32(float64(xyz) − shift)``.
* **grid cells**: ``cx = floor((x_rel − gx0) / cell)``, ``cy = floor((y_rel − gy0) / cell)``,
  clamped to the grid; cell id ``cy · ncx + cx``.

The grid sort is a counting sort: one pass counts the points per cell, a second writes each
point to its cell's next free slot. Visiting the points in index order makes it stable, so
the order is the one of sorting ``(cell, index)`` pairs; each pass can run on a slice of the
points in its own thread (the kernels release the GIL), with per-slice cursors so that the
result does not depend on the number of slices.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numba as nb
import numpy as np
from numpy.typing import NDArray

__all__ = ["finite_bounds", "grid_sort", "instance_stats", "label_counts", "lut_index"]


@nb.njit(cache=True, nogil=True)
def _finite_bounds(xyz, a, b):  # pragma: no cover - compiled
    """Non-finite rows among ``a:b`` and the min/max (float64, cloud frame) of the finite ones."""
    lo = np.full(3, np.inf)
    hi = np.full(3, -np.inf)
    bad = 0
    for i in range(a, b):
        x = np.float64(xyz[i, 0])
        y = np.float64(xyz[i, 1])
        z = np.float64(xyz[i, 2])
        if not (np.isfinite(x) and np.isfinite(y) and np.isfinite(z)):
            bad += 1
            continue
        lo[0] = min(lo[0], x)
        hi[0] = max(hi[0], x)
        lo[1] = min(lo[1], y)
        hi[1] = max(hi[1], y)
        lo[2] = min(lo[2], z)
        hi[2] = max(hi[2], z)
    return bad, lo, hi


def _slices(n: int, parts: int) -> list[tuple[int, int]]:
    edges = np.linspace(0, n, parts + 1).astype(np.int64)
    return [(int(edges[k]), int(edges[k + 1])) for k in range(parts)]


def finite_bounds(
    xyz: NDArray, threads: int = 1
) -> tuple[int, NDArray[np.float64], NDArray[np.float64]]:
    """Count the rows of ``xyz`` (N, 3) with a NaN/inf and bound the others (float64).

    Min and max are exact in any order, so the slices' results combine to the same bounds.
    """
    parts = _slices(len(xyz), max(1, threads))
    if len(parts) == 1:
        bad, lo, hi = _finite_bounds(xyz, 0, len(xyz))
        return int(bad), lo, hi
    with ThreadPoolExecutor(len(parts)) as pool:
        res = list(pool.map(lambda ab: _finite_bounds(xyz, ab[0], ab[1]), parts))
    bad, lo, hi = 0, res[0][1], res[0][2]
    for r in res:  # a later slice wins only when strictly beyond: the first of equal values stays
        bad += int(r[0])
        lo = np.where(r[1] < lo, r[1], lo)
        hi = np.where(r[2] > hi, r[2], hi)
    return bad, lo, hi


@nb.njit(cache=True, inline="always")
def _cell(xyz, i, shift, gx0, gy0, cell, ncx, ncy, sentinel):  # pragma: no cover - compiled
    """Grid cell of point ``i`` (cache-frame float32 coordinates), ``sentinel`` if non-finite."""
    x = np.float64(xyz[i, 0])
    y = np.float64(xyz[i, 1])
    z = np.float64(xyz[i, 2])
    if not (np.isfinite(x) and np.isfinite(y) and np.isfinite(z)):
        return sentinel
    xr = np.float64(np.float32(x - shift[0]))
    yr = np.float64(np.float32(y - shift[1]))
    cx = int(np.floor((xr - gx0) / cell))
    cy = int(np.floor((yr - gy0) / cell))
    cx = min(max(cx, 0), ncx - 1)
    cy = min(max(cy, 0), ncy - 1)
    return cy * ncx + cx


@nb.njit(cache=True, nogil=True)
def _count_cells(xyz, a, b, shift, gx0, gy0, cell, ncx, ncy, counts):  # pragma: no cover
    """``counts[c]`` += points of ``a:b`` in cell ``c`` (``counts[ncx·ncy]``: non-finite)."""
    sentinel = ncx * ncy
    for i in range(a, b):
        counts[_cell(xyz, i, shift, gx0, gy0, cell, ncx, ncy, sentinel)] += 1


@nb.njit(cache=True, nogil=True)
def _place(
    xyz, a, b, shift, gx0, gy0, cell, ncx, ncy, cursor, xyz_out,
    rgb, has_rgb, rgb_out, sem, has_sem, sem_out, inst, has_inst, inst_out,
):  # pragma: no cover  # fmt: skip
    """Write points ``a:b`` to their cell's next slot ``cursor[c]`` (advanced); non-finite skip."""
    sentinel = ncx * ncy
    for i in range(a, b):
        c = _cell(xyz, i, shift, gx0, gy0, cell, ncx, ncy, sentinel)
        if c == sentinel:
            continue
        j = cursor[c]
        cursor[c] = j + 1
        xyz_out[j, 0] = np.float32(np.float64(xyz[i, 0]) - shift[0])
        xyz_out[j, 1] = np.float32(np.float64(xyz[i, 1]) - shift[1])
        xyz_out[j, 2] = np.float32(np.float64(xyz[i, 2]) - shift[2])
        if has_rgb:
            rgb_out[j, 0] = rgb[i, 0]
            rgb_out[j, 1] = rgb[i, 1]
            rgb_out[j, 2] = rgb[i, 2]
        if has_sem:
            sem_out[j] = sem[i]
        if has_inst:
            inst_out[j] = inst[i]


def grid_sort(
    xyz: NDArray,
    shift: NDArray[np.float64],
    grid: tuple[float, float, float, int, int],
    rgb: NDArray[np.uint8] | None,
    sem: NDArray | None,
    inst: NDArray | None,
    *,
    threads: int = 1,
) -> tuple[NDArray[np.float32], NDArray[np.uint8], NDArray[np.int32], NDArray[np.int32], NDArray]:
    """Sort the finite points into grid cells, by cell then input index; shift to the cache frame.

    Parameters
    ----------
    xyz : ndarray, shape (N, 3), float32 or float64
        Cloud frame; rows with a NaN/inf are dropped.
    shift : ndarray, shape (3,), float64
        Cloud frame → cache frame: ``xyz_rel = float32(xyz − shift)``.
    grid : (gx0, gy0, cell, ncx, ncy)
        Grid origin (cache frame, metres), cell side (metres) and cells per axis.
    rgb, sem, inst : ndarray or None
        (N, 3) uint8, (N,) int, (N,) int, re-ordered with the points.
    threads : int
        Slices of the points counted and placed concurrently (same result for any value).

    Returns
    -------
    xyz_rel : ndarray, shape (M, 3), float32
    rgb, sem, inst : ndarray
        Re-ordered attributes (uint8, int32, int32); length 0 when absent.
    offsets : ndarray, shape (ncx·ncy + 1,), int64
        Cell ``c`` holds points ``offsets[c]:offsets[c + 1]``.
    """
    gx0, gy0, cell, ncx, ncy = grid
    n_cells = ncx * ncy
    parts = _slices(len(xyz), max(1, threads))
    counts = np.zeros((len(parts), n_cells + 1), np.int64)

    def run(fn, k):  # type: ignore[no-untyped-def]
        a, b = parts[k]
        return fn(a, b, k)

    def count(a: int, b: int, k: int) -> None:
        _count_cells(xyz, a, b, shift, gx0, gy0, cell, ncx, ncy, counts[k])

    pool = ThreadPoolExecutor(len(parts)) if len(parts) > 1 else None
    try:
        if pool is None:
            count(*parts[0], 0)
        else:
            list(pool.map(lambda k: run(count, k), range(len(parts))))
        per_cell = counts[:, :n_cells]
        offsets = np.zeros(n_cells + 1, np.int64)
        np.cumsum(per_cell.sum(axis=0), out=offsets[1:])
        # slice k of cell c starts after the earlier slices' points of that cell
        cursors = offsets[:-1] + np.cumsum(per_cell, axis=0) - per_cell
        m = int(offsets[-1])
        xyz_out = np.empty((m, 3), np.float32)
        rgb_out = np.empty((m if rgb is not None else 0, 3), np.uint8)
        sem_out = np.empty(m if sem is not None else 0, np.int32)
        inst_out = np.empty(m if inst is not None else 0, np.int32)
        dummy_rgb = np.zeros((1, 3), np.uint8)
        dummy_i = np.zeros(1, np.int32)

        def place(a: int, b: int, k: int) -> None:
            _place(
                xyz, a, b, shift, gx0, gy0, cell, ncx, ncy, cursors[k], xyz_out,
                dummy_rgb if rgb is None else rgb, rgb is not None, rgb_out,
                dummy_i if sem is None else sem, sem is not None, sem_out,
                dummy_i if inst is None else inst, inst is not None, inst_out,
            )  # fmt: skip

        if pool is None:
            place(*parts[0], 0)
        else:
            list(pool.map(lambda k: run(place, k), range(len(parts))))
    finally:
        if pool is not None:
            pool.shutdown()
    return xyz_out, rgb_out, sem_out, inst_out, offsets


@nb.njit(cache=True, nogil=True)
def label_counts(values, size):  # pragma: no cover - compiled
    """``counts[v]``: how often each label ``0 <= v < size`` occurs (negatives skipped)."""
    counts = np.zeros(size, np.int64)
    for i in range(values.shape[0]):
        v = values[i]
        if v >= 0:
            counts[v] += 1
    return counts


@nb.njit(cache=True, nogil=True)
def lut_index(values, lut):  # pragma: no cover - compiled
    """``lut[v]`` per value (int32), −1 for negative values."""
    out = np.empty(values.shape[0], np.int32)
    for i in range(values.shape[0]):
        v = values[i]
        out[i] = lut[v] if v >= 0 else -1
    return out


@nb.njit(cache=True, nogil=True)
def instance_stats(
    xyz, rgb, has_rgb, sem, sem_lut, n_classes, inst, inst_lut, n_inst
):  # pragma: no cover
    """Per-instance min/max (cache frame), count, colour sums and class counts.

    ``inst_lut[inst[i]]`` is point ``i``'s compact instance index (none when ``inst[i]`` < 0),
    ``sem_lut[sem[i]]`` its compact class index (unlabeled when < 0; not in the majority).
    Looking labels up per point needs no per-point index arrays.
    """
    lo = np.full((n_inst, 3), np.inf)
    hi = np.full((n_inst, 3), -np.inf)
    count = np.zeros(n_inst, np.int64)
    csum = np.zeros((n_inst, 3), np.int64)
    ccount = np.zeros((n_inst, max(n_classes, 1)), np.int64)
    for i in range(xyz.shape[0]):
        v = inst[i]
        if v < 0:
            continue
        k = inst_lut[v]
        count[k] += 1
        for a in range(3):
            x = np.float64(xyz[i, a])
            if x < lo[k, a]:
                lo[k, a] = x
            if x > hi[k, a]:
                hi[k, a] = x
        if has_rgb:
            for a in range(3):
                csum[k, a] += rgb[i, a]
        if n_classes > 0:
            c = sem[i]
            if c >= 0:
                ccount[k, sem_lut[c]] += 1
    return lo, hi, count, csum, ccount
