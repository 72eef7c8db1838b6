"""Sanity checks shared by the point-cloud readers: coordinates, sizes, LAS record lengths.

Each raises (or describes) what a corrupt file looks like before it can crash a later stage:
NaN or astronomically large coordinates, (E)VLR lengths that run past the end of the file.
"""

from __future__ import annotations

import os
import struct
from typing import IO, BinaryIO

import numpy as np
from numpy.typing import NDArray

from urbex.errors import PointCloudFormatError

__all__ = ["MAX_ABS_COORD", "check_coordinates", "las_record_problem", "stream_size"]

#: Largest plausible |coordinate| in metres (a million km): beyond it a value is corrupt data.
MAX_ABS_COORD = 1e9


def _error(src: object, msg: str, field: str) -> PointCloudFormatError:
    if isinstance(src, str | os.PathLike):
        return PointCloudFormatError(msg, path=src, field=field)
    return PointCloudFormatError(f"{src}: {msg}", field=field)


def check_coordinates(
    xyz: NDArray, src: object, *, total: int | None = None, first_row: int = 0
) -> None:
    """Raise :class:`PointCloudFormatError` if a coordinate column is non-finite or absurd.

    A column holding NaN/inf, or a value beyond :data:`MAX_ABS_COORD` metres, is the mark of
    a corrupt body (random bytes, a wrong byte order, a header that lies about the types).

    Parameters
    ----------
    xyz
        (N, 3) coordinates as stored in the file (before any offset is subtracted).
    src
        The file (path or description) named in the message.
    total
        Rows in the whole file, for the message (default N).
    first_row
        File row of ``xyz[0]``.

    Examples
    --------
    >>> check_coordinates(np.zeros((2, 3)), "a.ply")
    >>> check_coordinates(np.array([[0.0, 1.0, 2.0], [np.nan, 1.0, 2.0]]), "a.ply")
    Traceback (most recent call last):
    ...
    urbex.errors.PointCloudFormatError: a.ply: field 'x': of 2 rows, 1 hold NaN/inf (first at row 1: nan); expected finite coordinates in metres: the vertex data is corrupt or not in the header's format
    """
    n = len(xyz)
    if n == 0:
        return
    total = n if total is None else total
    for i, axis in enumerate("xyz"):
        col = xyz[:, i]
        lo, hi = col.min(), col.max()
        if np.isfinite(lo) and np.isfinite(hi) and max(-lo, hi) <= MAX_ABS_COORD:
            continue
        nonfinite = ~np.isfinite(col)
        with np.errstate(invalid="ignore"):
            huge = np.abs(col) > MAX_ABS_COORD  # False for NaN
        bad = nonfinite | huge
        n_nan, n_huge = int(nonfinite.sum()), int(huge.sum()) - int(np.isinf(col).sum())
        what = " and ".join(
            ([f"{n_nan} hold NaN/inf"] if n_nan else [])
            + ([f"{n_huge} lie beyond ±{MAX_ABS_COORD:.0e} m"] if n_huge else [])
        )
        k = int(np.argmax(bad))
        rows = f"{total} rows" if n == total else f"rows {first_row}..{first_row + n - 1}"
        raise _error(
            src,
            f"of {rows}, {what} (first at row {first_row + k}: "
            f"{col[k]:.6g}); expected finite coordinates in metres: the vertex data is corrupt "
            "or not in the header's format",
            field=axis,
        )


def stream_size(path: str | os.PathLike[str] | BinaryIO) -> int | None:
    """Bytes from the current position to the end (None if unknown)."""
    if isinstance(path, str | os.PathLike):
        try:
            return os.path.getsize(path)
        except OSError:
            return None
    if not path.seekable():
        return None
    here = path.tell()
    end = path.seek(0, os.SEEK_END)
    path.seek(here)
    return end - here


def _read_at(fh: IO[bytes], base: int, pos: int, n: int) -> bytes:
    fh.seek(base + pos)
    return fh.read(n)


def las_record_problem(path: str | os.PathLike[str] | BinaryIO, size: int) -> str | None:
    """Why the (E)VLR records of a LAS/LAZ file cannot fit in its ``size`` bytes, or None.

    laspy trusts the record lengths and allocates them before reading; a corrupt length makes
    it ask for gigabytes. Anything that is not a LAS header is left to laspy to report.
    """
    own = isinstance(path, str | os.PathLike)
    fh: IO[bytes]
    if isinstance(path, str | os.PathLike):
        try:
            fh = open(path, "rb")  # closed in the finally below
        except OSError:
            return None  # laspy reports it
    else:
        fh = path
    if not fh.seekable():
        return None
    base = fh.tell()
    try:
        head = _read_at(fh, base, 0, 375)
        if len(head) < 227 or head[:4] != b"LASF":
            return None
        header_size, _, n_vlrs = struct.unpack_from("<HIL", head, 94)
        pos = header_size
        for i in range(min(n_vlrs, 1 + size // 54)):
            vlr = _read_at(fh, base, pos, 54)
            if len(vlr) < 54:
                return f"VLR {i + 1} of {n_vlrs} starts at byte {pos}, past the end of the file"
            pos += 54 + struct.unpack_from("<H", vlr, 20)[0]
        if pos > size:
            return f"the {n_vlrs} VLRs end at byte {pos}, past the end of the file"
        if head[24:26] < bytes([1, 4]) or len(head) < 375:
            return None
        evlr_start, n_evlrs = struct.unpack_from("<QL", head, 235)
        pos = evlr_start
        for i in range(n_evlrs):
            evlr = _read_at(fh, base, pos, 60) if pos < size else b""
            if len(evlr) < 60:
                return (
                    f"extended VLR {i + 1} of {n_evlrs} starts at byte {pos}, past the end of "
                    "the file (truncated?)"
                )
            pos += 60 + struct.unpack_from("<Q", evlr, 20)[0]
            if pos > size:
                return (
                    f"extended VLR {i + 1} of {n_evlrs} ends at byte {pos}, past the end of the "
                    "file (truncated?)"
                )
        return None
    finally:
        if own:
            fh.close()
        else:
            fh.seek(base)
