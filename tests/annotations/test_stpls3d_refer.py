"""The STPLS3D-Refer construction (its pseudo-instance clustering: test_pseudo_instances.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from urbex.annotations.stpls3d_refer import (
    colour_name,
    compass,
    generate_expressions,
    make_refer_scene,
    write_refer_scene,
)
from urbex.config import Params


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


# -- review: edge cases, independent uniqueness re-check, read-back consistency ----------------


def _inst_table(
    rows: list[tuple[str, float, float, float, float, tuple[float, float, float]]],
) -> pl.DataFrame:
    """Pseudo-instance table from (class, x0, y0, x1, y1, mean rgb) rows; z 0..1.5 m."""
    cols: dict[str, list] = {k: [] for k in ("object_id", "object_name", "x_min", "y_min", "z_min", "x_max", "y_max", "z_max", "cx", "cy", "cz", "dx", "dy", "dz", "mean_r", "mean_g", "mean_b")}  # fmt: skip
    for i, (name, x0, y0, x1, y1, rgb) in enumerate(rows):
        vals = [str(i), name, x0, y0, 0.0, x1, y1, 1.5, (x0 + x1) / 2, (y0 + y1) / 2, 0.75, x1 - x0, y1 - y0, 1.5, *rgb]  # fmt: skip
        for k, v in zip(cols, vals):
            cols[k].append(v)
    return pl.DataFrame(cols, schema_overrides={c: pl.Float64 for c in list(cols)[2:]})


_LIB = pl.DataFrame(
    {
        "name": ["Doheny Library", "Main Street"],
        "kind": ["building", "road"],
        "footprint_wkt": [
            "POLYGON ((-10 -10, 10 -10, 10 10, -10 10, -10 -10))",
            "LINESTRING (-50 43, 50 43)",
        ],
    }
)


def _satisfiers(desc: str, inst: pl.DataFrame, lm: pl.DataFrame, max_dist: float) -> set[str]:
    """Independent re-reading of a generated description: every instance it fits."""
    import re

    import shapely

    geoms = dict(zip(lm["name"], shapely.from_wkt(lm["footprint_wkt"].to_list())))
    kinds = dict(zip(lm["name"], lm["kind"]))
    rows = inst.to_dicts()
    noun = {"car": "Car", "building": "Building"}
    col_of = lambda r: colour_name([r["mean_r"], r["mean_g"], r["mean_b"]])  # noqa: E731

    def rel_to(r: dict, name: str) -> str | None:
        box = shapely.box(r["x_min"], r["y_min"], r["x_max"], r["y_max"])
        g = geoms[name]
        if shapely.area(shapely.intersection(box, g)) > 0.5 * max(shapely.area(g), 1e-9):
            return None  # the landmark is the object itself
        d = shapely.distance(box, g)
        if d > max_dist:
            return None
        if d == 0:
            return "on" if kinds[name] == "road" else "in"
        p = shapely.get_coordinates(shapely.shortest_line(g, box.centroid))
        return compass(p[1, 0] - p[0, 0], p[1, 1] - p[0, 1])

    if m := re.fullmatch(r"the (?:(\w+) )?(car|building) closest to (.+)", desc):
        colour, cls, anchor = m.groups()
        if anchor in geoms:  # a landmark (not the instance that is that landmark)
            g = geoms[anchor]
            area_g = max(shapely.area(g), 1e-9)
            boxes = {
                r["object_id"]: shapely.box(r["x_min"], r["y_min"], r["x_max"], r["y_max"])
                for r in rows
            }
            cands = [
                r
                for r in rows
                if shapely.area(shapely.intersection(boxes[r["object_id"]], g)) <= 0.5 * area_g
            ]
        else:  # a unique object, e.g. "the orange building" = "the only orange building ..."
            a = re.fullmatch(r"the (\w+) (car|building)", anchor)
            assert a, anchor
            long = (
                f"the only {a[1]} {a[2]} in the scene"
                if a[1] not in ("largest", "tallest")
                else f"{anchor} in the scene"
            )
            (aid,) = _satisfiers(long, inst, lm, max_dist)
            ar = next(r for r in rows if r["object_id"] == aid)
            g = shapely.box(ar["x_min"], ar["y_min"], ar["x_max"], ar["y_max"])
            cands = [r for r in rows if r["object_id"] != aid]
        fit = [
            r
            for r in cands
            if r["object_name"] == noun[cls] and (colour is None or col_of(r) == colour)
        ]
        gap = {
            r["object_id"]: shapely.distance(
                shapely.box(r["x_min"], r["y_min"], r["x_max"], r["y_max"]), g
            )
            for r in fit
        }
        best = min(gap.values())
        assert best <= 40.0, desc
        return {o for o, d in gap.items() if d < best + 2.0}  # visibly the closest
    if m := re.fullmatch(r"the (largest|smallest) (\w+) (car|building) in the scene", desc):
        same = [r for r in rows if r["object_name"] == noun[m[3]] and col_of(r) == m[2]]
        area = {r["object_id"]: r["dx"] * r["dy"] for r in same}
        if m[1] == "largest":
            return {o for o, a in area.items() if a >= max(area.values()) / 1.25}
        return {o for o, a in area.items() if a <= min(area.values()) * 1.25}
    if m := re.fullmatch(r"the only (\w+) (car|building) in the scene", desc):
        return {
            r["object_id"] for r in rows if r["object_name"] == noun[m[2]] and col_of(r) == m[1]
        }
    if m := re.fullmatch(r"the (largest|tallest) (car|building) in the scene", desc):
        same = [r for r in rows if r["object_name"] == noun[m[2]]]
        key = (lambda r: r["dx"] * r["dy"]) if m[1] == "largest" else (lambda r: r["dz"])
        top = max(key(r) for r in same)
        return {r["object_id"] for r in same if key(r) >= top / 1.25}  # "visibly" the largest
    m = re.fullmatch(
        r"the (?:(largest|smallest) of the \d+ )?(?:(\w+) )?(car|building)s? "
        r"(in|on|[a-z-]+ of) (.+)",
        desc,
    )
    assert m, f"unparsed description {desc!r}"
    sup, colour, cls, rel, name = m.groups()
    rel = rel.removesuffix(" of")
    fit = [
        r
        for r in rows
        if r["object_name"] == noun[cls]
        and rel_to(r, name) == rel
        and (colour is None or col_of(r) == colour)
    ]
    if sup:
        area = [r["dx"] * r["dy"] for r in fit]
        best = max(area) if sup == "largest" else min(area)
        fit = [
            r
            for r, a in zip(fit, area)
            if (a >= best / 1.25 if sup == "largest" else a <= best * 1.25)
        ]
    return {r["object_id"] for r in fit}


def _assert_all_unambiguous(
    inst: pl.DataFrame, lm: pl.DataFrame, max_dist: float = 120.0
) -> pl.DataFrame:
    df, _ = generate_expressions(
        inst, lm, scene_id="S", max_per_target=9, max_landmark_distance=max_dist
    )
    for oid, desc in df.select("object_id", "description").iter_rows():
        assert _satisfiers(desc, inst, lm, max_dist) == {oid}, desc
    return df


def test_generate_expressions_landmark_relation_counts_every_instance_not_only_nearest() -> None:
    # car 0 is just north of the library; car 1 is also north of it (34 m), but nearer Main Street
    inst = _inst_table([("Car", 0.0, 12.0, 4.0, 14.0, (200, 30, 30)), ("Car", 0.0, 44.0, 4.0, 46.0, (200, 30, 30))])  # fmt: skip
    df = _assert_all_unambiguous(inst, _LIB)
    assert "the car north of Doheny Library" not in df["description"].to_list()
    assert "the car north of Main Street" in df["description"].to_list()


def test_generate_expressions_no_colour_word_without_rgb() -> None:
    inst = _inst_table([("Car", 0.0, 12.0, 4.0, 14.0, (np.nan,) * 3), ("Car", 30.0, 40.0, 34.0, 42.0, (np.nan,) * 3)])  # fmt: skip
    df, _ = generate_expressions(inst, _LIB, scene_id="S", max_per_target=9)
    assert df.height >= 1
    assert not any("unknown" in d for d in df["description"])


def test_generate_expressions_superlative_needs_a_visible_margin() -> None:
    # areas 8.0 and 8.2 m²: "the largest car" would not be verifiable from the data
    inst = _inst_table([("Car", 0.0, 0.0, 4.0, 2.0, (200, 30, 30)), ("Car", 10.0, 0.0, 14.0, 2.05, (30, 30, 200))])  # fmt: skip
    df = _assert_all_unambiguous(inst, _LIB.head(0))
    assert "the largest car in the scene" not in df["description"].to_list()
    inst2 = inst.with_columns(pl.Series("dx", [4.0, 5.5]))
    df2, _ = generate_expressions(inst2, _LIB.head(0), scene_id="S", max_per_target=9)
    assert "the largest car in the scene" in df2["description"].to_list()


def test_generate_expressions_random_scenes_unambiguous_on_recheck() -> None:
    rng = np.random.default_rng(5)
    palette = [(200, 30, 30), (30, 60, 200), (240, 240, 235), (20, 20, 25)]
    for _ in range(15):
        rows = []
        for _ in range(int(rng.integers(3, 12))):
            cls = "Car" if rng.random() < 0.6 else "Building"
            w, h = (
                (rng.uniform(4, 5), rng.uniform(1.8, 2.1))
                if cls == "Car"
                else rng.uniform(8, 25, 2)
            )
            x, y = rng.uniform(-80, 80, 2)
            rows.append((cls, x, y, x + w, y + h, palette[int(rng.integers(len(palette)))]))
        _assert_all_unambiguous(_inst_table(rows), _LIB, max_dist=60.0)


def test_written_boxes_contain_their_segment_points(refer_scene, tmp_path) -> None:
    from urbex.io.datasets import read_scene

    write_refer_scene(refer_scene, tmp_path)
    raw = read_scene("cityrefer", tmp_path, "SYNTHUSC")
    w = raw.cloud.world_xyz()
    for b in raw.boxes:
        pts = w[raw.cloud.instance == int(b.object_id)]
        assert len(pts) > 0
        lo = np.asarray(b.center) - np.asarray(b.size) / 2
        hi = np.asarray(b.center) + np.asarray(b.size) / 2
        assert (pts >= lo - 0.01).all() and (pts <= hi + 0.01).all(), b.object_id
        assert np.allclose(pts.min(0), lo, atol=0.01) and np.allclose(pts.max(0), hi, atol=0.01)


def test_generate_expressions_ordinal_within_a_row_of_cars() -> None:
    # a row of 5 east-west cars stacked south → north (2.5 m bays), a lone car far away
    rows = [("Car", 0.0, 2.5 * k, 4.5, 2.5 * k + 1.8, (90, 90, 90)) for k in range(5)]
    rows.append(("Car", 60.0, 60.0, 64.5, 61.8, (90, 90, 90)))
    df, counts = generate_expressions(
        _inst_table(rows), _LIB.head(0), scene_id="S", max_per_target=9
    )
    d = dict(zip(df["description"], df["object_id"]))
    assert d["the car at the south end of the row of 5 cars"] == "0"
    assert d["the second car from the north end of the row of 5 cars"] == "3"
    assert d["the third car from the south end of the row of 5 cars"] == "2"
    assert counts["landmark_free"] == df.height  # no landmark: every expression is landmark-free


def test_generate_expressions_closest_to_a_unique_object_and_a_road() -> None:
    # the only red building; two grey cars, one 3 m from it, one 20 m; Main Street at y = 43
    inst = _inst_table([
        ("Building", 30.0, 0.0, 50.0, 20.0, (200, 30, 30)), ("Building", -60.0, -60.0, -40.0, -40.0, (240, 240, 235)),
        ("Car", 53.0, 5.0, 57.5, 6.8, (90, 90, 90)), ("Car", 70.0, 5.0, 74.5, 6.8, (90, 90, 90)),
        ("Car", 70.0, 40.0, 74.5, 41.8, (90, 90, 90)),
    ])  # fmt: skip
    df = _assert_all_unambiguous(inst, _LIB)
    d = dict(zip(df["description"], df["object_id"]))
    assert d.get("the car closest to the red building") == "2"
    assert d.get("the car closest to Main Street") == "4"
    assert set(df.filter(pl.col("template") == "nearest_object")["landmark"]) == {""}
