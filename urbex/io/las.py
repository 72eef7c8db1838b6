"""ASPRS LAS / LAZ point clouds through laspy (LAZ via the lazrs backend, in parallel).

Units and frames
----------------
urbex works in **world metres**. The CRS is read with ``header.parse_crs()`` (pyproj). If the
horizontal axes of a projected CRS use another linear unit (international foot, US survey
foot, ...), x and y are multiplied by that unit's size in metres (0.3048 or 1200/3937). z is
converted with the vertical CRS's unit when the CRS is compound, otherwise **z is assumed to be
in the same unit as x and y** (the usual case for foot-based surveys). The conversion is logged
with ``logging.info`` and the returned ``crs`` is the same projection with metre axes (so
``xyz + offset`` are coordinates of ``crs``). A file without a CRS keeps its units (assumed
metres) and emits a ``UserWarning``; a geographic CRS (degrees) is kept unchanged with a warning.

``offset`` is the header offset (converted to metres) when it keeps all coordinates within
1e5 m of it, else the header's bounding-box minimum floored to whole metres; ``xyz`` is
float64 relative to ``offset``.

Attributes
----------
``semantic`` = ``classification`` (ASPRS codes, ``class_scheme='asprs'``); ``rgb`` = the
colours, shifted right by 8 bits when they are 16-bit (any value > 255); ``instance`` = the
extra-bytes dimension named ``instance_dim`` when present.
"""

from __future__ import annotations

import datetime
import functools
import logging
import os
import warnings
from collections.abc import Iterator
from types import TracebackType
from typing import IO, Any, BinaryIO

import numpy as np
from numpy.typing import NDArray

from urbex.atomic import atomic_write
from urbex.errors import PointCloudFormatError
from urbex.io._checks import MAX_ABS_COORD, check_coordinates, las_record_problem, stream_size
from urbex.io._las_records import RawRecords as _RawRecords
from urbex.io._las_records import convert_raw
from urbex.io.las_units import UnitConversion, unit_conversion
from urbex.pointcloud import PointCloud

__all__ = ["LasReader", "UnitConversion", "read_las", "unit_conversion", "write_las"]

log = logging.getLogger(__name__)

_SMALL = 1e5
_SCALE = 0.001


@functools.cache
def _decode_errors() -> tuple[type[BaseException], ...]:
    """What laspy and lazrs raise on bytes that are not a valid LAS/LAZ file."""
    import laspy

    errors: list[type[BaseException]] = [OSError, ValueError, EOFError, laspy.LaspyException]
    try:
        import lazrs

        errors.append(lazrs.LazrsError)
    except ImportError:  # pragma: no cover - lazrs is a dependency
        pass
    return tuple(errors)


#: A LAZ file holding more points than this per byte of file has a corrupt point count.
_MAX_POINTS_PER_BYTE = 64


def _describe(e: BaseException) -> str:
    """One line for a decoder's exception (its type, its first line)."""
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    if len(text) > 200:
        text = text[:200] + "..."
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


@functools.cache
def _laz_backend() -> Any:
    """The LAZ backend, chosen once per process: lazrs, parallel over chunks when it can."""
    import laspy

    available = laspy.LazBackend.detect_available()
    for b in (laspy.LazBackend.LazrsParallel, laspy.LazBackend.Lazrs):
        if b in available:
            return b
    return None


def _selection(instance: bool) -> Any:
    """The LAZ layers :class:`LasReader` needs: x, y, returns, z, class, colours, extra bytes.

    Point formats 6–10 compress each field group in its own layer; skipping intensity, flags,
    scan angle, user data, point source and GPS time saves their decoding (older formats
    decode whole points whatever the selection).
    """
    import laspy

    sel = laspy.DecompressionSelection
    chosen = sel.base() | sel.Z | sel.CLASSIFICATION | sel.RGB
    return chosen | sel.ALL_EXTRA_BYTES if instance else chosen


class LasReader:
    """Context manager over one LAS/LAZ file; yields :class:`PointCloud` chunks.

    Parameters
    ----------
    path
        ``.las``/``.laz`` path or binary file object.
    chunk_size
        Points per chunk for :meth:`iter_chunks` and for the internal loop of :meth:`read`.
    instance_dim
        Extra-bytes dimension holding instance ids (None: never read instances).

    Attributes
    ----------
    header : laspy.LasHeader
    count : int
        Number of points.
    units : UnitConversion
        Factors applied to x/y and z (see the module docstring).
    offset : ndarray, shape (3,), float64
        World-metre offset every chunk shares.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | BinaryIO,
        *,
        chunk_size: int = 5_000_000,
        instance_dim: str | None = "instance",
    ) -> None:
        import laspy

        if chunk_size <= 0:
            raise ValueError(f"LasReader: chunk_size must be positive, got {chunk_size}")
        self.source = str(path) if isinstance(path, str | os.PathLike) else repr(path)
        self._path = path if isinstance(path, str | os.PathLike) else None
        self.chunk_size = chunk_size
        self.size: int | None = stream_size(path)
        problem = None if self.size is None else las_record_problem(path, self.size)
        if problem is not None:
            raise self._error(f"{problem}; the file has {self.size} bytes", "file")
        try:
            self._reader = laspy.open(
                path,
                mode="r",
                laz_backend=_laz_backend(),
                closefd=self._path is not None,
                decompression_selection=_selection(instance_dim is not None),
            )
        except _decode_errors() as e:
            raise self._error(f"cannot read as LAS/LAZ: {_describe(e)}", "file") from e
        self.header = self._reader.header
        self.count: int = int(self.header.point_count)
        if self.count == 0:
            self._reader.close()
            raise self._error("the file holds 0 points (expected at least 1)", "point_count")
        try:
            self._check_size()
        except PointCloudFormatError:
            self._reader.close()
            raise
        try:
            crs = self.header.parse_crs()
        except Exception as e:  # pyproj / laspy raise various types on a garbled CRS VLR
            self._reader.close()
            raise self._error(f"cannot parse the CRS VLR: {_describe(e)}", "crs") from e
        self.units = unit_conversion(crs)
        if crs is None:
            warnings.warn(
                f"{self.source}: no CRS in the LAS header; coordinates are assumed to be "
                "metres and left unchanged",
                UserWarning,
                stacklevel=2,
            )
        elif not crs.is_projected and not crs.is_compound:
            warnings.warn(
                f"{self.source}: CRS {crs.name!r} is not projected (units "
                f"{self.units.unit!r}); coordinates left unchanged, not metres",
                UserWarning,
                stacklevel=2,
            )
        if self.units.converts:
            log.info(
                "%s: CRS unit %r; converting x,y by %.10g and z by %.10g to metres",
                self.source,
                self.units.unit,
                self.units.xy,
                self.units.z,
            )
        f = np.array([self.units.xy, self.units.xy, self.units.z])
        hoff = np.asarray(self.header.offsets, np.float64) * f
        lo = np.asarray(self.header.mins, np.float64) * f
        hi = np.asarray(self.header.maxs, np.float64) * f
        if max(np.abs(lo - hoff).max(), np.abs(hi - hoff).max()) < _SMALL:
            self.offset: NDArray[np.float64] = hoff
        else:
            self.offset = np.floor(lo)
        self._factor = f
        dims = set(self.header.point_format.dimension_names)
        self._instance_dim = instance_dim if instance_dim in dims else None
        self._has_rgb = "red" in dims
        self._rgb_shift: int | None = None

    def _check_size(self) -> None:
        """Raise if the file is too small for the points its header promises."""
        if self.size is None:
            return
        record = int(self.header.point_format.size)
        start = int(self.header.offset_to_point_data)
        n_evlrs = int(getattr(self.header, "number_of_evlrs", 0) or 0)
        evlr_start = int(getattr(self.header, "start_of_first_evlr", 0) or 0)
        if n_evlrs and self.size < evlr_start:
            raise self._error(
                f"truncated: the header places {n_evlrs} extended VLR(s) at byte {evlr_start} "
                f"after the points, the file has {self.size} bytes; re-copy or re-export the file",
                "file",
            )
        if self.header.are_points_compressed:
            if self.count > _MAX_POINTS_PER_BYTE * self.size:
                raise self._error(
                    f"the header promises {self.count} points but the LAZ file is only "
                    f"{self.size} bytes (at most {_MAX_POINTS_PER_BYTE * self.size} points fit): "
                    "the header's point count is corrupt",
                    "point_count",
                )
            return
        need = start + self.count * record
        if self.size < need:
            have = max(self.size - start, 0)
            raise self._error(
                f"truncated: the header promises {self.count} points of {record} bytes from "
                f"byte {start} ({need} bytes), the file has {self.size} bytes "
                f"({have // record} whole points); re-copy or re-export the file",
                "point_count",
            )

    def _decode_error(self, e: BaseException) -> PointCloudFormatError:
        kind = "LAZ" if self.header.are_points_compressed else "LAS"
        size = "" if self.size is None else f"the file is {self.size} bytes, "
        return self._error(
            f"cannot decode the {kind} points ({size}the header promises {self.count} points; "
            f"truncated or corrupt?): {_describe(e)}",
            "points",
        )

    def _error(self, msg: str, field: str) -> PointCloudFormatError:
        if self._path is None:
            return PointCloudFormatError(f"{self.source}: {msg}", field=field)
        return PointCloudFormatError(msg, path=self._path, field=field)

    def _convert(self, pts: Any) -> tuple[NDArray, NDArray | None, NDArray, NDArray | None]:
        """Raw chunk → (xyz f64 relative, raw rgb u16 or None, semantic i32, instance i32).

        ``pts`` is laspy's point record or the raw records (:meth:`_raw_records`): fields
        ``X Y Z`` (integer counts), ``red green blue``, ``classification``, ``instance_dim``.
        """
        scale = np.asarray(self.header.scales, np.float64) * self._factor
        shift = np.asarray(self.header.offsets, np.float64) * self._factor - self.offset
        n = len(pts)
        xyz = np.empty((n, 3), np.float64)
        if isinstance(pts, _RawRecords) and n:  # one numba pass over the record fields
            return self._convert_records(pts.records, scale, shift, xyz)
        bounds = []
        for i, name in enumerate("XYZ"):
            raw = np.asarray(pts[name])
            if n:  # world bounds from the integer counts (the map is affine): no temporary
                ends = np.array([raw.min(), raw.max()], np.float64) * scale[i] + shift[i]
                bounds.append(np.abs(ends + self.offset[i]).max())
            np.multiply(raw, scale[i], out=xyz[:, i])
            xyz[:, i] += shift[i]
        rgb = None
        if self._has_rgb:
            rgb = np.empty((n, 3), np.uint16)
            rgb[:, 0], rgb[:, 1], rgb[:, 2] = pts["red"], pts["green"], pts["blue"]
        semantic = np.asarray(pts["classification"]).astype(np.int32)
        instance = None
        if self._instance_dim is not None:
            instance = self._instance_ids(np.asarray(pts[self._instance_dim]))
        if n and not max(bounds) <= MAX_ABS_COORD:
            check_coordinates(xyz + self.offset, self._path or self.source)
        return xyz, rgb, semantic, instance

    def _convert_records(
        self, recs: NDArray, scale: NDArray, shift: NDArray, xyz: NDArray
    ) -> tuple[NDArray, NDArray | None, NDArray, NDArray | None]:
        """:meth:`_convert` of raw records (the same arrays), in one pass."""
        rgb, semantic, ends = convert_raw(recs, scale, shift, xyz, self._has_rgb)
        instance = None
        if self._instance_dim is not None:
            instance = self._instance_ids(np.asarray(recs[self._instance_dim]))
        if not np.abs(ends + self.offset[:, None]).max() <= MAX_ABS_COORD:
            check_coordinates(xyz + self.offset, self._path or self.source)
        return xyz, rgb, semantic, instance

    def _plain_fields(self) -> bool:
        """True unless the instance dimension is scaled (then laspy's record scales it)."""
        if self._instance_dim is None:
            return True
        dim = self.header.point_format.dimension_by_name(self._instance_dim)
        return dim.scales is None and dim.offsets is None

    def _fields(self, pts: Any) -> Any:
        """laspy's decoded record, or its structured array when :meth:`_convert` can read
        that directly (no laspy views per field)."""
        return _RawRecords(pts.array) if self._plain_fields() else pts

    def _raw_records(self) -> Any:
        """The point records of an uncompressed file on disk, memory-mapped, as a mapping of
        the fields :meth:`_convert` reads; None when laspy must decode them (LAZ, a file
        object, scaled extra bytes, or a record size laspy's layout does not account for)."""
        if self._path is None or self.header.are_points_compressed:
            return None
        fmt = self.header.point_format
        dtype = fmt.dtype()
        if dtype.itemsize != int(fmt.size) or "X" not in (dtype.names or ()):
            return None
        if not self._plain_fields():
            return None
        recs = np.memmap(
            self._path,
            dtype=dtype,
            mode="r",
            offset=int(self.header.offset_to_point_data),
            shape=(self.count,),
        )
        return _RawRecords(recs)

    def _instance_ids(self, raw: NDArray) -> NDArray[np.int32]:
        """Instance extra-bytes values → int32; a 32/64-bit unsigned all-ones value is -1 (none).

        Raises on values int32 cannot hold or non-integral values, which a plain cast would wrap
        or truncate into another instance's id.
        """
        v = raw
        if v.dtype.kind == "u" and v.dtype.itemsize >= 4:
            v = np.where(v == np.iinfo(v.dtype).max, -1, v.astype(np.int64, copy=False))
        if v.dtype.kind == "f" and not np.array_equal(v, np.round(v)):
            raise self._error(
                f"instance dimension {self._instance_dim!r} holds non-integral values", "instance"
            )
        if v.size and (v.min() < np.iinfo(np.int32).min or v.max() > np.iinfo(np.int32).max):
            raise self._error(
                f"instance dimension {self._instance_dim!r} ({raw.dtype}) holds values "
                f"{v.min()}..{v.max()}; expected ids that fit int32",
                "instance",
            )
        return v.astype(np.int32)

    def _cloud(
        self, xyz: NDArray, rgb16: NDArray | None, sem: NDArray, inst: NDArray | None
    ) -> PointCloud:
        rgb = None
        if rgb16 is not None:
            if self._rgb_shift is None:
                self._rgb_shift = 8 if rgb16.size and int(rgb16.max()) > 255 else 0
            rgb = (rgb16 >> self._rgb_shift).astype(np.uint8)
        return PointCloud(
            xyz=xyz,
            offset=self.offset.copy(),
            rgb=rgb,
            semantic=sem,
            instance=inst,
            class_scheme="asprs",
            crs=self.units.crs_metres,
            source=self.source,
        )

    def iter_chunks(self, n: int | None = None) -> Iterator[PointCloud]:
        """Yield consecutive chunks of at most ``n`` (default ``chunk_size``) points.

        Chunks share ``offset``. 16-bit colour detection is decided on the first chunk.
        """

        n = self.chunk_size if n is None else n
        chunks = self._reader.chunk_iterator(n)
        while True:
            try:
                pts = next(chunks)
            except StopIteration:
                return
            except _decode_errors() as e:
                raise self._decode_error(e) from e
            yield self._cloud(*self._convert(self._fields(pts)))

    def read(self) -> PointCloud:
        """All points as one cloud (16-bit colour detection over the whole file)."""

        n = self.count
        raw = self._raw_records()
        if raw is not None:  # uncompressed: the records are mapped, no decoding copy
            return self._cloud(*self._convert(raw))
        if n <= self.chunk_size:  # one chunk: no second copy
            try:
                pts = self._reader.read_points(n)
            except _decode_errors() as e:
                raise self._decode_error(e) from e
            if len(pts) < n:
                raise self._error(
                    f"truncated: the header promises {n} points, the file holds {len(pts)}",
                    "point_count",
                )
            return self._cloud(*self._convert(self._fields(pts)))
        try:
            return self._assemble(
                self._fields(pts) for pts in self._reader.chunk_iterator(self.chunk_size)
            )
        except _decode_errors() as e:
            raise self._decode_error(e) from e

    def _assemble(self, chunks: Iterator[Any]) -> PointCloud:
        """One cloud from consecutive chunks of records (mappings :meth:`_convert` reads)."""
        n = self.count
        xyz = np.empty((n, 3), np.float64)
        rgb = np.empty((n, 3), np.uint16) if self._has_rgb else None
        sem = np.empty(n, np.int32)
        inst = np.empty(n, np.int32) if self._instance_dim is not None else None
        at = 0
        for pts in chunks:
            if at == 0 and len(pts) == n:  # the whole file in one chunk: no copies
                return self._cloud(*self._convert(pts))
            cx, crgb, csem, cinst = self._convert(pts)
            k = len(cx)
            if at + k > n:
                raise self._error(f"holds more points than the header's {n}", "point_count")
            xyz[at : at + k] = cx
            sem[at : at + k] = csem
            if rgb is not None and crgb is not None:
                rgb[at : at + k] = crgb
            if inst is not None and cinst is not None:
                inst[at : at + k] = cinst
            at += k
        if at < n:
            raise self._error(
                f"truncated: the header promises {n} points, the file holds {at}", "point_count"
            )
        return self._cloud(xyz, rgb, sem, inst)

    def close(self) -> None:
        """Close the underlying laspy reader."""
        self._reader.close()

    def __enter__(self) -> LasReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def read_las(
    path: str | os.PathLike[str] | BinaryIO,
    *,
    chunk_size: int = 5_000_000,
    instance_dim: str | None = "instance",
) -> PointCloud:
    """Read a LAS/LAZ file into one :class:`PointCloud` (world metres; see module docstring).

    Parameters
    ----------
    path
        ``.las``/``.laz`` path or binary file object.
    chunk_size
        Points decoded per step (bounds temporary memory).
    instance_dim
        Name of an extra-bytes dimension with instance ids, or None.

    Returns
    -------
    PointCloud
        ``xyz`` (N, 3) float64 metres relative to ``offset``; ``rgb`` (N, 3) uint8 or None;
        ``semantic`` (N,) int32 ASPRS classification; ``instance`` (N,) int32 or None;
        ``crs`` WKT with metre axes (None without a CRS).

    Raises
    ------
    PointCloudFormatError
        Unreadable file, 0 points, garbled CRS, truncated point data.
    """
    with LasReader(path, chunk_size=chunk_size, instance_dim=instance_dim) as reader:
        return reader.read()


def write_las(
    path: str | os.PathLike[str] | IO[bytes],
    cloud: PointCloud,
    *,
    instance_dim: str = "instance",
    creation_date: datetime.date | None = None,
) -> None:
    """Write a cloud as LAS 1.4 point format 7 (``.laz`` suffix → LAZ via lazrs), atomically.

    Coordinates are stored as int32 counts of 1 mm (scale 0.001) around a header offset equal
    to ``cloud.offset`` (or the floored bbox minimum if ``xyz`` spans more than ±2e6 m), so a
    round trip returns ``round(xyz / 0.001) * 0.001`` — equal to the input after quantisation
    to the 1 mm scale. Colours are stored 16-bit (``value * 257``), ``semantic`` as the
    classification (0..255), ``instance`` as an int32 extra-bytes dimension ``instance_dim``;
    ``cloud.crs`` (if set) as a WKT VLR.

    Parameters
    ----------
    path
        Destination path, or a binary file object (then written uncompressed LAS in place).
    cloud
        Cloud in world metres.
    instance_dim
        Name of the extra-bytes dimension for ``cloud.instance``.
    creation_date
        The header's file creation date (default: today, as laspy writes it); a fixed date
        makes the bytes reproducible (the synthetic generator's LAZ copies, hashed by DVC).

    Raises
    ------
    ValueError
        ``semantic`` outside 0..255, or coordinates that do not fit int32 millimetres.
    """
    import laspy

    dest = str(path) if isinstance(path, str | os.PathLike) else "<file object>"
    n = len(cloud)
    header = laspy.LasHeader(point_format=7, version="1.4")
    if creation_date is not None:
        header.creation_date = creation_date
    header.scales = np.full(3, _SCALE)
    xyz = cloud.xyz
    hoff = cloud.offset.copy()
    if n and np.abs(xyz).max() > 2e6:
        world = cloud.world_xyz()
        hoff = np.floor(world.min(axis=0))
        xyz = world - hoff
    header.offsets = hoff
    if cloud.instance is not None:
        header.add_extra_dims([laspy.ExtraBytesParams(name=instance_dim, type=np.int32)])
    if cloud.crs:
        import pyproj

        header.add_crs(pyproj.CRS.from_user_input(cloud.crs))
    las = laspy.LasData(header, points=laspy.ScaleAwarePointRecord.zeros(n, header=header))
    counts = np.round(xyz / _SCALE)
    if n and np.abs(counts).max() >= 2**31:
        raise ValueError(f"write_las({dest}): coordinates do not fit int32 millimetres")
    las.X, las.Y, las.Z = (counts[:, i].astype(np.int32) for i in range(3))
    if cloud.rgb is not None:
        rgb16 = cloud.rgb.astype(np.uint16) * np.uint16(257)
        las.red, las.green, las.blue = rgb16[:, 0], rgb16[:, 1], rgb16[:, 2]
    if cloud.semantic is not None:
        sem = cloud.semantic
        if n and (sem.min() < 0 or sem.max() > 255):
            raise ValueError(
                f"write_las({dest}): field 'classification': semantic ids must be in 0..255, "
                f"got {int(sem.min())}..{int(sem.max())}"
            )
        las.classification = sem.astype(np.uint8)
    if cloud.instance is not None:
        las[instance_dim] = cloud.instance
    las.update_header()
    if isinstance(path, str | os.PathLike):
        compress = str(path).lower().endswith(".laz")
        with atomic_write(path, "wb") as fh:
            las.write(fh, do_compress=compress, laz_backend=_laz_backend() if compress else None)
    else:
        las.write(path, do_compress=False)
