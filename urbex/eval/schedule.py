"""How an evaluation run's pending episodes are played: chunks, and the execution that plays them.

:func:`play_pending` is the runner's (:func:`urbex.eval.runner.evaluate`) scheduler. It cuts the
pending queries into chunks that never span two scenes (a process keeps its scene open), builds
the run's player and chooses one of the three executions (:mod:`urbex.eval.execution`):

* episodes in flight, one thread each, for a thread-safe policy
  (:class:`urbex.eval.inflight.InFlight`);
* this process and ``eval.workers - 1`` worker processes, for a parallel-safe policy with more
  than one chunk (:class:`urbex.eval.workers.Workers`, over the caller's
  :class:`~urbex.eval.workers.WorkerPool`);
* otherwise this process alone, one chunk after another (:class:`urbex.eval.execution.Serial`;
  lockstep batches for a batching policy).

Each chunk is written as one Parquet shard pair as soon as it is played, and on an error the
finished episodes are written before the error propagates, so a rerun resumes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from urbex.agents.registry import policy_info
from urbex.eval.execution import Execution, Played, Progress, RunWork, Serial
from urbex.eval.inflight import InFlight, in_flight_workers
from urbex.eval.workers import WorkerPool, Workers

if TYPE_CHECKING:
    from urbex.env.policy import Policy
    from urbex.eval.player import EpisodePlayer
    from urbex.query import Query

__all__ = ["chunk_queries", "play_pending"]


def chunk_queries(queries: Sequence[Query], size: int) -> list[list[Query]]:
    """Chunks of at most ``size`` queries, never spanning two scenes (scene-local workers),
    scene by scene in sorted order."""
    by_scene: dict[str, list[Query]] = defaultdict(list)
    for q in queries:
        by_scene[q.scene_id].append(q)
    out: list[list[Query]] = []
    for sid in sorted(by_scene):
        qs = by_scene[sid]
        out += [qs[i : i + size] for i in range(0, len(qs), size)]
    return out


def _execution(
    player: EpisodePlayer,
    run: RunWork,
    chunks: Sequence[list[Query]],
    *,
    workers: int,
    pool: WorkerPool,
    ready_policy: bool,
) -> Execution:
    """The execution of ``chunks``: in flight for a thread-safe policy, shared with worker
    processes for a parallel-safe one built here (``workers > 1``, more than one chunk), else
    serial."""
    ev = run.eval
    n_flight = in_flight_workers(player, sum(len(c) for c in chunks))
    if n_flight > 1:
        return InFlight(n_flight, ev.chunk_size)
    if policy_info(run.policy).parallel and not ready_policy and workers > 1 and len(chunks) > 1:
        return Workers(pool, workers - 1, ev.parallel_min_s)
    return Serial()


def play_pending(
    run: RunWork,
    todo: Sequence[Query],
    *,
    workers: int | None,
    progress: bool,
    policy_obj: Policy | None,
    pool: WorkerPool | None = None,
) -> Played:
    """Play the pending queries ``todo`` of ``run`` in chunks (see the module docstring).

    ``workers`` (default ``run.eval.workers``) counts this process; ``pool`` holds the worker
    processes, kept for the caller's next run; without one, a pool of this call's own is
    started if the run needs it and stopped at its end.
    """
    n_workers = workers if workers is not None else run.eval.workers
    chunks = chunk_queries(todo, run.eval.chunk_size)
    if not chunks:
        return Played(n=0)
    procs = pool if pool is not None else WorkerPool()  # without one: this call's own
    bar = Progress(total=len(todo), desc=f"{run.policy}/{run.split}", enabled=progress)
    try:
        player = run.player(policy_obj=policy_obj)
        execution = _execution(
            player,
            run,
            chunks,
            workers=n_workers,
            pool=procs,
            ready_policy=policy_obj is not None,
        )
        return execution.play(player, run, chunks, bar)
    finally:
        bar.close()
        if procs is not pool:  # this call's own: its processes exit while the run is compacted
            procs.close()
