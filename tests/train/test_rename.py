"""Landmark renaming: the query's scene under fresh names, everything else untouched."""

from __future__ import annotations

import numpy as np
import polars as pl

from urbex.landmarks import LandmarkIndex
from urbex.query import Query
from urbex.train.rename import renamed_world

TABLE = pl.DataFrame({
    "scene_id": ["s", "s", "s", "other"],
    "name": ["Mill Lane", "Clare Park", "Merton Hall", "Mill Lane"],
    "kind": ["road", "ground", "building", "road"],
    "x": [0.0, 5.0, 9.0, 1.0],
    "y": [0.0, 5.0, 9.0, 1.0],
})  # fmt: skip


def _q(text):
    return Query(query_id="q", scene_id="s", description=text, target_box_2d=[0, 0, 1, 1],
                 target_box_3d=[0, 0, 0, 1, 1, 1])  # fmt: skip


def test_renamed_world_renames_the_scene_and_the_description_consistently():
    q = _q("the car on Mill Lane near merton hall")
    q2, idx = renamed_world(q, LandmarkIndex(TABLE), np.random.default_rng(0))
    t = idx.table
    s_names = t.filter(pl.col("scene_id") == "s")["name"].to_list()
    assert not set(s_names) & set(TABLE["name"].to_list())  # every name is fresh
    assert len(set(s_names)) == 3
    assert t.filter(pl.col("scene_id") == "other")["name"].to_list() == ["Mill Lane"]
    assert t["x"].to_list() == TABLE["x"].to_list()  # geometry untouched
    road, _, hall = s_names
    assert q2.description == f"the car on {road} near {hall}"
    assert sorted(idx.mentions(q2.description, "s")) == sorted([road, hall])
    assert q2.target_box_2d.tolist() == q.target_box_2d.tolist() and q2.query_id == "q"


def test_renamed_world_is_seeded():
    q = _q("the car on Mill Lane")
    a = renamed_world(q, LandmarkIndex(TABLE), np.random.default_rng(3))
    b = renamed_world(q, LandmarkIndex(TABLE), np.random.default_rng(3))
    assert a is not None and b is not None and a[0].description == b[0].description


def test_renamed_world_without_a_mention_is_none():
    assert (
        renamed_world(_q("the tallest building"), LandmarkIndex(TABLE), np.random.default_rng(0))
        is None
    )
