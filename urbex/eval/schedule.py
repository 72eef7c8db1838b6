"""How an evaluation run's pending episodes are played: chunks, worker processes, threads, batches.

:func:`play_pending` is the runner's (:func:`urbex.eval.runner.evaluate`) scheduler. Chunks
never span two scenes (a process keeps its scene open); each chunk is written as one Parquet
shard pair (:class:`urbex.eval.episodes.ShardWriter`, on a background thread) as soon as it is
played, and on an error the finished episodes of the chunk are written before the error
propagates, so a rerun resumes.

Worker processes (parallel-safe policies, ``eval.workers > 1``): this process plays chunks from
the front of the list while ``eval.workers - 1`` spawned processes take chunks from the back
(so each keeps to its own scenes), one at a time, as each finishes its last. The processes are
started once and kept for the next :func:`~urbex.eval.runner.evaluate` of this process
(:func:`shutdown_pool` stops them). Starting them costs about a second and a half here
(importing urbex, opening the scenes): a run decides after its first chunk, from the
seconds per episode it measured, whether the episodes left would take at least
``eval.parallel_min_s`` in this process; if not, it plays them alone. Worker processes that
are already running are always used. Either way the episodes are the same (per-episode seeds).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import signal
import sys
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from urbex.agents.registry import policy_info
from urbex.config import Params
from urbex.env.policy import Policy
from urbex.env.trajectory import Trajectory
from urbex.eval.episodes import EpisodeRecord, StepRow, Written, write_chunk
from urbex.eval.inflight import in_flight_workers, play_in_flight
from urbex.eval.player import EpisodePlayer
from urbex.eval.runspec import RunSpec
from urbex.eval.shards import ShardWriter
from urbex.query import Query

__all__ = ["Played", "play_pending", "shutdown_pool"]

_WORKER: dict[str, EpisodePlayer] = {}  # per-process player cache (pool workers)
_POOL: dict[int, ProcessPoolExecutor] = {}  # the kept worker processes, by their number


@dataclass(frozen=True, slots=True, kw_only=True)
class Played:
    """What :func:`play_pending` did.

    Attributes
    ----------
    n : int
        Episodes played.
    schedule : str or None
        How the episodes were shared out, when worker processes were allowed (the decision and
        the figures it was made on).
    written : dict or None
        The tables of the shards this process and its worker processes published
        (:class:`ShardWriter`'s ``written``; the workers send theirs back with their episodes),
        for :func:`urbex.eval.episodes.compact_run`.
    """

    n: int
    schedule: str | None = None
    written: Written | None = None


def _play_chunk(player: EpisodePlayer, queries: Sequence[Query], writer: ShardWriter) -> int:
    """Play one chunk and hand it to ``writer`` (made with ``rows=player.rows``: the writer's
    thread scores the episodes); on an error, hand over the finished episodes, then re-raise.
    Policies that generate in batches (``policy.max_batch > 1``) play in lockstep batches."""
    trajs: list[Trajectory] = []
    batch = player.policy.max_batch
    try:
        if batch > 1:
            for traj in player.play_batch(queries, batch):
                trajs.append(traj)
        else:
            for q in queries:
                trajs.append(player.trajectory(q))
    finally:
        writer.put_played(trajs)
    return len(trajs)


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


def _worker_player(args: tuple[Any, ...]) -> EpisodePlayer:
    """This worker process's player of the task's run (built on its run's first task)."""
    params, policy_name, split, run_id, checkpoint, sizes, _, _ = args
    key = f"{run_id}:{policy_name}"
    player = _WORKER.get(key)
    if player is None:
        _WORKER.clear()
        player = _WORKER[key] = EpisodePlayer(
            params, policy_name, split, run_id, checkpoint, class_sizes=sizes
        )
    return player


def _pool_prepare(args: tuple[Any, ...]) -> None:
    """A worker process's first task of a run: build its player, open the chunk's scene."""
    _worker_player(args).warm(args[6][0])


def _pool_chunk(args: tuple[Any, ...]) -> tuple[int, Written]:
    """A worker process's task: one chunk, played and published; the episodes played and the
    shard tables written (sent back, so that the parent merges the run without reading them)."""
    player = _worker_player(args)
    with ShardWriter(args[7], rows=player.rows) as writer:
        n = _play_chunk(player, args[6], writer)
    return n, writer.written


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


#: How often a worker process checks that its parent is alive, seconds.
_PARENT_CHECK_S = 0.5


def _exit_with_parent(parent: int) -> None:
    """End this process once ``parent`` is gone (this process was re-parented).

    A parent killed with SIGKILL closes nothing in order: its workers would wait forever on the
    task pipe (each holds a write end of it too), holding their scenes' memory maps, and the
    resource tracker would wait on them. ``PR_SET_PDEATHSIG`` is no answer here: it fires when
    the *thread* that spawned the process ends, and the kept pool outlives that thread.
    """
    while os.getppid() == parent:
        time.sleep(_PARENT_CHECK_S)
    os._exit(1)


def _worker_init(parent: int) -> None:
    """Pool workers ignore Ctrl-C (the terminal sends it to the whole process group): the parent
    cancels the chunks not started, lets the running ones finish their shards (a rerun skips
    them) and prints the one line. A worker killed mid-chunk would instead print its own
    traceback, and the pool's manager thread another (CPython 3.11 sets an exception on the
    cancelled futures: InvalidStateError). They exit when their parent dies
    (:func:`_exit_with_parent`; ``parent`` is the pid that started them, given, not read here:
    a parent that died before this ran has already been replaced)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(
        target=_exit_with_parent, args=(parent,), name="urbex-parent-check", daemon=True
    ).start()


def _pool(n: int) -> ProcessPoolExecutor:
    """``n`` worker processes (spawned), kept for the next run (those already running, if any)."""
    pool = _POOL.get(n)
    if pool is None:
        shutdown_pool()
        pool = _POOL[n] = ProcessPoolExecutor(
            max_workers=n,
            mp_context=mp.get_context("spawn"),
            initializer=_worker_init,
            initargs=(os.getpid(),),
        )
        try:
            _spawn_ignoring_sigint(pool, n)
        except BaseException:  # Ctrl-C held off until every process had its start-up data
            shutdown_pool(wait=True)  # they start, see the pool closed and exit quietly
            raise
    return pool


def _noop() -> None:
    """A task that does nothing (it makes the pool spawn a process)."""


def _spawn_ignoring_sigint(pool: ProcessPoolExecutor, n: int) -> None:
    """Start the pool's ``n`` processes now, with SIGINT blocked in this thread meanwhile: a
    spawned interpreter inherits the blocked signal and keeps it through its start-up, so a
    Ctrl-C (sent to the whole process group) that arrives while a worker is still starting
    cannot kill its start-up with a fatal error (its initializer, which ignores SIGINT, only
    runs once the interpreter is up).

    This process still gets that Ctrl-C, but only once every process is spawned: the kernel
    hands the signal to another thread meanwhile, and Python would then raise
    KeyboardInterrupt here, in the middle of writing a child's start-up data to its pipe (the
    child then dies reading it, with a traceback of its own). So in the main thread the
    signal's handler only records it until the spawning is over, then the old handler runs.
    """
    held: list[int] = []
    main = threading.current_thread() is threading.main_thread()
    handler = signal.signal(signal.SIGINT, lambda s, _f: held.append(s)) if main else None
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        for _ in range(n):  # each submit spawns one process while none is idle
            pool.submit(_noop)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
        if main:
            signal.signal(signal.SIGINT, handler)
    if held:  # now to the restored handler, whichever it is (the default raises KeyboardInterrupt)
        signal.raise_signal(signal.SIGINT)


def shutdown_pool(*, wait: bool = False) -> None:
    """Stop the worker processes kept for the next evaluation (chunks not started are
    cancelled; with ``wait``, return once the processes have exited). They also stop when
    this process exits."""
    for n in list(_POOL):
        _POOL.pop(n).shutdown(wait=wait, cancel_futures=True)


class _Chunks:
    """The chunks left to play: this process takes them from the front, the workers from the
    back (thread-safe)."""

    def __init__(self, chunks: Sequence[list[Query]]) -> None:
        self._left = deque(chunks)
        self._lock = threading.Lock()

    def take(self, *, front: bool, peek: bool = False) -> list[Query] | None:
        with self._lock:
            if not self._left:
                return None
            if peek:
                return self._left[0] if front else self._left[-1]
            return self._left.popleft() if front else self._left.pop()

    def episodes(self) -> int:
        with self._lock:
            return sum(len(c) for c in self._left)

    def clear(self) -> None:
        with self._lock:
            self._left.clear()


class _Feeder:
    """A thread that keeps the worker processes busy: one chunk submitted per worker plus one,
    the next as soon as one finishes; finished tasks go to :meth:`collect`.

    Chunks are handed out only once a worker has built this run's player and opened its scene
    (:func:`_pool_prepare`): a worker still starting up never holds a chunk this process
    would then wait for at the end of a short run.
    """

    def __init__(
        self,
        pool: ProcessPoolExecutor,
        chunks: _Chunks,
        task: Callable[[list[Query]], tuple[Any, ...]],
        slots: int,
    ) -> None:
        self._pool, self._chunks, self._task, self._slots = pool, chunks, task, slots
        self._done: queue.SimpleQueue[Future[Any] | BaseException | None] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._finished = False
        #: The shard tables the workers' finished tasks wrote (:func:`_pool_chunk`).
        self.written: Written = {}
        #: The worker processes were found dead before any chunk was handed out.
        self.broken = False
        self._thread = threading.Thread(target=self._run, name="urbex-feeder", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        pending: set[Future[Any]] = set()
        try:
            first = self._chunks.take(front=False, peek=True)
            if first is None:
                return
            try:
                ready = self._pool.submit(_pool_prepare, self._task(first))
                while not wait([ready], timeout=0.02).done:
                    if self._stop.is_set() or self._chunks.episodes() == 0:
                        return  # the run ended before the worker was ready
                ready.result()  # a worker that cannot build the player: the run's error
            except BrokenProcessPool:  # a kept worker died since (killed): play here alone
                self.broken = True
                return
            while True:
                while len(pending) < self._slots and not self._stop.is_set():
                    c = self._chunks.take(front=False)
                    if c is None:
                        break
                    pending.add(self._pool.submit(_pool_chunk, self._task(c)))
                if not pending:
                    return
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in done:
                    self._done.put(f)
        except BaseException as exc:  # a broken pool: handed to collect
            self._done.put(exc)
        finally:
            self._done.put(None)

    def collect(self, bar: Any, *, block: bool) -> int:
        """Episodes of the tasks finished since the last call (``block``: wait for all);
        raises a task's error."""
        n = 0
        while not self._finished:
            try:
                item = self._done.get(block=block)
            except queue.Empty:
                break
            if item is None:
                self._finished = True
            elif isinstance(item, BaseException):
                raise item
            else:
                k, written = item.result()
                self.written.update(written)
                bar.update(k)
                n += k
        return n

    def stop(self) -> None:
        """Submit nothing more (the tasks running finish and publish their shards)."""
        self._stop.set()


def _with_workers(
    params: Params,
    player: EpisodePlayer,
    chunks: _Chunks,
    writer: ShardWriter,
    bar: Any,
    n_workers: int,
    task: Callable[[list[Query]], tuple[Any, ...]],
    say: Callable[[str], None],
) -> tuple[int, str, Written]:
    """Play ``chunks`` here and in ``n_workers - 1`` worker processes (see the module
    docstring); returns the episodes played, the decision and the workers' shard tables."""
    n_proc = n_workers - 1
    feeder: _Feeder | None = None
    label = f"{player.policy_name}/{player.split}"
    note = ""
    if _POOL.get(n_proc) is not None:
        feeder = _Feeder(_pool(n_proc), chunks, task, n_proc + 1)
        note = f"{label}: this process and {n_proc} running worker process(es)"
        say(note)
    played = 0
    try:
        while (c := chunks.take(front=True)) is not None:
            t0, w0 = time.perf_counter(), player.warmup_s
            n = _play_chunk(player, c, writer)
            played += n
            bar.update(n)
            if feeder is None and not note and n:
                per_ep = (time.perf_counter() - t0 - (player.warmup_s - w0)) / n
                left = chunks.episodes()
                est = per_ep * left
                limit = params.eval.parallel_min_s
                if left and est >= limit:
                    feeder = _Feeder(_pool(n_proc), chunks, task, n_proc + 1)
                    note = (
                        f"{label}: {left} episodes left ≈ {est:.1f} s in one process ≥ "
                        f"eval.parallel_min_s {limit:g} s: starting {n_proc} worker process(es)"
                    )
                else:
                    note = (
                        f"{label}: {left} episodes left ≈ {est:.1f} s in one process < "
                        f"eval.parallel_min_s {limit:g} s: no worker processes"
                    )
                say(note)
            if feeder is not None:
                played += feeder.collect(bar, block=False)
        if feeder is not None:
            played += feeder.collect(bar, block=True)
            if feeder.broken:
                shutdown_pool()  # the next run starts new ones
    except BaseException:
        chunks.clear()
        if feeder is not None:
            feeder.stop()
            shutdown_pool()  # the tasks running finish their shards; a rerun resumes
        raise
    return played, note, feeder.written if feeder is not None else {}


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
) -> Played:
    """Play the pending queries ``todo`` of run ``rid`` in chunks.

    With worker processes (a parallel-safe policy, ``workers > 1``, more than one chunk; see
    the module docstring), else in this process alone: episodes in flight for a thread-safe
    policy, lockstep batches for a batching one, one at a time otherwise.
    """
    policy, split = spec.policy, spec.split
    d = params.layout.run(rid)
    n_workers = workers if workers is not None else params.eval.workers
    chunks = _chunks(todo, params.eval.chunk_size)
    if not chunks:
        return Played(n=0)
    bar = tqdm(total=len(todo), desc=f"{policy}/{split}", unit="ep", disable=not progress)

    def say(text: str) -> None:
        if progress:
            tqdm.write(f"urbex evaluate: {text}", file=sys.stderr)

    def task(c: list[Query]) -> tuple[Any, ...]:
        return (params, policy, split, rid, ckpt, sizes, c, d)

    try:
        player = EpisodePlayer(
            params, policy, split, rid, ckpt, policy=policy_obj, class_sizes=sizes
        )
        n_flight = in_flight_workers(player, len(todo))
        if n_flight > 1:  # in chunk order: one scene after another
            played = 0
            flat = [q for c in chunks for q in c]
            for n in _play_in_flight(player, flat, d, params.eval.chunk_size, n_flight):
                played += n
                bar.update(n)
            return Played(n=played)
        parallel = policy_info(policy).parallel and policy_obj is None and n_workers > 1
        with ShardWriter(d, rows=player.rows) as writer:
            if parallel and len(chunks) > 1:
                played, note, theirs = _with_workers(
                    params, player, _Chunks(chunks), writer, bar, n_workers, task, say
                )
            else:
                played, note, theirs = 0, "", {}
                for c in chunks:
                    n = _play_chunk(player, c, writer)
                    played += n
                    bar.update(n)
        # the writer is closed here: every chunk handed to it is published and kept
        return Played(n=played, schedule=note or None, written={**writer.written, **theirs})
    finally:
        bar.close()
