"""The runner's scheduler: worker processes decided from the first chunk, kept in the caller's
pool for the next run, chunks shared from both ends; the episodes do not depend on it
(test_runner.py compares them)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.fixtures.city import build_eval_project
from urbex.config import Params
from urbex.eval.episodes import read_episodes
from urbex.eval.runner import evaluate
from urbex.eval.runspec import RunSpec
from urbex.eval.workers import WorkerPool, _Chunks, _spawn_ignoring_sigint


@pytest.fixture(scope="module")
def assets(tmp_path_factory) -> Path:
    return build_eval_project(tmp_path_factory.mktemp("sched"))


def _run(assets: Path, run_id: str, pool: WorkerPool | None = None, **eval_kw):
    p = Params(paths={"assets": assets}, eval={"workers": 2, "chunk_size": 2, **eval_kw})
    spec = RunSpec.from_params(p, policy="landmark_prior", split="train")
    return evaluate(p, spec, run_id=run_id, progress=False, pool=pool)


@pytest.fixture
def pool():
    """The worker processes of one test (none running at its start), stopped at its end."""
    with WorkerPool() as kept:
        yield kept


def test_a_short_run_starts_no_worker_process_and_says_why(assets, pool):
    r = _run(assets, "short", pool)  # seconds of episodes left < eval.parallel_min_s (2 s)
    assert "< eval.parallel_min_s 2 s: no worker processes" in r.schedule
    assert "landmark_prior/train:" in r.schedule and pool.processes == 0


def test_workers_start_once_and_serve_the_next_run(assets, pool):
    try:
        first = _run(assets, "cold", pool, parallel_min_s=0)
        assert "≥ eval.parallel_min_s 0 s: starting 1 worker process(es)" in first.schedule
        assert pool.processes == 1
        kept = pool._executor
        again = _run(assets, "warm", pool)  # the threshold is not asked again: they are running
        assert (
            again.schedule == "landmark_prior/train: this process and 1 running worker process(es)"
        )
        assert pool._executor is kept
        cols = ["query_id", "hit1", "iou_bev", "turns"]
        assert (
            read_episodes(again.run_dir)
            .select(cols)
            .equals(read_episodes(first.run_dir).select(cols))
        )
    finally:
        pool.close(wait=True)
    assert pool.processes == 0


def test_a_call_without_a_pool_stops_the_processes_it_started(assets, monkeypatch):
    import urbex.eval.schedule as S

    pools: list[WorkerPool] = []

    class Recorded(WorkerPool):
        def __init__(self) -> None:
            super().__init__()
            pools.append(self)

    monkeypatch.setattr(S, "WorkerPool", Recorded)
    r = _run(assets, "own", parallel_min_s=0)
    assert "starting 1 worker process(es)" in r.schedule
    assert len(pools) == 1 and pools[0].processes == 0


def test_a_run_shared_with_workers_is_merged_without_reading_its_shards_back(
    assets, pool, monkeypatch
):
    """The workers send the tables of the shards they wrote back with their episodes, so the
    run is compacted from memory (reading a shard back here would fail the run)."""
    import time

    import urbex.eval.episodes as E
    import urbex.eval.workers as W

    try:
        first = _run(assets, "merge-cold", pool, parallel_min_s=0)

        def no_read(*a, **k):
            raise AssertionError("a shard was read back")

        def slow_here(*a, **k):  # this process lags: the worker takes chunks from the back
            time.sleep(0.3)
            return play(*a, **k)

        play = W.play_chunk
        monkeypatch.setattr(E, "_read", no_read)
        monkeypatch.setattr(W, "play_chunk", slow_here)
        again = _run(assets, "merge-warm", pool)
        assert "1 running worker process" in again.schedule
        monkeypatch.undo()
        cols = ["query_id", "hit1", "iou_bev", "turns"]
        assert (
            read_episodes(again.run_dir).select(cols)
            .equals(read_episodes(first.run_dir).select(cols))
        )  # fmt: skip
    finally:
        pool.close(wait=True)


def test_a_kept_worker_that_died_is_replaced_by_this_process(assets, pool):
    import os
    import signal

    try:
        first = _run(assets, "alive", pool, parallel_min_s=0)
        for proc in list(pool._executor._processes.values()):  # killed while idle between runs
            os.kill(proc.pid, signal.SIGKILL)
            proc.join(10)
        again = _run(assets, "dead", pool)
        assert again.n_played == first.n_played and pool.processes == 0  # played here; discarded
    finally:
        pool.close(wait=True)


def test_one_worker_plays_everything_here_and_says_nothing(assets):
    r = _run(assets, "one", workers=1)
    assert r.schedule is None and r.n_played == r.n_queries


def test_chunks_are_taken_from_the_front_here_and_from_the_back_by_the_workers():
    c = _Chunks([["a"], ["b"], ["c"]])
    assert c.episodes() == 3 and c.take(front=False, peek=True) == ["c"] and c.episodes() == 3
    assert c.take(front=True) == ["a"] and c.take(front=False) == ["c"]
    assert c.take(front=True) == ["b"] and c.take(front=True) is None
    c = _Chunks([["a"]])
    c.clear()
    assert c.take(front=False) is None and c.episodes() == 0


class _SlowSpawner:
    """A pool stand-in whose every submit is a spawn during which Ctrl-C arrives."""

    def __init__(self) -> None:
        self.spawned = 0

    def submit(self, _fn) -> None:
        os.kill(os.getpid(), signal.SIGINT)  # sent to the process, as a terminal sends it
        time.sleep(0.05)  # the spawn goes on: Python would raise here, mid-write
        self.spawned += 1


def test_ctrl_c_during_the_spawn_waits_until_every_process_has_its_start_up_data():
    """The real race (CI): Ctrl-C landed while a worker's start-up data was being written, the
    child died reading it (EOFError traceback). Another thread exists, as in a run (the shard
    writer), so the kernel can deliver the signal while this thread blocks it."""
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    pool = _SlowSpawner()
    try:
        with pytest.raises(KeyboardInterrupt):
            _spawn_ignoring_sigint(pool, 3)  # type: ignore[arg-type]
    finally:
        stop.set()
    assert pool.spawned == 3
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


_KEEP_A_POOL = """
import multiprocessing.resource_tracker as rt, time
from urbex.eval.workers import WorkerPool
pool = WorkerPool().start(2)
for f in [pool.submit(time.sleep, 0.2) for _ in range(4)]:
    f.result()
print(*pool._processes, rt._resource_tracker._pid, flush=True)
time.sleep(600)
"""


def _running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (an orphan's reaper may be slow)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="reads /proc")
def test_workers_and_resource_tracker_exit_when_the_parent_is_killed():
    """``kill -9`` of evaluate's process: its worker processes and the resource tracker used to
    stay, re-parented and blocked on a pipe, holding the scenes' memory maps."""
    parent = subprocess.Popen(
        [sys.executable, "-c", _KEEP_A_POOL], stdout=subprocess.PIPE, text=True
    )
    try:
        pids = [int(p) for p in parent.stdout.readline().split()]
        assert len(pids) == 3 and all(_running(p) for p in pids)
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 15
    while any(_running(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = [p for p in pids if _running(p)]
    for p in left:  # do not leave them to the next test
        os.kill(p, signal.SIGKILL)
    assert not left, f"still running after their parent was killed: {left} of {pids}"
