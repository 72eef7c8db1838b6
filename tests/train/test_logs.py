"""Training logs: episode summaries (reward components), step rows (the curves: test_curves.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.fixtures.city import city  # noqa: F401
from urbex.config import EnvParams
from urbex.env import rewards as R
from urbex.env.episode import GroundingEnv
from urbex.geometry import center_distance_2d, iou_2d
from urbex.train.logs import (
    COMPONENTS,
    TRAINING_LOG_SCHEMA,
    TrainingLogCallback,
    TrainingRecorder,
    episode_summary,
    step_row,
    training_log_frame,
)

P = EnvParams(global_view_size=(64, 64), zoom_size=(64, 64), oblique_size=(64, 64), max_turns=4)


def _box(env, q, view="global"):
    return [round(v) for v in np.clip(env.views[view].from_world_box(q.target_box_2d), 0, 1000)]


def _play(env, q, texts):
    env.reset(query=q)
    for t in texts:
        if env.done:
            break
        env.step(t(env) if callable(t) else t)
    if not env.done:
        env.end_without_answer()
    return episode_summary(env.outcome, env.steps, env_s=0.5)


@pytest.mark.parametrize(
    "script",
    [
        "zoom_answer",
        "invalid_then_answer",
        "budget",
        "oblique_answer",
    ],
)
def test_components_sum_to_the_episode_return(city, script):  # noqa: F811
    cache, index, queries = city
    env = GroundingEnv(P, lambda sid: cache, index)
    q = queries[0]
    zoom = '<tool_call>{"name": "zoom_in", "arguments": {"view_id": "global", "bbox_2d": [0, 0, 600, 600]}}</tool_call>'
    obl = '<tool_call>{"name": "oblique_render", "arguments": {"view_id": "global", "bbox_2d": [100, 100, 900, 900], "azimuth_deg": 90}}</tool_call>'

    def answer(e):
        return f'<answer>{{"view_id": "global", "bbox_2d": {_box(e, q)}}}</answer>'

    texts = {
        "zoom_answer": [zoom, answer],
        "invalid_then_answer": ["no idea", answer],
        "budget": [zoom, "nope", "nope", "nope"],
        "oblique_answer": [obl, answer],
    }[script]
    s = _play(env, q, texts)
    assert sum(s.components.values()) == pytest.approx(env.episode_return, abs=1e-9)
    assert s.reward == env.episode_return
    # a projection of the records: the environment's own terminal terms and IoU, not a rescoring
    o = env.outcome
    assert {c: s.components[c] for c in o.terminal_terms} == o.terminal_terms
    assert s.iou_bev == o.iou_bev and s.turns == o.turns
    w = R.weights(env.params)
    iou, dist = 0.0, math.inf  # the old second computation, kept here as the check
    if o.pred_box_2d_m is not None:
        iou = float(iou_2d(o.pred_box_2d_m, q.target_box_2d))
        dist = float(center_distance_2d(o.pred_box_2d_m, q.target_box_2d))
    assert s.iou_bev == iou
    assert s.components["terminal_iou"] == w["lambda_iou"] * iou
    assert s.components["terminal_dist"] == w["lambda_dist"] * math.exp(-dist / w["tau_m"])
    assert s.components["step_cost"] == -w["lambda_step"] * o.turns / w["max_turns"]
    assert s.env_s == 0.5
    if script == "budget":
        assert not s.answered and s.iou_bev == 0.0 and s.invalid_turns == 3
        assert s.components["terminal_iou"] == s.components["terminal_dist"] == 0.0
        assert s.components["invalid"] < 0 and s.turns == 4
    else:
        assert s.answered and s.iou_bev > 0.5
        assert s.components["terminal_iou"] == pytest.approx(P.lambda_iou * s.iou_bev)
    if script == "invalid_then_answer":
        assert s.invalid_turns == 1 and s.components["invalid"] == -P.invalid_penalty
    if script == "oblique_answer":
        assert s.tool_calls["oblique_render"] == 1 and s.components["oblique"] > 0
    if script == "zoom_answer":
        assert s.tool_calls == {"landmark_query": 0, "zoom_in": 1, "oblique_render": 0}


def test_tool_calls_count_invalid_calls_of_a_tool(city):  # noqa: F811
    """calls_<tool> counts every recorded call (urbex.env.trajectory.tool_counts, valid or not);
    the evaluation's n_<tool> counts the valid ones, from the same function."""
    from urbex.env.trajectory import tool_counts

    cache, index, queries = city
    env = GroundingEnv(P, lambda sid: cache, index)
    bad = '<tool_call>{"name": "zoom_in", "arguments": {"view_id": "nowhere", "bbox_2d": [0, 0, 9, 9]}}</tool_call>'
    s = _play(env, queries[0], [bad, bad, "nope"])
    assert s.tool_calls["zoom_in"] == 2 and s.invalid_turns == 3
    assert tool_counts(env.steps)["n_zoom_in"] == 0
    assert tool_counts(env.steps, valid_only=False)["n_zoom_in"] == 2


def test_summary_of_an_unfinished_episode_is_an_error(city):  # noqa: F811
    cache, index, queries = city
    env = GroundingEnv(P, lambda sid: cache, index)
    env.reset(query=queries[0])
    with pytest.raises(ValueError, match="not ended"):
        episode_summary(env.outcome, env.steps, env_s=0.0)


class _State:
    global_step = 3


def test_callback_rows_join_env_episodes_with_trl_logs(city):  # noqa: F811
    cache, index, queries = city
    env = GroundingEnv(P, lambda sid: cache, index)
    rec = TrainingRecorder()
    for texts in (["no idea", "no", "no", "no"], ["no"]):
        rec.add(_play(env, queries[1], texts))
    cb = TrainingLogCallback(rec, "r1")
    cb.on_log(_State(), {"train_runtime": 4.0})  # the final summary entry: no row
    cb.on_log(
        _State(),
        {"reward": -0.2, "loss": 0.1, "step_time": 2.0, "frac_reward_zero_std": 0.5,
         "completions/mean_length": 80.0, "learning_rate": 1e-4},
    )  # fmt: skip
    (row,) = cb.rows
    assert row["run"] == "r1" and row["step"] == 3 and row["episodes"] == 2
    assert row["valid_answer_rate"] == 0.0 and row["invalid_rate"] == 1.0
    assert row["env_s"] == 1.0 and row["env_share"] == 0.5 and row["s_per_step"] == 2.0
    assert row["frac_zero_std"] == 0.5 and row["completion_length"] == 80.0
    assert rec.drain() == []  # the step's episodes were consumed
    frame = training_log_frame(cb.rows)
    assert dict(frame.schema) == TRAINING_LOG_SCHEMA and frame.height == 1
    assert training_log_frame([]).height == 0


def test_step_row_without_episodes_is_nan_not_an_error():
    row = step_row("r", 1, [], {"reward": 0.0})
    assert row["episodes"] == 0 and math.isnan(row["reward_mean"]) and math.isnan(row["env_share"])
    assert all(math.isnan(row[f"reward_{c}_mean"]) for c in COMPONENTS)
