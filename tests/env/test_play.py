"""The one episode loop: play_episode / play_batch → Trajectory, and its Parquet projections."""

from __future__ import annotations

import json
import time
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest

from tests.fixtures.city import build_eval_project, play_scored
from tests.fixtures.stall_server import silent_server
from urbex.agents import OraclePolicy
from urbex.agents.openai_api import OpenAIPolicy
from urbex.config import EnvParams, Params
from urbex.env import rewards as R
from urbex.env.episode import GroundingEnv
from urbex.env.play import play_batch, play_episode
from urbex.env.policy import Policy, PolicyBase
from urbex.errors import PolicyError, PolicyTimeoutError
from urbex.eval.episodes import EpisodeRecord, StepRow, episode_record, step_rows
from urbex.eval.metrics import trajectory_metrics
from urbex.eval.runspec import RunSpec

ZOOM = '<tool_call>{"name": "zoom_in", "arguments": {"view_id": "global", "bbox_2d": [0, 0, 500, 500]}}</tool_call>'


class Scripted(PolicyBase):
    """Plays queued texts; records the seeds and what it was shown."""

    def __init__(self, *texts: str, lists_tools: bool = False) -> None:
        self.texts = list(texts)
        self.seeds: list[int] = []
        self.deadlines: list[float | None] = []
        self.shown: list[int] = []
        self.template_lists_tools = lists_tools

    def begin_episode(self, *, seed: int, deadline: float | None = None) -> None:
        self.seeds.append(seed)
        self.deadlines.append(deadline)

    def act(self, messages, images):
        assert sum(m["role"] in ("user", "tool") for m in messages) == len(self.shown) + 1
        self.shown.append(len(images))
        return self.texts.pop(0)


class Batched(PolicyBase):
    """The oracle of each env, answered one batch at a time (counts the batches)."""

    max_batch = 4

    def __init__(self, envs):
        self.oracles = {id(e): OraclePolicy(e) for e in envs}
        self.envs = envs
        self.batches: list[int] = []

    def act(self, messages, images):
        raise AssertionError("a batching policy is driven through act_batch")

    def act_batch(self, batch_messages, batch_images):
        self.batches.append(len(batch_messages))
        live = [e for e in self.envs if not e.done]
        return [
            self.oracles[id(e)].act(m, i) for e, m, i in zip(live, batch_messages, batch_images)
        ]


def test_policies_satisfy_the_protocol(env):
    assert isinstance(OraclePolicy(env), Policy) and isinstance(Scripted(), Policy)
    assert not isinstance(object(), Policy)


def test_trajectory_holds_steps_outcome_views_and_the_conversation(env, city):
    q = city[2][-1]
    traj, m = play_scored(env, OraclePolicy(env), q, seed=7)
    assert traj.seed == 7 and traj.query is q
    assert [s.tool for s in traj.steps] == ["landmark_query", "zoom_in", "oblique_render", "answer"]
    o = traj.outcome
    assert o.answered and o.stop_reason == "answer" and o.turns == 4
    assert o.answer_view_id == "zoom_1" and traj.steps[-1].arguments["view_id"] == "zoom_1"
    # the answer box (view units) maps to the predicted world box through the answer view
    np.testing.assert_allclose(traj.view("zoom_1").to_world_box(o.answer_box_view), o.pred_box_2d_m)
    assert [v.kind for v in traj.views] == ["global", "zoom", "oblique"]
    assert [v.view_id for v in traj.views[1:]] == [s.view_id for s in traj.steps[1:3]]
    assert m["iou_bev"] > 0.9 and m["hit1"]
    # conversation: system, query, then assistant / tool-response pairs, ending on the answer
    roles = [msg["role"] for msg in traj.messages]
    assert roles == ["system", "user"] + ["assistant", "tool"] * 3 + ["assistant"]
    assert [m["name"] for m in traj.messages if m["role"] == "tool"] == [
        "landmark_query",
        "zoom_in",
        "oblique_render",
    ]
    assert len(traj.images) == 3  # global, zoom, oblique (landmark_query makes no image)
    n_placeholders = sum(
        1
        for msg in traj.messages
        if isinstance(msg["content"], list)
        for b in msg["content"]
        if b.get("type") == "image"
    )
    assert n_placeholders == len(traj.images)
    assert traj.steps[-1].model_text == traj.messages[-1]["content"]
    assert traj.env_s >= traj.reset_s > 0 and traj.latency_s >= traj.env_s + traj.policy_s - 1e-6
    assert sum(s.reward for s in traj.steps) == pytest.approx(o.reward)


def test_begin_episode_gets_the_seed_and_the_prompt_follows_the_template(env, city):
    q = city[2][0]
    answer = '<answer>{"view_id": "global", "bbox_2d": [0, 0, 10, 10]}</answer>'
    plain, listed = Scripted(answer), Scripted(answer, lists_tools=True)
    t1 = play_episode(env, plain, q, seed=11)
    t2 = play_episode(env, listed, q, seed=12)
    assert plain.seeds == [11] and listed.seeds == [12]
    assert "landmark_query" in t1.messages[0]["content"]  # schemas in the system prompt
    assert len(t2.messages[0]["content"]) < len(t1.messages[0]["content"])  # template lists them


def test_timeout_ends_unanswered_scored_by_the_env(city):
    cache, index, queries = city
    env = GroundingEnv(EnvParams(global_view_size=(128, 128)), lambda s: cache, index)
    traj = play_episode(env, Scripted(ZOOM, ZOOM, ZOOM), queries[0], seed=0, timeout_s=0.0)
    o = traj.outcome
    assert o.stop_reason == "timeout" and not o.answered and o.turns == 1 and len(traj.steps) == 1
    w = R.weights(env.params)
    expected = float(R.terminal_reward(0.0, float("inf"), 1, **w))
    assert o.reward_terminal == pytest.approx(expected)
    assert o.reward == pytest.approx(traj.steps[0].reward_shaping + expected)
    assert env.done


def test_invalid_turns_have_no_tool_and_keep_the_raw_text(env, city):
    q = city[2][0]
    answer = '<answer>{"view_id": "zoom_1", "bbox_2d": [0, 0, 10, 10]}</answer>'
    traj = play_episode(env, Scripted("no idea", ZOOM, "still nothing", answer), q, seed=0)
    bad = traj.steps[0]
    assert bad.tool is None and not bad.valid and bad.arguments == {"raw": "no idea"}
    assert traj.steps[1].tool == "zoom_in" and traj.steps[1].valid
    assert traj.n_invalid == 2 and traj.tool_counts()["n_zoom_in"] == 1


def test_batch_plays_each_episode_as_one_at_a_time(city):
    cache, index, queries = city
    mk = lambda: GroundingEnv(EnvParams(), lambda s: cache, index)  # noqa: E731
    envs = [mk() for _ in range(3)]
    pol = Batched(envs)
    qs = queries[:3]
    batch = play_batch(envs, pol, qs, seeds=[1, 2, 3])
    single = [
        play_episode(mk_env, OraclePolicy(mk_env), q, seed=s)
        for mk_env, q, s in zip([mk()] * 3, qs, [1, 2, 3])
    ]
    assert pol.batches[0] == 3 and max(pol.batches) == 3
    for b, s in zip(batch, single):
        assert [x.arguments for x in b.steps] == [x.arguments for x in s.steps]
        np.testing.assert_array_equal(b.outcome.pred_box_2d_m, s.outcome.pred_box_2d_m)
        assert b.outcome.reward == pytest.approx(s.outcome.reward)
    with pytest.raises(ValueError, match="as many seeds"):
        play_batch(envs, pol, qs, seeds=[1])


def test_parquet_rows_are_projections_of_the_trajectory(env, city):
    q = city[2][-1]
    traj = play_episode(env, OraclePolicy(env), q, seed=3, point_metrics=True)
    m = trajectory_metrics(traj, q.target_box_2d[None], 0)
    rec = episode_record(traj, m, run_id="r", policy="oracle", split="test_no")
    assert isinstance(rec, EpisodeRecord)
    assert rec.seed == 3 and rec.turns == traj.outcome.turns and rec.stop_reason == "answer"
    assert rec.iou_bev == m["iou_bev"] and rec.point_f1 == m["point_f1"] > 0.5
    assert [rec.pred_x_min, rec.pred_y_min, rec.pred_z_min] == traj.outcome.pred_box_3d_m[
        :3
    ].tolist()
    assert rec.env_s == pytest.approx(traj.env_s) and rec.n_zoom_in == 1
    rows = step_rows(traj, run_id="r")
    assert [r.turn for r in rows] == [1, 2, 3, 4] and all(isinstance(r, StepRow) for r in rows)
    assert json.loads(rows[1].arguments) == traj.steps[1].arguments
    zoom = traj.view("zoom_1").world_box
    assert (rows[1].region_x_min_m, rows[1].region_y_max_m) == (zoom[0], zoom[3])
    assert rows[0].region_x_min_m is None
    assert rows[2].latency_s == pytest.approx(traj.steps[2].policy_s + traj.steps[2].env_s)
    # every StepRow field is filled from the record (none silently defaulted)
    assert {f.name for f in fields(StepRow)} <= set(rows[1].to_row())


# ---------------------------------------------------------------------------------------------
# the episode timeout during a request: a policy waiting on a server that never answers
# (tests/fixtures/stall_server.py). Time assertions are generous upper bounds (shared machines),
# far below the unbounded wait (openai.timeout_s 30 s × 5 attempts here).
# ---------------------------------------------------------------------------------------------


def _silent_policy(url: str) -> OpenAIPolicy:
    return OpenAIPolicy(base_url=url, model="m", api_key_env=None, timeout_s=30.0, max_retries=4)


def test_the_loop_gives_the_policy_the_episode_deadline(env, city):
    q = city[2][0]
    answer = '<answer>{"view_id": "global", "bbox_2d": [0, 0, 10, 10]}</answer>'
    timed, untimed = Scripted(answer), Scripted(answer)
    t = time.monotonic()
    play_episode(env, timed, q, seed=0, timeout_s=5.0)
    play_episode(env, untimed, q, seed=0)  # no budget: no deadline
    assert timed.deadlines[0] == pytest.approx(t + 5.0, abs=0.5)
    assert untimed.deadlines == [None]


def test_play_episode_silent_server_ends_at_the_episode_timeout(city):
    cache, index, queries = city
    env = GroundingEnv(EnvParams(global_view_size=(128, 128)), lambda s: cache, index)
    with silent_server() as url:
        pol = _silent_policy(url)
        t = time.monotonic()
        traj = play_episode(env, pol, queries[0], seed=0, timeout_s=1.0)
        elapsed = time.monotonic() - t
        pol.close()
    o = traj.outcome
    assert o.stop_reason == "timeout" and not o.answered and o.turns == 0 and traj.steps == ()
    assert env.done and 0.9 < elapsed < 5.0
    assert traj.latency_s >= 1.0


class _Raises(PolicyBase):
    """Raises ``error`` on every turn (``act`` and ``act_batch``)."""

    max_batch = 4

    def __init__(self, error: Exception) -> None:
        self.error = error

    def act(self, messages, images):
        raise self.error

    def act_batch(self, batch_messages, batch_images):
        raise self.error


def test_play_batch_round_past_the_deadline_times_out_every_episode(city):
    cache, index, queries = city
    envs = [GroundingEnv(EnvParams(), lambda s: cache, index) for _ in range(2)]
    pol = _Raises(PolicyTimeoutError("no reply before the episode's deadline"))
    trajs = play_batch(envs, pol, queries[:2], seeds=[1, 2], timeout_s=1.0)
    assert [t.outcome.stop_reason for t in trajs] == ["timeout", "timeout"]
    assert all(not t.outcome.answered and t.steps == () for t in trajs) and all(
        e.done for e in envs
    )


def test_play_other_policy_errors_propagate(env, city):
    err = PolicyError("HTTP 401: bad key")
    with pytest.raises(PolicyError, match="HTTP 401"):
        play_episode(env, _Raises(err), city[2][0], seed=0, timeout_s=1.0)
    envs = [GroundingEnv(EnvParams(), lambda s: city[0], city[1]) for _ in range(2)]
    with pytest.raises(PolicyError, match="HTTP 401"):
        play_batch(envs, _Raises(err), city[2][:2], seeds=[1, 2], timeout_s=1.0)


@pytest.fixture(scope="module")
def assets(tmp_path_factory) -> Path:
    """The two-scene synthetic project of tests/eval/test_runner.py."""
    return build_eval_project(tmp_path_factory.mktemp("project"))


def test_evaluate_silent_server_records_every_episode_as_timed_out(assets):
    from urbex.eval.episodes import read_episodes, read_steps
    from urbex.eval.runner import evaluate

    p = Params(paths={"assets": assets}, eval={"workers": 1, "episode_timeout_s": 1.0})
    with silent_server() as url:
        pol = _silent_policy(url)
        t = time.monotonic()
        r = evaluate(p, RunSpec.from_params(p, policy="openai", split="test_no", limit=2), run_id="silent", progress=False, policy_obj=pol)  # fmt: skip
        elapsed = time.monotonic() - t
        pol.close()
    ep = read_episodes(r.run_dir)
    assert r.n_played == 2 and ep.height == 2
    assert ep["timed_out"].all() and (ep["stop_reason"] == "timeout").all()
    assert not ep["valid_answer"].any() and (ep["turns"] == 0).all()
    assert read_steps(r.run_dir).height == 0 and r.metrics["hit1"][0] == 0.0
    assert elapsed < 15.0  # two episodes of 1 s each, plus the untimed scene warm-ups
