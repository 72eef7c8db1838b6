"""Tests of urbex.annotations.class_sizes: train-split box-size priors, written and read once."""

from __future__ import annotations

import json

import polars as pl
import pytest

from urbex.annotations.class_sizes import (
    CITYREFER_CLASS_SIZES,
    class_sizes_from_splits,
    class_sizes_path,
    read_class_sizes,
    write_class_sizes,
)
from urbex.errors import AnnotationError


def _splits() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "scene_id": ["a", "a", "a", "b", "b"],
            "object_id": ["1", "1", "2", "1", "3"],
            "split": ["train", "train", "train", "train", "test_nd"],
        }
    )


def _instances() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "scene_id": ["a", "a", "b", "b"],
            "object_id": ["1", "2", "1", "3"],
            "class_name": ["Car", "Car", "Building", "Car"],
            "dx": [4.0, 6.0, 20.0, 100.0],
            "dy": [2.0, 3.0, 10.0, 100.0],
        }
    )


def test_class_sizes_from_splits_counts_each_train_target_once() -> None:
    got = class_sizes_from_splits(_splits(), _instances())
    # a:1 is described twice but counts once; b:3 is test_nd
    assert got == {"Building": (20.0, 10.0, 1), "Car": (5.0, 2.5, 2)}
    assert class_sizes_from_splits(_splits(), _instances(), split="val") == {}


def test_class_sizes_from_splits_missing_instance_column_raises() -> None:
    with pytest.raises(AnnotationError, match="dx"):
        class_sizes_from_splits(_splits(), _instances().drop("dx"))


def test_write_read_class_sizes_round_trip_fills_cityrefer_means(tmp_path) -> None:
    path = write_class_sizes(
        class_sizes_from_splits(_splits(), _instances()), class_sizes_path(tmp_path)
    )
    assert path == tmp_path / "splits" / "class_sizes.json"
    doc = json.loads(path.read_text())
    assert doc["split"] == "train" and doc["classes"]["Car"] == {"dx_m": 5.0, "dy_m": 2.5, "n": 2}
    got = read_class_sizes(tmp_path)
    assert got["Car"] == (5.0, 2.5) and got["Building"] == (20.0, 10.0)
    assert got["Ground"] == CITYREFER_CLASS_SIZES["Ground"]  # no training target: CityRefer
    assert [p.name for p in path.parent.iterdir()] == ["class_sizes.json"]  # no temp file left


def test_read_class_sizes_missing_file_names_it_and_the_fix(tmp_path) -> None:
    with pytest.raises(AnnotationError, match="urbex splits") as exc:
        read_class_sizes(tmp_path)
    assert exc.value.path == class_sizes_path(tmp_path)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("not json", "expected"),
        ('{"split": "train"}', "expected"),
        ('{"split": "train", "classes": {"Car": {"dx_m": 1.0}}}', "expected"),
        (
            '{"split": "train", "classes": {"Car": {"dx_m": -1.0, "dy_m": 2.0, "n": 1}}}',
            "non-negative",
        ),
        ('{"split": "train", "classes": {"Car": {"dx_m": NaN, "dy_m": 2.0, "n": 1}}}', "finite"),
    ],
)
def test_read_class_sizes_malformed_file_raises(tmp_path, text: str, match: str) -> None:
    path = class_sizes_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(text)
    with pytest.raises(AnnotationError, match=match) as exc:
        read_class_sizes(tmp_path)
    assert exc.value.path == path
