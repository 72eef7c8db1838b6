"""Area-weighted (box filter) resampling of BEV rasters: the global view, zoom windows.

Private module: :mod:`urbex.scene.raster` (the global view, band by band) and
:mod:`urbex.scene.cache` (``bev_window``) call these. Source pixel ``(row, col)`` covers
``[col, col + 1) × [row, row + 1)`` in source pixel units; NaN heights mark empty pixels,
which carry no weight. Every kernel is compiled with ``numba.njit(cache=True, nogil=True)``.
"""

from __future__ import annotations

import numba as nb
import numpy as np

__all__: list[str] = []  # private module


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
    band (each output pixel sums its sources in row-major source order). Per source row and
    output pixel, the sums run in registers over that pixel's source columns, in the same
    order and with the same operations as one addition per source pixel (the same bits).
    """
    ho, wo = wsum.shape
    nr, nc = src_rgb.shape[0], src_rgb.shape[1]
    rptr, ridx, rwt = _overlaps(y_start, sy, ho, src_r0, src_r0 + nr)
    cptr, cidx, cwt = _overlaps(x_start, sx, wo, src_c0, src_c0 + nc)
    ccnt, csrc, cw = _transpose_csr(cptr, cidx, cwt, wo, src_c0)
    acc_f = acc.reshape(-1)
    for rr in range(nr):
        zrow = src_z[rr]
        rgb_row = src_rgb[rr]
        for e in range(rptr[rr], rptr[rr + 1]):
            o = np.uint64(ridx[e])
            wy = rwt[e]
            for p in range(np.uint64(wo)):
                f0 = np.uint64(ccnt[p])
                f1 = np.uint64(ccnt[p + np.uint64(1)])
                if f0 == f1:
                    continue
                k = (o * np.uint64(wo) + p) * np.uint64(3)
                a0 = acc_f[k]
                a1 = acc_f[k + np.uint64(1)]
                a2 = acc_f[k + np.uint64(2)]
                ws = wsum[o, p]
                for f in range(f0, f1):
                    cc = np.uint64(csrc[f] - src_c0)
                    if np.isnan(zrow[cc]):
                        continue
                    wgt = cw[f] * wy
                    a0 += wgt * rgb_row[cc, 0]
                    a1 += wgt * rgb_row[cc, 1]
                    a2 += wgt * rgb_row[cc, 2]
                    ws += wgt
                acc_f[k] = a0
                acc_f[k + np.uint64(1)] = a1
                acc_f[k + np.uint64(2)] = a2
                wsum[o, p] = ws


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
