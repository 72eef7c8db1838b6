"""Tests of urbex.annotations.splits."""

from __future__ import annotations

import polars as pl
import pytest

from urbex.annotations.splits import SPLITS, check_leakage, make_splits, split_counts
from urbex.config import Params
from urbex.errors import ConfigError


def _queries(n_scenes: int = 6, per_scene: int = 60) -> pl.DataFrame:
    rows = []
    for s in range(n_scenes):
        fs = "test" if s == 0 else ("val" if s == 1 else "train")
        for i in range(per_scene):
            d = f"the {'red' if i % 2 else 'blue'} object number {i % 40} near landmark {s % 3}"
            rows.append(
                {
                    "scene_id": f"scene_{s}",
                    "class_name": ["Car", "Building"][i % 2],
                    "description": d,
                    "file_split": fs,
                }
            )
    return pl.DataFrame(rows)


def test_make_splits_file_split_defaults_and_no_leakage() -> None:
    q = _queries()
    f = make_splits(q, annotation_params=Params().annotations)
    assert set(f["split"].unique()) == set(SPLITS)
    assert set(f.filter(pl.col("split") == "test_no")["scene_id"]) == {"scene_0"}
    assert set(f.filter(pl.col("split") == "val")["scene_id"]) == {"scene_1"}
    leaks = check_leakage(f)
    assert leaks == {
        "nd_descriptions_in_train": [],
        "test_no_scenes_in_train": [],
        "val_scenes_in_train": [],
    }
    # repeated descriptions inside training scenes: whole groups move to test_nd
    nd = set(f.filter(pl.col("split") == "test_nd")["description"])
    assert nd and not nd & set(f.filter(pl.col("split") == "train")["description"])


def test_make_splits_deterministic_and_order_independent() -> None:
    q = _queries()
    a = make_splits(q, nd_fraction=0.3, seed=3)
    b = make_splits(q, nd_fraction=0.3, seed=3)
    assert a["split"].to_list() == b["split"].to_list()
    shuffled = q.with_row_index("i").sample(fraction=1.0, shuffle=True, seed=1)
    c = (
        make_splits(shuffled.drop("i"), nd_fraction=0.3, seed=3)
        .with_columns(shuffled["i"])
        .sort("i")
    )
    assert c["split"].to_list() == a["split"].to_list()
    d = make_splits(q, nd_fraction=0.3, seed=4)
    assert d["split"].to_list() != a["split"].to_list()


def test_make_splits_configured_scene_lists() -> None:
    f = make_splits(
        _queries(), val_scenes=["scene_2"], test_no_scenes=["scene_3", "scene_4"], nd_fraction=0.0
    )
    assert set(f.filter(pl.col("split") == "test_no")["scene_id"]) == {"scene_3", "scene_4"}
    assert set(f.filter(pl.col("split") == "val")["scene_id"]) == {"scene_2"}
    assert f.filter(pl.col("split") == "test_nd").height == 0


def test_make_splits_overlapping_lists_raise() -> None:
    with pytest.raises(ConfigError, match="both val and test_no"):
        make_splits(_queries(), val_scenes=["scene_2"], test_no_scenes=["scene_2"])


def test_check_leakage_detects_leaks() -> None:
    f = pl.DataFrame(
        {"scene_id": ["a", "a", "b", "b"], "description": ["x y", "X  y.", "z", "w"],
         "split": ["train", "test_nd", "test_no", "train"]}
    )  # fmt: skip
    leaks = check_leakage(f)
    assert leaks["nd_descriptions_in_train"] == ["x y"]
    assert leaks["test_no_scenes_in_train"] == ["b"]


def test_split_counts_all_splits_and_totals() -> None:
    f = make_splits(_queries(), annotation_params=Params().annotations)
    c = split_counts(f)
    assert c["split"].to_list() == list(SPLITS)
    assert c.columns == ["split", "Building", "Car", "total"]
    assert c["total"].sum() == f.height
    assert (c["Building"] + c["Car"] == c["total"]).all()
