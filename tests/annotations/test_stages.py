"""End-to-end tests of the landmark / cleaning / splits / STPLS3D-Refer stage functions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from urbex.annotations.stages import (
    build_clean_annotations,
    build_landmark_tables,
    build_splits,
    build_stpls3d_refer,
)
from urbex.config import load_params
from urbex.errors import DataQualityError


@pytest.fixture(scope="module")
def params(synth_root: Path, tmp_path_factory: pytest.TempPathFactory):
    """Params whose assets hold the synthetic data set (as stage_raw writes it) + scene caches."""
    from urbex.io.datasets import read_scene
    from urbex.scene.build import build_scene_cache

    base = tmp_path_factory.mktemp("stages")
    (base / "params.yaml").write_text(
        "synth: {scenes: 3, size: 100, density: 5, las_copy: false, stpls3d_scenes: 1}\n"
    )
    p = load_params(base / "params.yaml")
    raw = p.assets / "raw" / "synthetic"
    shutil.copytree(synth_root, raw)
    for sid in ("synthville_block_0", "synthville_block_1", "synthville_block_2"):
        scene = read_scene("cityrefer", raw, sid)
        build_scene_cache(
            scene.cloud, p.assets / "scenes" / sid, p.scene, scene_id=sid, boxes=scene.boxes
        )
    return p


def test_stages_end_to_end(params) -> None:
    paths = build_landmark_tables(params)
    assert [q.name for q in paths] == [f"synthville_block_{i}.parquet" for i in range(3)]
    lm = pl.concat([pl.read_parquet(q) for q in paths])
    assert set(lm["source"]) == {"box3d", "geojson"}
    assert (lm["kind"] == "road").sum() >= 3
    # registered GeoJSON lies in the scene's (local) world frame
    assert lm["x"].max() < 200 and lm["y"].min() > -50

    clean = build_clean_annotations(params)
    drops = pl.read_parquet(clean.parent / "annotation_drops.parquet")
    manifest = json.loads((params.assets / "raw" / "synthetic" / "synth_manifest.json").read_text())
    planted = {
        (d["scene_id"], d["object_id"], d["ann_id"]): d["reason"] for d in manifest["defects"]
    }
    got = {
        (r["scene_id"], r["object_id"], r["ann_id"]): r["reason"]
        for r in drops.iter_rows(named=True)
    }
    assert got == planted
    q = pl.read_parquet(clean)
    assert q.filter(pl.col("landmark_mentions").list.len() > 0).height >= q.height // 3

    out = build_splits(params)
    f = pl.read_parquet(out)
    assert set(f["split"]) <= {"train", "val", "test_nd", "test_no"} and "test_no" in set(
        f["split"]
    )
    counts = pl.read_csv(out.parent / "split_counts.csv")
    assert counts["total"].sum() == f.height
    # the train split's class sizes are written beside the split table (landmark_prior's input)
    from urbex.annotations.class_sizes import class_sizes_from_splits, read_class_sizes
    from urbex.annotations.stages import load_instances

    inst = load_instances(params.layout, sorted(set(f["scene_id"])))
    want = class_sizes_from_splits(f, inst)
    assert want and (out.parent / "class_sizes.json").is_file()
    sizes = read_class_sizes(params.assets)
    assert {c: sizes[c] for c in want} == {c: (dx, dy) for c, (dx, dy, _) in want.items()}
    assert json.loads(params.layout.quality_report("splits").read_text())["success"] is True

    st = build_stpls3d_refer(params)
    summary = json.loads((st / "summary.json").read_text())["scenes"][0]
    assert summary["cluster_eval"]["building"]["recall"] == 1.0
    assert (st / "meta_data" / "CityRefer_test.json").is_file()
    assert (st / "scans" / "SYNTHUSC" / "SYNTHUSC.segs.json").is_file()


def test_build_splits_blocks_publish_on_failed_suite(params) -> None:
    build_clean_annotations(params)
    build_splits(params)
    dest = params.assets / "splits" / "queries.parquet"
    before = dest.read_bytes()
    bad = params.with_updates(
        annotations={"target_classes": ["Building"]}
    )  # Car rows now fail the class check
    with pytest.raises(DataQualityError, match="class_name"):
        build_splits(bad)
    assert dest.read_bytes() == before
    report = json.loads(params.layout.quality_report("splits").read_text())
    assert report["success"] is False
    assert any(x["column"] == "class_name" for x in report["failed"])
