"""How an evaluation run's pending episodes are played: chunks, pool workers, threads, batches.

:func:`play_pending` is the runner's (:func:`urbex.eval.runner.evaluate`) scheduler. Chunks
never span two scenes (a worker keeps its scene open); each chunk is written as one Parquet shard
pair (:func:`urbex.eval.episodes.write_chunk`) as soon as it is played, and on an error the
finished episodes of the chunk are written before the error propagates, so a rerun resumes.
"""

from __future__ import annotations

import multiprocessing as mp
import signal
from collections import defaultdict
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from urbex.agents.registry import policy_info
from urbex.config import Params
from urbex.env.policy import Policy
from urbex.env.records import Query
from urbex.eval.episodes import EpisodeRecord, StepRow, write_chunk
from urbex.eval.inflight import in_flight_workers, play_in_flight
from urbex.eval.player import EpisodePlayer
from urbex.eval.runspec import RunSpec

__all__ = ["play_pending"]

_WORKER: dict[str, EpisodePlayer] = {}  # per-process player cache (pool workers)


def _play_chunk(player: EpisodePlayer, queries: Sequence[Query], directory: Path) -> int:
    """Play and write one chunk; on an error, write the finished episodes, then re-raise.

    Policies that generate in batches (``policy.max_batch > 1``) play in lockstep batches.
    """
    eps: list[EpisodeRecord] = []
    steps: list[StepRow] = []
    batch = player.policy.max_batch
    try:
        if batch > 1:
            for rec, st in player.play_batch(queries, batch):
                eps.append(rec)
                steps.extend(st)
        else:
            for q in queries:
                rec, st = player.play(q)
                eps.append(rec)
                steps.extend(st)
    finally:
        write_chunk(directory, eps, steps)
    return len(eps)


def _play_in_flight(
    player: EpisodePlayer, queries: Sequence[Query], directory: Path, chunk_size: int, n: int
) -> Iterator[int]:
    """Play ``queries`` with ``n`` episodes in flight; write a shard per ``chunk_size`` finished
    episodes and yield its size; on an error, write the finished episodes, then re-raise."""
    eps: list[EpisodeRecord] = []
    steps: list[StepRow] = []
    try:
        for rec, st in play_in_flight(player, queries, n):
            eps.append(rec)
            steps.extend(st)
            if len(eps) >= chunk_size:
                write_chunk(directory, eps, steps)
                k = len(eps)
                eps, steps = [], []
                yield k
    finally:
        write_chunk(directory, eps, steps)
    if eps:
        yield len(eps)


def _pool_chunk(args: tuple[Any, ...]) -> int:
    params, policy_name, split, run_id, checkpoint, sizes, queries, directory = args
    key = f"{run_id}:{policy_name}"
    player = _WORKER.get(key)
    if player is None:
        _WORKER.clear()
        player = _WORKER[key] = EpisodePlayer(
            params, policy_name, split, run_id, checkpoint, class_sizes=sizes
        )
    return _play_chunk(player, queries, directory)


def _chunks(queries: Sequence[Query], size: int) -> list[list[Query]]:
    """Chunks of at most ``size`` queries, never spanning two scenes (scene-local workers)."""
    by_scene: dict[str, list[Query]] = defaultdict(list)
    for q in queries:
        by_scene[q.scene_id].append(q)
    out: list[list[Query]] = []
    for sid in sorted(by_scene):
        qs = by_scene[sid]
        out += [qs[i : i + size] for i in range(0, len(qs), size)]
    return out


def _worker_ignores_sigint() -> None:
    """Pool workers ignore Ctrl-C (the terminal sends it to the whole process group): the parent
    cancels the chunks not started, lets the running ones finish their shards (a rerun skips
    them) and prints the one line. A worker killed mid-chunk would instead print its own
    traceback, and the pool's manager thread another (CPython 3.11 sets an exception on the
    cancelled futures: InvalidStateError)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def play_pending(
    params: Params,
    spec: RunSpec,
    rid: str,
    ckpt: Path | None,
    sizes: dict[str, tuple[float, float]] | None,
    todo: Sequence[Query],
    *,
    workers: int | None,
    progress: bool,
    policy_obj: Policy | None,
) -> int:
    """Play the pending queries ``todo`` of run ``rid`` in chunks; return the episodes played.

    In a process pool (a parallel-safe policy, ``workers > 1``, enough episodes: at least
    ``eval.parallel_min_episodes`` in more than one chunk), else in-process: episodes in flight
    for a thread-safe policy, lockstep batches for a batching one, one at a time otherwise.
    """
    policy, split = spec.policy, spec.split
    d = params.layout.run(rid)
    n_workers = workers if workers is not None else params.eval.workers
    chunks = _chunks(todo, params.eval.chunk_size)
    played = 0
    bar = tqdm(total=len(todo), desc=f"{policy}/{split}", unit="ep", disable=not progress)
    try:
        pool_ok = len(todo) >= params.eval.parallel_min_episodes and len(chunks) > 1
        if policy_info(policy).parallel and policy_obj is None and n_workers > 1 and pool_ok:
            ctx = mp.get_context("spawn")
            with ProcessPoolExecutor(
                max_workers=min(n_workers, len(chunks)),
                mp_context=ctx,
                initializer=_worker_ignores_sigint,
            ) as pool:
                futs = [
                    pool.submit(_pool_chunk, (params, policy, split, rid, ckpt, sizes, c, d))
                    for c in chunks
                ]
                try:
                    for fut in as_completed(futs):
                        n = fut.result()
                        played += n
                        bar.update(n)
                except BaseException:
                    pool.shutdown(wait=False, cancel_futures=True)
                    raise
        elif chunks:
            player = EpisodePlayer(
                params, policy, split, rid, ckpt, policy=policy_obj, class_sizes=sizes
            )
            n_flight = in_flight_workers(player, len(todo))
            if n_flight > 1:  # in chunk order: one scene after another
                flat = [q for c in chunks for q in c]
                for n in _play_in_flight(player, flat, d, params.eval.chunk_size, n_flight):
                    played += n
                    bar.update(n)
            else:
                for c in chunks:
                    n = _play_chunk(player, c, d)
                    played += n
                    bar.update(n)
    finally:
        bar.close()
    return played
