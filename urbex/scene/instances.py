"""The instance table of a scene cache: one row per instance id of the point cloud.

Columns (all boxes in **world metres**, axis-aligned, z up):
``scene_id, object_id (str), class_id (int32, majority semantic, −1 if unlabeled), class_name,
x_min, y_min, z_min, x_max, y_max, z_max, cx, cy, cz, dx, dy, dz, n_points (int64),
mean_r, mean_g, mean_b (float64, 0–255; NaN without colours), landmark_name ("" if none)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from urbex.pointcloud import CLASS_SCHEMES

if TYPE_CHECKING:
    import polars as pl

    from urbex.io.cityrefer import BoxRecord

__all__ = [
    "INSTANCE_COLUMNS",
    "INSTANCE_SCHEMA",
    "compact_ids",
    "instance_extents",
    "instance_table",
    "label_histogram",
    "write_parquet_deterministic",
]

#: ``(column, polars dtype name)`` of the instance table, in column order: the one definition
#: of its schema (the builder's frame, the warehouse's ``instances`` view).
INSTANCE_SCHEMA: tuple[tuple[str, str], ...] = (
    ("scene_id", "String"),
    ("object_id", "String"),
    ("class_id", "Int32"),
    ("class_name", "String"),
    *(
        (c, "Float64")
        for c in (
            "x_min",
            "y_min",
            "z_min",
            "x_max",
            "y_max",
            "z_max",
            "cx",
            "cy",
            "cz",
            "dx",
            "dy",
            "dz",
        )
    ),
    ("n_points", "Int64"),
    ("mean_r", "Float64"),
    ("mean_g", "Float64"),
    ("mean_b", "Float64"),
    ("landmark_name", "String"),
)
#: Column names of the instance table, in order.
INSTANCE_COLUMNS: tuple[str, ...] = tuple(c for c, _ in INSTANCE_SCHEMA)

_DENSE_LIMIT = 1 << 26  # ids up to 67 M use bincount; beyond, np.unique


def _compact(
    values: NDArray,
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray, NDArray[np.int32]]:
    """``(ids, counts, keys, lut)``: the distinct non-negative ids, their counts, and a map
    ``lut[keys[i]]`` from each value to its position in ``ids`` (negative keys: none).

    Ids below :data:`_DENSE_LIMIT` are counted in one pass and ``keys`` are the values
    themselves (no per-value array); larger ids go through ``np.unique`` and ``keys`` is
    the compact index.
    """
    from urbex.scene import _points as P  # numba kernels: imported when used

    v = np.asarray(values)
    none = np.zeros(0, np.int64)
    if v.size == 0 or int(v.max()) < 0:
        return none, none, v, np.zeros(0, np.int32)
    vmax = int(v.max())
    if vmax < _DENSE_LIMIT:
        counts_all = P.label_counts(v, vmax + 1)
        ids = np.flatnonzero(counts_all).astype(np.int64)
        lut = np.full(vmax + 1, -1, np.int32)
        lut[ids] = np.arange(ids.size, dtype=np.int32)
        return ids, counts_all[ids], v, lut
    nonneg = v >= 0
    ids, inv, counts = np.unique(v[nonneg], return_inverse=True, return_counts=True)
    index = np.full(v.shape, -1, np.int32)
    index[nonneg] = inv.astype(np.int32)
    return ids.astype(np.int64), counts.astype(np.int64), index, np.arange(ids.size, dtype=np.int32)


def compact_ids(
    values: NDArray[np.int32],
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int32]]:
    """Distinct non-negative ids, their counts, and each value's compact index (−1 for negatives).

    Parameters
    ----------
    values : ndarray, shape (N,), int32

    Returns
    -------
    ids : ndarray, shape (K,), int64, ascending
    counts : ndarray, shape (K,), int64
    index : ndarray, shape (N,), int32, position of each value in ``ids`` (−1 if value < 0)

    Examples
    --------
    >>> ids, counts, index = compact_ids(np.array([5, -1, 2, 5], np.int32))
    >>> ids.tolist(), counts.tolist(), index.tolist()
    ([2, 5], [1, 2], [1, -1, 0, 1])
    """
    from urbex.scene import _points as P

    ids, counts, keys, lut = _compact(values)
    if lut.size == 0:
        return ids, counts, np.full(np.shape(values), -1, np.int32)
    return ids, counts, P.lut_index(keys, lut)


def instance_extents(
    xyz: NDArray[Any], instance: NDArray[Any]
) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]]:
    """Per instance id (ascending; negative ids are none): the minima and maxima of its
    points (``xyz``'s frame, float64, shape (K, 3)) and their count, in one pass.

    >>> ids, lo, hi, n = instance_extents(
    ...     np.array([[0, 0, 0], [2, 1, 5], [9, 9, 9]], np.float32), np.array([4, 4, -1], np.int32))
    >>> ids.tolist(), lo.tolist(), hi.tolist(), n.tolist()
    ([4], [[0.0, 0.0, 0.0]], [[2.0, 1.0, 5.0]], [2])
    """
    from urbex.scene import _points as P

    ids, _, keys, lut = _compact(instance)
    no_rgb, no_sem = np.zeros((1, 3), np.uint8), np.zeros(1, np.int32)
    lo, hi, count, _, _ = P.instance_stats(
        xyz, no_rgb, False, no_sem, np.zeros(0, np.int32), 0, keys, lut, ids.size
    )
    return ids, lo, hi, count


def label_histogram(values: NDArray[np.int32]) -> dict[str, int]:
    """Points per label, ``{"<id>": count}`` ascending, plus ``"-1"`` for negative labels.

    >>> label_histogram(np.array([3, -1, 3, 0], np.int32))
    {'0': 1, '3': 2, '-1': 1}
    """
    ids, counts, _, _ = _compact(values)
    hist = {str(i): int(c) for i, c in zip(ids.tolist(), counts.tolist())}
    unlabeled = int(np.size(values) - counts.sum())
    if unlabeled:
        hist["-1"] = unlabeled
    return hist


def _box_lookup(boxes: Sequence[BoxRecord]) -> dict[int, Any]:
    """instance id → BoxRecord, matched by ``object_id`` (an integer string) then ``instance_id``."""
    out: dict[int, Any] = {}
    for box in boxes:
        oid = str(getattr(box, "object_id", "")).strip()
        key: int | None = None
        if oid.lstrip("-").isdigit():
            key = int(oid)
        else:
            iid = getattr(box, "instance_id", None)
            key = None if iid is None else int(iid)
        if key is not None and key not in out:
            out[key] = box
    return out


def instance_table(
    *,
    scene_id: str,
    xyz: NDArray[np.float32],
    origin: NDArray[np.float64],
    rgb: NDArray[np.uint8] | None,
    semantic: NDArray[np.int32] | None,
    instance: NDArray[np.int32] | None,
    class_scheme: str,
    boxes: Sequence[BoxRecord] = (),
) -> pl.DataFrame:
    """Aggregate points by instance id into the instance table (see the module docstring).

    Parameters
    ----------
    xyz : ndarray, shape (N, 3), float32
        Cache-frame metres (world = ``xyz + origin``).
    origin : ndarray, shape (3,), float64
    rgb, semantic, instance : ndarray or None
        Per-point colours (N, 3) uint8, classes (N,) int32, instance ids (N,) int32 (−1 = none).
    boxes : sequence of BoxRecord
        Optional annotations; a box whose ``object_id`` (or ``instance_id``) equals an instance id
        supplies ``class_name`` (its ``object_name``) and ``landmark_name``.

    Returns
    -------
    polars.DataFrame
        Rows sorted by instance id; empty (with the schema) when there are no instances.
    """
    import polars as pl

    from urbex.scene import _points as P

    schema = {c: getattr(pl, t) for c, t in INSTANCE_SCHEMA}
    if instance is None or instance.size == 0:
        return pl.DataFrame(schema=schema)
    ids, _, inst_keys, inst_lut = _compact(instance)
    if ids.size == 0:
        return pl.DataFrame(schema=schema)
    if semantic is not None:
        class_ids, _, sem_keys, sem_lut = _compact(semantic)
    else:
        class_ids = np.zeros(0, np.int64)
        sem_keys, sem_lut = np.zeros(1, np.int32), np.zeros(0, np.int32)
    has_rgb = rgb is not None
    rgb_arr = rgb if rgb is not None else np.zeros((1, 3), np.uint8)
    lo, hi, count, csum, ccount = P.instance_stats(
        xyz, rgb_arr, has_rgb, sem_keys, sem_lut, int(class_ids.size), inst_keys, inst_lut,
        int(ids.size),
    )  # fmt: skip
    lo = lo + origin
    hi = hi + origin
    if class_ids.size:
        labeled = ccount.sum(axis=1) > 0
        cls = np.where(labeled, class_ids[np.argmax(ccount, axis=1)], -1).astype(np.int32)
    else:
        cls = np.full(ids.size, -1, np.int32)
    names = CLASS_SCHEMES.get(class_scheme, {})
    lookup = _box_lookup(boxes)
    class_name: list[str] = []
    landmark: list[str] = []
    for i, c in zip(ids.tolist(), cls.tolist()):
        box = lookup.get(i)
        default = names.get(c, "unlabeled" if c < 0 else f"class_{c}")
        class_name.append(str(getattr(box, "object_name", "") or default) if box else default)
        landmark.append(str(getattr(box, "landmark", "") or "") if box else "")
    if has_rgb:
        mean = csum / count[:, None]
    else:
        mean = np.full((ids.size, 3), np.nan)
    centre = (lo + hi) / 2
    size = hi - lo
    data: dict[str, Any] = {
        "scene_id": [scene_id] * ids.size,
        "object_id": [str(i) for i in ids.tolist()],
        "class_id": cls,
        "class_name": class_name,
        "x_min": lo[:, 0],
        "y_min": lo[:, 1],
        "z_min": lo[:, 2],
        "x_max": hi[:, 0],
        "y_max": hi[:, 1],
        "z_max": hi[:, 2],
        "cx": centre[:, 0],
        "cy": centre[:, 1],
        "cz": centre[:, 2],
        "dx": size[:, 0],
        "dy": size[:, 1],
        "dz": size[:, 2],
        "n_points": count,
        "mean_r": mean[:, 0],
        "mean_g": mean[:, 1],
        "mean_b": mean[:, 2],
        "landmark_name": landmark,
    }
    return pl.DataFrame(data, schema=schema)


def write_parquet_deterministic(df: pl.DataFrame, path: Path) -> None:
    """Write ``df`` to ``path`` with pyarrow, fixed options, so equal frames give equal bytes."""
    import pyarrow.parquet as pq

    pq.write_table(
        df.to_arrow(),
        path,
        compression="zstd",
        use_dictionary=True,
        write_statistics=True,
        store_schema=False,
    )
