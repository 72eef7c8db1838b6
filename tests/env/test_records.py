"""The episode records: Step, PointCounts, EpisodeOutcome validate on construction."""

from __future__ import annotations

import numpy as np
import pytest

from urbex.env.records import STOP_REASONS, EpisodeOutcome, PointCounts, Step

B2 = [1.0, 2.0, 3.0, 5.0]
B3 = [1.0, 2.0, 0.0, 3.0, 5.0, 9.0]


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
