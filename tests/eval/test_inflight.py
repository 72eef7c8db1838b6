"""Episodes in flight (``openai.concurrency``) against the local stub endpoint.

A concurrent run plays exactly the episodes of a one-at-a-time run; a 429 answer backs off in
its own episode while the others go on; an error writes the finished episodes first and the
rerun completes the run.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import polars as pl
import pytest

from tests.fixtures.city import build_eval_project
from tests.fixtures.openai_server import StubServer
from tests.fixtures.runs import run_work
from urbex.agents.openai_api import OpenAIPolicy
from urbex.annotations.splits import load_queries
from urbex.config import Params
from urbex.errors import PolicyError
from urbex.eval.episodes import finished_query_ids, read_episodes, read_steps
from urbex.eval.inflight import in_flight_workers, play_in_flight
from urbex.eval.player import EpisodePlayer
from urbex.eval.runner import evaluate
from urbex.eval.runspec import RunSpec

_VOLATILE = ["latency_s", "env_s", "policy_s"]
LATENCY_S = 0.05


@pytest.fixture(scope="module")
def assets(tmp_path_factory) -> Path:
    return build_eval_project(tmp_path_factory.mktemp("inflight"))


def _params(assets: Path, url: str, concurrency: int, **openai) -> Params:
    return Params(
        paths={"assets": assets},
        eval={"workers": 1, "chunk_size": 3},
        openai={
            "base_url": url,
            "api_key_env": None,
            "concurrency": concurrency,
            "backoff_s": 0.01,
            **openai,
        },
    )


def _stable(df: pl.DataFrame) -> list[tuple]:
    return df.drop([c for c in _VOLATILE if c in df.columns]).sort(df.columns[:2]).rows()


def _run(assets: Path, url: str, concurrency: int, run_id: str, **openai):
    return evaluate(
        _params(assets, url, concurrency, **openai),
        RunSpec.from_params(
            _params(assets, url, concurrency, **openai), policy="openai", split="test_no"
        ),
        run_id=run_id,
        progress=False,
    )


@pytest.fixture(scope="module")
def reference(assets):
    """The one-at-a-time run (run id ``ref``): its episodes and steps, and the server's peak."""
    with StubServer(latency_s=LATENCY_S, turns=2, max_lifetime_s=120) as s:
        t0 = time.perf_counter()
        r = _run(assets, s.base_url, 1, "ref")
        wall = time.perf_counter() - t0
        peak = s.peak_in_flight
    return {
        "episodes": _stable(read_episodes(r.run_dir).drop("run_id")),
        "steps": _stable(read_steps(r.run_dir).drop("run_id")),
        "n": r.n_played,
        "peak": peak,
        "wall": wall,
    }


def test_in_flight_run_plays_the_episodes_of_a_sequential_run(assets, reference):
    assert reference["peak"] == 1 and reference["n"] >= 8
    with StubServer(latency_s=LATENCY_S, turns=2, max_lifetime_s=120) as s:
        t0 = time.perf_counter()
        r = _run(assets, s.base_url, 4, "c4")
        wall = time.perf_counter() - t0
        assert s.peak_in_flight >= 2  # episodes really were in flight together
        assert len({q.seed for q in s.requests}) == r.n_played  # one seed per episode
    assert r.n_played == reference["n"]
    assert _stable(read_episodes(r.run_dir).drop("run_id")) == reference["episodes"]
    assert _stable(read_steps(r.run_dir).drop("run_id")) == reference["steps"]
    assert json.loads((r.run_dir / "run.json").read_text())["status"] == "complete"
    # 2 turns x LATENCY_S per episode, 4 at a time: faster than one at a time
    assert wall < reference["wall"]


def test_rate_limited_episode_backs_off_without_stalling_the_others(assets, reference):
    qs = load_queries(_params(assets, "http://x", 4).layout, "test_no")
    from urbex.env.play import episode_seed

    slow = episode_seed(0, qs[0].query_id)  # the first episode started
    wait_s = 1.0

    def throttle(seed: int, turn: int, attempt: int) -> float | None:
        return wait_s if seed == slow and turn == 0 and attempt == 0 else None

    with StubServer(latency_s=LATENCY_S, turns=2, throttle=throttle, max_lifetime_s=120) as s:
        r = _run(assets, s.base_url, 4, "c4-429")
        log = list(s.requests)
    assert _stable(read_episodes(r.run_dir).drop("run_id")) == reference["episodes"]
    limited = [q for q in log if q.status == 429]
    assert len(limited) == 1 and limited[0].seed == slow
    retry = [q for q in log if q.seed == slow and q.turn == 0 and q.status == 200]
    assert len(retry) == 1 and retry[0].attempt == 1
    assert retry[0].t_start >= limited[0].t_end + wait_s - 0.05  # it honoured Retry-After
    # while it slept, the other episodes kept being served
    during = [
        q for q in log if q.seed != slow and limited[0].t_end < q.t_end < limited[0].t_end + wait_s
    ]
    assert len(during) >= 1  # some were served while it slept (a starved machine serves few)


def test_in_flight_error_writes_the_finished_episodes_and_a_rerun_completes(assets, reference):
    qs = load_queries(_params(assets, "http://x", 4).layout, "test_no")
    from urbex.env.play import episode_seed

    bad = episode_seed(0, qs[5].query_id)
    failing = threading.Event()
    failing.set()

    def throttle(seed: int, turn: int, attempt: int) -> float | None:
        return 0.0 if failing.is_set() and seed == bad else None

    with StubServer(latency_s=LATENCY_S, turns=2, throttle=throttle, max_lifetime_s=120) as s:
        with pytest.raises(PolicyError, match="HTTP 429"):
            _run(assets, s.base_url, 4, "c4-fail", max_retries=0)
        d = assets / "eval" / "runs" / "c4-fail"
        done = finished_query_ids(d)
        assert qs[5].query_id not in done
        assert len(done) >= 5  # those before it, and those in flight beside it
        assert json.loads((d / "run.json").read_text())["status"] == "failed"
        failing.clear()
        r = _run(assets, s.base_url, 4, "c4-fail", max_retries=0)
    assert r.n_skipped == len(done) and r.n_played == reference["n"] - len(done)
    assert _stable(read_episodes(r.run_dir).drop("run_id")) == reference["episodes"]


def test_policy_state_is_per_thread():
    pol = OpenAIPolicy(base_url="http://127.0.0.1:1/v1", model="m", api_key_env=None, concurrency=2)
    assert pol.max_concurrency == 2
    pol.begin_episode(seed=1, deadline=5.0)
    seen = {}

    def other() -> None:
        seen["before"] = (pol.seed, pol.deadline)
        pol.begin_episode(seed=2)
        seen["after"] = (pol.seed, pol.deadline)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen == {"before": (None, None), "after": (2, None)}
    assert (pol.seed, pol.deadline) == (1, 5.0)
    with pytest.raises(ValueError, match="concurrency"):
        OpenAIPolicy(base_url="http://x/v1", model="m", concurrency=0)


def test_in_flight_refuses_more_threads_than_the_policy_allows(assets):
    from urbex.agents.oracle import OraclePolicy  # not thread-safe: max_concurrency 1

    params = Params(paths={"assets": assets})
    player = EpisodePlayer(run_work(params, "oracle", run_id="x"))
    assert isinstance(player.policy, OraclePolicy)
    assert in_flight_workers(player, 10) == 1
    with pytest.raises(ValueError, match="max_concurrency"):
        next(play_in_flight(player, load_queries(params.layout, "test_no"), 2))
