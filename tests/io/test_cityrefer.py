"""Tests for urbex.io.cityrefer: annotations, box3d, segs, false segments."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from urbex.errors import AnnotationError
from urbex.io.cityrefer import (
    Annotation,
    BoxRecord,
    FalseSegment,
    read_annotations,
    read_box3d,
    read_false_segments,
    read_segs,
    segs_to_instance,
    write_annotations,
    write_box3d,
    write_false_segments,
    write_segs,
)


def _anns() -> list[Annotation]:
    return [
        Annotation(
            scene_id="birmingham_block_3",
            object_id=str(i),
            object_name=["Ground", "Building", "Parking", "Car"][i % 4],
            ann_id=i // 4,
            description=f"the object №{i} near “Perry Barr” stadium",
        )
        for i in range(9)
    ]


def test_write_annotations_roundtrip(tmp_path: Path) -> None:
    anns = _anns()
    write_annotations(tmp_path / "CityRefer_train.json", anns)
    assert read_annotations(tmp_path / "CityRefer_train.json") == anns


def test_read_annotations_int_object_id_and_extra_keys(tmp_path: Path) -> None:
    rec = {
        "scene_id": "s",
        "object_id": 17,
        "object_name": "Car",
        "ann_id": 2,
        "description": "d",
        "token": ["the"],
        "eval_type": "unique",
    }
    (tmp_path / "a.json").write_text(json.dumps([rec]))
    (a,) = read_annotations(tmp_path / "a.json")
    assert a.object_id == "17" and a.ann_id == 2 and a.object_name == "Car"


@pytest.mark.parametrize(
    "payload,field,message",
    [
        ({"scene_id": "s"}, None, "expected a JSON list.*got dict"),
        (["oops"], None, "record 0: expected a JSON object"),
        ([{"object_id": "1", "description": "d"}], "scene_id", "record 0 has no 'scene_id'"),
        (
            [
                {"scene_id": "s", "object_id": "1", "description": "d"},
                {"scene_id": "s", "description": "d"},
            ],
            "object_id",
            "record 1 has no 'object_id'",
        ),
        ([{"scene_id": "s", "object_id": "1"}], "description", "record 0 has no 'description'"),
        (
            [{"scene_id": "s", "object_id": [1], "description": "d"}],
            "object_id",
            "record 0: expected a string, got list",
        ),
        (
            [{"scene_id": "s", "object_id": "1", "description": "d", "ann_id": "x"}],
            "ann_id",
            "expected an integer",
        ),
    ],
    ids=[
        "not-list",
        "not-object",
        "no-scene",
        "no-object",
        "no-description",
        "bad-type",
        "bad-ann-id",
    ],
)
def test_read_annotations_bad_input_raises(
    tmp_path: Path, payload: object, field: str | None, message: str
) -> None:
    p = tmp_path / "CityRefer_val.json"
    p.write_text(json.dumps(payload))
    with pytest.raises(AnnotationError, match=message) as info:
        read_annotations(p)
    assert info.value.field == field and str(p) in str(info.value)


def test_read_annotations_invalid_json_raises(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text("[{")
    with pytest.raises(AnnotationError, match="not valid JSON"):
        read_annotations(tmp_path / "a.json")


def _boxes() -> list[BoxRecord]:
    return [
        BoxRecord(
            object_id="12",
            object_name="Building",
            landmark="Perry Barr Library",
            center=(10.25, -3.5, 7.0),
            size=(18.7, 17.9, 11.2),
            label_id=2,
            instance_id=12,
        ),
        BoxRecord(
            object_id="40",
            object_name="Car",
            landmark="",
            center=(0.1, 0.2, 0.3),
            size=(5.1, 2.0, 1.5),
            label_id=9,
            instance_id=40,
        ),
    ]


def test_write_box3d_roundtrip(tmp_path: Path) -> None:
    write_box3d(tmp_path / "b_bbox.json", "cambridge_block_2", _boxes())
    scene, boxes = read_box3d(tmp_path / "b_bbox.json")
    assert scene == "cambridge_block_2" and boxes == _boxes()
    raw = json.loads((tmp_path / "b_bbox.json").read_text())
    assert raw["bboxes"][0]["bbox"] == [10.25, -3.5, 7.0, 18.7, 17.9, 11.2, 2, 12]


def test_box_record_box3d_corners() -> None:
    b = _boxes()[0]
    np.testing.assert_allclose(b.box3d, [0.9, -12.45, 1.4, 19.6, 5.45, 12.6])


@pytest.mark.parametrize(
    "entry,field",
    [
        ({"object_id": "1", "bbox": [1, 2, 3]}, "bbox"),
        ({"bbox": [0] * 8}, "object_id"),
        ({"object_id": "1", "bbox": [0, 0, 0, -1, 1, 1, 0, 0]}, "bbox"),
    ],
    ids=["short-bbox", "no-object-id", "negative-size"],
)
def test_read_box3d_bad_entry_raises(tmp_path: Path, entry: dict, field: str) -> None:
    (tmp_path / "b.json").write_text(json.dumps({"scene_id": "s", "bboxes": [entry]}))
    with pytest.raises(AnnotationError, match=r"bboxes\[0\]") as info:
        read_box3d(tmp_path / "b.json")
    assert info.value.field == field


def test_write_segs_roundtrip(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    segs = {int(k): rng.integers(0, 10**6, rng.integers(0, 50)).astype(np.int64) for k in range(30)}
    write_segs(tmp_path / "s.segs.json", segs)
    back = read_segs(tmp_path / "s.segs.json")
    assert list(back) == list(segs)
    for k in segs:
        assert back[k].dtype == np.int64
        np.testing.assert_array_equal(back[k], segs[k])


def test_read_segs_bad_point_ids_raise(tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text(json.dumps({"segGroups": [{"id": 3, "pointIds": [1.5, 2]}]}))
    with pytest.raises(AnnotationError, match=r"segGroups\[0\]") as info:
        read_segs(tmp_path / "s.json")
    assert info.value.field == "pointIds"


def test_segs_to_instance_assigns_ids_and_minus_one() -> None:
    inst = segs_to_instance({4: np.array([0, 1]), 9: np.array([3]), 2: np.array([], np.int64)}, 5)
    assert inst.dtype == np.int32 and inst.tolist() == [4, 4, -1, 9, -1]


@pytest.mark.parametrize("bad", [5, -1])
def test_segs_to_instance_out_of_range_names_segment(bad: int) -> None:
    with pytest.raises(AnnotationError, match=rf"segment 77: point index {bad} out of range"):
        segs_to_instance({1: np.array([0]), 77: np.array([1, bad])}, 5)


def test_write_false_segments_roundtrip_file_and_dir(tmp_path: Path) -> None:
    rows = [
        FalseSegment(area="birmingham", block_id=3, object_id="178"),
        FalseSegment(area="cambridge", block_id=12, object_id="5"),
    ]
    write_false_segments(tmp_path / "fs" / "a.csv", rows[:1])
    write_false_segments(tmp_path / "fs" / "b.csv", rows[1:])
    assert read_false_segments(tmp_path / "fs" / "a.csv") == rows[:1]
    assert read_false_segments(tmp_path / "fs") == rows
    assert rows[0].scene_id == "birmingham_block_3"


@pytest.mark.parametrize(
    "text,field",
    [
        ("area,object_id\nb,1\n", "block_id"),
        ("area,block_id,object_id\nb,x,1\n", "block_id"),
        ("area,block_id,object_id\n,3,1\n", "area"),
    ],
    ids=["missing-column", "non-int", "empty-area"],
)
def test_read_false_segments_bad_input_raises(tmp_path: Path, text: str, field: str) -> None:
    (tmp_path / "f.csv").write_text(text)
    with pytest.raises(AnnotationError) as info:
        read_false_segments(tmp_path / "f.csv")
    assert info.value.field == field and "f.csv" in str(info.value)


def test_read_false_segments_bom_and_spaced_header(tmp_path: Path) -> None:
    # spreadsheet exports: a UTF-8 byte-order mark and spaces after the commas
    (tmp_path / "f.csv").write_bytes(
        "area, block_id, object_id\nbirmingham, 3, 178\n".encode("utf-8-sig")
    )
    assert read_false_segments(tmp_path / "f.csv") == [
        FalseSegment(area="birmingham", block_id=3, object_id="178")
    ]


def test_read_false_segments_not_utf8_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "f.csv").write_bytes(b"area,block_id,object_id\n\xffbirmingham,3,1\n")
    with pytest.raises(AnnotationError, match=r"f\.csv"):
        read_false_segments(tmp_path / "f.csv")
