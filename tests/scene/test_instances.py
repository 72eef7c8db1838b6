"""The instance table: per-instance boxes, majority class, mean colour; compact ids."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from urbex.io.cityrefer import BoxRecord
from urbex.scene.instances import (
    INSTANCE_COLUMNS,
    compact_ids,
    instance_table,
    write_parquet_deterministic,
)


@pytest.mark.parametrize(
    ("values", "ids", "counts", "index"),
    [
        ([], [], [], []),
        ([-1, -1], [], [], [-1, -1]),
        ([3, 3, 0], [0, 3], [1, 2], [1, 1, 0]),
        ([7, -1, 7, 100], [7, 100], [2, 1], [0, -1, 0, 1]),
        ([1 << 27, -5, 4], [4, 1 << 27], [1, 1], [1, -1, 0]),  # past the dense limit: np.unique
    ],
)
def test_compact_ids(values, ids, counts, index):
    got_ids, got_counts, got_index = compact_ids(np.array(values, np.int32))
    assert got_ids.tolist() == ids and got_counts.tolist() == counts
    assert got_index.tolist() == index
    assert got_ids.dtype == np.int64 and got_index.dtype == np.int32


def _scene():
    xyz = np.array(
        [[0, 0, 0], [2, 1, 3], [1, 4, 1],  # instance 5: two cars and a ground point
         [10, 10, 0], [12, 11, 6],  # instance 2: building
         [50, 50, 50]],  # no instance
        np.float32,
    )  # fmt: skip
    rgb = np.array(
        [[200, 0, 0], [100, 0, 0], [0, 0, 30], [9, 9, 9], [11, 11, 11], [0, 0, 0]], np.uint8
    )
    semantic = np.array([9, 9, 0, 2, 2, 0], np.int32)
    instance = np.array([5, 5, 5, 2, 2, -1], np.int32)
    return xyz, rgb, semantic, instance


def test_instance_table_boxes_classes_and_colours_in_world_metres():
    xyz, rgb, semantic, instance = _scene()
    t = instance_table(scene_id="s", xyz=xyz, origin=np.array([100.0, 200.0, 10.0]), rgb=rgb,
                       semantic=semantic, instance=instance, class_scheme="sensaturban")  # fmt: skip
    assert t.columns == list(INSTANCE_COLUMNS)
    assert t["object_id"].to_list() == ["2", "5"]  # sorted by instance id
    assert t["class_name"].to_list() == ["Buildings", "Cars"]  # majority semantic
    assert t["class_id"].to_list() == [2, 9] and t["n_points"].to_list() == [2, 3]
    car = t.row(1, named=True)
    assert (car["x_min"], car["y_min"], car["z_min"]) == (100.0, 200.0, 10.0)
    assert (car["x_max"], car["y_max"], car["z_max"]) == (102.0, 204.0, 13.0)
    assert (car["cx"], car["dy"]) == (101.0, 4.0)
    assert car["mean_r"] == pytest.approx(100.0) and car["mean_b"] == pytest.approx(10.0)
    assert t["landmark_name"].to_list() == ["", ""] and t["scene_id"].to_list() == ["s", "s"]


def test_instance_table_boxes_name_the_class_and_landmark():
    xyz, _, _, instance = _scene()
    boxes = [BoxRecord(object_id="2", object_name="Building", landmark="Merton Hall",
                       center=(0, 0, 0), size=(1, 1, 1), label_id=2, instance_id=0)]  # fmt: skip
    t = instance_table(scene_id="s", xyz=xyz, origin=np.zeros(3), rgb=None, semantic=None,
                       instance=instance, class_scheme="sensaturban", boxes=boxes)  # fmt: skip
    assert t["class_name"].to_list() == ["Building", "unlabeled"]
    assert t["landmark_name"].to_list() == ["Merton Hall", ""]
    assert t["class_id"].to_list() == [-1, -1]
    assert t["mean_g"].is_nan().all()  # no colours


def test_instance_table_without_instances_is_empty_with_the_schema():
    xyz, rgb, semantic, _ = _scene()
    for inst in (None, np.full(6, -1, np.int32)):
        t = instance_table(scene_id="s", xyz=xyz, origin=np.zeros(3), rgb=rgb, semantic=semantic,
                           instance=inst, class_scheme="sensaturban")  # fmt: skip
        assert t.height == 0 and t.columns == list(INSTANCE_COLUMNS)
        assert t.schema["n_points"] == pl.Int64


def test_write_parquet_deterministic_equal_frames_give_equal_bytes(tmp_path):
    df = pl.DataFrame({"a": [3, 1, 2], "b": ["x", "y", "x"]})
    write_parquet_deterministic(df, tmp_path / "1.parquet")
    write_parquet_deterministic(df.clone(), tmp_path / "2.parquet")
    assert (tmp_path / "1.parquet").read_bytes() == (tmp_path / "2.parquet").read_bytes()
    assert pl.read_parquet(tmp_path / "1.parquet").equals(df)
