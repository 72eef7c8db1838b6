"""The scene cache's layout on disk and its ``meta.json`` record.

A scene cache is one directory::

    <scene_id>/
      meta.json                 CacheMeta (this module)
      points/xyz.npy            (N, 3) float32, cache frame = world metres − meta.origin
      points/rgb.npy            (N, 3) uint8           (only if the cloud had colours)
      points/semantic.npy       (N,) int32             (only if the cloud had classes)
      points/instance.npy       (N,) int32, −1 = none  (only if the cloud had instances)
      points/cell_offsets.npy   (ncx·ncy + 1,) int64: points of cell c are [off[c], off[c+1])
      bev/rgb.npy               (H, W, 3) uint8, colour of the highest point (black = empty)
      bev/z_max.npy, z_min.npy  (H, W) float32, world metres, NaN = empty
      bev/semantic.npy          (H, W) int16, −1 = empty/unlabeled
      bev/instance.npy          (H, W) int32, −1 = empty/none
      bev/filled.npy            (H, W) bool, True where the value came from hole filling
      global_view.png           the whole BEV, long side ``global_view_size``, area-averaged
      instances.parquet         one row per instance id
      proposals.parquet         one row per instance proposal (a mark; urbex.scene.proposals)
      points/proposal.npy       (N,) int32, each point's proposal mark_id, 0 = none (with classes)
      scene.parquet             the warehouse ``scenes`` row (urbex.scene.meta.scene_row)
      bev_cog.tif               optional Cloud-Optimized GeoTIFF of bev/rgb
      timings/build.json        build seconds, the source cloud's path, when (not versioned:
                                urbex.layout.TIMINGS_DIR; everything above is a function of the
                                cloud and the params only, so a rebuild hashes the same)

Points are ordered by grid cell (``cell = cy·ncx + cx``, cells of ``cell_size`` metres counted
from ``grid_origin``), then by their index in the input cloud.

The directory is built in a hidden staging sibling and swapped into place
(:func:`urbex.atomic.publish_dir`), so every file above appears together.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from urbex.arrow import row_table
from urbex.atomic import atomic_path, write_json_atomic
from urbex.errors import CacheError
from urbex.geometry import Affine
from urbex.layout import META_FILE, SCENE_ROW_FILE, TIMINGS_DIR

__all__ = [
    "BEV_LAYERS",
    "CACHE_FORMAT_VERSION",
    "POINT_LAYERS",
    "SCENE_COLUMNS",
    "CacheMeta",
    "read_meta",
    "scene_row",
    "write_build_timing",
    "write_scene_row",
]

#: Bumped whenever the on-disk layout or a kernel's output changes; part of the content hash.
CACHE_FORMAT_VERSION = 1

#: BEV layer name → dtype on disk.
BEV_LAYERS: dict[str, np.dtype] = {
    "rgb": np.dtype(np.uint8),
    "z_max": np.dtype(np.float32),
    "z_min": np.dtype(np.float32),
    "semantic": np.dtype(np.int16),
    "instance": np.dtype(np.int32),
    "filled": np.dtype(np.bool_),
}

#: Point layer name → dtype on disk (``rgb``/``semantic``/``instance`` are optional).
POINT_LAYERS: dict[str, np.dtype] = {
    "xyz": np.dtype(np.float32),
    "rgb": np.dtype(np.uint8),
    "semantic": np.dtype(np.int32),
    "instance": np.dtype(np.int32),
    "cell_offsets": np.dtype(np.int64),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheMeta:
    """Everything ``meta.json`` records about a built scene cache.

    Attributes
    ----------
    scene_id : str
    n_points : int
        Points stored (non-finite input points excluded).
    n_dropped_nonfinite : int
        Input points dropped because a coordinate was NaN or ±inf.
    bounds : tuple of 6 float
        World 3D box ``[x_min, y_min, z_min, x_max, y_max, z_max]`` of the stored points, metres.
    origin : tuple of 3 float
        World position of the cache frame's zero: ``world = points/xyz + origin``.
    offset : tuple of 3 float
        The input cloud's ``offset`` (for reference).
    crs : str or None
        CRS of the world frame (WKT/authority string) if the input had one.
    class_scheme : str
    has_rgb, has_semantic, has_instance : bool
        Which optional point layers exist.
    resolution : float
        BEV metres per pixel.
    cell_size : float
        Spatial-index cell side, metres.
    grid_origin : tuple of 2 float
        Cache-frame ``(x, y)`` of the south-west corner of cell 0.
    grid_shape : tuple of 2 int
        ``(ncx, ncy)`` cells along x and y.
    bev_width, bev_height : int
        Full-resolution BEV size in pixels.
    bev_transform : tuple of 6 float
        :class:`Affine` tuple, full-resolution BEV pixel → world metres.
    global_view_width, global_view_height : int
    global_view_transform : tuple of 6 float
        :class:`Affine` tuple, global-view pixel → world metres.
    class_histogram : dict[str, int]
        Semantic id (as a string) → point count.
    n_instances : int
    n_proposals : int or None
        Instance proposals stored (:mod:`urbex.scene.proposals`); None for a cache built
        before urbex stored them (``urbex cache --force`` rebuilds it).
    content_hash : str
        sha256 hex digest of inputs + params + format version (see ``content_hash``).
    input_hash : str
        The caller's hash of the input files (may be empty).
    params : dict
        The ``SceneParams`` used.
    format_version : int
    urbex_version : str

    The build's seconds and the source cloud's path are in ``timings/build.json``
    (:func:`write_build_timing`), not here: ``meta.json`` is versioned data.
    """

    scene_id: str
    n_points: int
    n_dropped_nonfinite: int
    bounds: tuple[float, ...]
    origin: tuple[float, ...]
    offset: tuple[float, ...]
    crs: str | None
    class_scheme: str
    has_rgb: bool
    has_semantic: bool
    has_instance: bool
    resolution: float
    cell_size: float
    grid_origin: tuple[float, ...]
    grid_shape: tuple[int, ...]
    bev_width: int
    bev_height: int
    bev_transform: tuple[float, ...]
    global_view_width: int
    global_view_height: int
    global_view_transform: tuple[float, ...]
    class_histogram: dict[str, int] = field(default_factory=dict)
    n_instances: int = 0
    n_proposals: int | None = None
    content_hash: str = ""
    input_hash: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    format_version: int = CACHE_FORMAT_VERSION
    urbex_version: str = ""

    def __post_init__(self) -> None:
        for name, n in (("bounds", 6), ("origin", 3), ("offset", 3), ("grid_origin", 2)):
            value = tuple(float(v) for v in getattr(self, name))
            if len(value) != n:
                raise ValueError(f"CacheMeta.{name}: expected {n} values, got {len(value)}")
            object.__setattr__(self, name, value)
        for name in ("bev_transform", "global_view_transform"):
            value = tuple(float(v) for v in getattr(self, name))
            if len(value) != 6:
                raise ValueError(f"CacheMeta.{name}: expected 6 affine values, got {len(value)}")
            object.__setattr__(self, name, value)
        object.__setattr__(self, "grid_shape", tuple(int(v) for v in self.grid_shape))
        if self.n_points < 0 or self.bev_width < 1 or self.bev_height < 1:
            raise ValueError(
                f"CacheMeta: expected n_points ≥ 0 and a BEV of ≥ 1×1 px, got n_points="
                f"{self.n_points}, bev {self.bev_width}×{self.bev_height}"
            )

    @property
    def bev_affine(self) -> Affine:
        """Full-resolution BEV pixel → world metres."""
        return Affine.from_tuple(self.bev_transform)

    @property
    def global_view_affine(self) -> Affine:
        """Global-view pixel → world metres."""
        return Affine.from_tuple(self.global_view_transform)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict (tuples become lists)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, path: Path | None = None) -> CacheMeta:
        """From a ``meta.json`` dict; :class:`CacheError` naming the missing/bad field."""
        names = {f.name for f in fields(cls)}
        required = [
            n
            for n in (
                "scene_id",
                "n_points",
                "bounds",
                "origin",
                "bev_width",
                "bev_height",
                "bev_transform",
                "content_hash",
            )
            if n not in data
        ]
        if required:
            raise CacheError(
                f"meta.json lacks required keys {required}; rebuild the cache", path=path
            )
        try:
            return cls(**{k: v for k, v in data.items() if k in names})
        except (TypeError, ValueError) as exc:
            raise CacheError(f"meta.json is invalid ({exc}); rebuild the cache", path=path) from exc


def read_meta(cache_dir: str | Path) -> CacheMeta:
    """Read ``<cache_dir>/meta.json``.

    Raises
    ------
    CacheError
        The file is missing, not JSON, or lacks a required key.
    """
    path = Path(cache_dir) / META_FILE
    if not path.is_file():
        raise CacheError("no meta.json: not a scene cache (or an unfinished build)", path=path)
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise CacheError(f"meta.json is not readable JSON: {exc}", path=path) from exc
    if not isinstance(data, dict):
        raise CacheError(f"expected a JSON object, got {type(data).__name__}", path=path)
    return CacheMeta.from_dict(data, path=path)


def write_build_timing(cache_dir: Path, *, seconds: float, source: str) -> Path:
    """Write ``<cache_dir>/timings/build.json``: the build's seconds, the source cloud's path and
    the time (UTC), what differs between two builds of the same cloud (not versioned,
    :data:`urbex.layout.TIMINGS_DIR`); return its path."""
    from datetime import UTC, datetime

    path = Path(cache_dir) / TIMINGS_DIR / "build.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "build_seconds": round(float(seconds), 4),
        "source": source,
        "built": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    write_json_atomic(data, path)
    return path


# ---------------------------------------------------------------------------------------------
# the warehouse's ``scenes`` row: a projection of meta.json
# ---------------------------------------------------------------------------------------------

#: The ``scenes`` row (:func:`scene_row`), in column order.
SCENE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("scene_id", "VARCHAR"),
    ("n_points", "BIGINT"),
    ("x_min", "DOUBLE"),
    ("y_min", "DOUBLE"),
    ("z_min", "DOUBLE"),
    ("x_max", "DOUBLE"),
    ("y_max", "DOUBLE"),
    ("z_max", "DOUBLE"),
    ("bev_width", "BIGINT"),
    ("bev_height", "BIGINT"),
    ("resolution", "DOUBLE"),
    ("crs", "VARCHAR"),
    ("content_hash", "VARCHAR"),
)


def scene_row(meta: dict[str, Any], *, scene_id: str) -> dict[str, Any]:
    """The ``scenes`` row for a scene cache's ``meta.json`` content.

    ``meta["bounds"]`` is ``[x_min, y_min, z_min, x_max, y_max, z_max]`` in world metres
    (``xyz + offset``), as :class:`urbex.scene.meta.CacheMeta` writes it.
    """
    b = [float(v) for v in meta["bounds"]]
    if len(b) != 6:
        raise ValueError(f"meta.json bounds: expected 6 values, got {len(b)}")
    return {
        "scene_id": scene_id,
        "n_points": int(meta["n_points"]),
        "x_min": b[0],
        "y_min": b[1],
        "z_min": b[2],
        "x_max": b[3],
        "y_max": b[4],
        "z_max": b[5],
        "bev_width": int(meta["bev_width"]),
        "bev_height": int(meta["bev_height"]),
        "resolution": float(meta["resolution"]),
        "crs": meta.get("crs"),
        "content_hash": meta.get("content_hash", ""),
    }


def write_scene_row(cache_dir: Path) -> Path:
    """Write ``<cache_dir>/scene.parquet`` from its ``meta.json`` (atomic); return the path."""
    cache_dir = Path(cache_dir)
    meta = json.loads((cache_dir / META_FILE).read_text())
    row = scene_row(meta, scene_id=meta.get("scene_id", cache_dir.name))
    table = row_table(row)  # pa.Table.from_pylist([row])'s types, without importing pandas
    out = cache_dir / SCENE_ROW_FILE
    with atomic_path(out) as tmp:
        pq.write_table(table, tmp)
    return out
