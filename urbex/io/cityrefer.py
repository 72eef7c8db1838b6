"""CityRefer annotation files: descriptions, box3d, segs and false-segment lists.

Layout (see ``docs/DATA_FORMATS.md``)::

    <root>/meta_data/CityRefer_{train,val,test}.json   # list of flat annotation records
    <root>/box3d/<scene_id>_bbox.json                  # {"scene_id", "bboxes": [...]}
    <root>/scans/<scene_id>/<scene_id>.segs.json       # {"segGroups": [{"id", "pointIds"}]}
    <root>/false_segments/*.csv                        # area,block_id,object_id

Frames
------
Box centres and sizes are **world metres** in the scene's PLY frame (axis-aligned, no heading).
Point ids index the full-resolution PLY's vertices (0-based).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from urbex.atomic import atomic_write
from urbex.errors import AnnotationError

__all__ = [
    "Annotation",
    "BoxRecord",
    "FalseSegment",
    "box3d_hash",
    "read_annotations",
    "read_box3d",
    "read_false_segments",
    "read_segs",
    "segs_to_instance",
    "write_annotations",
    "write_box3d",
    "write_false_segments",
    "write_segs",
]

PathLike = str | os.PathLike[str]


def _loads(path: PathLike) -> Any:
    """Parse a JSON file (orjson when installed), raising AnnotationError on failure."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise AnnotationError(f"cannot read: {e.strerror}", path=path) from e
    try:
        import orjson

        return orjson.loads(data)
    except ImportError:
        pass
    except ValueError as e:  # orjson.JSONDecodeError is a ValueError
        raise AnnotationError(f"not valid JSON: {e}", path=path) from e
    try:
        return json.loads(data)
    except ValueError as e:
        raise AnnotationError(f"not valid JSON: {e}", path=path) from e


def _dumps(obj: Any) -> bytes:
    try:
        import orjson

        return orjson.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_INDENT_2)
    except ImportError:
        return json.dumps(obj, indent=2, ensure_ascii=False).encode("utf-8")


def _dump(path: PathLike, obj: Any) -> None:
    with atomic_write(path, "wb") as fh:
        fh.write(_dumps(obj))


def _field(path: PathLike, rec: Mapping[str, Any], where: str, name: str, kind: type) -> Any:
    """Fetch ``rec[name]`` and check/convert its type; ``where`` names the record."""
    if name not in rec:
        raise AnnotationError(
            f"{where} has no {name!r} (keys: {sorted(rec)})", path=path, field=name
        )
    v = rec[name]
    if kind is str:
        if isinstance(v, bool) or not isinstance(v, str | int):
            raise AnnotationError(
                f"{where}: expected a string, got {type(v).__name__} {v!r}", path=path, field=name
            )
        return str(v)
    if kind is int:
        if isinstance(v, bool) or not isinstance(v, int | str):
            raise AnnotationError(
                f"{where}: expected an integer, got {type(v).__name__} {v!r}", path=path, field=name
            )
        try:
            return int(v)
        except ValueError as e:
            raise AnnotationError(
                f"{where}: expected an integer, got {v!r}", path=path, field=name
            ) from e
    raise TypeError(kind)


# -- descriptions ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Annotation:
    """One CityRefer description of one object.

    Attributes
    ----------
    scene_id : str
        e.g. ``'cambridge_block_2'``.
    object_id : str
        Segment id of the target (a string in CityRefer; ints are converted).
    object_name : str
        Class name (``'Ground'``, ``'Building'``, ``'Parking'``, ``'Car'``).
    ann_id : int
        Annotation index for this object.
    description : str
        Free-text referring expression.
    """

    scene_id: str
    object_id: str
    object_name: str = ""
    ann_id: int = 0
    description: str

    def __post_init__(self) -> None:
        for name in ("scene_id", "object_id", "object_name", "description"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"Annotation.{name}: expected str, got {getattr(self, name)!r}")
        if not self.scene_id or not self.object_id:
            raise ValueError("Annotation: scene_id and object_id must be non-empty")
        if isinstance(self.ann_id, bool) or not isinstance(self.ann_id, int):
            raise TypeError(f"Annotation.ann_id: expected int, got {self.ann_id!r}")

    def to_dict(self) -> dict[str, Any]:
        """The CityRefer JSON record."""
        return {
            "scene_id": self.scene_id,
            "object_id": self.object_id,
            "object_name": self.object_name,
            "ann_id": self.ann_id,
            "description": self.description,
        }


def read_annotations(path: PathLike) -> list[Annotation]:
    """Read a ``CityRefer_<split>.json`` file (extra keys in records are ignored).

    Raises
    ------
    AnnotationError
        The file is not a JSON list, a record is not an object, a record lacks
        ``scene_id``/``object_id``/``description`` or has a wrong type (message names the
        record index and the field). An int ``object_id`` is accepted and converted to str.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "a.json"
    >>> write_annotations(p, [Annotation(scene_id="s", object_id="3", description="the car")])
    >>> read_annotations(p)[0].object_id
    '3'
    """
    data = _loads(path)
    if not isinstance(data, list):
        raise AnnotationError(
            f"expected a JSON list of annotation records, got {type(data).__name__}", path=path
        )
    out: list[Annotation] = []
    for i, rec in enumerate(data):
        where = f"record {i}"
        if not isinstance(rec, dict):
            raise AnnotationError(
                f"{where}: expected a JSON object, got {type(rec).__name__}", path=path
            )
        scene_id = _field(path, rec, where, "scene_id", str)
        object_id = _field(path, rec, where, "object_id", str)
        description = _field(path, rec, where, "description", str)
        object_name = _field(path, rec, where, "object_name", str) if "object_name" in rec else ""
        ann_id = _field(path, rec, where, "ann_id", int) if "ann_id" in rec else 0
        if not 0 <= ann_id < 2**63:  # the query table's ann_id is a 64-bit integer
            raise AnnotationError(
                f"{where}: ann_id {ann_id} is outside 0 .. 2**63 - 1", path=path, field="ann_id"
            )
        if not scene_id or not object_id:
            field = "scene_id" if not scene_id else "object_id"
            raise AnnotationError(f"{where}: empty {field}", path=path, field=field)
        out.append(
            Annotation(
                scene_id=scene_id,
                object_id=object_id,
                object_name=object_name,
                ann_id=ann_id,
                description=description,
            )
        )
    return out


def write_annotations(path: PathLike, anns: Iterable[Annotation]) -> None:
    """Write annotations as a CityRefer JSON list (atomic)."""
    _dump(path, [a.to_dict() for a in anns])


# -- box3d ----------------------------------------------------------------------------------


def box3d_hash(root: PathLike, scene_id: str) -> str:
    """The hash of the annotation input that shapes a scene cache: ``box3d/<id>_bbox.json``
    (instance names and classes), with the scene id. A cache records it (``meta.input_hash``);
    a box3d file edited since makes the cache stale.
    """
    h = hashlib.sha256(scene_id.encode())
    box = Path(root) / "box3d" / f"{scene_id}_bbox.json"
    if box.exists():
        h.update(box.read_bytes())
    return h.hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class BoxRecord:
    """One ground-truth instance box of a scene.

    Attributes
    ----------
    object_id : str
        Segment id (matches ``Annotation.object_id``).
    object_name : str
        Class name.
    landmark : str
        OSM landmark name, empty if the instance is not a landmark.
    center : tuple of 3 float
        Box centre, world metres.
    size : tuple of 3 float
        Box extent (dx, dy, dz), metres, >= 0.
    label_id : int
        Semantic class id.
    instance_id : int
        Instance id.
    """

    object_id: str
    object_name: str
    landmark: str = ""
    center: tuple[float, float, float]
    size: tuple[float, float, float]
    label_id: int
    instance_id: int

    def __post_init__(self) -> None:
        for name in ("center", "size"):
            v = tuple(float(x) for x in getattr(self, name))
            if len(v) != 3 or not all(np.isfinite(v)):
                raise ValueError(f"BoxRecord.{name}: expected 3 finite floats, got {v}")
            object.__setattr__(self, name, v)
        if min(self.size) < 0:
            raise ValueError(f"BoxRecord.size: expected non-negative extents, got {self.size}")

    @property
    def box3d(self) -> NDArray[np.float64]:
        """Axis-aligned box, shape (6,), float64, world metres:
        ``[x_min, y_min, z_min, x_max, y_max, z_max]``.

        >>> BoxRecord(object_id="1", object_name="Car", center=(1, 2, 3), size=(2, 4, 2),
        ...           label_id=9, instance_id=1).box3d.tolist()
        [0.0, 0.0, 2.0, 2.0, 4.0, 4.0]
        """
        c = np.asarray(self.center)
        h = np.asarray(self.size) / 2.0
        return np.concatenate([c - h, c + h])

    def to_dict(self) -> dict[str, Any]:
        """The box3d JSON entry."""
        return {
            "object_id": self.object_id,
            "object_name": self.object_name,
            "landmark": self.landmark,
            "bbox": [*self.center, *self.size, self.label_id, self.instance_id],
        }


def read_box3d(path: PathLike) -> tuple[str, list[BoxRecord]]:
    """Read ``<scene_id>_bbox.json`` → ``(scene_id, boxes)``.

    Raises
    ------
    AnnotationError
        Not an object with ``scene_id`` and ``bboxes``; an entry without ``object_id`` or
        with a ``bbox`` that is not 8 numbers (message names the entry index).
    """
    data = _loads(path)
    if not isinstance(data, dict):
        raise AnnotationError(f"expected a JSON object, got {type(data).__name__}", path=path)
    scene_id = _field(path, data, "the file", "scene_id", str)
    entries = data.get("bboxes")
    if not isinstance(entries, list):
        raise AnnotationError(
            f"expected a list, got {type(entries).__name__}", path=path, field="bboxes"
        )
    boxes: list[BoxRecord] = []
    for i, e in enumerate(entries):
        where = f"bboxes[{i}]"
        if not isinstance(e, dict):
            raise AnnotationError(f"{where}: expected an object", path=path, field="bboxes")
        object_id = _field(path, e, where, "object_id", str)
        object_name = _field(path, e, where, "object_name", str) if "object_name" in e else ""
        landmark = e.get("landmark") or ""
        if not isinstance(landmark, str):
            raise AnnotationError(f"{where}: expected a string", path=path, field="landmark")
        bbox = e.get("bbox")
        if (
            not isinstance(bbox, list)
            or len(bbox) != 8
            or not all(isinstance(x, int | float) and not isinstance(x, bool) for x in bbox)
        ):
            raise AnnotationError(
                f"{where}: expected 8 numbers [cx,cy,cz,dx,dy,dz,label_id,instance_id], got "
                f"{bbox!r}",
                path=path,
                field="bbox",
            )
        try:
            boxes.append(
                BoxRecord(
                    object_id=object_id,
                    object_name=object_name,
                    landmark=landmark,
                    center=(bbox[0], bbox[1], bbox[2]),
                    size=(bbox[3], bbox[4], bbox[5]),
                    label_id=int(bbox[6]),
                    instance_id=int(bbox[7]),
                )
            )
        except ValueError as err:
            raise AnnotationError(f"{where}: {err}", path=path, field="bbox") from err
    return scene_id, boxes


def write_box3d(path: PathLike, scene_id: str, boxes: Iterable[BoxRecord]) -> None:
    """Write ``{"scene_id": ..., "bboxes": [...]}`` (atomic)."""
    _dump(path, {"scene_id": scene_id, "bboxes": [b.to_dict() for b in boxes]})


# -- segs -----------------------------------------------------------------------------------


def read_segs(path: PathLike) -> dict[int, NDArray[np.int64]]:
    """Read a ``.segs.json`` → ``{segment id: point indices (int64, shape (k,))}``.

    Raises
    ------
    AnnotationError
        No ``segGroups`` list, a group without an int ``id`` or with non-integer
        ``pointIds``, or a duplicated segment id.
    """
    data = _loads(path)
    groups = data.get("segGroups") if isinstance(data, dict) else None
    if not isinstance(groups, list):
        raise AnnotationError(
            "expected an object with a 'segGroups' list", path=path, field="segGroups"
        )
    out: dict[int, NDArray[np.int64]] = {}
    for i, g in enumerate(groups):
        where = f"segGroups[{i}]"
        if not isinstance(g, dict):
            raise AnnotationError(f"{where}: expected an object", path=path, field="segGroups")
        sid = _field(path, g, where, "id", int)
        ids = g.get("pointIds")
        if not isinstance(ids, list):
            raise AnnotationError(f"{where}: expected a list", path=path, field="pointIds")
        arr = np.asarray(ids) if ids else np.zeros(0, np.int64)
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            raise AnnotationError(
                f"{where}: expected a flat list of integers, got dtype {arr.dtype}",
                path=path,
                field="pointIds",
            )
        arr = arr.astype(np.int64, copy=False)
        if sid in out:
            raise AnnotationError(f"{where}: duplicate segment id {sid}", path=path, field="id")
        out[sid] = arr
    return out


def write_segs(path: PathLike, segs: Mapping[int, NDArray | Sequence[int]]) -> None:
    """Write ``{"segGroups": [{"id": int, "pointIds": [...]}, ...]}`` (atomic)."""
    arrays = [(int(k), np.ascontiguousarray(v, dtype=np.int64)) for k, v in segs.items()]
    try:
        import orjson

        payload = orjson.dumps(
            {"segGroups": [{"id": i, "pointIds": a} for i, a in arrays]},
            option=orjson.OPT_SERIALIZE_NUMPY,
        )
    except ImportError:
        groups = [{"id": i, "pointIds": a.tolist()} for i, a in arrays]
        # orjson's compact bytes exactly: the file hashes (dvc.lock) do not depend on whether
        # orjson is installed
        payload = json.dumps({"segGroups": groups}, separators=(",", ":")).encode("utf-8")
    with atomic_write(path, "wb") as fh:
        fh.write(payload)


def segs_to_instance(segs: Mapping[int, NDArray], n_points: int) -> NDArray[np.int32]:
    """Per-point instance ids from segments.

    Parameters
    ----------
    segs
        Segment id → point indices (0-based into a cloud of ``n_points`` points).
    n_points
        Number of points.

    Returns
    -------
    ndarray, shape (n_points,), int32
        The segment id of each point, -1 where no segment covers it. A point listed in two
        segments gets the one that comes later in ``segs``.

    Raises
    ------
    AnnotationError
        An index outside ``0..n_points-1`` (message names the segment id).

    Examples
    --------
    >>> segs_to_instance({5: np.array([0, 2]), 7: np.array([3])}, 5).tolist()
    [5, -1, 5, 7, -1]
    """
    out = np.full(n_points, -1, np.int32)
    if not segs:
        return out
    keys = list(segs)
    arrays = [np.asarray(segs[k], np.int64).ravel() for k in keys]
    for k, a in zip(keys, arrays):
        if a.size and (a.min() < 0 or a.max() >= n_points):
            bad = a[(a < 0) | (a >= n_points)][0]
            raise AnnotationError(
                f"segment {k}: point index {int(bad)} out of range 0..{n_points - 1}",
                field="pointIds",
            )
    idx = np.concatenate(arrays)
    ids = np.repeat(np.asarray(keys, np.int32), [a.size for a in arrays])
    out[idx] = ids  # numpy assigns in order for a fancy index; later segments win
    return out


# -- false segments -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class FalseSegment:
    """A bad instance to drop: ``(area, block_id, object_id)``, e.g. ``birmingham,3,178``."""

    area: str
    block_id: int
    object_id: str

    def __post_init__(self) -> None:
        if not self.area:
            raise ValueError("FalseSegment.area: must be non-empty")

    @property
    def scene_id(self) -> str:
        """``f"{area}_block_{block_id}"``.

        >>> FalseSegment(area="birmingham", block_id=3, object_id="178").scene_id
        'birmingham_block_3'
        """
        return f"{self.area}_block_{self.block_id}"


def _read_false_csv(path: Path) -> list[FalseSegment]:
    try:
        text = path.read_text(encoding="utf-8-sig")  # tolerate a byte-order mark
    except OSError as e:
        raise AnnotationError(f"cannot read: {e.strerror}", path=path) from e
    except UnicodeDecodeError as e:
        raise AnnotationError(f"not UTF-8 text: {e}", path=path) from e
    reader = csv.DictReader(io.StringIO(text), skipinitialspace=True)
    cols = reader.fieldnames or []
    for c in ("area", "block_id", "object_id"):
        if c not in cols:
            raise AnnotationError(f"missing column (header is {cols})", path=path, field=c)
    rows: list[FalseSegment] = []
    for i, rec in enumerate(reader):
        where = f"row {i + 1}"
        try:
            block = int(rec["block_id"])
        except (TypeError, ValueError) as e:
            raise AnnotationError(
                f"{where}: expected an integer, got {rec['block_id']!r}",
                path=path,
                field="block_id",
            ) from e
        area = (rec["area"] or "").strip()
        obj = (rec["object_id"] or "").strip()
        if not area or not obj:
            field = "area" if not area else "object_id"
            raise AnnotationError(f"{where}: empty value", path=path, field=field)
        rows.append(FalseSegment(area=area, block_id=block, object_id=obj))
    return rows


def read_false_segments(path_or_dir: PathLike) -> list[FalseSegment]:
    """Read a false-segments CSV, or every ``*.csv`` in a directory (sorted by name).

    Raises
    ------
    AnnotationError
        Missing file/columns, non-integer ``block_id``, empty ``area``/``object_id``.
    """
    p = Path(path_or_dir)
    if p.is_dir():
        out: list[FalseSegment] = []
        for f in sorted(p.glob("*.csv")):
            out += _read_false_csv(f)
        return out
    return _read_false_csv(p)


def write_false_segments(path: PathLike, rows: Iterable[FalseSegment]) -> None:
    """Write ``area,block_id,object_id`` rows with a header (atomic)."""
    with atomic_write(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["area", "block_id", "object_id"])
        for r in rows:
            w.writerow([r.area, r.block_id, r.object_id])
