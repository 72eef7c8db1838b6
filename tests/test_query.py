"""The grounding query: Query validates on construction and round-trips through a row."""

from __future__ import annotations

import numpy as np
import pytest

from urbex.query import Query

B2 = [1.0, 2.0, 3.0, 5.0]
B3 = [1.0, 2.0, 0.0, 3.0, 5.0, 9.0]


def _query(**kw):
    return Query(**{"query_id": "q1", "scene_id": "s", "description": "the red car", **kw})


def test_query_with_boxes_stores_float64_arrays():
    q = _query(object_id="7", target_box_2d=B2, target_box_3d=B3, class_name="Car")
    assert q.has_target
    assert q.target_box_2d.dtype == np.float64 and q.target_box_2d.tolist() == B2
    assert q.target_box_3d.tolist() == B3


def test_query_free_text_has_no_target():
    q = _query()
    assert not q.has_target and q.object_id == "" and q.target_box_3d is None


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"description": "  "}, "non-empty referring expression"),
        ({"target_box_2d": B2}, "expected both"),
        ({"target_box_3d": B3}, "expected both"),
        ({"target_box_2d": [0, 0, 1], "target_box_3d": B3}, "target_box_2d: expected 4 finite"),
        ({"target_box_2d": [0, 0, 1, np.nan], "target_box_3d": B3}, "expected 4 finite"),
        ({"target_box_2d": [3, 0, 1, 1], "target_box_3d": B3}, "mins <= maxes"),
        (
            {"target_box_2d": B2, "target_box_3d": [0, 0, 5, 1, 1, 4]},
            "target_box_3d: expected mins",
        ),
    ],
)
def test_query_invalid_fields_raise_value_error(kw, match):
    with pytest.raises(ValueError, match=match):
        _query(**kw)


def test_query_non_string_id_raises_type_error():
    with pytest.raises(TypeError, match=r"Query.query_id: expected str, got int"):
        _query(query_id=3)


def test_query_from_row_takes_the_bev_box_from_the_3d_footprint():
    row = {"query_id": 5, "scene_id": "s", "description": "d", "target_box_3d": B3, "extra": 1}
    q = Query.from_row(row)
    assert q.query_id == "5" and q.object_id == "" and q.class_name == ""
    assert q.target_box_2d.tolist() == [1.0, 2.0, 3.0, 5.0]


def test_query_to_row_round_trips_through_from_row():
    q = _query(object_id="7", target_box_2d=B2, target_box_3d=B3, class_name="Car")
    row = q.to_row()
    assert row["target_box_2d"] == B2 and isinstance(row["target_box_3d"], list)
    back = Query.from_row(row)
    assert back.to_row() == row
    assert Query.from_row(_query().to_row()).has_target is False
