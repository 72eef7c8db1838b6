"""Tests of pseudo-instance clustering and the STPLS3D-Refer construction."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from urbex.annotations.pseudo_instances import cluster_mask, evaluate_clusters, split_merged
from urbex.annotations.stpls3d_refer import (
    colour_name,
    compass,
    generate_expressions,
    make_refer_scene,
    write_refer_scene,
)
from urbex.config import Params


def test_cluster_mask_separates_distant_groups() -> None:
    rng = np.random.default_rng(0)
    a = rng.uniform(0, 5, (200, 2))
    b = rng.uniform(20, 25, (200, 2))
    xy = np.vstack([a, b, [[100.0, 100.0]]])
    lab = cluster_mask(xy, np.ones(len(xy), bool), cell=0.5, closing=1, min_points=5)
    assert len(set(lab[:200])) == 1 and len(set(lab[200:400])) == 1 and lab[0] != lab[200]
    assert lab[-1] == -1


def test_split_merged_row_of_cars() -> None:
    rng = np.random.default_rng(1)
    # four 1.8 x 4.4 m cars side by side with 0.6 m gaps, merged into one component
    cars = [rng.uniform([i * 2.4, 0], [i * 2.4 + 1.8, 4.4], (40, 2)) for i in range(4)]
    xy = np.vstack(cars)
    truth = np.repeat(np.arange(4), 40)
    merged = np.zeros(len(xy), np.int32)
    out = split_merged(xy, merged, footprint_m2=9.0)  # sampled hull ≈ 36 m²
    assert len(np.unique(out)) == 4
    assert evaluate_clusters(out, truth)["recall"] == 1.0


def test_evaluate_clusters_perfect_and_empty() -> None:
    t = np.array([0, 0, 1, 1, -1])
    assert evaluate_clusters(t, t)["precision"] == 1.0
    e = evaluate_clusters(np.full(5, -1), t)
    assert e["precision"] == 0.0 and e["recall"] == 0.0 and e["n_true"] == 2


def test_colour_and_compass() -> None:
    assert colour_name([30, 60, 200]) == "blue"
    assert compass(-1, 1) == "north-west"


def test_generate_expressions_unique_targets() -> None:
    inst = pl.DataFrame(
        {
            "object_id": ["0", "1", "2"], "object_name": ["Car"] * 3,
            "x_min": [0.0, 0.0, 50.0], "y_min": [10.0, 20.0, 10.0], "x_max": [4.0, 4.0, 54.0], "y_max": [12.0, 22.0, 12.0],
            "z_min": [0.0] * 3, "z_max": [1.5] * 3, "cx": [2.0, 2.0, 52.0], "cy": [11.0, 21.0, 11.0], "cz": [0.7] * 3,
            "dx": [4.0, 4.0, 4.0], "dy": [2.0, 2.0, 2.0], "dz": [1.5] * 3,
            "mean_r": [200.0, 200.0, 30.0], "mean_g": [30.0, 30.0, 60.0], "mean_b": [30.0, 30.0, 200.0],
        }
    )  # fmt: skip
    lm = pl.DataFrame(
        {
            "name": ["Doheny Library"],
            "kind": ["building"],
            "footprint_wkt": ["POLYGON ((-10 -10, 10 -10, 10 0, -10 0, -10 -10))"],
        }
    )
    df, counts = generate_expressions(inst, lm, scene_id="S", max_per_target=3)
    # the blue car is the only blue one; the two red cars share colour and landmark relation
    assert "the only blue car in the scene" in df["description"].to_list()
    assert counts["targets"] == 3
    for oid, desc in df.select("object_id", "description").iter_rows():
        assert df.filter(pl.col("description") == desc)["object_id"].unique().to_list() == [oid]


@pytest.fixture(scope="module")
def refer_scene(synth_root: Path):
    from urbex.io.stpls3d import read_stpls3d_txt
    from urbex.landmarks import landmarks_from_geojson

    st = synth_root / "stpls3d"
    sid = "SYNTHUSC"
    cloud = read_stpls3d_txt(st / "RealWorldData" / f"{sid}_points.txt")
    entry = next(
        s
        for s in json.loads((synth_root / "synth_manifest.json").read_text())["scenes"]
        if s["scene_id"] == sid
    )
    w = cloud.world_xyz()
    bounds = [w[:, 0].min(), w[:, 1].min(), w[:, 0].max(), w[:, 1].max()]
    lm = landmarks_from_geojson(st / "landmarks" / f"{sid}.geojson", scene_id=sid, scene_crs=entry["crs"],
                                offset=entry["offset"], bounds=bounds)  # fmt: skip
    truth = np.load(st / "hidden" / f"{sid}_instances.npy")
    return make_refer_scene(cloud, scene_id=sid, landmarks=lm, params=Params().stpls3d_refer,
                            register_offset=entry["offset"], crs=entry["crs"], true_instance=truth)  # fmt: skip


def test_refer_scene_cluster_precision_recall(refer_scene) -> None:
    ev = refer_scene.summary["cluster_eval"]
    assert ev["building"]["recall"] == 1.0 and ev["building"]["precision"] == 1.0
    assert ev["car"]["precision"] >= 0.7 and ev["car"]["recall"] >= 0.65
    assert ev["all"]["mean_iou"] >= 0.7


def test_refer_scene_expressions_unique_and_landmarked(refer_scene) -> None:
    e = refer_scene.expressions
    assert e.height >= 5
    assert e["description"].n_unique() == e.height
    assert (e["landmark"] != "").sum() >= 1
    assert set(e["object_name"]) <= {"Building", "Car"}


def test_write_refer_scene_reads_back_as_cityrefer(refer_scene, tmp_path) -> None:
    from urbex.io.cityrefer import read_annotations
    from urbex.io.datasets import list_scenes, read_scene

    write_refer_scene(refer_scene, tmp_path)
    assert list_scenes("cityrefer", tmp_path) == ["SYNTHUSC"]
    raw = read_scene("cityrefer", tmp_path, "SYNTHUSC")
    assert raw.cloud.crs == "EPSG:32611" and raw.cloud.class_scheme == "sensaturban"
    assert len(raw.boxes) == refer_scene.instances.height
    # world frame of the written cloud is the CRS frame: boxes there too
    b = raw.boxes[0]
    assert abs(b.center[0] - raw.cloud.world_xyz()[:, 0].mean()) < 1000 and b.center[0] > 1e5
    inst_ids = set(np.unique(raw.cloud.instance[raw.cloud.instance >= 0]).tolist())
    assert inst_ids == {int(o) for o in refer_scene.instances["object_id"]}
    anns = read_annotations(tmp_path / "meta_data" / "CityRefer_test.json")
    assert len(anns) == refer_scene.expressions.height
