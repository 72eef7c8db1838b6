"""STPLS3D real-world scenes: ``RealWorldData/<ID>_points.txt`` (CSV) and ``_points.ply``.

The text format is comma-separated with one header row and columns
``x,y,z,r,g,b,semantic[,instance]`` (world metres, colours 0–255, STPLS3D semantic ids; see
:data:`urbex.pointcloud.CLASS_SCHEMES` ``['stpls3d']``). Real scenes carry no instances.
The files are parsed with pyarrow's multithreaded CSV reader (no per-row Python).

Frames
------
``xyz`` is float64 **world metres** relative to ``offset``: zero unless a coordinate exceeds
1e5 m, in which case ``offset`` is the bounding-box minimum floored to whole metres.
"""

from __future__ import annotations

import os

import numpy as np
from numpy.typing import NDArray

from urbex.atomic import atomic_write
from urbex.errors import PointCloudFormatError
from urbex.io._checks import check_coordinates
from urbex.io.ply import read_ply
from urbex.pointcloud import PointCloud

__all__ = ["read_stpls3d_ply", "read_stpls3d_txt", "write_stpls3d_txt"]

_COLUMNS = ("x", "y", "z", "r", "g", "b", "semantic", "instance")
_LARGE_COORD = 1e5


def _int_column(v: NDArray, path: str, name: str, lo: int, hi: int) -> NDArray:
    """Float/int column → integer array, checking integrality and range [lo, hi]."""
    if np.issubdtype(v.dtype, np.floating):
        if np.isnan(v).any():
            raise PointCloudFormatError(
                "expected integers, found empty/NaN cells", path=path, field=name
            )
        iv = v.astype(np.int64)
        if not np.array_equal(iv, v):
            raise PointCloudFormatError("expected integers, found fractions", path=path, field=name)
        v = iv
    if v.size and (v.min() < lo or v.max() > hi):
        raise PointCloudFormatError(
            f"values out of range: expected {lo}..{hi}, got {v.min()}..{v.max()}",
            path=path,
            field=name,
        )
    return v


def read_stpls3d_txt(path: str | os.PathLike[str]) -> PointCloud:
    """Read an STPLS3D ``*_points.txt`` file.

    Parameters
    ----------
    path
        Comma-separated text, one header row, columns ``x,y,z,r,g,b,semantic[,instance]``
        (the header's names are not checked, the column order is).

    Returns
    -------
    PointCloud
        ``xyz`` (N, 3) float64 world metres relative to ``offset``; ``rgb`` (N, 3) uint8;
        ``semantic`` (N,) int32; ``instance`` (N,) int32 if an 8th column exists;
        ``class_scheme='stpls3d'``.

    Raises
    ------
    PointCloudFormatError
        Unreadable file, fewer than 7 or more than 8 columns, non-numeric cells, empty, NaN/inf
        or absurd (beyond ±1e9 m) coordinates, colours outside 0..255, fractional ids.
    """
    import pyarrow as pa
    from pyarrow import csv

    src = str(path)
    try:
        table = csv.read_csv(
            path,
            read_options=csv.ReadOptions(use_threads=True, block_size=1 << 24),
            parse_options=csv.ParseOptions(delimiter=","),
        )
    except (OSError, pa.ArrowInvalid) as e:
        raise PointCloudFormatError(f"cannot parse as CSV: {e}", path=src, field="file") from e
    ncol = table.num_columns
    if ncol not in (7, 8):
        raise PointCloudFormatError(
            f"expected 7 or 8 columns {','.join(_COLUMNS[:7])}[,instance], got {ncol}: "
            f"{table.column_names}",
            path=src,
            field="header",
        )
    cols: list[NDArray] = []
    for i in range(ncol):
        col = table.column(i)
        if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
            raise PointCloudFormatError(
                f"expected numbers, got column type {col.type}", path=src, field=_COLUMNS[i]
            )
        cols.append(col.to_numpy())
    n = table.num_rows
    xyz = np.empty((n, 3), np.float64)
    for i in range(3):
        xyz[:, i] = cols[i]
    check_coordinates(xyz, src)
    offset = np.zeros(3, np.float64)
    if n:
        lo = np.array([xyz[:, i].min() for i in range(3)])
        hi = np.array([xyz[:, i].max() for i in range(3)])
        if max(np.abs(lo).max(), np.abs(hi).max()) > _LARGE_COORD:
            offset = np.floor(lo)
            xyz -= offset
    rgb = np.empty((n, 3), np.uint8)
    for i in range(3):
        rgb[:, i] = _int_column(cols[3 + i], src, _COLUMNS[3 + i], 0, 255)
    i32 = np.iinfo(np.int32)
    semantic = _int_column(cols[6], src, "semantic", i32.min, i32.max).astype(np.int32)
    instance = None
    if ncol == 8:
        instance = _int_column(cols[7], src, "instance", i32.min, i32.max).astype(np.int32)
    return PointCloud(
        xyz=xyz,
        offset=offset,
        rgb=rgb,
        semantic=semantic,
        instance=instance,
        class_scheme="stpls3d",
        source=src,
    )


def write_stpls3d_txt(path: str | os.PathLike[str], cloud: PointCloud) -> None:
    """Write a cloud as STPLS3D text (atomic), columns ``x,y,z,r,g,b,semantic[,instance]``.

    Coordinates are written as float64 *world* metres (``xyz + offset``) in their shortest
    round-trip form, so :func:`read_stpls3d_txt` reads back the same float64 values.

    Raises
    ------
    ValueError
        ``cloud.rgb`` or ``cloud.semantic`` is None (both columns are mandatory).
    """
    import pyarrow as pa
    from pyarrow import csv

    for name in ("rgb", "semantic"):
        if getattr(cloud, name) is None:
            raise ValueError(
                f"write_stpls3d_txt({path}): cloud.{name} is None; the STPLS3D text format "
                "requires r,g,b and semantic columns"
            )
    assert cloud.rgb is not None and cloud.semantic is not None
    world = cloud.world_xyz()
    arrays = {
        "x": world[:, 0],
        "y": world[:, 1],
        "z": world[:, 2],
        "r": cloud.rgb[:, 0],
        "g": cloud.rgb[:, 1],
        "b": cloud.rgb[:, 2],
        "semantic": cloud.semantic,
    }
    if cloud.instance is not None:
        arrays["instance"] = cloud.instance
    table = pa.table({k: pa.array(np.ascontiguousarray(v)) for k, v in arrays.items()})
    with atomic_write(path, "wb") as fh:
        fh.write((",".join(arrays) + "\n").encode("ascii"))
        csv.write_csv(
            table, fh, write_options=csv.WriteOptions(include_header=False, quoting_style="none")
        )


def read_stpls3d_ply(path: str | os.PathLike[str]) -> PointCloud:
    """Read an STPLS3D ``*_points.ply`` (``x y z red green blue class [instance]``).

    Same as :func:`urbex.io.ply.read_ply` with ``class_scheme='stpls3d'``.
    """
    return read_ply(path, class_scheme="stpls3d")
