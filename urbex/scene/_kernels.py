"""Numba kernels of the BEV rasterization: scatter, hole filling, attribute gather, per band.

Private module: :mod:`urbex.scene.raster` drives these band by band. Frames:

* **cache frame**: world metres minus the cache origin, float32 (``xyz_rel``), points sorted
  by grid cell (:func:`urbex.scene._points.grid_sort`): cell ``cy · ncx + cx`` holds points
  ``offsets[c]:offsets[c + 1]``, ascending index.
* **BEV pixels**: ``col = floor((x_rel − bev_x0) / r)``, ``row = floor((bev_y1 − y_rel) / r)``,
  clamped to the raster, i.e. the GDAL convention of :class:`urbex.geometry.Affine`.

A band's layers are a pure function of, per pixel, the ordered list of points landing in it:
z max is the first highest point's z and ``winner`` its index, z min the first lowest z. So
any schedule that visits each pixel's points in ascending index gives the same bytes; the
cell-by-cell scatter below relies on it. Every kernel is a plain loop compiled with
``numba.njit(cache=True, nogil=True)``; none allocates per point.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

__all__: list[str] = []  # private module


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
    zmax, zmin, winner, xyz, rgb, has_rgb, sem, has_sem, inst, has_inst, zlo, zhi, z_origin,
    out_rgb, out_sem, out_inst,
):  # pragma: no cover  # fmt: skip
    """Per pixel, the winner's colour/class/instance into the band layers; heights to world.

    Empty pixels (``zmax`` −inf; their ``winner`` is undefined) get black, −1, −1 and NaN
    heights; the others get ``zmax``/``zmin + float32(z_origin)`` (cache frame → world
    metres). Without colours, the pixel colour is a grey ramp of the winner's height between
    ``zlo`` and ``zhi`` (cache frame).
    """
    h, w = winner.shape
    zspan = zhi - zlo
    if zspan <= 0.0:
        zspan = 1.0
    zo = np.float32(z_origin)
    for r in range(h):
        for c in range(w):
            if zmax[r, c] == -np.inf:
                out_rgb[r, c, 0] = 0
                out_rgb[r, c, 1] = 0
                out_rgb[r, c, 2] = 0
                out_sem[r, c] = -1
                out_inst[r, c] = -1
                zmax[r, c] = np.nan
                zmin[r, c] = np.nan
                continue
            i = np.uint64(winner[r, c])
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
            zmax[r, c] = zmax[r, c] + zo
            zmin[r, c] = zmin[r, c] + zo


@nb.njit(cache=True, nogil=True)
def _spans(first, step, n, limit, lo_clip, hi_clip, lo_out, hi_out):  # pragma: no cover
    """Pixel index span ``[lo_out[k], hi_out[k]]`` of grid line ``k`` (``n`` cells).

    Cell ``k`` covers ``[first + k·step, first + (k + 1)·step)`` in pixel units (``step`` < 0
    for rows, which grow downwards); the span is widened by one pixel on each side for
    rounding and clipped to ``[lo_clip, hi_clip]`` (empty when ``lo_out > hi_out``).
    """
    for k in range(n):
        a = first + k * step
        b = first + (k + 1) * step
        lo = math.floor(min(a, b)) - 1
        hi = math.floor(max(a, b)) + 1
        lo_out[k] = max(lo, lo_clip)
        hi_out[k] = min(hi, hi_clip)
        if hi_out[k] > limit:
            hi_out[k] = limit


@nb.njit(cache=True, nogil=True)
def scatter_cells(
    xyz, offsets, gx0, gy0, cell, ncx, cy_lo, cy_hi, bx0, by1, res, width, height, row0,
    zmax, zmin, winner,
):  # pragma: no cover  # fmt: skip
    """:func:`scatter_band` of the points of cell rows ``cy_lo..cy_hi``, one grid cell at a time.

    Same contract and the same bytes as ``scatter_band(xyz, offsets[cy_lo·ncx],
    offsets[(cy_hi + 1)·ncx], ...)`` (each pixel sees its points in ascending index); returns
    False (band left undefined) if a point lands outside the pixels its cell can reach, so that
    the caller falls back to it.

    A cell's points can only reach its pixel span (plus a pixel of margin for rounding). Just
    before a cell's points, the part of its span no earlier cell could reach is set empty
    (rows above the previous cell row's spans, columns right of the previous cell column's),
    so the band is set up piece by piece while the points that land there are about to use
    it (in cache), each pixel once, instead of row by row ahead of the points (evicted by the
    time the other cells of the row come). Pixels no cell reaches are set empty at the end.
    """
    nrows = zmax.shape[0]
    r_end = row0 + nrows
    inv = 1.0 / res
    ninf = np.float32(-np.inf)
    c_lo = np.empty(ncx, np.int64)
    c_hi = np.empty(ncx, np.int64)
    _spans(0.0, cell * inv, ncx, width - 1, 0, width - 1, c_lo, c_hi)
    ncr = cy_hi - cy_lo + 1
    r_lo = np.empty(max(ncr, 0), np.int64)
    r_hi = np.empty(max(ncr, 0), np.int64)
    _spans((by1 - gy0) * inv - cy_lo * cell * inv, -cell * inv, ncr, height - 1, row0, r_end - 1,
           r_lo, r_hi)  # fmt: skip
    new_lo = np.empty(ncx, np.int64)  # first column no earlier cell column reaches
    reach = -1
    for k in range(ncx):
        new_lo[k] = max(c_lo[k], reach + 1)
        reach = max(reach, c_hi[k])
    zf = zmax.reshape(-1)
    nf = zmin.reshape(-1)
    wf = winner.reshape(-1)
    w64 = np.uint64(width)
    top = r_end  # rows top.. are set up (cell rows go up the band: rows decrease)
    for k in range(ncr):
        ra = r_lo[k]
        rb = r_hi[k]
        if rb < ra:  # no pixel of the band: a point landing in it fails the test below
            ra = rb = top
        first = min(ra, top)
        cy = cy_lo + k
        for cx in range(ncx):
            for r in range(first, top):  # this cell's new rows × its new columns: empty
                p0 = np.uint64(r - row0) * w64  # unsigned indices: no wraparound tests
                for c in range(np.uint64(new_lo[cx]), np.uint64(c_hi[cx] + 1)):
                    zf[p0 + c] = ninf
            ca = c_lo[cx]
            cb = c_hi[cx]
            i0 = np.uint64(offsets[cy * ncx + cx])
            for i in range(i0, np.uint64(offsets[cy * ncx + cx + 1])):
                row = int((by1 - np.float64(xyz[i, 1])) * inv)
                if row >= height:
                    row = height - 1
                if row < row0 or row >= r_end:
                    continue
                col = int((np.float64(xyz[i, 0]) - bx0) * inv)
                if col >= width:
                    col = width - 1
                elif col < 0:
                    col = 0
                if row < ra or row > rb or col < ca or col > cb:
                    return False
                p = np.uint64(row - row0) * w64 + np.uint64(col)
                z = xyz[i, 2]
                t = zf[p]
                if t == ninf:  # first point of the pixel (z is finite)
                    zf[p] = z
                    nf[p] = z
                    wf[p] = i
                elif z > t:
                    zf[p] = z
                    wf[p] = i
                elif z < nf[p]:
                    nf[p] = z
        top = first
    for r in range(row0, top):  # above every cell row's span
        zmax[r - row0, :] = ninf
    return True


@nb.njit(cache=True, nogil=True)
def _hmax_row(z, hv, hk):  # pragma: no cover - compiled
    """``hv[c]``: max of ``z[c−1], z[c], z[c+1]`` (outside the row: −inf); ``hk[c]``: the
    first of them holding it, as ``dc + 1``. Branch-free, so that it vectorises."""
    w = z.shape[0]
    for c in range(1, w - 1):
        a = z[c - 1]
        b = z[c]
        d = z[c + 1]
        gb = b > a
        m = b if gb else a
        k = np.int8(1) if gb else np.int8(0)
        gd = d > m
        hv[c] = d if gd else m
        hk[c] = np.int8(2) if gd else k
    for c in (0, w - 1):
        m = np.float32(-np.inf)
        k = np.int8(0)
        for dc in range(3):
            cc = c + dc - 1
            if 0 <= cc < w and z[cc] > m:
                m = z[cc]
                k = np.int8(dc)
        hv[c] = m
        hk[c] = k


@nb.njit(cache=True, nogil=True)
def _pick_row(z, hu, ku, hm, km, hd, kd, pick):  # pragma: no cover - compiled
    """Per pixel of a row: −1, or for an empty pixel with a valid 8-neighbour, the code
    ``(dr + 1)·3 + dc + 1`` of the highest neighbour, the first in scan order on ties.

    ``hu/hm/hd`` are the row maxima (:func:`_hmax_row`) of the rows above, this one and below
    (−inf rows outside the band). The highest of the nine is the first row holding the
    maximum, at its first column holding it; the pixel itself is −inf and never wins.
    """
    w = z.shape[0]
    ninf = np.float32(-np.inf)
    count = 0
    for c in range(w):  # selects as arithmetic: LLVM keeps them branch-free (4-5× faster)
        best = hu[c]
        code = np.int32(ku[c])
        v = hm[c]
        g = np.int32(v > best)
        best = max(best, v)  # the value only feeds comparisons: which of equal values is moot
        code += g * (np.int32(km[c]) + 3 - code)
        v = hd[c]
        g = np.int32(v > best)
        best = max(best, v)
        code += g * (np.int32(kd[c]) + 6 - code)
        ok = np.int32(z[c] == ninf) & np.int32(best > ninf)
        pick[c] = np.int8(ok * (code + 1) - 1)
        count += ok
    return count


@nb.njit(cache=True, nogil=True)
def _fill_row(zmax, zmin, winner, filled, r, pick, count):  # pragma: no cover - compiled
    """Row ``r`` takes z max, z min and the winner of each pixel's picked neighbour.

    ``count`` pixels of the row have a pick: when they are many, every pixel copies from its
    pick or from itself, branch-free (the sources are valid pixels, which a pass never
    writes, so copying in place is safe); when few, only the picked pixels are visited.
    """
    w = pick.shape[0]
    zf = zmax.reshape(-1)
    nf = zmin.reshape(-1)
    wf = winner.reshape(-1)
    base = r * w
    if 4 * count >= w:
        for c in range(w):
            k = np.int64(pick[c])
            hit = k >= 0
            k = k if hit else np.int64(4)  # 4: the pixel itself
            src = np.uint64(base + c + (k // 3 - 1) * w + (k % 3 - 1))
            dst = np.uint64(base + c)
            zf[dst] = zf[src]
            nf[dst] = nf[src]
            wf[dst] = wf[src]
            filled[r, c] = filled[r, c] | hit
        return
    for c in range(w):
        k = np.int64(pick[c])
        if k < 0:
            continue
        src = np.uint64(base + c + (k // 3 - 1) * w + (k % 3 - 1))
        dst = np.uint64(base + c)
        zf[dst] = zf[src]
        nf[dst] = nf[src]
        wf[dst] = wf[src]
        filled[r, c] = True


@nb.njit(cache=True, nogil=True)
def fill_holes(zmax, zmin, winner, filled, iterations):  # pragma: no cover - compiled
    """Fill empty pixels (``zmax == -inf``) from their highest valid 8-neighbour.

    Each pass fills every empty pixel that has at least one valid 8-neighbour (valid at the
    start of the pass) with the z max, z min and winner of the neighbour with the highest
    ``zmax`` (first in scan order on ties: rows from the top, columns from the left) and sets
    ``filled``; :func:`resolve_band` then gives it the winner's colour, class and instance.
    At most ``iterations`` passes; stops early when a pass fills nothing. A pixel's result
    depends only on input within ``iterations`` pixels. A pass runs row by row and fills row
    ``r`` right after picking its sources, from the row maxima (:func:`_hmax_row`) of rows
    ``r − 1 .. r + 1``; each row's maxima are taken before the row is filled, and filling
    writes only empty pixels, so every pick sees the start-of-pass state.
    """
    h, w = zmax.shape
    if iterations <= 0 or h == 0 or w == 0:
        return
    hv = np.empty((3, w), np.float32)
    hk = np.empty((3, w), np.int8)
    none_v = np.full(w, -np.inf, np.float32)
    none_k = np.zeros(w, np.int8)
    pick = np.empty(w, np.int8)
    for _ in range(iterations):
        n = 0
        _hmax_row(zmax[0], hv[0], hk[0])
        for r in range(h):
            if r + 1 < h:
                _hmax_row(zmax[r + 1], hv[(r + 1) % 3], hk[(r + 1) % 3])
                hd = hv[(r + 1) % 3]
                kd = hk[(r + 1) % 3]
            else:
                hd = none_v
                kd = none_k
            if r > 0:
                hu = hv[(r - 1) % 3]
                ku = hk[(r - 1) % 3]
            else:
                hu = none_v
                ku = none_k
            count = _pick_row(zmax[r], hu, ku, hv[r % 3], hk[r % 3], hd, kd, pick)
            if count:
                _fill_row(zmax, zmin, winner, filled, r, pick, count)
                n += count
        if n == 0:
            return


@nb.njit(cache=True, nogil=True)
def rasterize_band(
    xyz, offsets, gx0, gy0, cell, ncx, cy_lo, cy_hi, rgb, has_rgb, sem, has_sem, inst, has_inst,
    bx0, by1, res, width, height, row0, zlo, zhi, iterations, z_origin,
    winner, zmax, zmin, o_rgb, o_sem, o_inst, filled,
):  # pragma: no cover  # fmt: skip
    """All BEV layers of raster rows ``row0 : row0 + zmax.shape[0]`` from cell rows
    ``cy_lo..cy_hi``.

    :func:`scatter_cells` (or :func:`scatter_band` should a point stray from its cell's
    span), :func:`fill_holes`, :func:`resolve_band` (heights to world metres, NaN where
    still empty). Every array comes in from the caller
    with any content (buffers reused band after band: no page faults per band) and shape
    ``(nrows, width)`` (``o_rgb`` ``(nrows, width, 3)``): ``winner`` is scratch, int32 (int64
    beyond 2³¹ points); on return ``zmax``, ``zmin`` (float32), ``o_rgb`` (uint8), ``o_sem``
    (int16), ``o_inst`` (int32) and ``filled`` (bool) hold the band's layers.
    """
    if not scatter_cells(
        xyz, offsets, gx0, gy0, cell, ncx, cy_lo, cy_hi, bx0, by1, res, width, height, row0,
        zmax, zmin, winner,
    ):  # fmt: skip
        lo = offsets[cy_lo * ncx]
        hi = offsets[(cy_hi + 1) * ncx]
        scatter_band(xyz, lo, hi, bx0, by1, res, width, height, row0, zmax, zmin, winner)
    filled[:] = False
    fill_holes(zmax, zmin, winner, filled, iterations)
    resolve_band(
        zmax, zmin, winner, xyz, rgb, has_rgb, sem, has_sem, inst, has_inst, zlo, zhi, z_origin,
        o_rgb, o_sem, o_inst,
    )  # fmt: skip
