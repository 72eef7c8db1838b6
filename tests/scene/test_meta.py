"""meta.json: the CacheMeta record, reading it back, and the warehouse's scenes row."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from tests.fixtures.city import build_city_cache
from urbex.atomic import write_json_atomic
from urbex.errors import CacheError
from urbex.scene.meta import (
    CACHE_FORMAT_VERSION,
    SCENE_COLUMNS,
    CacheMeta,
    read_meta,
    scene_row,
    write_scene_row,
)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("meta")
    cache, _ = build_city_cache(root, size=30.0, density=4.0)
    return root / cache.scene_id


def test_read_meta_of_a_built_cache_round_trips_through_to_dict(cache_dir):
    meta = read_meta(cache_dir)
    assert meta.scene_id == "toy_block_0" and meta.format_version == CACHE_FORMAT_VERSION
    assert meta.n_points > 0 and len(meta.bounds) == 6 and len(meta.content_hash) == 64
    assert CacheMeta.from_dict(json.loads(json.dumps(meta.to_dict()))) == meta
    x, y = meta.bev_affine.pixel_to_world(0.0, 0.0)  # top-left corner -> world metres
    assert x <= meta.bounds[0] + meta.resolution and y >= meta.bounds[4] - meta.resolution


def test_read_meta_missing_bad_json_and_missing_keys_raise_cache_error(tmp_path, cache_dir):
    with pytest.raises(CacheError, match=r"no meta.json"):
        read_meta(tmp_path)
    (tmp_path / "meta.json").write_text("{oops")
    with pytest.raises(CacheError, match="not readable JSON"):
        read_meta(tmp_path)
    (tmp_path / "meta.json").write_text("[1]")
    with pytest.raises(CacheError, match="expected a JSON object, got list"):
        read_meta(tmp_path)
    doc = json.loads((cache_dir / "meta.json").read_text())
    del doc["content_hash"], doc["bounds"]
    (tmp_path / "meta.json").write_text(json.dumps(doc))
    with pytest.raises(CacheError, match=r"lacks required keys \['bounds', 'content_hash'\]"):
        read_meta(tmp_path)


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        ("bounds", [0, 0, 0, 1], "bounds: expected 6 values"),
        ("bev_transform", [1, 0, 0], "expected 6 affine values"),
        ("bev_width", 0, "a BEV of ≥ 1×1 px"),
    ],
)
def test_cache_meta_invalid_fields_are_a_cache_error(cache_dir, key, value, match):
    doc = {**read_meta(cache_dir).to_dict(), key: value}
    with pytest.raises(CacheError, match=match):
        CacheMeta.from_dict(doc, path=cache_dir / "meta.json")


def test_scene_row_projects_meta_into_the_scene_columns():
    meta = {"bounds": [1, 2, 3, 4, 5, 6], "n_points": 10, "bev_width": 3, "bev_height": 4,
            "resolution": 0.5}  # fmt: skip
    row = scene_row(meta, scene_id="s")
    assert list(row) == [c for c, _ in SCENE_COLUMNS]
    assert (row["x_min"], row["z_max"], row["crs"], row["content_hash"]) == (1.0, 6.0, None, "")
    assert row["resolution"] == 0.5 and "build_seconds" not in row  # a timing: timings/
    with pytest.raises(ValueError, match="bounds: expected 6 values, got 5"):
        scene_row({**meta, "bounds": [1, 2, 3, 4, 5]}, scene_id="s")


def test_write_scene_row_writes_one_parquet_row(cache_dir):
    path = write_scene_row(cache_dir)
    rows = pq.read_table(path).to_pylist()
    meta = read_meta(cache_dir)
    assert len(rows) == 1 and rows[0]["scene_id"] == meta.scene_id
    assert rows[0]["n_points"] == meta.n_points and rows[0]["content_hash"] == meta.content_hash


def test_write_json_atomic_sorted_indented_and_no_temp_left(tmp_path):
    write_json_atomic({"b": 1, "a": [1, 2]}, tmp_path / "m.json")
    text = (tmp_path / "m.json").read_text()
    assert text.startswith('{\n  "a": [') and text.endswith("}\n")
    assert json.loads(text) == {"a": [1, 2], "b": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]
