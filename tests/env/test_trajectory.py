"""The trajectory record: its derived seconds and counts, and its turn-order check."""

from __future__ import annotations

import pytest

from urbex.agents import OraclePolicy
from urbex.env.play import play_episode
from urbex.env.records import EpisodeOutcome, Step
from urbex.env.rewards import TERMINAL_TERMS
from urbex.env.trajectory import TOOL_NAMES, Trajectory, tool_counts
from urbex.query import Query

Q = Query(query_id="q", scene_id="s", description="the red car")


def _step(turn, tool, *, valid=True, env_s=0.25, policy_s=1.0):
    return Step(
        turn=turn, tool=tool, arguments={}, valid=valid, error=None if valid else "bad",
        reward_shaping=0.0, reward_terminal=0.0, env_s=env_s, policy_s=policy_s,
    )  # fmt: skip


def _traj(steps, **kw):
    out = EpisodeOutcome(
        stop_reason="budget", turns=len(steps), reward_shaping=0, reward_terminal=0,
        terminal_terms=dict.fromkeys(TERMINAL_TERMS, 0.0), iou_bev=0.0,
    )  # fmt: skip
    base = {"query": Q, "seed": 0, "steps": tuple(steps), "outcome": out, "views": (),
            "messages": (), "images": (), "reset_s": 0.5, "latency_s": 9.0}  # fmt: skip
    return Trajectory(**{**base, **kw})


def test_tool_counts_counts_only_the_three_tools():
    assert tool_counts([]) == {f"n_{t}": 0 for t in TOOL_NAMES}
    tools = ["landmark_query", "oblique_render", "oblique_render", "answer", None]
    got = tool_counts([_step(i, t) for i, t in enumerate(tools, 1)])
    assert got == {"n_landmark_query": 1, "n_zoom_in": 0, "n_oblique_render": 2}


def test_trajectory_sums_seconds_and_counts_only_valid_tool_calls():
    steps = [
        _step(1, "zoom_in", env_s=0.5, policy_s=2.0),
        _step(2, "zoom_in", valid=False, env_s=0.125, policy_s=1.0),
        _step(3, "landmark_query", env_s=0.25, policy_s=0.5),
    ]
    t = _traj(steps)
    assert t.env_s == 0.5 + 0.5 + 0.125 + 0.25
    assert t.policy_s == 3.5
    assert t.n_invalid == 1
    assert t.tool_counts() == {"n_landmark_query": 1, "n_zoom_in": 1, "n_oblique_render": 0}


@pytest.mark.parametrize("turns", [[2], [1, 3], [2, 1]])
def test_trajectory_steps_out_of_order_raise(turns):
    with pytest.raises(ValueError, match=r"expected turns 1.."):
        _traj([_step(n, "zoom_in") for n in turns])


def test_trajectory_with_no_steps_is_valid():
    t = _traj([])
    assert t.env_s == 0.5 and t.policy_s == 0 and t.n_invalid == 0


def test_trajectory_view_unknown_id_names_the_known_ones(env, city):
    q = city[2][-1]
    t = play_episode(env, OraclePolicy(env), q, seed=3)
    assert t.view("global") is t.views[0]
    ids = [v.view_id for v in t.views]
    assert len(ids) > 1 and t.view(ids[-1]).view_id == ids[-1]
    with pytest.raises(KeyError, match=r"'nope' not in this trajectory; views: \['global'"):
        t.view("nope")
