"""Tests of urbex.landmarks.table: building, registering, merging, reading and writing tables."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from urbex.errors import LandmarkError
from urbex.landmarks import (
    FOOTPRINT_BOUNDS,
    LANDMARK_SCHEMA,
    LandmarkIndex,
    footprint_bounds,
    landmarks_from_geojson,
    landmarks_from_instances,
    merge_landmark_tables,
    read_landmark_table,
    registration_offset,
    with_footprint_bounds,
    write_landmark_table,
)


def _instances() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "scene_id": ["s", "s", "s"],
            "object_id": ["1", "2", "3"],
            "class_name": ["Building", "Car", "Building"],
            "landmark_name": ["Merton Hall", "", "Town Hall"],
            "x_min": [0.0, 20.0, 30.0],
            "y_min": [0.0, 20.0, 30.0],
            "x_max": [10.0, 24.0, 40.0],
            "y_max": [10.0, 22.0, 40.0],
        }
    )


def test_landmarks_from_instances_hull_and_box_fallback() -> None:
    rng = np.random.default_rng(0)
    # instance 1: points in a triangle; instance 3 has no points -> its box is the footprint
    pts = rng.uniform(0, 10, size=(500, 2))
    pts = pts[pts[:, 0] + pts[:, 1] <= 10]
    xy = np.vstack([pts, [[21.0, 21.0]]])
    inst = np.concatenate([np.full(len(pts), 1, np.int32), [2]]).astype(np.int32)
    t = landmarks_from_instances(_instances(), scene_id="s", xy=xy, point_instance=inst)
    assert t.columns == list(LANDMARK_SCHEMA)
    assert t["name"].to_list() == ["Merton Hall", "Town Hall"]
    import shapely

    hull = shapely.from_wkt(t["footprint_wkt"][0])
    assert hull.area == pytest.approx(50.0, rel=0.1)  # the triangle, not the 100 m² box
    assert t["x"][0] < 5.0 and t["kind"][0] == "building" and t["source"][0] == "box3d"
    box = shapely.from_wkt(t["footprint_wkt"][1])
    assert box.area == pytest.approx(100.0) and t["x"][1] == pytest.approx(35.0)


def test_landmarks_from_instances_missing_column_raises() -> None:
    with pytest.raises(LandmarkError, match="landmark_name"):
        landmarks_from_instances(_instances().drop("landmark_name"), scene_id="s")


def _gdf(crs: str | None, offset: tuple[float, float]):
    import geopandas as gpd
    import shapely

    ox, oy = offset
    return gpd.GeoDataFrame(
        {
            "name": ["Merton Hall", "Kings Pde", "Far Away", None],
            "alt_name": ["Merton;MH", None, None, None],
            "highway": [None, "residential", None, None],
        },
        geometry=[
            shapely.box(ox + 10, oy + 10, ox + 20, oy + 20),
            shapely.LineString([(ox + 0, oy + 50), (ox + 100, oy + 50)]),
            shapely.Point(ox + 5000, oy + 5000),
            shapely.Point(ox + 1, oy + 1),
        ],
        crs=crs,
    )


def test_landmarks_from_geojson_registers_offset_clips_and_skips(tmp_path) -> None:
    off = (456000.0, 260000.0)
    path = tmp_path / "s.geojson"
    _gdf("EPSG:27700", off).to_file(path, driver="GeoJSON")
    t = landmarks_from_geojson(
        path, scene_id="s", scene_crs="EPSG:27700", offset=(*off, 0.0), bounds=[0, 0, 60, 60]
    )
    assert t["name"].to_list() == [
        "Merton Hall",
        "Kings Pde",
    ]  # far point clipped out, unnamed skipped
    assert t["x"][0] == pytest.approx(15.0) and t["y"][0] == pytest.approx(15.0)
    assert t["kind"][1] == "road"
    assert t["aliases"][0].to_list() == ["Merton", "MH"]
    road = t.row(1, named=True)
    assert road["footprint_wkt"].startswith("LINESTRING")
    assert road["x"] == pytest.approx(30.0) and road["y"] == pytest.approx(50.0)  # clipped to 0..60


def test_landmarks_from_geojson_transforms_crs() -> None:
    gdf = _gdf("EPSG:27700", (456000.0, 260000.0)).to_crs("EPSG:4326")
    t = landmarks_from_geojson(
        gdf, scene_id="s", scene_crs="EPSG:27700", offset=(456000.0, 260000.0, 0.0)
    )
    assert t["x"][0] == pytest.approx(15.0, abs=0.01)


def test_landmarks_from_geojson_without_crs_raises() -> None:
    with pytest.raises(LandmarkError, match="no CRS"):
        landmarks_from_geojson(_gdf(None, (0, 0)), scene_id="s", scene_crs="EPSG:27700")


def test_registration_offset_picks_overlapping_candidate(tmp_path) -> None:
    off = (456000.0, 260000.0, 0.0)
    path = tmp_path / "s.geojson"
    _gdf("EPSG:27700", off[:2]).drop(index=[2]).to_file(path, driver="GeoJSON")
    got = registration_offset(
        path, scene_crs="EPSG:27700", bounds=[0, 0, 100, 100], candidates=[(0, 0, 0), off]
    )
    assert got == off
    with pytest.raises(LandmarkError, match="overlaps"):
        registration_offset(
            path, scene_crs="EPSG:27700", bounds=[0, 0, 100, 100], candidates=[(0, 0, 0)]
        )


def test_merge_prefers_box3d_and_keeps_aliases() -> None:
    a = landmarks_from_instances(_instances(), scene_id="s")
    g = landmarks_from_geojson(
        _gdf("EPSG:27700", (0.0, 0.0)), scene_id="s", scene_crs="EPSG:27700", bounds=[0, 0, 60, 60]
    )
    m = merge_landmark_tables(a, g)
    assert sorted(m["name"].to_list()) == ["Kings Pde", "Merton Hall", "Town Hall"]
    merton = m.filter(pl.col("name") == "Merton Hall").row(0, named=True)
    assert merton["source"] == "box3d" and merton["aliases"] == ["Merton", "MH"]
    assert m["landmark_id"].n_unique() == m.height


def test_write_read_round_trip(tmp_path) -> None:
    t = landmarks_from_instances(_instances(), scene_id="s")
    p = write_landmark_table(t, tmp_path / "lm" / "s.parquet")
    assert read_landmark_table(p).equals(t)
    assert read_landmark_table(tmp_path / "lm").height == t.height
    idx = LandmarkIndex.from_path(tmp_path / "lm")
    assert idx.lookup("Town Hal").best.name == "Town Hall"


def test_merge_landmark_tables_of_empty_tables_is_empty():
    from urbex.landmarks import empty_landmark_table, merge_landmark_tables

    assert merge_landmark_tables().is_empty()
    out = merge_landmark_tables(empty_landmark_table(), empty_landmark_table())
    assert out.is_empty() and out.columns == empty_landmark_table().columns


def test_landmarks_from_geojson_lonlat_to_utm_lands_within_half_metre(tmp_path) -> None:
    import json as _json

    from pyproj import Transformer

    from urbex.landmarks import landmarks_from_geojson, registration_offset

    to_ll = Transformer.from_crs("EPSG:32611", "EPSG:4326", always_xy=True)
    off = np.array([377_000.0, 3_768_000.0, 50.0])  # scene world zero in UTM 11N (Los Angeles)
    ll = lambda x, y: list(to_ll.transform(off[0] + x, off[1] + y))  # noqa: E731
    feats = [
        {"type": "Feature", "properties": {"name": "Tower"}, "geometry": {"type": "Point", "coordinates": ll(40.0, 60.0)}},
        {"type": "Feature", "properties": {"name": "Exposition Boulevard", "highway": "primary"},
         "geometry": {"type": "LineString", "coordinates": [ll(0.0, 20.0), ll(100.0, 20.0)]}},
        {"type": "Feature", "properties": {"name": "Doheny Library", "building": "yes"},
         "geometry": {"type": "Polygon", "coordinates": [[ll(10, 70), ll(30, 70), ll(30, 90), ll(10, 90), ll(10, 70)]]}},
        {"type": "Feature", "properties": {"name": "Far Away Hall"}, "geometry": {"type": "Point", "coordinates": ll(5000.0, 5000.0)}},
    ]  # fmt: skip
    path = tmp_path / "lm.geojson"
    path.write_text(_json.dumps({"type": "FeatureCollection", "features": feats}))
    bounds = [0.0, 0.0, 100.0, 100.0]
    got = registration_offset(
        path, scene_crs="EPSG:32611", bounds=bounds, candidates=[(0.0, 0.0, 0.0), tuple(off)]
    )
    assert np.allclose(got, off)
    t = landmarks_from_geojson(
        path, scene_id="S", scene_crs="EPSG:32611", offset=off, bounds=bounds
    )
    by = {r["name"]: r for r in t.iter_rows(named=True)}
    assert "Far Away Hall" not in by  # wholly outside the scene: dropped
    assert abs(by["Tower"]["x"] - 40.0) < 0.5 and abs(by["Tower"]["y"] - 60.0) < 0.5
    assert (
        abs(by["Doheny Library"]["x"] - 20.0) < 0.5 and abs(by["Doheny Library"]["y"] - 80.0) < 0.5
    )
    road = by["Exposition Boulevard"]
    assert road["kind"] == "road" and road["footprint_wkt"].startswith("LINESTRING")
    assert abs(road["x"] - 50.0) < 0.5 and abs(road["y"] - 20.0) < 0.5
    # without bounds the far feature is kept, at its true place
    t2 = landmarks_from_geojson(path, scene_id="S", scene_crs="EPSG:32611", offset=off)
    far = t2.filter(pl.col("name") == "Far Away Hall")
    assert abs(far["x"][0] - 5000.0) < 0.5 and abs(far["y"][0] - 5000.0) < 0.5


def test_landmarks_from_geojson_missing_crs_raises_when_scene_has_one(tmp_path) -> None:
    import json as _json

    from urbex.errors import LandmarkError
    from urbex.landmarks import landmarks_from_geojson

    path = tmp_path / "nocrs.geojson"
    fc = {"type": "FeatureCollection", "features": [{"type": "Feature", "properties": {"name": "A"}, "geometry": {"type": "Point", "coordinates": [1.0, 2.0]}}]}  # fmt: skip
    path.write_text(_json.dumps(fc))
    import geopandas as gpd

    gdf = gpd.read_file(path).set_crs(None, allow_override=True)
    with pytest.raises(LandmarkError, match="no CRS"):
        landmarks_from_geojson(gdf, scene_id="S", scene_crs="EPSG:32611")
    t = landmarks_from_geojson(gdf, scene_id="S", scene_crs=None, offset=(1.0, 1.0, 0.0))
    assert (t["x"][0], t["y"][0]) == (0.0, 1.0)  # offset subtracted


# ---------------------------------------------------------------------------------------------
# footprint bounds: validated and stored once, at build / read time
# ---------------------------------------------------------------------------------------------


def _shapely_bounds(wkt: str | None) -> tuple[float, ...] | None:
    import shapely

    return None if not wkt else tuple(shapely.from_wkt(wkt).bounds)


def _stored_bounds(t: pl.DataFrame) -> list[tuple[float, ...] | None]:
    rows = t.select(FOOTPRINT_BOUNDS).rows()
    return [None if r[0] is None else tuple(r) for r in rows]


def test_landmarks_from_instances_bounds_equal_shapely_bounds() -> None:
    rng = np.random.default_rng(1)
    pts = rng.uniform(0, 10, size=(300, 2))
    inst = np.full(len(pts), 1, np.int32)
    t = landmarks_from_instances(_instances(), scene_id="s", xy=pts, point_instance=inst)
    assert t.columns == list(LANDMARK_SCHEMA) and set(FOOTPRINT_BOUNDS) <= set(t.columns)
    assert _stored_bounds(t) == [_shapely_bounds(w) for w in t["footprint_wkt"]]
    assert _stored_bounds(t)[1] == (30.0, 30.0, 40.0, 40.0)  # the box fallback


def test_landmarks_from_geojson_bounds_equal_shapely_bounds_point_has_zero_extent() -> None:
    import geopandas as gpd
    import shapely

    gdf = gpd.GeoDataFrame(
        {"name": ["Hall", "Road", "Statue"]},
        geometry=[
            shapely.box(10.0, 10.0, 20.0, 25.0),
            shapely.LineString([(0.0, 50.0), (60.0, 50.0)]),
            shapely.Point(5.5, 7.25),
        ],
        crs=None,
    )
    t = landmarks_from_geojson(gdf, scene_id="s", scene_crs=None)
    got = _stored_bounds(t)
    assert got == [_shapely_bounds(w) for w in t["footprint_wkt"]]
    assert got[1] == (0.0, 50.0, 60.0, 50.0)  # a line: zero height
    assert got[2] == (5.5, 7.25, 5.5, 7.25)  # a point: zero extent


def _table(wkts: list[str | None]) -> pl.DataFrame:
    n = len(wkts)
    return pl.DataFrame(
        {
            "scene_id": ["s"] * n,
            "landmark_id": [f"s:geojson:{i}" for i in range(n)],
            "name": [f"Place {i}" for i in range(n)],
            "name_norm": [f"place {i}" for i in range(n)],
            "aliases": [[] for _ in range(n)],
            "kind": ["other"] * n,
            "footprint_wkt": wkts,
            "x": [1.0] * n,
            "y": [2.0] * n,
            "source": ["geojson"] * n,
            "object_id": [""] * n,
        },
        schema={k: v for k, v in LANDMARK_SCHEMA.items() if k not in FOOTPRINT_BOUNDS},
    )


@pytest.mark.parametrize(
    ("wkt", "why"),
    [
        ("not a footprint", "not valid WKT"),
        ("POLYGON ((0 0, 1 0, 1", "not valid WKT"),
        ("POLYGON EMPTY", "empty geometry"),
        ("POINT (nan 1)", "non-finite"),
        ("LINESTRING (0 0, inf 1)", "non-finite"),
    ],
)
def test_with_footprint_bounds_bad_footprint_raises_naming_scene_and_landmark(
    wkt: str, why: str
) -> None:
    with pytest.raises(LandmarkError, match=why) as exc:
        with_footprint_bounds(_table(["POINT (1 2)", wkt]))
    msg = str(exc.value)
    assert "scene 's'" in msg and "s:geojson:1" in msg and "Place 1" in msg
    assert exc.value.field == "footprint_wkt"


@pytest.mark.parametrize("build", ["merge", "write", "index"])
def test_building_a_table_with_a_bad_footprint_raises(tmp_path, build: str) -> None:
    bad = _table(["POINT (1 2)", "POLYGON ((0 0, 1"])
    with pytest.raises(LandmarkError, match="s:geojson:1"):
        if build == "merge":
            merge_landmark_tables(bad)
        elif build == "write":
            write_landmark_table(bad, tmp_path / "s.parquet")
        else:
            LandmarkIndex(bad)
    assert not (tmp_path / "s.parquet").exists()


def test_footprint_bounds_null_footprint_and_require_area() -> None:
    t = with_footprint_bounds(_table([None, "", "POINT (3 4)", "POLYGON ((0 0, 2 0, 2 1, 0 0))"]))
    rows = t.to_dicts()
    assert footprint_bounds(rows[0]) is None and footprint_bounds(rows[1]) is None
    assert footprint_bounds(rows[2]).tolist() == [3.0, 4.0, 3.0, 4.0]
    assert footprint_bounds(rows[2], require_area=True) is None
    assert footprint_bounds(rows[3], require_area=True).tolist() == [0.0, 0.0, 2.0, 1.0]


def test_read_old_table_without_bounds_columns_derives_them(tmp_path) -> None:
    wkts = ["POLYGON ((0 0, 4 0, 4 3, 0 0))", "LINESTRING (1 1, 9 1)", "POINT (5 5)", None]
    path = tmp_path / "lm" / "s.parquet"
    path.parent.mkdir()
    _table(wkts).write_parquet(path)  # as written before the bounds columns existed
    t = read_landmark_table(path)
    assert t.columns == list(LANDMARK_SCHEMA)
    assert _stored_bounds(t) == [_shapely_bounds(w) for w in wkts]
    idx = LandmarkIndex.from_path(tmp_path / "lm")
    assert footprint_bounds(idx.lookup("Place 0").best.row).tolist() == [0.0, 0.0, 4.0, 3.0]


def test_read_old_table_with_bad_footprint_names_file_scene_and_landmark(tmp_path) -> None:
    path = tmp_path / "s.parquet"
    _table(["POINT (1 2)", "POINT (1"]).write_parquet(path)
    with pytest.raises(LandmarkError, match="not valid WKT") as exc:
        read_landmark_table(path)
    assert exc.value.path == path and "s:geojson:1" in str(exc.value)


def test_read_table_with_inconsistent_stored_bounds_raises(tmp_path) -> None:
    t = with_footprint_bounds(_table(["POLYGON ((0 0, 4 0, 4 3, 0 0))"]))
    bad = t.with_columns(fp_x_min_m=pl.lit(9.0))
    path = tmp_path / "s.parquet"
    bad.write_parquet(path)
    with pytest.raises(LandmarkError, match="min <= max") as exc:
        read_landmark_table(path)
    assert exc.value.path == path and "s:geojson:0" in str(exc.value)
    with pytest.raises(LandmarkError, match="min <= max"):
        write_landmark_table(bad, tmp_path / "out.parquet")


def test_landmarks_from_geojson_leaves_out_nan_coordinates_with_a_warning(tmp_path) -> None:
    nan = float("nan")
    features = [("Good Hall", {"type": "Point", "coordinates": [10.0, 10.0]}),
                ("Bad Lane", {"type": "LineString", "coordinates": [[1.0, 1.0], [nan, 5.0]]}),
                ("Bad Point", {"type": "Point", "coordinates": [nan, 5.0]})]  # fmt: skip
    path = tmp_path / "s.geojson"
    path.write_text(json.dumps({"type": "FeatureCollection", "features": [
        {"type": "Feature", "properties": {"name": n}, "geometry": g} for n, g in features]}))  # fmt: skip
    kw = {"scene_crs": "EPSG:4326", "bounds": [0, 0, 60, 60]}
    assert registration_offset(path, candidates=[(0, 0, 0)], **kw) == (0.0, 0.0, 0.0)
    with pytest.warns(UserWarning) as record:
        t = landmarks_from_geojson(path, scene_id="s", **kw)
    assert t["name"].to_list() == ["Good Hall"]
    assert [str(w.message) for w in record] == [
        f"{path}: 2 feature(s) with a non-finite coordinate left out "
        "(feature 1 'Bad Lane', feature 2 'Bad Point')"
    ]
