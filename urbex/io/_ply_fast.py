"""One-pass decoding of binary PLY vertex rows: xyz, colours, labels and bounds in one loop.

Used by :mod:`urbex.io.ply` for files whose vertex layout it can describe (native byte order,
``x y z`` all ``float`` or all ``double``, colours ``uchar``, integer labels, any property order
and any extra properties). The rows are viewed, without a copy, through a *canonical* record
dtype whose fields ``x y z r g b sem inst`` sit at the file's byte offsets; one numba loop then
writes each output array once and collects the per-axis bounds the coordinate check needs.
numpy would make one strided pass per property (and several for the checks) instead.

numba compiles the loop once per distinct row layout (about two seconds) and caches it on disk;
:data:`FAST_MIN_POINTS` keeps small files, for which that would not pay, on the numpy path.
"""

from __future__ import annotations

import mmap
import sys
from dataclasses import dataclass

import numba as nb
import numpy as np
from numpy.typing import NDArray

from urbex.io._ply_header import PLY_TYPES, PlyElement

__all__ = ["FAST_MIN_POINTS", "Decoded", "FastLayout", "decode_rows", "fast_layout"]

#: Files (or chunks) with fewer vertices are read by the numpy path: loading the compiled loop
#: costs ~0.3 s per process (~2 s to compile a new layout once), more than numpy needs for them.
FAST_MIN_POINTS = 1 << 20
_NATIVE = "<" if sys.byteorder == "little" else ">"
_INT_CODES = frozenset({"i1", "u1", "i2", "u2", "i4", "u4"})


@dataclass(frozen=True, slots=True, kw_only=True)
class FastLayout:
    """A vertex row layout the one-pass decoder handles.

    Attributes
    ----------
    view : numpy.dtype
        Record dtype of one file row (same itemsize) with fields ``x y z r g b sem inst`` at
        the file's offsets; an absent attribute's field is a ``u1`` alias of byte 0.
    xyz_dtype : numpy.dtype
        float32 (``float`` coordinates) or float64 (``double``).
    has_rgb, has_sem, has_inst : bool
        Which attributes the file holds.
    """

    view: np.dtype
    xyz_dtype: np.dtype
    has_rgb: bool
    has_sem: bool
    has_inst: bool


def fast_layout(
    vertex: PlyElement,
    byte_order: str,
    semantic_name: str | None,
    instance_name: str | None,
) -> FastLayout | None:
    """The canonical view of ``vertex``'s rows, or None when the numpy path must read them.

    ``semantic_name``/``instance_name`` are the properties chosen as labels (None: absent).
    None for a foreign byte order, mixed or integer coordinate types, colours other than
    three ``uchar`` properties (or none), float labels, or list properties.
    """
    if byte_order != _NATIVE or vertex.has_list:
        return None
    row = vertex.dtype(byte_order)
    fields = row.fields
    assert fields is not None
    codes = {p.name: PLY_TYPES[p.type_name] for p in vertex.properties}
    xyz_codes = {codes[a] for a in "xyz"}
    if xyz_codes not in ({"f4"}, {"f8"}):
        return None
    xyz_code = xyz_codes.pop()
    colours = [c for c in ("red", "green", "blue") if c in codes]
    if len(colours) == 3 and any(codes[c] != "u1" for c in colours):
        return None
    has_rgb = len(colours) == 3
    names = ["x", "y", "z", "r", "g", "b", "sem", "inst"]
    formats: list[str] = [_NATIVE + xyz_code] * 3
    offsets = [int(fields[a][1]) for a in "xyz"]
    for c in ("red", "green", "blue"):
        formats.append("u1")
        offsets.append(int(fields[c][1]) if has_rgb else 0)
    for label in (semantic_name, instance_name):
        if label is None:
            formats.append("u1")
            offsets.append(0)
            continue
        if codes[label] not in _INT_CODES:
            return None
        formats.append(_NATIVE + codes[label])
        offsets.append(int(fields[label][1]))
    view = np.dtype(
        {"names": names, "formats": formats, "offsets": offsets, "itemsize": row.itemsize}
    )
    return FastLayout(
        view=view,
        xyz_dtype=np.dtype(xyz_code),
        has_rgb=has_rgb,
        has_sem=semantic_name is not None,
        has_inst=instance_name is not None,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Decoded:
    """What :func:`decode_rows` returns: the arrays and the coordinate bounds.

    ``lo``/``hi`` are per-axis (3,) float64 bounds of the finite coordinates; ``finite`` is
    False when a coordinate is NaN or infinite.
    """

    xyz: NDArray
    rgb: NDArray | None
    semantic: NDArray | None
    instance: NDArray | None
    lo: NDArray[np.float64]
    hi: NDArray[np.float64]
    finite: bool


def decode_rows(rows: NDArray, layout: FastLayout) -> Decoded:
    """Decode file rows (any ndarray of the file's row bytes) in one pass.

    Parameters
    ----------
    rows
        (N,) array of the vertex rows whose dtype has ``layout.view.itemsize`` bytes (a
        memory map is read in place, nothing is copied but the outputs).
    layout
        From :func:`fast_layout`.

    Returns
    -------
    Decoded
        ``xyz`` (N, 3) in ``layout.xyz_dtype`` (file coordinates, no offset applied), ``rgb``
        (N, 3) uint8, ``semantic``/``instance`` (N,) int32 (None when absent).
    """
    n = len(rows)
    recs = np.asarray(rows).view(np.ndarray).view(layout.view)
    xyz = np.empty((n, 3), layout.xyz_dtype)
    rgb = np.empty((n if layout.has_rgb else 0, 3), np.uint8)
    sem = np.empty(n if layout.has_sem else 0, np.int32)
    inst = np.empty(n if layout.has_inst else 0, np.int32)
    bounds = np.array([np.inf, np.inf, np.inf, -np.inf, -np.inf, -np.inf])
    finite = True
    pages = _MappedPages.of(rows)
    step = max(1, _SLICE_BYTES // max(1, recs.itemsize))
    for a in range(0, n, step):  # slice by slice: the bounds carry over, the same result
        b = min(n, a + step)
        finite &= bool(_decode(recs[a:b], xyz[a:b], rgb[a:b], layout.has_rgb, sem[a:b],
                               layout.has_sem, inst[a:b], layout.has_inst, bounds))  # fmt: skip
        if pages is not None:
            pages.release(recs[a:b])
    return Decoded(
        xyz=xyz,
        rgb=rgb if layout.has_rgb else None,
        semantic=sem if layout.has_sem else None,
        instance=inst if layout.has_inst else None,
        lo=bounds[:3],
        hi=bounds[3:],
        finite=bool(finite),
    )


#: Rows are decoded in slices of this many bytes; a memory-mapped slice's pages are then
#: dropped from the process (they stay in the page cache), so reading a file does not add
#: its size to the peak RSS on top of the decoded arrays.
_SLICE_BYTES = 64 << 20


class _MappedPages:
    """The file pages under a ``numpy.memmap``, to drop from the process once read."""

    def __init__(self, mm: mmap.mmap, base: int) -> None:
        self._mm = mm
        self._base = base

    @classmethod
    def of(cls, rows: NDArray) -> _MappedPages | None:
        mm = getattr(rows, "_mmap", None)
        if not isinstance(mm, mmap.mmap) or not hasattr(mmap, "MADV_DONTNEED"):
            return None
        return cls(mm, np.frombuffer(mm, np.uint8).ctypes.data)

    def release(self, rows: NDArray) -> None:
        """``madvise(MADV_DONTNEED)`` the whole pages under ``rows`` (a slice of the map)."""
        page = mmap.PAGESIZE
        start = rows.ctypes.data - self._base
        end = start + rows.nbytes
        lo = -(-start // page) * page
        hi = end // page * page
        if hi > lo:
            try:
                self._mm.madvise(mmap.MADV_DONTNEED, lo, hi - lo)
            except (OSError, ValueError):  # pragma: no cover - advice only
                pass


@nb.njit(cache=True, nogil=True)
def _decode(recs, xyz, rgb, has_rgb, sem, has_sem, inst, has_inst, bounds):  # pragma: no cover
    """Copy each record's fields to the outputs; min/max of x, y, z; False on NaN/inf.

    Bounds skip NaN (it fails every comparison); ``v - v != 0`` flags NaN and ±inf.
    """
    lx = bounds[0]
    ly = bounds[1]
    lz = bounds[2]
    hx = bounds[3]
    hy = bounds[4]
    hz = bounds[5]
    finite = True
    for i in range(recs.shape[0]):
        r = recs[i]
        x = r.x
        y = r.y
        z = r.z
        xyz[i, 0] = x
        xyz[i, 1] = y
        xyz[i, 2] = z
        if (x - x) != 0 or (y - y) != 0 or (z - z) != 0:
            finite = False
        if x < lx:
            lx = x
        if x > hx:
            hx = x
        if y < ly:
            ly = y
        if y > hy:
            hy = y
        if z < lz:
            lz = z
        if z > hz:
            hz = z
        if has_rgb:
            rgb[i, 0] = r.r
            rgb[i, 1] = r.g
            rgb[i, 2] = r.b
        if has_sem:
            sem[i] = r.sem
        if has_inst:
            inst[i] = r.inst
    bounds[0] = lx
    bounds[1] = ly
    bounds[2] = lz
    bounds[3] = hx
    bounds[4] = hy
    bounds[5] = hz
    return finite
