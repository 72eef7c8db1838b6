"""One entry point over the data sources: list the scenes of a root and read one scene.

Sources and layouts (see ``docs/DATA_FORMATS.md``)
--------------------------------------------------
``cityrefer`` / ``synthetic``
    ``<root>/scans/<id>/<id>.ply`` (+ ``<id>.segs.json`` → ``cloud.instance``, the instance id
    being the segment id; required when the scene has boxes and the PLY no ``instance``
    property), ``<root>/box3d/<id>_bbox.json`` (absent → no boxes),
    ``<root>/landmarks/<id>.geojson`` if present. Semantic ids are SensatUrban's.
``stpls3d``
    ``<root>/RealWorldData/<ID>_points.ply`` or ``.txt`` (the PLY wins if both exist), scene id
    ``<ID>`` (e.g. ``USC``); ``<root>/landmarks/<ID>.geojson`` if present; no boxes.
``las``
    ``<root>/*.las`` / ``*.laz``, scene id = file stem; ``<root>/<stem>.geojson`` if present.

All clouds are in **world metres** (``xyz`` relative to ``offset``; see the readers).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from urbex.errors import AnnotationError, ConfigError
from urbex.io.cityrefer import BoxRecord, read_box3d, read_segs, segs_to_instance
from urbex.io.las import read_las
from urbex.io.ply import read_ply
from urbex.io.stpls3d import read_stpls3d_txt
from urbex.pointcloud import PointCloud

__all__ = ["SOURCES", "RawScene", "annotation_files", "list_scenes", "read_scene"]

#: Data sources :func:`list_scenes` / :func:`read_scene` understand (``params.data.source``).
SOURCES: tuple[str, ...] = ("cityrefer", "synthetic", "stpls3d", "las")
_SPLITS = ("train", "val", "test")


@dataclass(frozen=True, slots=True, kw_only=True)
class RawScene:
    """One scene as read from its source, before any cache is built.

    Attributes
    ----------
    scene_id : str
    cloud : PointCloud
        The full-resolution points (world metres relative to ``cloud.offset``).
    boxes : tuple of BoxRecord
        Ground-truth instance boxes (world metres); empty where the source has none.
    landmark_file : Path or None
        A GeoJSON of named landmarks for this scene, if one exists.
    """

    scene_id: str
    cloud: PointCloud
    boxes: tuple[BoxRecord, ...] = ()
    landmark_file: Path | None = None

    def __post_init__(self) -> None:
        if not self.scene_id:
            raise ValueError("RawScene.scene_id: must be non-empty")
        if not isinstance(self.cloud, PointCloud):
            raise TypeError(f"RawScene.cloud: expected PointCloud, got {type(self.cloud).__name__}")
        object.__setattr__(self, "boxes", tuple(self.boxes))


def _check(source: str, root: Path) -> Path:
    if source not in SOURCES:
        raise ConfigError(
            f"unknown data source {source!r}; expected one of {list(SOURCES)}", field="data.source"
        )
    root = Path(root)
    if not root.is_dir():
        raise ConfigError(
            f"data root for source {source!r} is not a directory", path=root, field="data.root"
        )
    return root


def _stpls3d_files(root: Path) -> dict[str, Path]:
    files: dict[str, Path] = {}
    for suffix in (".txt", ".ply"):  # .ply last: it wins
        for f in sorted((root / "RealWorldData").glob(f"*_points{suffix}")):
            files[f.name[: -len(f"_points{suffix}")]] = f
    return files


def _las_files(root: Path) -> dict[str, Path]:
    files: dict[str, Path] = {}
    for f in sorted(root.iterdir(), reverse=True):  # .las sorts after .laz → .las wins
        if f.is_file() and f.suffix.lower() in (".las", ".laz"):
            files[f.stem] = f
    return dict(sorted(files.items()))


def list_scenes(source: str, root: Path) -> list[str]:
    """Scene ids available under ``root`` for ``source``, sorted.

    Raises
    ------
    ConfigError
        Unknown ``source`` or ``root`` not a directory.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> (root / "scans" / "cambridge_block_2").mkdir(parents=True)
    >>> _ = (root / "scans" / "cambridge_block_2" / "cambridge_block_2.ply").write_bytes(b"")
    >>> list_scenes("cityrefer", root)
    ['cambridge_block_2']
    """
    root = _check(source, root)
    if source in ("cityrefer", "synthetic"):
        scans = root / "scans"
        if not scans.is_dir():
            return []
        return sorted(d.name for d in scans.iterdir() if (d / f"{d.name}.ply").is_file())
    if source == "stpls3d":
        return sorted(_stpls3d_files(root))
    return list(_las_files(root))


def _unknown(source: str, root: Path, scene_id: str) -> ConfigError:
    return ConfigError(
        f"no scene {scene_id!r} for source {source!r}; available: {list_scenes(source, root)}",
        path=root,
        field="scene_id",
    )


def read_scene(source: str, root: Path, scene_id: str) -> RawScene:
    """Read one scene (points, GT boxes, landmark file) from a data root.

    Parameters
    ----------
    source
        One of :data:`SOURCES`.
    root
        The data root in that source's layout (module docstring).
    scene_id
        A scene id from :func:`list_scenes`.

    Raises
    ------
    ConfigError
        Unknown source, root not a directory, or unknown scene (the message lists the
        available ids).
    PointCloudFormatError, AnnotationError
        From the readers, on malformed files; ``AnnotationError`` also when a scene's box3d
        file names instances but its ``.segs.json`` is missing (and the PLY has no
        ``instance`` property).
    """
    root = _check(source, root)
    if source in ("cityrefer", "synthetic"):
        ply = root / "scans" / scene_id / f"{scene_id}.ply"
        if not ply.is_file():
            raise _unknown(source, root, scene_id)
        cloud = read_ply(ply, class_scheme="sensaturban")
        box_path = root / "box3d" / f"{scene_id}_bbox.json"
        boxes: list[BoxRecord] = []
        if box_path.is_file():
            _, boxes = read_box3d(box_path)
        segs_path = ply.with_name(f"{scene_id}.segs.json")
        if not segs_path.is_file() and boxes and cloud.instance is None:
            raise AnnotationError(
                f"scene {scene_id!r}: {box_path.name} annotates {len(boxes)} instances but the "
                "instance segments file is missing (expected it next to the PLY; the PLY has no "
                "'instance' property either); restore the scene's .segs.json or remove the box3d "
                "file",
                path=segs_path,
                field="segGroups",
            )
        if segs_path.is_file():
            instance = segs_to_instance(read_segs(segs_path), len(cloud))
            cloud = PointCloud(
                xyz=cloud.xyz,
                offset=cloud.offset,
                rgb=cloud.rgb,
                semantic=cloud.semantic,
                instance=instance,
                class_scheme=cloud.class_scheme,
                crs=cloud.crs,
                source=cloud.source,
            )
        lm = root / "landmarks" / f"{scene_id}.geojson"
        return RawScene(
            scene_id=scene_id,
            cloud=cloud,
            boxes=tuple(boxes),
            landmark_file=lm if lm.is_file() else None,
        )
    if source == "stpls3d":
        files = _stpls3d_files(root)
        if scene_id not in files:
            raise _unknown(source, root, scene_id)
        f = files[scene_id]
        cloud = read_ply(f, class_scheme="stpls3d") if f.suffix == ".ply" else read_stpls3d_txt(f)
        lm = root / "landmarks" / f"{scene_id}.geojson"
        return RawScene(scene_id=scene_id, cloud=cloud, landmark_file=lm if lm.is_file() else None)
    files = _las_files(root)
    if scene_id not in files:
        raise _unknown(source, root, scene_id)
    lm = root / f"{scene_id}.geojson"
    return RawScene(
        scene_id=scene_id,
        cloud=read_las(files[scene_id]),
        landmark_file=lm if lm.is_file() else None,
    )


def annotation_files(root: Path) -> dict[str, Path]:
    """``{'train'|'val'|'test': <root>/meta_data/CityRefer_<split>.json}`` for files that exist.

    >>> import tempfile, pathlib
    >>> annotation_files(pathlib.Path(tempfile.mkdtemp()))
    {}
    """
    meta = Path(root) / "meta_data"
    out: dict[str, Path] = {}
    for split in _SPLITS:
        p = meta / f"CityRefer_{split}.json"
        if p.is_file():
            out[split] = p
    return out
