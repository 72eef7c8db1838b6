"""Tests of urbex.landmarks: normalisation, tables, registration, lookup, mentions."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from urbex.errors import LandmarkError
from urbex.landmarks import (
    LANDMARK_SCHEMA,
    LandmarkIndex,
    landmark_kind,
    landmarks_from_geojson,
    landmarks_from_instances,
    merge_landmark_tables,
    normalize_name,
    read_landmark_table,
    registration_offset,
    write_landmark_table,
)

NAMES = [
    "Merton Hall",
    "St Mary's Church",
    "King's Parade",
    "Perry Barr Greyhound Stadium",
    "Merton College",
    "Jesus Green",
    "Trinity Street",
]


@pytest.fixture(scope="module")
def index() -> LandmarkIndex:
    n = len(NAMES)
    t = pl.DataFrame(
        {"scene_id": ["s"] * n, "name": NAMES, "x": np.arange(n, dtype=float), "y": np.zeros(n)}
    )
    other = pl.DataFrame({"scene_id": ["t"], "name": ["Merton Hall"], "x": [99.0], "y": [99.0]})
    return LandmarkIndex(pl.concat([t, other]))


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("St. Mary's Church", "Saint Marys Church"),
        ("King's Parade", "Kings Pde"),
        ("Trinity St", "Trinity Street"),
        ("The Café", "cafe"),
        ("MERTON   HALL", "merton hall"),
        ("Hills Rd.", "Hills Road"),
    ],
)
def test_normalize_name_equivalent_forms(a: str, b: str) -> None:
    assert normalize_name(a) == normalize_name(b)


def test_normalize_name_saint_vs_street_by_position() -> None:
    assert normalize_name("St Andrew's St") == "saint andrews street"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Mertn Hall", "Merton Hall"),
        ("merton hall", "Merton Hall"),
        ("St. Mary's", "St Mary's Church"),
        ("Saint Marys Church", "St Mary's Church"),
        ("Kings Pde", "King's Parade"),
        ("King's Parade", "King's Parade"),
        ("greyhound stadium", "Perry Barr Greyhound Stadium"),
        ("Perry Bar Stadium", "Perry Barr Greyhound Stadium"),
        ("Trinity St", "Trinity Street"),
    ],
)
def test_lookup_finds_misspelled_and_variant_names(
    index: LandmarkIndex, query: str, expected: str
) -> None:
    r = index.lookup(query, scene_id="s")
    assert r.found, (query, r)
    assert r.best is not None and r.best.name == expected
    assert r.best.scene_id == "s"


def test_lookup_exact_then_normalized_methods(index: LandmarkIndex) -> None:
    assert index.lookup("Merton Hall", scene_id="s").best.method == "exact"
    assert index.lookup("merton hall", scene_id="s").best.method == "normalized"
    assert index.lookup("Mertn Hall", scene_id="s").best.method == "fuzzy"


@pytest.mark.parametrize("query", ["Big Ben", "Hall", "church", "Green"])
def test_lookup_not_found_returns_closest_names(index: LandmarkIndex, query: str) -> None:
    r = index.lookup(query, scene_id="s", limit=3)
    assert not r.found and r.best is None
    assert r.status == "below_threshold"
    assert 1 <= len(r.closest_names) <= 3
    assert set(r.closest_names) <= set(NAMES)


def test_lookup_ambiguous_is_not_found(index: LandmarkIndex) -> None:
    r = index.lookup("Merton", scene_id="s")
    assert not r.found and r.status == "ambiguous"
    assert {"Merton Hall", "Merton College"} <= set(r.closest_names)


def test_lookup_scene_filter_and_empty_scene(index: LandmarkIndex) -> None:
    assert index.lookup("Merton Hall", scene_id="t").best.x == 99.0
    r = index.lookup("Merton Hall", scene_id="nowhere")
    assert not r.found and r.status == "no_landmarks" and r.candidates == ()


def test_lookup_candidates_ranked_and_limited(index: LandmarkIndex) -> None:
    r = index.lookup("Mertn Hall", scene_id="s", limit=3)
    assert len(r.candidates) == 3
    scores = [c.score for c in r.candidates]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 <= s <= 1.0 for s in scores)


def test_mentions_finds_names_in_order(index: LandmarkIndex) -> None:
    got = index.mentions(
        "The red car on kings pde, just west of saint marys church and near Mertn Hall.", "s"
    )
    assert got == ["King's Parade", "St Mary's Church", "Merton Hall"]


def test_mentions_none_in_plain_text(index: LandmarkIndex) -> None:
    assert index.mentions("the big grey building next to the car park", "s") == []


def test_landmark_kind_sources() -> None:
    assert landmark_kind("X", tags={"highway": "residential"}) == "road"
    assert landmark_kind("X", tags={"amenity": "parking"}) == "parking"
    assert landmark_kind("X", object_name="Building") == "building"
    assert landmark_kind("Romsey Car Park") == "parking"
    assert landmark_kind("Nothing") == "other"


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


@pytest.mark.parametrize(
    ("names", "query"),
    [
        (["Merton Hall"], "Merton Hall Road"),
        (["Merton Hall"], "Merton Hall Car Park"),
        (["Kings Parade"], "Kings Parade Car Park"),
        (["Mill Road"], "Mill Road Cemetery"),
        (["Mill Road"], "Mill Road Library"),
    ],
)
def test_lookup_superset_naming_another_place_is_not_found(names: list[str], query: str) -> None:
    # The query is the landmark's name plus a word naming a different kind of place: a
    # different landmark that the table lacks, not the one it has.
    t = pl.DataFrame(
        {
            "scene_id": ["s"] * len(names),
            "name": names,
            "x": [0.0] * len(names),
            "y": [0.0] * len(names),
        }
    )
    r = LandmarkIndex(t).lookup(query)
    assert not r.found and r.best is None
    assert r.closest_names[0] == names[0]


@pytest.mark.parametrize(
    ("name", "query"),
    [
        ("Merton Hall", "merton hall building"),
        ("Jesus Green", "Jesus Green Park"),
        ("Merton Hall", "Merton"),
    ],
)
def test_lookup_superset_with_same_kind_word_still_found(name: str, query: str) -> None:
    t = pl.DataFrame({"scene_id": ["s"], "name": [name], "x": [0.0], "y": [0.0]})
    r = LandmarkIndex(t).lookup(query)
    assert r.found and r.best is not None and r.best.name == name


@pytest.mark.parametrize("query", ["", "   ", "\t\n", "x" * 5000])
def test_lookup_empty_or_garbage_query_not_found(index: LandmarkIndex, query: str) -> None:
    r = index.lookup(query)
    assert not r.found and r.best is None


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
