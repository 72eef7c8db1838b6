"""Tests of urbex.annotations.quality (great-expectations suites, stage → check → publish)."""

from __future__ import annotations

import polars as pl
import pytest

from urbex.annotations.quality import (
    QualityCheckError,
    publish_checked,
    validate_landmarks,
    validate_queries,
    validate_splits,
    write_report,
)
from urbex.config import Params
from urbex.errors import DataQualityError
from urbex.landmarks import landmarks_from_instances


def _queries() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "query_id": ["s:1:0", "s:2:0", "s:3:0"],
            "scene_id": ["s", "s", "s"],
            "object_id": ["1", "2", "3"],
            "class_name": ["Car", "Building", "Car"],
            "description": [
                "the red car near the hall",
                "the tall building by the park",
                "a blue car on the road",
            ],
            "split": ["train", "test_nd", "train"],
        }
    )


INSTANCES = pl.DataFrame({"scene_id": ["s"] * 3, "object_id": ["1", "2", "3"]})


def _failed(report) -> set[tuple[str, str | None]]:
    return {(f["expectation"], f["column"]) for f in report.failed}


def test_validate_queries_clean_table_passes() -> None:
    r = validate_queries(_queries(), annotation_params=Params().annotations, instances=INSTANCES)
    assert r.success and r.failed == ()
    assert r.statistics["rows"] == 3 and r.statistics["unsuccessful_expectations"] == 0


def test_validate_queries_corrupted_table_lists_failures() -> None:
    bad = _queries().with_columns(
        pl.Series("query_id", ["s:1:0", "s:1:0", None]),
        pl.Series("class_name", ["Car", "Tree", "Car"]),
        pl.Series("description", ["ok enough text here", "short", "a blue car on the road"]),
        pl.Series("object_id", ["1", "2", "99"]),
    )
    r = validate_queries(bad, annotation_params=Params().annotations, instances=INSTANCES)
    assert not r.success
    got = _failed(r)
    assert ("expect_column_values_to_not_be_null", "query_id") in got
    assert ("expect_column_values_to_be_unique", "query_id") in got
    assert ("expect_column_values_to_be_in_set", "class_name") in got
    assert ("expect_column_value_lengths_to_be_between", "description") in got
    assert ("expect_column_values_to_be_in_set", "object_in_scene") in got
    assert "Tree" in r.summary()


def test_validate_splits_detects_bad_split_and_leak() -> None:
    bad = _queries().with_columns(
        pl.Series("split", ["train", "test_nd", "holdout"]),
        pl.Series(
            "description",
            ["same text for both rows", "Same text for both rows.", "a blue car on the road"],
        ),
    )
    r = validate_splits(bad, annotation_params=Params().annotations, instances=INSTANCES)
    got = _failed(r)
    assert ("expect_column_values_to_be_in_set", "split") in got
    assert ("expect_column_values_to_be_in_set", "no_leak") in got
    assert validate_splits(
        _queries(), annotation_params=Params().annotations, instances=INSTANCES
    ).success


def test_validate_landmarks_bounds() -> None:
    inst = pl.DataFrame(
        {"object_id": ["1", "2"], "class_name": ["Building"] * 2, "landmark_name": ["A Hall", "B Hall"],
         "x_min": [0.0, 500.0], "y_min": [0.0, 500.0], "x_max": [10.0, 510.0], "y_max": [10.0, 510.0]}
    )  # fmt: skip
    t = landmarks_from_instances(inst, scene_id="s")
    ok = validate_landmarks(t.head(1), bounds={"s": [0, 0, 100, 100]})
    assert ok.success
    bad = validate_landmarks(t, bounds={"s": [0, 0, 100, 100]}, margin=5.0)
    assert ("expect_column_values_to_be_in_set", "inside_bounds") in _failed(bad)


def test_publish_checked_failure_leaves_published_file(tmp_path) -> None:
    dest = tmp_path / "splits" / "queries.parquet"
    good = validate_queries(_queries(), annotation_params=Params().annotations)
    publish_checked(_queries(), dest, good)
    before = dest.read_bytes()
    corrupted = _queries().with_columns(pl.lit("s:1:0").alias("query_id"))
    report = validate_queries(corrupted, annotation_params=Params().annotations)
    with pytest.raises(DataQualityError, match="expect_column_values_to_be_unique") as ei:
        publish_checked(corrupted, dest, report)
    assert isinstance(ei.value, QualityCheckError) and ei.value.report is report
    assert dest.read_bytes() == before
    assert [p.name for p in dest.parent.iterdir()] == ["queries.parquet"]  # no temp files left
    rp = write_report(report, tmp_path / "quality" / "queries.json")
    assert '"success": false' in rp.read_text()


_Q_EXPECT = "expect_column_values_to_be_in_set"


@pytest.mark.parametrize(
    ("corrupt", "expected"),
    [
        (lambda d: d.with_columns(pl.Series("query_id", ["s:1:0", None, "s:3:0"])),
         ("expect_column_values_to_not_be_null", "query_id")),
        (lambda d: d.with_columns(pl.Series("scene_id", ["s", None, "s"])),
         ("expect_column_values_to_not_be_null", "scene_id")),
        (lambda d: d.with_columns(pl.Series("object_id", ["1", None, "3"])),
         ("expect_column_values_to_not_be_null", "object_id")),
        (lambda d: d.with_columns(pl.Series("query_id", ["s:1:0", "s:1:0", "s:3:0"])),
         ("expect_column_values_to_be_unique", "query_id")),
        (lambda d: d.with_columns(pl.Series("description", ["short", "the tall building by the park", "a blue car on the road"])),
         ("expect_column_value_lengths_to_be_between", "description")),
        (lambda d: d.with_columns(pl.Series("description", [" " * 30, "the tall building by the park", "a blue car on the road"])),
         ("expect_column_value_lengths_to_be_between", "description")),
        (lambda d: d.with_columns(pl.Series("description", ["x" * 2001, "the tall building by the park", "a blue car on the road"])),
         ("expect_column_value_lengths_to_be_between", "description")),
        (lambda d: d.with_columns(pl.Series("class_name", ["Car", "Tree", "Car"])),
         (_Q_EXPECT, "class_name")),
        (lambda d: d.with_columns(pl.Series("object_id", ["1", "2", "99"])),
         (_Q_EXPECT, "object_in_scene")),
        (lambda d: d.with_columns(pl.Series("scene_id", ["s", "t", "s"])),
         (_Q_EXPECT, "object_in_scene")),
        (lambda d: d.head(0), ("expect_table_row_count_to_be_between", None)),
    ],
)  # fmt: skip
def test_validate_queries_each_corruption_fails_with_its_expectation(corrupt, expected) -> None:
    r = validate_queries(
        corrupt(_queries()), annotation_params=Params().annotations, instances=INSTANCES
    )
    assert not r.success
    assert expected in _failed(r)


def test_validate_queries_integer_object_ids_checked_not_crashing() -> None:
    ok = _queries().with_columns(pl.col("object_id").cast(pl.Int64))
    assert validate_queries(ok, annotation_params=Params().annotations, instances=INSTANCES).success
    bad = _queries().with_columns(pl.Series("object_id", [1, 2, 99]))
    r = validate_queries(bad, annotation_params=Params().annotations, instances=INSTANCES)
    assert (_Q_EXPECT, "object_in_scene") in _failed(r)


@pytest.mark.parametrize(
    ("corrupt", "expected"),
    [
        (lambda d: d.with_columns(pl.Series("split", ["train", None, "train"])),
         ("expect_column_values_to_not_be_null", "split")),
        (lambda d: d.with_columns(pl.Series("split", ["train", "TEST", "train"])),
         (_Q_EXPECT, "split")),
        (lambda d: d.drop("split"), ("expect_column_values_to_not_be_null", "split")),
    ],
)  # fmt: skip
def test_validate_splits_each_corruption_fails_with_its_expectation(corrupt, expected) -> None:
    r = validate_splits(
        corrupt(_queries()), annotation_params=Params().annotations, instances=INSTANCES
    )
    assert not r.success
    assert expected in _failed(r)


@pytest.mark.parametrize(("x", "y"), [(-0.5, 5.0), (5.0, 10.5), (float("nan"), 5.0), (None, 5.0)])
def test_validate_landmarks_coordinates_outside_bounds_fail(x, y) -> None:
    t = pl.DataFrame(
        {"scene_id": ["s"], "landmark_id": ["s:geojson:1"], "name": ["Merton Hall"],
         "name_norm": ["merton hall"], "kind": ["building"], "footprint_wkt": ["POINT (5 5)"],
         "x": [x], "y": [y], "source": ["geojson"]},
        schema_overrides={"x": pl.Float64, "y": pl.Float64},
    )  # fmt: skip
    assert validate_landmarks(
        t.with_columns(x=pl.lit(5.0), y=pl.lit(5.0)), bounds={"s": [0, 0, 10, 10]}
    ).success
    r = validate_landmarks(t, bounds={"s": [0, 0, 10, 10]})
    assert not r.success and (_Q_EXPECT, "inside_bounds") in _failed(r)
