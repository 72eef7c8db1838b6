"""Tests for urbex.io.geojson: landmark round trip and missing names."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from urbex.errors import LandmarkError
from urbex.io.geojson import read_landmarks_geojson, write_landmarks_geojson


@pytest.mark.parametrize("crs,base", [("EPSG:4326", (-1.9, 52.4)), ("EPSG:32630", (5e5, 5.8e6))])
def test_write_landmarks_geojson_roundtrip_exact(tmp_path: Path, crs: str, base: tuple) -> None:
    import geopandas as gpd
    from shapely.geometry import Point, Polygon

    rng = np.random.default_rng(4)
    pts = rng.random((5, 2)) * 0.01 + base
    geoms = [Point(*p) for p in pts] + [Polygon(pts[:3])]
    gdf = gpd.GeoDataFrame(
        {"name": [f"Landmark {i}" for i in range(6)], "kind": ["shop"] * 5 + ["park"]},
        geometry=geoms,
        crs=crs,
    )
    p = tmp_path / "cambridge_block_2.geojson"
    write_landmarks_geojson(p, gdf)
    back = read_landmarks_geojson(p)
    assert back.crs == gdf.crs
    assert list(back["name"]) == list(gdf["name"]) and list(back["kind"]) == list(gdf["kind"])
    assert back.geometry.geom_equals_exact(gdf.geometry, tolerance=0).all()
    assert not list(tmp_path.glob(".*tmp*"))


def _fc(props: list[dict]) -> dict:
    return {
        "type": "FeatureCollection",
        "features": [
            {
                "type": "Feature",
                "properties": pr,
                "geometry": {"type": "Point", "coordinates": [0, i]},
            }
            for i, pr in enumerate(props)
        ],
    }


@pytest.mark.parametrize(
    "props,message",
    [
        ([{"kind": "a"}, {"kind": "b"}], "no 'name' property"),
        ([{"name": "A"}, {"name": ""}], "feature 1 has an empty name"),
        ([{"name": "A"}, {"name": None}, {"name": "C"}], "feature 1 has an empty name"),
    ],
    ids=["no-column", "empty", "null"],
)
def test_read_landmarks_geojson_missing_name_raises(
    tmp_path: Path, props: list, message: str
) -> None:
    p = tmp_path / "lm.geojson"
    p.write_text(json.dumps(_fc(props)))
    with pytest.raises(LandmarkError, match=message) as info:
        read_landmarks_geojson(p)
    assert info.value.field == "name" and "lm.geojson" in str(info.value)


def test_read_landmarks_geojson_unreadable_raises(tmp_path: Path) -> None:
    (tmp_path / "x.geojson").write_text("{not json")
    with pytest.raises(LandmarkError, match="cannot read"):
        read_landmarks_geojson(tmp_path / "x.geojson")
