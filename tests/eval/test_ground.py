"""urbex.eval.ground: one query on a small built project (scene cache + landmark table)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from tests.fixtures.city import build_synth_cache
from urbex.config import Params
from urbex.errors import CacheError, ConfigError, DescriptionError, LandmarkError, PolicyError
from urbex.eval.ground import ground


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """(assets root, scene id, [Query]) — one synthetic 100 m block, cache + landmark table."""
    from urbex.landmarks import write_landmark_table

    root = tmp_path_factory.mktemp("ground") / "assets"
    cache, index, queries = build_synth_cache(root / "scenes", seed=3)
    write_landmark_table(index.table, root / "landmarks" / f"{cache.scene_id}.parquet")
    return root, cache.scene_id, queries


def _params(assets: Path) -> Params:
    return Params(paths={"assets": assets})


def test_ground_oracle_with_object_id_hits_and_writes_every_file(project, tmp_path):
    assets, sid, queries = project
    q = queries[0]
    r = ground(
        _params(assets),
        scene_id=sid,
        query=q.description,
        policy="oracle",
        object_id=q.object_id,
        out_dir=tmp_path / "out",
    )
    assert r.answered and r.iou_bev is not None and r.iou_bev >= 0.9
    out = tmp_path / "out"
    steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    assert [s["turn"] for s in steps] == list(range(1, len(steps) + 1))
    assert steps[-1]["tool"] == "answer" and all(s["valid"] for s in steps)
    assert {"turn", "tool", "arguments", "valid", "error", "latency_s"} <= set(steps[0])
    ans = json.loads((out / "answer.json").read_text())
    assert ans["iou_bev"] == pytest.approx(r.iou_bev) and ans["object_id"] == q.object_id
    assert (
        len(ans["bbox_2d"]) == 4 and len(ans["pred_box_2d"]) == 4 and len(ans["pred_box_3d"]) == 6
    )
    assert ans["view_id"] == r.answer_view_id and ans["view_id"] in r.view_ids
    views = sorted(p.stem for p in (out / "views").glob("*.png"))
    assert views == sorted(r.view_ids) and "global" in views and "zoom_1" in views
    with Image.open(out / "trajectory.png") as im:
        assert im.size[0] > 1000 and im.mode == "RGB"


def test_ground_landmark_prior_on_free_text(project, tmp_path):
    assets, sid, queries = project
    text = "the car parked north of " + queries[0].description.split(" on ")[-1]
    r = ground(
        _params(assets),
        scene_id=sid,
        query=text,
        policy="landmark_prior",
        out_dir=tmp_path / "free",
    )
    assert r.answered and r.answer_view_id == "global" and r.object_id is None
    assert r.iou_bev is None and r.target_box_2d is None
    ans = json.loads((tmp_path / "free" / "answer.json").read_text())
    assert ans["iou_bev"] is None and ans["pred_box_2d"] == r.pred_box_2d
    b = r.pred_box_2d
    assert b is not None and b[2] > b[0] and b[3] > b[1]
    assert (tmp_path / "free" / "trajectory.png").is_file()


def test_ground_default_out_dir_is_under_assets(project):
    assets, sid, _ = project
    r = ground(_params(assets), scene_id=sid, query="a building", policy="landmark_prior")
    assert r.out_dir.parent == assets / "ground" and r.out_dir.name.startswith(sid + "-")
    assert (r.out_dir / "answer.json").is_file()


def test_ground_missing_cache_or_landmarks_is_a_clear_error(project, tmp_path):
    assets, sid, _ = project
    with pytest.raises(CacheError, match=r"urbex cache --scene atlantis.*" + sid):
        ground(_params(assets), scene_id="atlantis", query="the car", policy="landmark_prior")
    bare = tmp_path / "assets"
    (bare / "scenes").mkdir(parents=True)
    (bare / "scenes" / sid).symlink_to(assets / "scenes" / sid, target_is_directory=True)
    with pytest.raises(LandmarkError, match="urbex landmarks"):
        ground(_params(bare), scene_id=sid, query="the car", policy="landmark_prior")


def test_ground_oracle_without_object_id_refuses(project):
    assets, sid, _ = project
    with pytest.raises(PolicyError, match="object-id"):
        ground(_params(assets), scene_id=sid, query="the car", policy="oracle")


def test_ground_unknown_object_id_names_known_ones(project):
    from urbex.errors import AnnotationError

    assets, sid, _ = project
    with pytest.raises(AnnotationError, match="object '9999' is not in scene"):
        ground(_params(assets), scene_id=sid, query="x y", policy="oracle", object_id="9999")


def test_ground_into_a_folder_of_an_earlier_trajectory_replaces_its_views_whole(project, tmp_path):
    assets, sid, queries = project
    out = tmp_path / "again"
    q = queries[0]
    first = ground(_params(assets), scene_id=sid, query=q.description, policy="oracle",
                   object_id=q.object_id, out_dir=out)  # fmt: skip
    assert "zoom_1" in first.view_ids
    second = ground(_params(assets), scene_id=sid, query="a building", policy="landmark_prior",
                    out_dir=out)  # fmt: skip
    assert second.view_ids == ("global",)
    assert sorted(p.name for p in (out / "views").iterdir()) == ["global.png"]
    assert sorted(p.name for p in out.iterdir()) == [
        "answer.json", "steps.jsonl", "trajectory.png", "views"]  # fmt: skip


@pytest.mark.parametrize("scene_id", ["../../escape", ".", "..", "a/../b", ""])
def test_ground_scene_id_that_is_not_one_name_is_a_config_error(tmp_path, scene_id):
    with pytest.raises(ConfigError, match=r"--scene: expected a plain name.*name a scene"):
        ground(_params(tmp_path), scene_id=scene_id, query="the car", policy="landmark_prior")


@pytest.mark.parametrize(
    ("query", "match"),
    [
        ("the caf\udce9 car", r"--query: not UTF-8 \(character 7 is '\\udce9'"),
        ("a red car " * 300, "--query: 2,999 characters; urbex reads descriptions of at most"),
    ],
    ids=["not_utf8", "too_long"],
)
def test_ground_query_not_utf8_or_too_long_is_a_description_error(project, query, match):
    assets, sid, _ = project
    with pytest.raises(DescriptionError, match=match):
        ground(_params(assets), scene_id=sid, query=query, policy="landmark_prior")
