"""LAZ point records straight from lazrs: the chunk table, every core, only the layers asked for.

:class:`urbex.io.las.LasReader` reads a LAZ file on disk through here: the compressed chunks
are memory-mapped and handed to ``lazrs.decompress_points_with_chunk_table`` a group of
whole chunks at a time (lazrs decompresses a group's chunks in parallel, on all cores, into
one buffer reused group after group), instead of through laspy's reader, which pulls the
compressed bytes through a Python file object. The records are the bytes laspy would decode
(same lazrs, same selection). Anything unusual (no chunk table, a table that does not add up
to the header's point count or runs past the end of the file, a record layout laspy would
pad) makes :func:`laz_record_groups` return None, and the caller reads with laspy, whose
errors name the problem; a decoding error is raised as :data:`FALLBACK_ERRORS` for the same
reason.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["FALLBACK_ERRORS", "laz_record_groups"]


class _LazrsPanic(Exception):
    """A lazrs (Rust) panic, re-raised as an ordinary exception."""


#: What a direct read may raise; the caller then reads the file with laspy instead.
FALLBACK_ERRORS: tuple[type[BaseException], ...] = (OSError, ValueError, _LazrsPanic)


def _chunk_table(path: str | os.PathLike[str], header: Any, vlr: Any) -> list[tuple[int, int]]:
    """``(points, bytes)`` per chunk; a fixed-size table's last chunk gets the points left."""
    import lazrs

    with open(path, "rb") as f:
        f.seek(int(header.offset_to_point_data))
        table = [(int(c), int(b)) for c, b in lazrs.read_chunk_table(f, vlr)]
    if table and not vlr.uses_variable_size_chunks():
        before = sum(c for c, _ in table[:-1])
        table[-1] = (int(header.point_count) - before, table[-1][1])
    return table


def laz_record_groups(
    path: str | os.PathLike[str], header: Any, selection: Any, max_points: int
) -> Iterator[NDArray] | None:
    """Decompressed point records of a LAZ file, a group of whole chunks at a time.

    Parameters
    ----------
    path
        The ``.laz`` file.
    header : laspy.LasHeader
        Its header (point format, counts, offset of the point data, the LASzip VLR).
    selection : laspy.DecompressionSelection
        The layers to decompress (others come out as zeros).
    max_points : int
        Points per group, at least one chunk.

    Returns
    -------
    iterator of ndarray, or None
        Structured arrays of the point format's dtype, in file order; each is a view of a
        buffer the next one overwrites. None when the file needs laspy's reader.
    """
    import lazrs

    try:
        record = header.vlrs.get("LasZipVlr")[0].record_data
        vlr = lazrs.LazVlr(record)
        dtype = header.point_format.dtype()
        if dtype.itemsize != int(vlr.item_size()) or dtype.itemsize != header.point_format.size:
            return None
        table = _chunk_table(path, header, vlr)
    except (IndexError, AttributeError, lazrs.LazrsError, *FALLBACK_ERRORS):
        return None
    n = int(header.point_count)
    start = int(header.offset_to_point_data) + 8  # after the offset to the chunk table
    total = sum(b for _, b in table)
    counts_ok = all(c > 0 and b > 0 for c, b in table) and sum(c for c, _ in table) == n
    if not table or not counts_ok or start + total > os.path.getsize(path):
        return None
    groups: list[tuple[int, int]] = []  # chunk index ranges of about max_points points
    a = 0
    while a < len(table):
        b, points = a, 0
        while b < len(table) and (b == a or points + table[b][0] <= max_points):
            points += table[b][0]
            b += 1
        groups.append((a, b))
        a = b
    return _decompress(path, start, table, groups, record, dtype, selection.to_lazrs())


def _decompress(
    path: str | os.PathLike[str],
    start: int,
    table: list[tuple[int, int]],
    groups: list[tuple[int, int]],
    record: bytes,
    dtype: np.dtype,
    selection: Any,
) -> Iterator[NDArray]:
    import lazrs

    data = np.memmap(path, np.uint8, mode="r", offset=start, shape=(sum(b for _, b in table),))
    biggest = max(sum(c for c, _ in table[a:b]) for a, b in groups)
    buf = np.empty(biggest * dtype.itemsize, np.uint8)
    pos = 0
    for a, b in groups:
        part = table[a:b]
        size = sum(nb for _, nb in part)
        points = sum(c for c, _ in part)
        out = buf[: points * dtype.itemsize]
        try:
            lazrs.decompress_points_with_chunk_table(
                data[pos : pos + size], record, out, part, selection
            )
        except lazrs.LazrsError as e:
            raise ValueError(str(e)) from e
        except BaseException as e:  # a Rust panic is a BaseException (pyo3's PanicException)
            if isinstance(e, Exception) or type(e).__name__ != "PanicException":
                raise
            raise _LazrsPanic(str(e)) from None
        pos += size
        yield out.view(dtype)
