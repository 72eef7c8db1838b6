"""PLY header parsing: elements, properties, format and the data start offset.

Used by :mod:`urbex.io.ply`; the header is plain ASCII up to ``end_header`` whatever the
body's format. See http://paulbourke.net/dataformats/ply/ for the grammar.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import IO

import numpy as np

from urbex.errors import PointCloudFormatError

__all__ = [
    "PLY_TYPES",
    "PlyElement",
    "PlyHeader",
    "PlyProperty",
    "parse_header",
    "read_header_bytes",
]

PLY_TYPES: dict[str, str] = {
    "char": "i1",
    "int8": "i1",
    "uchar": "u1",
    "uint8": "u1",
    "short": "i2",
    "int16": "i2",
    "ushort": "u2",
    "uint16": "u2",
    "int": "i4",
    "int32": "i4",
    "uint": "u4",
    "uint32": "u4",
    "float": "f4",
    "float32": "f4",
    "double": "f8",
    "float64": "f8",
}
_FORMATS = {"binary_little_endian": "<", "binary_big_endian": ">", "ascii": "="}
_MAX_HEADER = 1 << 20


@dataclass(frozen=True, slots=True, kw_only=True)
class PlyProperty:
    """One property of a PLY element.

    Attributes
    ----------
    name : str
        Property name as in the header.
    type_name : str
        PLY type (for a list property, the item type).
    is_list : bool
        True for ``property list <count type> <item type> <name>``.
    """

    name: str
    type_name: str
    is_list: bool = False

    def __post_init__(self) -> None:
        if self.type_name not in PLY_TYPES:
            raise ValueError(f"PlyProperty.type_name: expected one of {sorted(PLY_TYPES)}")


@dataclass(frozen=True, slots=True, kw_only=True)
class PlyElement:
    """One element (``vertex``, ``face``, ...) of a PLY file: its row count and properties."""

    name: str
    count: int
    properties: tuple[PlyProperty, ...]

    def __post_init__(self) -> None:
        if self.count < 0:
            raise ValueError(f"PlyElement.count: expected >= 0, got {self.count}")

    def dtype(self, byte_order: str) -> np.dtype:
        """Structured row dtype (packed, given byte order ``'<'``/``'>'``); lists not allowed."""
        return np.dtype([(p.name, byte_order + PLY_TYPES[p.type_name]) for p in self.properties])

    @property
    def has_list(self) -> bool:
        """True if any property is a list (rows have variable size)."""
        return any(p.is_list for p in self.properties)


@dataclass(frozen=True, slots=True, kw_only=True)
class PlyHeader:
    """A parsed PLY header.

    Attributes
    ----------
    format : str
        ``'ascii'``, ``'binary_little_endian'`` or ``'binary_big_endian'``.
    elements : tuple of PlyElement
        In file order.
    comments : tuple of str
        ``comment`` lines, without the keyword.
    data_start : int
        Byte offset of the first data byte (just after ``end_header``).
    """

    format: str
    elements: tuple[PlyElement, ...]
    comments: tuple[str, ...]
    data_start: int

    @property
    def byte_order(self) -> str:
        """numpy byte-order character for binary formats (``'<'`` or ``'>'``)."""
        return _FORMATS[self.format]

    @property
    def crs(self) -> str | None:
        """CRS from a ``comment crs ...`` line, or None."""
        for c in self.comments:
            if c.startswith("crs "):
                return c[4:].strip() or None
        return None

    def element(self, name: str) -> PlyElement | None:
        """The element called ``name``, or None."""
        for e in self.elements:
            if e.name == name:
                return e
        return None


def _err(src: object, msg: str, field: str | None = None) -> PointCloudFormatError:
    path = src if isinstance(src, str | os.PathLike) else None
    if path is None:
        msg = f"{src}: {msg}"
    return PointCloudFormatError(msg, path=path, field=field)


def parse_header(raw: bytes, src: object) -> PlyHeader:
    """Parse the header bytes at the start of ``raw`` (which must contain ``end_header``)."""
    first = raw.split(b"\n", 1)[0].rstrip(b"\r")
    if first != b"ply":
        raise _err(
            src, f"not a PLY file: expected first line 'ply', got {first[:20]!r}", field="magic"
        )
    end = raw.find(b"end_header")
    if end < 0:
        raise _err(src, f"no 'end_header' line in the first {len(raw)} bytes", field="header")
    nl = raw.find(b"\n", end)
    if nl < 0:
        raise _err(src, "file ends right after 'end_header' (no newline, no data)", field="header")
    data_start = nl + 1
    text = raw[:end].decode("ascii", errors="replace")
    fmt: str | None = None
    comments: list[str] = []
    elements: list[tuple[str, int, list[PlyProperty]]] = []
    for lineno, line in enumerate(text.splitlines()[1:], start=2):
        parts = line.split()
        if not parts:
            continue
        kw = parts[0]
        if kw == "format":
            if len(parts) != 3 or parts[1] not in _FORMATS:
                raise _err(
                    src,
                    f"unsupported format line {line.strip()!r} (line {lineno}); expected "
                    f"one of {sorted(_FORMATS)} with version 1.0",
                    field="format",
                )
            fmt = parts[1]
        elif kw in ("comment", "obj_info"):
            comments.append(line.strip()[len(kw) :].strip())
        elif kw == "element":
            if len(parts) != 3 or not parts[2].isdigit():
                raise _err(src, f"bad element line {line.strip()!r} (line {lineno})", "element")
            elements.append((parts[1], int(parts[2]), []))
        elif kw == "property":
            if not elements:
                raise _err(src, f"property before any element (line {lineno})", "property")
            if len(parts) >= 2 and parts[1] == "list":
                if len(parts) != 5:
                    raise _err(src, f"bad list property line {line.strip()!r}", "property")
                _, _, count_t, item_t, name = parts
                for t in (count_t, item_t):
                    if t not in PLY_TYPES:
                        raise _err(
                            src,
                            f"unknown property type {t!r} (line {lineno}); expected one of "
                            f"{sorted(PLY_TYPES)}",
                            field=name,
                        )
                elements[-1][2].append(PlyProperty(name=name, type_name=item_t, is_list=True))
            else:
                if len(parts) != 3:
                    raise _err(src, f"bad property line {line.strip()!r}", "property")
                _, type_name, name = parts
                if type_name not in PLY_TYPES:
                    raise _err(
                        src,
                        f"unknown property type {type_name!r} (line {lineno}); expected one "
                        f"of {sorted(PLY_TYPES)}",
                        field=name,
                    )
                elements[-1][2].append(PlyProperty(name=name, type_name=type_name))
        else:
            raise _err(src, f"unknown header keyword {kw!r} (line {lineno})", field="header")
    if fmt is None:
        raise _err(src, "missing 'format' line in the header", field="format")
    return PlyHeader(
        format=fmt,
        elements=tuple(PlyElement(name=n, count=c, properties=tuple(p)) for n, c, p in elements),
        comments=tuple(comments),
        data_start=data_start,
    )


def read_header_bytes(fh: IO[bytes], src: object) -> bytes:
    buf = b""
    while b"end_header" not in buf or buf.find(b"\n", buf.find(b"end_header")) < 0:
        chunk = fh.read(4096)
        if not chunk:
            break
        buf += chunk
        if len(buf) > _MAX_HEADER and b"end_header" not in buf:
            break
        if not buf.startswith(b"ply"[: len(buf)]):
            break
    return buf
