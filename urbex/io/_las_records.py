"""One pass over LAS point records: coordinates, colours and classes, as numba writes them.

Private to :mod:`urbex.io.las`: :meth:`LasReader._convert` hands the record fields (strided
views of mapped or decompressed records, no copies) to :func:`convert_records`, which writes
each output once (numpy would make a pass per field and per operation, and a temporary for
the low bits of an old-format class byte).
"""

from __future__ import annotations

import numba as nb
import numpy as np
from numpy.typing import NDArray

__all__ = ["RawRecords", "convert_raw", "convert_records"]


class RawRecords:
    """Mapped or decompressed LAS point records as the mapping ``LasReader._convert`` reads.

    ``classification`` of point formats 0–5 is the low 5 bits of the raw classification byte.
    """

    def __init__(self, recs: NDArray) -> None:
        self.records = recs

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, name: str) -> NDArray:
        names = self.records.dtype.names or ()
        if name == "classification" and name not in names:
            return self.records["raw_classification"] & np.uint8(31)
        return self.records[name]


def convert_raw(
    recs: NDArray, scale: NDArray, shift: NDArray, xyz: NDArray, has_rgb: bool
) -> tuple[NDArray | None, NDArray, NDArray]:
    """:func:`convert_records` of structured records: ``(rgb or None, semantic, ends)``.

    ``xyz`` (N, 3) float64 is filled; ``ends`` (3, 2) are the coordinates (``count · scale +
    shift``) of the smallest and largest count per axis, for the range check.
    """
    n = len(recs)
    old = "classification" not in (recs.dtype.names or ())
    rgb = np.empty((n if has_rgb else 0, 3), np.uint16)
    colours = (recs["red"], recs["green"], recs["blue"]) if has_rgb else (recs["X"],) * 3
    semantic = np.empty(n, np.int32)
    lohi = convert_records(
        recs["X"], recs["Y"], recs["Z"], scale, shift, xyz, *colours, has_rgb, rgb,
        recs["raw_classification" if old else "classification"], 31 if old else 255, semantic,
    )  # fmt: skip
    ends = lohi.astype(np.float64) * scale[:, None] + shift[:, None]
    return (rgb if has_rgb else None), semantic, ends


@nb.njit(cache=True, nogil=True)
def convert_records(
    X, Y, Z, scale, shift, xyz, red, green, blue, has_rgb, rgb, cls, cls_mask, sem
):  # pragma: no cover - compiled
    """Fill ``xyz`` (N, 3) float64, ``rgb`` (N, 3) uint16 and ``sem`` (N,) int32 from records.

    ``xyz[i, a] = float64(count) · scale[a] + shift[a]`` (the operations of numpy's
    multiply-then-add, so the same bits); ``sem[i] = cls[i] & cls_mask`` (31: the class bits of
    point formats 0–5). Returns the (3, 2) min and max integer counts per axis.
    """
    lohi = np.empty((3, 2), np.int64)
    for a in range(3):
        lohi[a, 0] = np.iinfo(np.int64).max
        lohi[a, 1] = np.iinfo(np.int64).min
    for i in range(X.shape[0]):
        x = X[i]
        y = Y[i]
        z = Z[i]
        lohi[0, 0] = min(lohi[0, 0], x)
        lohi[0, 1] = max(lohi[0, 1], x)
        lohi[1, 0] = min(lohi[1, 0], y)
        lohi[1, 1] = max(lohi[1, 1], y)
        lohi[2, 0] = min(lohi[2, 0], z)
        lohi[2, 1] = max(lohi[2, 1], z)
        xyz[i, 0] = np.float64(x) * scale[0] + shift[0]
        xyz[i, 1] = np.float64(y) * scale[1] + shift[1]
        xyz[i, 2] = np.float64(z) * scale[2] + shift[2]
        if has_rgb:
            rgb[i, 0] = red[i]
            rgb[i, 1] = green[i]
            rgb[i, 2] = blue[i]
        sem[i] = np.int32(cls[i] & cls_mask)
    return lohi
