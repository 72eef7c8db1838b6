"""Evaluation's episode player: seeded, scored episodes of one policy, one at a time or batched."""

from __future__ import annotations

import dataclasses

import pytest

from tests.fixtures.runs import run_work
from urbex.config import Params
from urbex.env.policy import PolicyBase
from urbex.errors import AnnotationError
from urbex.eval.player import EpisodePlayer
from urbex.query import Query

TIMES = {"latency_s", "env_s", "policy_s"}


def _player(env, **kw):
    return EpisodePlayer(run_work(Params(), "oracle"), env=env, **kw)


def _untimed(rec):
    return {k: v for k, v in dataclasses.asdict(rec).items() if k not in TIMES}


def test_play_scores_the_oracle_episode_against_the_target(env, city):
    q = city[2][0]
    rec, steps = _player(env).play(q)
    assert (rec.run_id, rec.policy, rec.split, rec.query_id) == (
        "run-1",
        "oracle",
        "test_no",
        q.query_id,
    )
    assert rec.valid_answer and rec.hit1 and rec.iou_bev > 0.9 and rec.stop_reason == "answer"
    assert rec.n_candidates == city[0].instances.height  # every instance of the scene ranked
    assert [s.turn for s in steps] == list(range(1, rec.turns + 1))
    assert rec.latency_s >= rec.env_s > 0


def test_play_is_seeded_per_query(env, city):
    p = _player(env)
    a, b = p.play(city[2][1])[0], p.play(city[2][1])[0]
    assert _untimed(a) == _untimed(b)
    assert a.seed != p.play(city[2][2])[0].seed


class _Invalid(PolicyBase):
    """An environment-free policy that batches: every turn is not an action."""

    max_batch = 2

    def __init__(self):
        self.batches = []

    def act(self, messages, images):
        return "not an action"

    def act_batch(self, batch_messages, batch_images):
        self.batches.append(len(batch_messages))
        return super().act_batch(batch_messages, batch_images)


def _batch(player, queries, size):
    return [_untimed(r) for r in player.rows(list(player.play_batch(queries, size)))[0]]


def test_play_batch_gives_the_records_of_one_at_a_time(env, city):
    queries = city[2][:3]
    # the oracle reads its own environment: lockstep batches of one
    one = [_untimed(_player(env).play(q)[0]) for q in queries]
    assert _batch(_player(env), queries, 1) == one
    # a batching policy: 3 episodes in lockstep batches of 2, then 1
    pol = _Invalid()
    batched = _batch(_player(env, policy=pol), queries, 2)
    single = [_untimed(_player(env, policy=_Invalid()).play(q)[0]) for q in queries]
    assert batched == single and [r["query_id"] for r in batched] == [q.query_id for q in queries]
    assert pol.batches[0] == 2 and pol.batches[-1] == 1


def test_play_free_text_query_is_an_annotation_error(env):
    q = Query(query_id="free", scene_id="toy_block_0", description="the tallest building")
    with pytest.raises(AnnotationError, match="'free' has no ground truth"):
        _player(env).play(q)


def test_player_refuses_an_object_that_is_not_a_policy(env):
    class NotAPolicy:
        def act(self, messages, images):
            return ""

    with pytest.raises(TypeError, match=r"expected a urbex.env.policy.Policy"):
        _player(env, policy=NotAPolicy())


def test_player_takes_a_ready_policy(env, city):
    class Gives(PolicyBase):
        def act(self, messages, images):
            return "not an action"

    rec, steps = _player(env, policy=Gives()).play(city[2][0])
    assert not rec.valid_answer and rec.stop_reason == "budget"
    assert rec.n_invalid == rec.turns == len(steps) == env.params.max_turns


def test_rows_of_several_trajectories_equal_one_at_a_time(env, city):
    queries = city[2][:4]
    p = _player(env)
    recs, steps = p.rows([p.trajectory(q) for q in queries])
    one = [p.play(q) for q in queries]
    assert [_untimed(r) for r in recs] == [_untimed(r) for r, _ in one]
    assert [s.query_id for s in steps] == [s.query_id for _, st in one for s in st]
    assert p.warmup_s > 0  # the scene's untimed warm-up is counted apart
