"""Numba kernels behind the scene cache: grid sort keys, BEV scatter, hole filling, area resampling.

Private module: the public functions in :mod:`urbex.scene.build` and :mod:`urbex.scene.cache`
wrap these. Frames:

* **cache frame**: world metres minus the cache origin, float32 (``xyz_rel``).
* **BEV pixels**: ``col = floor((x_rel − bev_x0) / r)``, ``row = floor((bev_y1 − y_rel) / r)``,
  clamped to the raster, i.e. the GDAL convention of :class:`urbex.geometry.Affine`.

Every kernel is a plain loop compiled with ``numba.njit(cache=True)``; none allocates per point.
"""

from __future__ import annotations

import numba as nb
import numpy as np

__all__: list[str] = []  # private module

INDEX_BITS = 35  # (cell << 35) | index, STACK_NOTES' pack-and-sort trick
INDEX_MASK = (1 << INDEX_BITS) - 1


@nb.njit(cache=True, nogil=True)
def finite_bounds(xyz):  # pragma: no cover - compiled
    """Count non-finite rows and the min/max (float64, cloud frame) of the finite ones."""
    n = xyz.shape[0]
    lo = np.full(3, np.inf)
    hi = np.full(3, -np.inf)
    bad = 0
    for i in range(n):
        x = np.float64(xyz[i, 0])
        y = np.float64(xyz[i, 1])
        z = np.float64(xyz[i, 2])
        if not (np.isfinite(x) and np.isfinite(y) and np.isfinite(z)):
            bad += 1
            continue
        if x < lo[0]:
            lo[0] = x
        if x > hi[0]:
            hi[0] = x
        if y < lo[1]:
            lo[1] = y
        if y > hi[1]:
            hi[1] = y
        if z < lo[2]:
            lo[2] = z
        if z > hi[2]:
            hi[2] = z
    return bad, lo, hi


@nb.njit(cache=True, inline="always")
def cell_of(x, y, gx0, gy0, cell, ncx, ncy):  # pragma: no cover - compiled
    """Grid cell id ``cy * ncx + cx`` of a cache-frame point (float64 of its float32 value)."""
    cx = int(np.floor((x - gx0) / cell))
    cy = int(np.floor((y - gy0) / cell))
    cx = min(max(cx, 0), ncx - 1)
    cy = min(max(cy, 0), ncy - 1)
    return cy * ncx + cx


@nb.njit(cache=True, nogil=True)
def sort_keys(xyz, shift, gx0, gy0, cell, ncx, ncy):  # pragma: no cover - compiled
    """``(cell << 35) | index`` per point; non-finite points get cell ``ncx·ncy`` (sort last)."""
    n = xyz.shape[0]
    keys = np.empty(n, np.int64)
    sentinel = np.int64(ncx * ncy)
    for i in range(n):
        x = np.float64(xyz[i, 0])
        y = np.float64(xyz[i, 1])
        z = np.float64(xyz[i, 2])
        if not (np.isfinite(x) and np.isfinite(y) and np.isfinite(z)):
            keys[i] = (sentinel << INDEX_BITS) | i
            continue
        xr = np.float64(np.float32(x - shift[0]))
        yr = np.float64(np.float32(y - shift[1]))
        c = cell_of(xr, yr, gx0, gy0, cell, ncx, ncy)
        keys[i] = (np.int64(c) << INDEX_BITS) | i
    return keys


@nb.njit(cache=True, nogil=True)
def gather_sorted(
    keys, n_valid, n_cells, xyz, shift, rgb, has_rgb, sem, has_sem, inst, has_inst
):  # pragma: no cover
    """Re-order the point arrays by sorted key; xyz shifted into the cache frame (float32).

    Returns ``(xyz_out, rgb_out, sem_out, inst_out, cell_offsets)``; absent attributes come back
    as length-0 arrays.
    """
    xyz_out = np.empty((n_valid, 3), np.float32)
    rgb_out = np.empty((n_valid if has_rgb else 0, 3), np.uint8)
    sem_out = np.empty(n_valid if has_sem else 0, np.int32)
    inst_out = np.empty(n_valid if has_inst else 0, np.int32)
    counts = np.zeros(n_cells + 1, np.int64)
    for j in range(n_valid):
        k = keys[j]
        i = k & INDEX_MASK
        counts[(k >> INDEX_BITS) + 1] += 1
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
    for c in range(n_cells):
        counts[c + 1] += counts[c]
    return xyz_out, rgb_out, sem_out, inst_out, counts


@nb.njit(cache=True, nogil=True)
def scatter_band(xyz, lo, hi, bx0, by1, res, width, height, row0, zmax, zmin, winner):
    """ "Highest point wins" scatter of points ``lo:hi`` into a band of BEV rows.

    The band holds raster rows ``row0 : row0 + zmax.shape[0]``; points whose row falls outside
    are skipped. ``zmax``, ``zmin`` and ``winner`` may come in with any content (a buffer
    reused from the previous band): only ``zmax`` is initialised, to −inf, row by row just
    before the first point lands in it (points are cell-sorted, so rows are reached from the
    bottom of the band up and each row is initialised while it is about to be hot in cache);
    rows no point reaches are set at the end. On return a pixel is empty iff ``zmax`` is −inf;
    elsewhere ``zmin`` holds the lowest z and ``winner`` the index of the highest point (ties
    keep the first point in cache order, so the result is deterministic); ``zmin`` and
    ``winner`` of empty pixels are left as they were. One pass computes all three: a pixel's
    first point sets them together. Points lie inside the raster's extent (``x ≥ bx0``,
    ``y ≤ by1``), so truncation equals ``floor``; the far edge is clamped. Only 12 bytes per
    pixel are touched here; :func:`resolve_band` gathers attributes. The three arrays must be
    C-contiguous.
    """  # pragma: no cover
    nrows = zmax.shape[0]
    zmax_f = zmax.reshape(-1)  # flat views (the band buffers are C-contiguous): one unsigned
    zmin_f = zmin.reshape(-1)  # index per pixel, no per-axis negative-index handling
    win_f = winner.reshape(-1)
    inv = 1.0 / res
    init_lo = nrows  # rows init_lo: are initialised
    for i in range(lo, hi):
        row = int((by1 - np.float64(xyz[i, 1])) * inv)
        if row >= height:
            row = height - 1
        row -= row0
        if row < 0 or row >= nrows:
            continue
        if row < init_lo:
            zmax_f[row * width : init_lo * width] = -np.inf
            init_lo = row
        col = int((np.float64(xyz[i, 0]) - bx0) * inv)
        if col >= width:
            col = width - 1
        elif col < 0:  # never for points inside the extent; keeps the flat index in bounds
            col = 0
        k = np.uint64(row * width + col)
        z = xyz[i, 2]
        top = zmax_f[k]
        if top == -np.inf:  # first point of the pixel (z is finite)
            zmax_f[k] = z
            zmin_f[k] = z
            win_f[k] = i
        elif z > top:
            zmax_f[k] = z
            win_f[k] = i
        elif z < zmin_f[k]:
            zmin_f[k] = z
    zmax_f[: init_lo * width] = -np.inf


@nb.njit(cache=True, nogil=True)
def resolve_band(
    zmax, winner, xyz, rgb, has_rgb, sem, has_sem, inst, has_inst, zlo, zhi, out_rgb, out_sem,
    out_inst,
):  # pragma: no cover  # fmt: skip
    """Phase 2: per pixel, copy the winner's colour/class/instance into the band layers.

    Empty pixels (``zmax`` −inf; their ``winner`` is undefined) get black, −1, −1. Without
    colours, the pixel colour is a grey ramp of the height between ``zlo`` and ``zhi`` (cache
    frame).
    """
    h, w = winner.shape
    zspan = zhi - zlo
    if zspan <= 0.0:
        zspan = 1.0
    for r in range(h):
        for c in range(w):
            if zmax[r, c] == -np.inf:
                out_rgb[r, c, 0] = 0
                out_rgb[r, c, 1] = 0
                out_rgb[r, c, 2] = 0
                out_sem[r, c] = -1
                out_inst[r, c] = -1
                continue
            i = winner[r, c]
            if has_rgb:
                out_rgb[r, c, 0] = rgb[i, 0]
                out_rgb[r, c, 1] = rgb[i, 1]
                out_rgb[r, c, 2] = rgb[i, 2]
            else:
                g = np.uint8(
                    40.0 + 215.0 * min(max((np.float64(xyz[i, 2]) - zlo) / zspan, 0.0), 1.0)
                )
                out_rgb[r, c, 0] = g
                out_rgb[r, c, 1] = g
                out_rgb[r, c, 2] = g
            out_sem[r, c] = sem[i] if has_sem else -1
            out_inst[r, c] = inst[i] if has_inst else -1


@nb.njit(cache=True, nogil=True)
def fill_holes(zmax, zmin, rgb, sem, inst, filled, iterations):  # pragma: no cover
    """Fill empty pixels (``zmax == -inf``) from their highest valid 8-neighbour.

    Each pass fills every empty pixel that has at least one valid 8-neighbour (valid at the
    start of the pass) with all layers of the neighbour with the highest ``zmax`` (first in
    scan order on ties) and sets ``filled``. At most ``iterations`` passes; stops early when a
    pass fills nothing. A pixel's result depends only on input within ``iterations`` pixels.
    Only the still-empty pixels are visited in each pass (a list of candidates), and a pass
    first picks every source, then copies (so the picks see the start-of-pass state).
    """
    h, w = zmax.shape
    if iterations <= 0:
        return
    n = 0
    for r in range(h):
        for c in range(w):
            if zmax[r, c] == -np.inf:
                n += 1
    cr = np.empty(n, np.int32)
    cc_ = np.empty(n, np.int32)
    n = 0
    for r in range(h):
        for c in range(w):
            if zmax[r, c] == -np.inf:
                cr[n] = r
                cc_[n] = c
                n += 1
    sdr = np.empty(n, np.int8)
    sdc = np.empty(n, np.int8)
    for _ in range(iterations):
        changed = False
        for k in range(n):
            r = cr[k]
            c = cc_[k]
            best = -np.inf
            bdr = 2
            bdc = 0
            for dr in range(-1, 2):
                rr = r + dr
                if rr < 0 or rr >= h:
                    continue
                for dc in range(-1, 2):
                    cc = c + dc
                    if cc < 0 or cc >= w:
                        continue
                    v = zmax[rr, cc]
                    if v > best:
                        best = v
                        bdr = dr
                        bdc = dc
            sdr[k] = bdr
            sdc[k] = bdc
            if bdr != 2:
                changed = True
        if not changed:
            return
        m = 0
        for k in range(n):
            r = cr[k]
            c = cc_[k]
            if sdr[k] == 2:
                cr[m] = r
                cc_[m] = c
                m += 1
                continue
            rr = r + sdr[k]
            cc = c + sdc[k]
            zmax[r, c] = zmax[rr, cc]
            zmin[r, c] = zmin[rr, cc]
            rgb[r, c, 0] = rgb[rr, cc, 0]
            rgb[r, c, 1] = rgb[rr, cc, 1]
            rgb[r, c, 2] = rgb[rr, cc, 2]
            sem[r, c] = sem[rr, cc]
            inst[r, c] = inst[rr, cc]
            filled[r, c] = True
        n = m


@nb.njit(cache=True, nogil=True)
def rasterize_band(
    xyz, lo, hi, rgb, has_rgb, sem, has_sem, inst, has_inst,
    bx0, by1, res, width, height, row0, zlo, zhi, iterations, z_origin,
    winner, zmax, zmin, o_rgb, o_sem, o_inst, filled,
):  # pragma: no cover  # fmt: skip
    """All BEV layers of raster rows ``row0 : row0 + zmax.shape[0]`` from points ``lo:hi``.

    :func:`scatter_band`, :func:`resolve_band`, :func:`fill_holes`, then heights to world
    metres (``+ float32(z_origin)``) with NaN where still empty. Every array comes in from the
    caller with any content (buffers reused band after band: no page faults per band) and
    shape ``(nrows, width)`` (``o_rgb`` ``(nrows, width, 3)``): ``winner`` is scratch, int32
    (int64 beyond 2³¹ points); on return ``zmax``, ``zmin`` (float32), ``o_rgb`` (uint8),
    ``o_sem`` (int16), ``o_inst`` (int32) and ``filled`` (bool) hold the band's layers.
    """
    scatter_band(xyz, lo, hi, bx0, by1, res, width, height, row0, zmax, zmin, winner)
    resolve_band(
        zmax, winner, xyz, rgb, has_rgb, sem, has_sem, inst, has_inst, zlo, zhi, o_rgb, o_sem,
        o_inst,
    )  # fmt: skip
    filled[:] = False
    fill_holes(zmax, zmin, o_rgb, o_sem, o_inst, filled, iterations)
    zo = np.float32(z_origin)
    for r in range(zmax.shape[0]):
        for c in range(width):
            if zmax[r, c] == -np.inf:
                zmax[r, c] = np.nan
                zmin[r, c] = np.nan
            else:
                zmax[r, c] = zmax[r, c] + zo
                zmin[r, c] = zmin[r, c] + zo


@nb.njit(cache=True, nogil=True)
def _overlaps(start, step, n_out, s0, s1):  # pragma: no cover - compiled
    """Source/output overlaps along one axis, as CSR lists per source index ``s0:s1``.

    Output ``o`` covers ``[start + o·step, start + (o+1)·step)``, source ``s`` covers
    ``[s, s+1)``. Returns ``(ptr, out_idx, weight)``: for source ``s``, entries
    ``ptr[s-s0]:ptr[s-s0+1]`` list the outputs it overlaps (ascending) and the overlap length.
    """
    ns = s1 - s0
    ptr = np.zeros(ns + 1, np.int64)
    for s in range(s0, s1):
        o_lo = max(0, int(np.floor((s - start) / step)))
        o_hi = min(n_out - 1, int(np.ceil((s + 1 - start) / step)) - 1)
        m = 0
        for o in range(o_lo, o_hi + 1):
            wgt = min(s + 1.0, start + (o + 1) * step) - max(float(s), start + o * step)
            if wgt > 0.0:
                m += 1
        ptr[s - s0 + 1] = ptr[s - s0] + m
    idx = np.empty(ptr[ns], np.int64)
    wts = np.empty(ptr[ns], np.float64)
    for s in range(s0, s1):
        o_lo = max(0, int(np.floor((s - start) / step)))
        o_hi = min(n_out - 1, int(np.ceil((s + 1 - start) / step)) - 1)
        m = ptr[s - s0]
        for o in range(o_lo, o_hi + 1):
            wgt = min(s + 1.0, start + (o + 1) * step) - max(float(s), start + o * step)
            if wgt > 0.0:
                idx[m] = o
                wts[m] = wgt
                m += 1
    return ptr, idx, wts


@nb.njit(cache=True, nogil=True)
def area_accumulate(
    src_rgb, src_z, src_r0, src_c0, y_start, x_start, sy, sx, acc, wsum
):  # pragma: no cover
    """Area-weighted (box filter) resampling of a raster block into an output grid.

    ``src_rgb[rr, cc]`` is source pixel ``(src_r0 + rr, src_c0 + cc)``, covering
    ``[col, col+1) × [row, row+1)`` in source pixel units; output pixel ``(o, p)`` covers rows
    ``[y_start + o·sy, y_start + (o+1)·sy)`` and columns ``[x_start + p·sx, ...)``. Each valid
    source pixel (``src_z`` not NaN) adds ``overlap_area · rgb`` to ``acc[o, p]`` and
    ``overlap_area`` to ``wsum[o, p]``. Works for down- and up-sampling; can be called band by
    band (each output pixel sums its sources in row-major source order).
    """
    ho, wo = wsum.shape
    nr, nc = src_rgb.shape[0], src_rgb.shape[1]
    rptr, ridx, rwt = _overlaps(y_start, sy, ho, src_r0, src_r0 + nr)
    cptr, cidx, cwt = _overlaps(x_start, sx, wo, src_c0, src_c0 + nc)
    for rr in range(nr):
        for e in range(rptr[rr], rptr[rr + 1]):
            o = ridx[e]
            wy = rwt[e]
            for cc in range(nc):
                if np.isnan(src_z[rr, cc]):
                    continue
                for f in range(cptr[cc], cptr[cc + 1]):
                    p = cidx[f]
                    wgt = cwt[f] * wy
                    acc[o, p, 0] += wgt * src_rgb[rr, cc, 0]
                    acc[o, p, 1] += wgt * src_rgb[rr, cc, 1]
                    acc[o, p, 2] += wgt * src_rgb[rr, cc, 2]
                    wsum[o, p] += wgt


@nb.njit(cache=True, nogil=True)
def area_finish(acc, wsum):  # pragma: no cover - compiled
    """``acc / wsum`` rounded to uint8; pixels with no weight are black."""
    ho, wo = wsum.shape
    out = np.zeros((ho, wo, 3), np.uint8)
    for o in range(ho):
        for p in range(wo):
            wgt = wsum[o, p]
            if wgt > 0.0:
                for k in range(3):
                    v = acc[o, p, k] / wgt + 0.5
                    out[o, p, k] = np.uint8(min(max(v, 0.0), 255.0))
    return out


@nb.njit(cache=True, nogil=True)
def _transpose_csr(ptr, idx, wts, n_out, s0):  # pragma: no cover - compiled
    """Per-output lists of ``(source, weight)`` from per-source lists, sources ascending."""
    cnt = np.zeros(n_out + 1, np.int64)
    for e in range(idx.shape[0]):
        cnt[idx[e] + 1] += 1
    for o in range(n_out):
        cnt[o + 1] += cnt[o]
    pos = cnt[:-1].copy()
    src = np.empty(idx.shape[0], np.int64)
    w = np.empty(idx.shape[0], np.float64)
    for s in range(ptr.shape[0] - 1):
        for e in range(ptr[s], ptr[s + 1]):
            o = idx[e]
            src[pos[o]] = s + s0
            w[pos[o]] = wts[e]
            pos[o] += 1
    return cnt, src, w


@nb.njit(cache=True, nogil=True)
def area_window(src_rgb, src_z, src_r0, src_c0, y_start, x_start, sy, sx, out, o_lo, o_hi):
    """Fused area resampling of rows ``o_lo:o_hi`` of ``out`` (H, W, 3 uint8), no accumulators.

    Same weights and the same summation order per output pixel as :func:`area_accumulate`
    followed by :func:`area_finish` (so the same bytes), but each output pixel sums its few
    source pixels in registers. ``src_rgb``/``src_z`` may be strided views of the memory-mapped
    raster (source pixel ``(src_r0 + rr, src_c0 + cc)``); untouched outputs are left as they are
    (black when ``out`` starts zeroed).
    """  # pragma: no cover
    ho, wo = out.shape[0], out.shape[1]
    nr, nc = src_rgb.shape[0], src_rgb.shape[1]
    rptr, ridx, rwt = _overlaps(y_start, sy, ho, src_r0, src_r0 + nr)
    cptr, cidx, cwt = _overlaps(x_start, sx, wo, src_c0, src_c0 + nc)
    rcnt, rsrc, rw = _transpose_csr(rptr, ridx, rwt, ho, src_r0)
    ccnt, csrc, cw = _transpose_csr(cptr, cidx, cwt, wo, src_c0)
    for o in range(o_lo, o_hi):
        for p in range(wo):
            a0 = 0.0
            a1 = 0.0
            a2 = 0.0
            ws = 0.0
            for e in range(rcnt[o], rcnt[o + 1]):
                rr = rsrc[e] - src_r0
                wy = rw[e]
                for f in range(ccnt[p], ccnt[p + 1]):
                    cc = csrc[f] - src_c0
                    if np.isnan(src_z[rr, cc]):
                        continue
                    wgt = cw[f] * wy
                    a0 += wgt * src_rgb[rr, cc, 0]
                    a1 += wgt * src_rgb[rr, cc, 1]
                    a2 += wgt * src_rgb[rr, cc, 2]
                    ws += wgt
            if ws > 0.0:
                out[o, p, 0] = np.uint8(min(max(a0 / ws + 0.5, 0.0), 255.0))
                out[o, p, 1] = np.uint8(min(max(a1 / ws + 0.5, 0.0), 255.0))
                out[o, p, 2] = np.uint8(min(max(a2 / ws + 0.5, 0.0), 255.0))


@nb.njit(cache=True, nogil=True)
def instance_stats(xyz, rgb, has_rgb, sem_idx, n_classes, inst_idx, n_inst):  # pragma: no cover
    """Per-instance min/max (cache frame), count, colour sums and class counts.

    ``inst_idx`` holds compact instance indices (−1 = none), ``sem_idx`` compact class indices
    (−1 = unlabeled; ignored for the majority).
    """
    lo = np.full((n_inst, 3), np.inf)
    hi = np.full((n_inst, 3), -np.inf)
    count = np.zeros(n_inst, np.int64)
    csum = np.zeros((n_inst, 3), np.int64)
    ccount = np.zeros((n_inst, max(n_classes, 1)), np.int64)
    for i in range(xyz.shape[0]):
        k = inst_idx[i]
        if k < 0:
            continue
        count[k] += 1
        for a in range(3):
            v = np.float64(xyz[i, a])
            if v < lo[k, a]:
                lo[k, a] = v
            if v > hi[k, a]:
                hi[k, a] = v
        if has_rgb:
            for a in range(3):
                csum[k, a] += rgb[i, a]
        if n_classes > 0:
            s = sem_idx[i]
            if s >= 0:
                ccount[k, s] += 1
    return lo, hi, count, csum, ccount
