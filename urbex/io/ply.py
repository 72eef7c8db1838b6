"""PLY point clouds (SensatUrban, STPLS3D, synthetic): header parse + one vectorised read.

Binary PLY (little- or big-endian) is read by parsing the header and mapping the ``vertex``
element with a structured dtype (``np.memmap``; no per-row Python). ASCII PLY goes through
pandas' C parser. Only the ``vertex`` element is read; other elements are skipped (those that
come *before* ``vertex`` in a binary file must have fixed-size rows).

Frames
------
Coordinates are **world metres**. The returned :class:`~urbex.pointcloud.PointCloud` holds
``xyz`` relative to ``offset``. A file storing ``double`` coordinates larger than 1e5 m gets
its bounding-box minimum (floored to whole metres) as ``offset``; otherwise ``offset`` is zero
and ``xyz`` keeps the file's float type.

Properties read
---------------
``x y z`` (any numeric type), ``red green blue`` (uchar; wider integer or 0–1 float colours are
converted), ``class`` / ``label`` / ``scalar_class`` / ``semantic`` (→ ``semantic`` int32),
``instance`` / ``instance_id`` (→ ``instance`` int32). Other properties are ignored. A header
line ``comment crs <WKT or authority>`` (written by :func:`write_ply`) sets ``crs``.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, BinaryIO

import numpy as np
from numpy.typing import NDArray

from urbex.atomic import atomic_write
from urbex.io._checks import MAX_ABS_COORD, check_coordinates
from urbex.io._ply_fast import FAST_MIN_POINTS, FastLayout, decode_rows, fast_layout
from urbex.io._ply_header import (
    PLY_TYPES,
    PlyElement,
    PlyHeader,
    PlyProperty,
    _err,
    parse_header,
    read_header_bytes,
)
from urbex.pointcloud import PointCloud

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "PLY_TYPES",
    "PlyElement",
    "PlyHeader",
    "PlyProperty",
    "PlyReader",
    "read_ply",
    "write_ply",
]

_SEMANTIC_NAMES = ("class", "label", "scalar_class", "semantic")
_INSTANCE_NAMES = ("instance", "instance_id")
_LARGE_COORD = 1e5
PathOrFile = str | os.PathLike[str] | BinaryIO
_DATA_LINE = re.compile(rb"^[ \t]*[^\s]", re.MULTILINE)


class PlyReader:
    """Context manager over one PLY file; reads the ``vertex`` element whole or in chunks.

    Parameters
    ----------
    path
        File path, or a binary file object positioned at the start of the PLY.
    class_scheme
        Scheme the file's semantic ids belong to (see :data:`urbex.pointcloud.CLASS_SCHEMES`).

    Attributes
    ----------
    header : PlyHeader
    count : int
        Number of vertices (points) the header promises (checked against the file size).

    Examples
    --------
    >>> import io, numpy as np
    >>> from urbex.pointcloud import PointCloud
    >>> buf = io.BytesIO()
    >>> write_ply(buf, PointCloud(xyz=np.arange(12, dtype=np.float32).reshape(4, 3)))
    >>> _ = buf.seek(0)
    >>> with PlyReader(buf) as r:
    ...     print(r.count, [len(c) for c in r.iter_chunks(3)])
    4 [3, 1]
    """

    def __init__(self, path: PathOrFile, *, class_scheme: str = "sensaturban") -> None:
        self.source: str = str(path) if isinstance(path, str | os.PathLike) else repr(path)
        self._src: object = path if isinstance(path, str | os.PathLike) else self.source
        self.class_scheme = class_scheme
        self._owned: IO[bytes] | None = None
        if isinstance(path, str | os.PathLike):
            try:
                fh: IO[bytes] = open(path, "rb")
            except OSError as e:
                raise _err(self._src, f"cannot open: {e.strerror}", field="file") from e
            self._owned = fh
            self._path: Path | None = Path(path)
        else:
            fh = path
            self._path = None
        self._fh = fh
        start = fh.tell() if fh.seekable() else 0
        raw = read_header_bytes(fh, self._src)
        self.header: PlyHeader = parse_header(raw, self._src)
        self._base = start
        vertex = self.header.element("vertex")
        if vertex is None:
            names = [e.name for e in self.header.elements]
            raise _err(self._src, f"no 'vertex' element; elements are {names}", field="vertex")
        self._vertex = vertex
        for p in vertex.properties:
            if p.is_list:
                raise _err(
                    self._src,
                    "list properties on the vertex element are not supported "
                    "(expected scalar properties only)",
                    field=p.name,
                )
        prop_names = {p.name for p in vertex.properties}
        for axis in ("x", "y", "z"):
            if axis not in prop_names:
                raise _err(
                    self._src,
                    f"vertex element has no {axis!r} property; properties are "
                    f"{[p.name for p in vertex.properties]}",
                    field=axis,
                )
        self.count: int = vertex.count
        self._rows: NDArray | None = None  # binary: structured view of the vertex rows
        self._fast: FastLayout | None = None  # binary: the one-pass decoder's view, if any
        self._ascii_skip = 0
        if self.header.format == "ascii":
            for el in self.header.elements:
                if el.name == "vertex":
                    break
                self._ascii_skip += el.count
        else:
            self._rows = self._map_binary(raw)
            sem, inst = (self._label_name(names) for names in (_SEMANTIC_NAMES, _INSTANCE_NAMES))
            self._fast = fast_layout(vertex, self.header.byte_order, sem, inst)

    # -- binary -----------------------------------------------------------------------------

    def _map_binary(self, raw: bytes) -> NDArray:
        order = self.header.byte_order
        skip = 0
        for e in self.header.elements:
            if e.name == "vertex":
                break
            if e.has_list:
                raise _err(
                    self._src,
                    f"element {e.name!r} with list properties precedes 'vertex' in a binary "
                    "file; its size cannot be computed without parsing it (put 'vertex' first)",
                    field=e.name,
                )
            skip += e.count * e.dtype(order).itemsize
        try:
            dtype = self._vertex.dtype(order)
        except ValueError as e:
            raise _err(self._src, f"bad vertex properties: {e}", field="vertex") from e
        offset = self._base + self.header.data_start + skip
        need = self.count * dtype.itemsize
        tail = self._tail_bytes(order)
        if self._path is not None:
            size = os.fstat(self._fh.fileno()).st_size
            have = max(size - offset, 0)
            self._check_size(need, have, dtype.itemsize, tail)
            if self.count == 0:
                return np.zeros(0, dtype)
            return np.memmap(self._path, dtype=dtype, mode="r", offset=offset, shape=(self.count,))
        if self._fh.seekable():
            end = self._fh.seek(0, os.SEEK_END)
            self._check_size(need, max(end - offset, 0), dtype.itemsize, tail)
        self._fh.seek(offset)
        data = self._fh.read(need)
        self._check_size(need, len(data), dtype.itemsize, None)
        return np.frombuffer(data, dtype=dtype, count=self.count)

    def _tail_bytes(self, order: str) -> int | None:
        """Bytes of the elements after ``vertex``; None if one has lists (size unknown)."""
        tail = 0
        after = False
        for e in self.header.elements:
            if after:
                if e.has_list:
                    return None
                tail += e.count * e.dtype(order).itemsize
            after = after or e.name == "vertex"
        return tail

    def _check_size(self, need: int, have: int, itemsize: int, tail: int | None) -> None:
        """``have`` bytes from the first vertex to the end of the file; ``tail`` bytes of the
        elements after ``vertex`` (None: unknown, no upper bound checked)."""
        if have < need:
            raise _err(
                self._src,
                f"truncated: the header promises {self.count} vertices ({need} bytes), the "
                f"file holds {have // itemsize} ({have} bytes)",
                field="vertex",
            )
        if tail is None or itemsize == 0:
            return
        extra = have - need - tail
        if extra >= itemsize:
            raise _err(
                self._src,
                f"the header declares {self.count} vertices ({need} bytes"
                + (f" + {tail} bytes of later elements" if tail else "")
                + f") but the file holds {have} bytes after the header, room for "
                f"{(have - tail) // itemsize} vertices: the 'element vertex' count is wrong "
                "(fix the header to the real count)",
                field="vertex",
            )

    # -- conversion -------------------------------------------------------------------------

    def _xyz_dtype(self) -> np.dtype:
        types = {PLY_TYPES[p.type_name] for p in self._vertex.properties if p.name in "xyz"}
        return np.dtype(np.float32) if types == {"f4"} else np.dtype(np.float64)

    def _offset_from(self, lo: NDArray, hi: NDArray) -> NDArray[np.float64]:
        if self._xyz_dtype() == np.float64 and max(np.abs(lo).max(), np.abs(hi).max()) > (
            _LARGE_COORD
        ):
            return np.floor(lo).astype(np.float64)
        return np.zeros(3, np.float64)

    def _global_offset(self) -> NDArray[np.float64]:
        """Offset from the whole file's bbox (binary: one pass over the mapped columns)."""
        if self._rows is None or self.count == 0 or self._xyz_dtype() != np.float64:
            return np.zeros(3, np.float64)
        lo = np.array([self._rows[a].min() for a in "xyz"], np.float64)
        hi = np.array([self._rows[a].max() for a in "xyz"], np.float64)
        return self._offset_from(lo, hi)

    def _binary_cloud(self, rows: NDArray, offset: NDArray | None, row0: int = 0) -> PointCloud:
        """A cloud of mapped vertex rows (file rows ``row0:``): one numba pass if the layout
        allows, else numpy."""
        if self._fast is None or len(rows) < FAST_MIN_POINTS:
            return self._to_cloud({k: rows[k] for k in self._wanted()}, offset, row0)
        d = decode_rows(rows, self._fast)
        if not d.finite or max(-d.lo.min(), d.hi.max()) > MAX_ABS_COORD:
            check_coordinates(d.xyz, self._src, total=self.count, first_row=row0)
        offset = self._offset_from(d.lo, d.hi) if offset is None else offset
        return self._cloud(d.xyz, offset, d.rgb, d.semantic, d.instance)

    def _to_cloud(
        self, cols: dict[str, NDArray], offset: NDArray | None, first_row: int = 0
    ) -> PointCloud:
        """Build a PointCloud from column arrays (structured fields or pandas columns).

        ``first_row`` is the file row of ``cols``' first entry (for error messages).
        """
        n = len(cols["x"])
        xyz = np.empty((n, 3), self._xyz_dtype())
        for i, a in enumerate("xyz"):
            xyz[:, i] = cols[a]
        check_coordinates(xyz, self._src, total=self.count, first_row=first_row)
        if offset is None:
            offset = np.zeros(3, np.float64)
            if n and xyz.dtype == np.float64:
                lo = np.array([xyz[:, i].min() for i in range(3)])
                hi = np.array([xyz[:, i].max() for i in range(3)])
                offset = self._offset_from(lo, hi)
        rgb = None
        if all(c in cols for c in ("red", "green", "blue")):
            rgb = np.empty((n, 3), np.uint8)
            chans = [np.asarray(cols[c]) for c in ("red", "green", "blue")]
            # one scale for all three channels (a dark channel of a 16-bit file stays 16-bit)
            wide = n and any(v.dtype != np.uint8 for v in chans)
            c_lo = float(min(v.min() for v in chans)) if wide else 0.0
            c_hi = float(max(v.max() for v in chans)) if wide else 0.0
            for i, c in enumerate(("red", "green", "blue")):
                rgb[:, i] = self._colour(chans[i], c, c_lo, c_hi)
        semantic = self._labels(cols, _SEMANTIC_NAMES)
        instance = self._labels(cols, _INSTANCE_NAMES)
        return self._cloud(xyz, offset, rgb, semantic, instance)

    def _cloud(self, xyz: NDArray, offset: NDArray, *attrs: NDArray | None) -> PointCloud:
        """The cloud of checked file coordinates ``xyz`` (shifted in place by ``offset``) and
        ``attrs`` = (rgb, semantic, instance)."""
        if offset.any():
            xyz -= offset
        rgb, semantic, instance = attrs
        return PointCloud(
            xyz=xyz,
            offset=offset,
            rgb=rgb,
            semantic=semantic,
            instance=instance,
            class_scheme=self.class_scheme,
            crs=self.header.crs,
            source=self.source,
        )

    def _colour(self, v: NDArray, name: str, lo: float, hi: float) -> NDArray:
        """One colour channel as uint8; ``lo``/``hi`` span all three channels."""
        v = np.asarray(v)
        if v.dtype == np.uint8:
            return v
        if v.size == 0:
            return v.astype(np.uint8)
        if np.issubdtype(v.dtype, np.floating) and lo >= 0 and hi <= 1.0:
            return np.rint(v * 255.0).astype(np.uint8)
        if lo >= 0 and hi <= 255:
            return v.astype(np.uint8)
        if v.dtype == np.uint16 or (np.issubdtype(v.dtype, np.integer) and hi <= 65535 and lo >= 0):
            return (v >> 8).astype(np.uint8)
        raise _err(self._src, f"colour values out of range: expected 0..255, got {lo}..{hi}", name)

    def _label_name(self, names: tuple[str, ...]) -> str | None:
        """The first of ``names`` the vertex element has (the property :meth:`_labels` reads)."""
        return next((name for name in names if name in self._wanted()), None)

    def _labels(self, cols: dict[str, NDArray], names: tuple[str, ...]) -> NDArray | None:
        for name in names:
            if name in cols:
                v = np.asarray(cols[name])
                if np.issubdtype(v.dtype, np.floating):
                    out = v.astype(np.int32)
                    if not np.array_equal(out, v):
                        raise _err(self._src, "expected integer ids, found fractions", name)
                    return out
                return v.astype(np.int32)
        return None

    def _wanted(self) -> list[str]:
        keep = {"x", "y", "z", "red", "green", "blue", *_SEMANTIC_NAMES, *_INSTANCE_NAMES}
        return [p.name for p in self._vertex.properties if p.name in keep]

    # -- ascii ------------------------------------------------------------------------------

    def _ascii_frames(self, chunksize: int | None) -> Iterator[pd.DataFrame]:
        import pandas as pd

        self._fh.seek(self._base + self.header.data_start)
        names = [p.name for p in self._vertex.properties]
        wanted = self._wanted()
        dtypes = {
            p.name: ("float64" if PLY_TYPES[p.type_name][0] == "f" else "int64")
            for p in self._vertex.properties
            if p.name in wanted
        }
        if self.count == 0:
            return
        try:
            reader = pd.read_csv(
                self._fh,
                sep=r"\s+",
                header=None,
                names=names,
                usecols=wanted,
                dtype=dtypes,
                skiprows=self._ascii_skip,
                nrows=self.count,
                chunksize=chunksize,
                float_precision="round_trip",
                engine="c",
                index_col=False,
            )
            frames = [reader] if chunksize is None else reader
            total = 0
            for df in frames:
                total += len(df)
                yield df
        except (ValueError, pd.errors.ParserError) as e:
            raise _err(self._src, f"bad ASCII vertex data: {e}", field="vertex") from e
        if total < self.count:
            raise _err(
                self._src,
                f"truncated: the header promises {self.count} vertices, the file holds {total}",
                field="vertex",
            )
        self._check_ascii_lines()

    def _check_ascii_lines(self) -> None:
        """Raise if the body has more data lines than the header's elements declare."""
        declared = sum(e.count for e in self.header.elements)
        self._fh.seek(self._base + self.header.data_start)
        lines = 0
        while True:
            block = self._fh.read(1 << 24)
            if not block:
                break
            if not block.endswith(b"\n"):
                block += self._fh.readline()
            lines += len(_DATA_LINE.findall(block))
        if lines > declared:
            others = declared - self.count
            raise _err(
                self._src,
                f"the header declares {self.count} vertices"
                + (f" and {others} rows of other elements" if others else "")
                + f" but the body has {lines} data lines ({lines - declared} extra): the "
                "'element vertex' count is wrong (fix the header to the real count)",
                field="vertex",
            )

    # -- public -----------------------------------------------------------------------------

    def read(self) -> PointCloud:
        """All vertices as one :class:`PointCloud` (see the module docstring for frames)."""
        if self._rows is not None:
            return self._binary_cloud(self._rows, None)
        frames = list(self._ascii_frames(None))
        if not frames:
            return self._to_cloud({k: np.zeros(0) for k in self._wanted()}, None)
        df = frames[0]
        return self._to_cloud({k: df[k].to_numpy() for k in self._wanted()}, None)

    def iter_chunks(self, n: int) -> Iterator[PointCloud]:
        """Yield the vertices as consecutive clouds of at most ``n`` points each.

        All chunks of a binary file share one ``offset`` (from the whole file, as
        :func:`read_ply`); chunks of an ASCII file share the offset of the first chunk.
        """
        if n <= 0:
            raise ValueError(f"iter_chunks: n must be positive, got {n}")
        if self._rows is not None:
            offset = self._global_offset()
            for start in range(0, self.count, n):
                yield self._binary_cloud(self._rows[start : start + n], offset, start)
            return
        ascii_offset: NDArray | None = None
        at = 0
        for df in self._ascii_frames(n):
            cols = {k: df[k].to_numpy() for k in self._wanted()}
            chunk = self._to_cloud(cols, ascii_offset, first_row=at)
            ascii_offset = chunk.offset
            at += len(chunk)
            yield chunk

    def close(self) -> None:
        """Release the mapping and close the file (if this reader opened it)."""
        self._rows = None
        if self._owned is not None:
            self._owned.close()
            self._owned = None

    def __enter__(self) -> PlyReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def read_ply(path: PathOrFile, *, class_scheme: str = "sensaturban") -> PointCloud:
    """Read the ``vertex`` element of a PLY file into a :class:`PointCloud`.

    Parameters
    ----------
    path
        A ``.ply`` path (binary little/big-endian or ASCII) or a binary file object.
    class_scheme
        Scheme of the semantic ids (``'sensaturban'``, ``'stpls3d'``, ``'asprs'``).

    Returns
    -------
    PointCloud
        ``xyz`` (N, 3) float32 for ``float`` files, float64 otherwise, world metres relative
        to ``offset`` (non-zero only for ``double`` coordinates beyond 1e5 m); ``rgb`` (N, 3)
        uint8; ``semantic``/``instance`` (N,) int32 when present.

    Raises
    ------
    PointCloudFormatError
        Not a PLY, unsupported format, unknown property type, missing x/y/z, list property on
        ``vertex``; fewer vertices in the file than the header promises, or more (binary: at
        least one whole vertex row of bytes beyond the declared elements, checked when the
        elements after ``vertex`` have fixed-size rows; ASCII: more data lines than the
        elements declare); a coordinate column holding NaN/inf or values beyond ±1e9 m.

    Examples
    --------
    >>> import io, numpy as np
    >>> from urbex.pointcloud import PointCloud
    >>> buf = io.BytesIO()
    >>> c = PointCloud(xyz=np.ones((2, 3), np.float32), semantic=np.array([0, 9], np.int32))
    >>> write_ply(buf, c)
    >>> _ = buf.seek(0)
    >>> read_ply(buf).semantic.tolist()
    [0, 9]
    """
    with PlyReader(path, class_scheme=class_scheme) as reader:
        return reader.read()


def write_ply(
    path: str | os.PathLike[str] | IO[bytes], cloud: PointCloud, *, ascii: bool = False
) -> None:
    """Write a cloud as PLY (binary little-endian unless ``ascii``), atomically.

    Properties: ``x y z`` as ``float`` when ``cloud.xyz`` is float32 and ``offset`` is zero,
    else ``double`` *world* coordinates (``xyz + offset``); ``red green blue`` uchar if
    ``rgb``; ``class`` uchar if ``semantic``; ``instance`` int if ``instance``; a
    ``comment crs ...`` line if ``cloud.crs`` (newlines folded to spaces).

    Values round-trip exactly through :func:`read_ply` (for ``double`` files with an offset:
    the world coordinates ``xyz + offset`` are exact; ``read_ply`` picks its own offset).

    Parameters
    ----------
    path
        Destination path (written via a temporary file + ``os.replace``) or a binary file
        object (written in place).
    cloud
        The cloud to write.
    ascii
        Write ``format ascii 1.0`` (floats with 9 / 17 significant digits).

    Raises
    ------
    ValueError
        ``semantic`` ids outside 0..255 (the ``class`` property is uchar).
    """
    n = len(cloud)
    dest = str(path) if isinstance(path, str | os.PathLike) else "<file object>"
    use_float = cloud.xyz.dtype == np.float32 and not cloud.offset.any()
    xyz = cloud.xyz if use_float else cloud.world_xyz()
    fields: list[tuple[str, str, str, NDArray]] = []  # (name, ply type, np code, column)
    t = "float" if use_float else "double"
    code = "<f4" if use_float else "<f8"
    fields += [(a, t, code, xyz[:, i]) for i, a in enumerate("xyz")]
    if cloud.rgb is not None:
        fields += [
            (c, "uchar", "u1", cloud.rgb[:, i]) for i, c in enumerate(("red", "green", "blue"))
        ]
    if cloud.semantic is not None:
        sem = cloud.semantic
        if n and (sem.min() < 0 or sem.max() > 255):
            raise ValueError(
                f"write_ply({dest}): field 'class': semantic ids must be in 0..255 (uchar), got "
                f"{int(sem.min())}..{int(sem.max())}; remap the classes first"
            )
        fields.append(("class", "uchar", "u1", sem))
    if cloud.instance is not None:
        fields.append(("instance", "int", "<i4", cloud.instance))
    lines = ["ply", f"format {'ascii' if ascii else 'binary_little_endian'} 1.0", "comment urbex"]
    if cloud.crs:
        lines.append("comment crs " + " ".join(cloud.crs.split()))
    lines.append(f"element vertex {n}")
    lines += [f"property {ty} {name}" for name, ty, _, _ in fields]
    lines.append("end_header")
    header = ("\n".join(lines) + "\n").encode("ascii")

    def _emit(fh: IO[bytes]) -> None:
        fh.write(header)
        if ascii:
            _write_ascii_rows(fh, fields, use_float)
            return
        rows = np.empty(n, np.dtype([(name, c) for name, _, c, _ in fields]))
        for name, _, _, col in fields:
            rows[name] = col
        if isinstance(fh, io.BufferedWriter | io.FileIO):
            rows.tofile(fh)
        else:
            fh.write(rows.tobytes())

    if isinstance(path, str | os.PathLike):
        with atomic_write(path, "wb") as fh:
            _emit(fh)
    else:
        _emit(path)


def _write_ascii_rows(
    fh: IO[bytes], fields: list[tuple[str, str, str, NDArray]], f32: bool
) -> None:
    import pandas as pd

    if not len(fields[0][3]):
        return
    df = pd.DataFrame({name: col for name, _, _, col in fields})
    text = df.to_csv(
        sep=" ",
        header=False,
        index=False,
        float_format="%.9g" if f32 else "%.17g",
        na_rep="nan",
        lineterminator="\n",
    )
    fh.write(text.encode("ascii"))
