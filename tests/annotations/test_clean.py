"""Tests of urbex.annotations.clean."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from urbex.annotations.clean import (
    DROP_REASONS,
    QUERY_SCHEMA,
    clean_annotations,
    normalize_description,
)
from urbex.config import Params
from urbex.errors import AnnotationError

LONG = "the red car parked near the big hall"


def r(oid: str, ann: int, desc: str, name: str = "Car") -> dict:
    return dict(scene_id="s", object_id=oid, object_name=name, ann_id=ann, description=desc)


def _rows() -> list[dict]:
    return [
        r("1", 0, LONG),  # kept
        r("1", 1, "  The RED car parked near the big hall. "),  # duplicate (normalised)
        r("2", 0, "   "),  # empty
        r("2", 1, "a car"),  # too_short
        r("2", 2, "car car car car"),  # non_informative (1 distinct word)
        r("2", 3, "same as above"),  # non_informative (filler phrase)... 3 words
        r("9", 0, "a blue car next to the hall"),  # missing_instance
        r("4", 0, "the tall building next to the hall", "Building"),  # false_segment
        r("3", 0, "the tall tree next to the hall", "Tree"),  # class_not_target
        r("2", 4, "the small white car behind the hall"),  # kept
        r("2", 4, "another text with the same ann id"),  # duplicate (same query_id)
    ]


def _instances() -> pl.DataFrame:
    return pl.DataFrame({"scene_id": ["s"] * 4, "object_id": ["1", "2", "3", "4"]})


def test_clean_annotations_every_reason() -> None:
    fs = pl.DataFrame({"scene_id": ["s"], "object_id": ["4"]})
    res = clean_annotations(
        _rows(), instances=_instances(), false_segments=fs, annotation_params=Params().annotations
    )
    assert res.drops["reason"].to_list() == [
        "duplicate", "empty", "too_short", "non_informative", "non_informative",
        "missing_instance", "false_segment", "class_not_target", "duplicate",
    ]  # fmt: skip
    assert res.drops["row"].to_list() == [1, 2, 3, 4, 5, 6, 7, 8, 10]
    assert res.queries["query_id"].to_list() == ["s:1:0", "s:2:4"]
    assert res.queries.columns == list(QUERY_SCHEMA)
    assert set(res.drop_counts()) == set(DROP_REASONS)


def test_clean_annotations_duplicate_of_dropped_row_is_kept() -> None:
    rows = [
        dict(
            scene_id="s", object_id="9", object_name="Car", ann_id=0, description=LONG
        ),  # missing instance
        dict(scene_id="s", object_id="1", object_name="Car", ann_id=0, description=LONG),  # valid
    ]
    res = clean_annotations(rows, instances=_instances())
    assert res.drops["reason"].to_list() == ["missing_instance"]
    assert res.queries["query_id"].to_list() == ["s:1:0"]


def test_clean_annotations_fills_landmark_mentions() -> None:
    from urbex.landmarks import LandmarkIndex

    idx = LandmarkIndex(
        pl.DataFrame({"scene_id": ["s"], "name": ["Big Hall"], "x": [0.0], "y": [0.0]})
    )
    res = clean_annotations(_rows()[:1], instances=_instances(), landmark_index=idx)
    assert res.queries["landmark_mentions"].to_list() == [["Big Hall"]]


def test_clean_annotations_bad_frame_raises() -> None:
    with pytest.raises(AnnotationError, match="description"):
        clean_annotations(
            pl.DataFrame({"scene_id": ["s"], "object_id": ["1"]}), instances=_instances()
        )


def test_normalize_description_is_duplicate_key() -> None:
    assert normalize_description(" A  b. ") == normalize_description("a b")


def test_clean_synthetic_planted_defects_all_dropped(synth_root: Path) -> None:
    from urbex.annotations.clean import annotations_frame
    from urbex.io.cityrefer import read_annotations, read_box3d, read_false_segments
    from urbex.io.datasets import annotation_files

    anns = pl.concat(
        [
            annotations_frame(read_annotations(p), file_split=s)
            for s, p in sorted(annotation_files(synth_root).items())
        ]
    )
    inst = []
    for f in sorted((synth_root / "box3d").glob("*_bbox.json")):
        sid, boxes = read_box3d(f)
        inst += [{"scene_id": sid, "object_id": b.object_id} for b in boxes]
    res = clean_annotations(
        anns,
        instances=pl.DataFrame(inst),
        false_segments=read_false_segments(synth_root / "false_segments"),
        annotation_params=Params().annotations,
    )
    manifest = json.loads((synth_root / "synth_manifest.json").read_text())
    planted = {
        (d["scene_id"], d["object_id"], d["ann_id"]): d["reason"] for d in manifest["defects"]
    }
    got = {
        (r["scene_id"], r["object_id"], r["ann_id"]): r["reason"]
        for r in res.drops.iter_rows(named=True)
    }
    assert len(planted) >= 5
    assert got == planted  # every planted defect dropped with its reason, no valid row dropped
    assert res.queries.height + res.drops.height == anns.height
