"""Tests for urbex.io.datasets: list/read scenes for every source layout."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from urbex.errors import AnnotationError, ConfigError
from urbex.io.cityrefer import BoxRecord, write_box3d, write_segs
from urbex.io.datasets import RawScene, annotation_files, list_scenes, read_scene
from urbex.io.las import write_las
from urbex.io.ply import write_ply
from urbex.io.stpls3d import write_stpls3d_txt
from urbex.pointcloud import PointCloud


def _cloud(n: int = 100, scheme: str = "sensaturban") -> PointCloud:
    rng = np.random.default_rng(8)
    return PointCloud(
        xyz=(rng.random((n, 3)) * 50).astype(np.float32),
        rgb=rng.integers(0, 256, (n, 3), dtype=np.uint8),
        semantic=rng.integers(0, 13, n).astype(np.int32),
        class_scheme=scheme,
    )


@pytest.fixture
def cityrefer_root(tmp_path: Path) -> Path:
    for sid in ("cambridge_block_2", "birmingham_block_0"):
        d = tmp_path / "scans" / sid
        d.mkdir(parents=True)
        write_ply(d / f"{sid}.ply", _cloud())
    write_segs(
        tmp_path / "scans" / "cambridge_block_2" / "cambridge_block_2.segs.json",
        {3: np.arange(10), 8: np.arange(50, 60)},
    )
    box = BoxRecord(
        object_id="3",
        object_name="Car",
        landmark="",
        center=(1, 2, 3),
        size=(4, 2, 1.5),
        label_id=9,
        instance_id=3,
    )
    write_box3d(tmp_path / "box3d" / "cambridge_block_2_bbox.json", "cambridge_block_2", [box])
    (tmp_path / "landmarks").mkdir()
    (tmp_path / "landmarks" / "cambridge_block_2.geojson").write_text("{}")
    (tmp_path / "meta_data").mkdir()
    for split in ("train", "test"):
        (tmp_path / "meta_data" / f"CityRefer_{split}.json").write_text("[]")
    return tmp_path


@pytest.mark.parametrize("source", ["cityrefer", "synthetic"])
def test_read_scene_cityrefer_layout(cityrefer_root: Path, source: str) -> None:
    assert list_scenes(source, cityrefer_root) == ["birmingham_block_0", "cambridge_block_2"]
    s = read_scene(source, cityrefer_root, "cambridge_block_2")
    assert isinstance(s, RawScene) and len(s.cloud) == 100
    inst = s.cloud.instance
    assert inst is not None and inst[:10].tolist() == [3] * 10 and inst[55] == 8
    assert (inst == -1).sum() == 80
    assert [b.object_id for b in s.boxes] == ["3"]
    assert s.landmark_file == cityrefer_root / "landmarks" / "cambridge_block_2.geojson"
    other = read_scene(source, cityrefer_root, "birmingham_block_0")
    assert other.boxes == () and other.landmark_file is None and other.cloud.instance is None


def test_annotation_files_existing_splits(cityrefer_root: Path) -> None:
    files = annotation_files(cityrefer_root)
    assert sorted(files) == ["test", "train"]
    assert files["train"].name == "CityRefer_train.json"


def test_read_scene_stpls3d_layout(tmp_path: Path) -> None:
    rw = tmp_path / "RealWorldData"
    rw.mkdir()
    write_stpls3d_txt(rw / "USC_points.txt", _cloud(scheme="stpls3d"))
    write_ply(rw / "WMSC_points.ply", _cloud(scheme="stpls3d"))
    (tmp_path / "landmarks").mkdir()
    (tmp_path / "landmarks" / "USC.geojson").write_text("{}")
    assert list_scenes("stpls3d", tmp_path) == ["USC", "WMSC"]
    usc = read_scene("stpls3d", tmp_path, "USC")
    assert usc.cloud.class_scheme == "stpls3d" and len(usc.cloud) == 100
    assert usc.landmark_file is not None and usc.boxes == ()
    wmsc = read_scene("stpls3d", tmp_path, "WMSC")
    assert wmsc.cloud.class_scheme == "stpls3d" and wmsc.landmark_file is None


def test_read_scene_las_layout(tmp_path: Path, realdata: Path) -> None:
    shutil.copy(realdata / "autzen_trim.laz", tmp_path / "autzen.laz")
    write_las(tmp_path / "mine.las", _cloud(scheme="asprs"))
    (tmp_path / "autzen.geojson").write_text("{}")
    (tmp_path / "notes.txt").write_text("ignored")
    assert list_scenes("las", tmp_path) == ["autzen", "mine"]
    s = read_scene("las", tmp_path, "autzen")
    assert len(s.cloud) == 110_000 and s.cloud.class_scheme == "asprs"
    assert s.landmark_file == tmp_path / "autzen.geojson"
    with pytest.warns(UserWarning, match="no CRS"):
        assert read_scene("las", tmp_path, "mine").landmark_file is None


@pytest.mark.parametrize("source", ["cityrefer", "stpls3d", "las"])
def test_read_scene_unknown_scene_lists_available(cityrefer_root: Path, source: str) -> None:
    with pytest.raises(ConfigError, match=r"no scene 'nope'.*available: \[") as info:
        read_scene(source, cityrefer_root, "nope")
    assert info.value.field == "scene_id"
    if source == "cityrefer":
        assert "cambridge_block_2" in str(info.value)


def test_list_scenes_unknown_source_raises(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown data source 'kitti'") as info:
        list_scenes("kitti", tmp_path)
    assert info.value.field == "data.source"


def test_read_scene_missing_root_raises(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a directory"):
        read_scene("las", tmp_path / "absent", "x")


# -- issue 11: a missing segs.json, the empty-layout hint ---------------------------------------


def test_read_scene_boxes_without_segs_raises_naming_the_file(cityrefer_root: Path) -> None:
    # used to give a scene with no instances, and much later a data-quality line naming no file
    segs = cityrefer_root / "scans" / "cambridge_block_2" / "cambridge_block_2.segs.json"
    segs.unlink()
    with pytest.raises(AnnotationError, match=r"'cambridge_block_2'.*1 instances.*missing") as e:
        read_scene("cityrefer", cityrefer_root, "cambridge_block_2")
    assert e.value.path == segs and str(segs) in str(e.value)


def test_read_scene_instances_in_the_ply_need_no_segs(cityrefer_root: Path) -> None:
    sid = "cambridge_block_2"
    (cityrefer_root / "scans" / sid / f"{sid}.segs.json").unlink()
    c = _cloud()
    inst = np.full(len(c), -1, np.int32)
    inst[:10] = 3
    write_ply(
        cityrefer_root / "scans" / sid / f"{sid}.ply",
        PointCloud(xyz=c.xyz, rgb=c.rgb, semantic=c.semantic, instance=inst),
    )
    s = read_scene("cityrefer", cityrefer_root, sid)
    assert s.cloud.instance is not None and (s.cloud.instance == 3).sum() == 10


def test_raw_dataset_empty_layout_points_to_docs_in_the_repo(tmp_path: Path) -> None:
    import re

    from urbex.config import Params
    from urbex.raw import raw_dataset

    repo = Path(__file__).resolve().parents[2]
    (tmp_path / "scans").mkdir()
    params = Params.model_validate({"data": {"source": "cityrefer", "root": str(tmp_path)}})
    with pytest.raises(ConfigError, match="holds no scenes") as e:
        raw_dataset(params)
    docs = re.findall(r"[\w/]+\.md", str(e.value))
    assert docs and all((repo / d).is_file() for d in docs), docs
    readme = (repo / "README.md").read_text()
    for section in re.findall(r"README section '([^']+)'", str(e.value)):
        assert f"## {section}" in readme
