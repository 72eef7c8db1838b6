"""The episode records: Query, Step, PointCounts, EpisodeOutcome validate on construction."""

from __future__ import annotations

import numpy as np
import pytest

from urbex.env.records import STOP_REASONS, EpisodeOutcome, PointCounts, Query, Step

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


def _step(**kw):
    base = {"turn": 1, "tool": "zoom_in", "arguments": {}, "valid": True, "error": None}
    return Step(**{**base, "reward_shaping": 0.25, "reward_terminal": 1.0, "env_s": 0.5, **kw})


def test_step_sums_reward_and_latency_and_fills_in_the_policy():
    s = _step().with_policy(policy_s=2, model_text="<tool_call>")
    assert s.reward == 1.25
    assert s.policy_s == 2.0 and s.latency_s == 2.5 and s.model_text == "<tool_call>"
    assert s.view_id is None and s.region_m is None  # no view produced


@pytest.mark.parametrize(("kw", "exc"), [({"turn": 0}, ValueError), ({"arguments": []}, TypeError)])
def test_step_invalid_fields_raise(kw, exc):
    with pytest.raises(exc, match=r"Step."):
        _step(**kw)


@pytest.mark.parametrize(("pred", "target", "both"), [(-1, 0, 0), (2, 3, 3), (5, 1, 2)])
def test_point_counts_both_cannot_exceed_either_side(pred, target, both):
    with pytest.raises(ValueError, match="0 <= n_both <= min"):
        PointCounts(n_pred=pred, n_target=target, n_both=both)


def test_point_counts_valid():
    c = PointCounts(n_pred=4, n_target=3, n_both=3)
    assert (c.n_pred, c.n_target, c.n_both) == (4, 3, 3)


def _outcome(**kw):
    terms = {"terminal_iou": 1.5, "terminal_dist": 0.75, "step_cost": -0.25}  # sum 2.0
    base = {"turns": 2, "reward_shaping": -0.5, "reward_terminal": 2.0, "iou_bev": 0.5}
    return EpisodeOutcome(**{**base, "terminal_terms": terms, **kw})


def test_outcome_answer_needs_a_prediction_and_sums_the_reward():
    o = _outcome(stop_reason="answer", pred_box_2d_m=B2, pred_box_3d_m=B3)
    assert o.answered and o.reward == 1.5
    assert o.pred_box_2d_m.dtype == np.float64


@pytest.mark.parametrize("reason", [r for r in STOP_REASONS if r != "answer"])
def test_outcome_without_answer_has_no_prediction(reason):
    assert not _outcome(stop_reason=reason).answered
    with pytest.raises(ValueError, match="only an answer has one"):
        _outcome(stop_reason=reason, pred_box_2d_m=B2)


def test_outcome_answer_without_prediction_and_unknown_reason_raise():
    with pytest.raises(ValueError, match="an answer needs pred_box_2d_m"):
        _outcome(stop_reason="answer")
    with pytest.raises(ValueError, match="stop_reason: expected one of"):
        _outcome(stop_reason="crashed")
    with pytest.raises(ValueError, match="pred_box_3d_m: expected 6"):
        _outcome(stop_reason="answer", pred_box_2d_m=B2, pred_box_3d_m=B2)
