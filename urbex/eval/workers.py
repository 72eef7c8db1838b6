"""Worker processes: chunks of a parallel-safe policy's run played here and in spawned processes.

:class:`Workers` is the scheduler's execution of this kind (:mod:`urbex.eval.execution`): this
process plays chunks from the front of the list while ``processes`` spawned processes take
chunks from the back (so each keeps to its own scenes), one at a time, as each finishes its
last. The processes belong to a :class:`WorkerPool` that the caller owns: started by the first
run that needs them and kept for every later run given the same pool, until the pool is closed
(leaving its ``with`` block). Starting them costs about a second and a half here (importing
urbex, opening the scenes): a run decides after its first chunk, from the seconds per episode
it measured, whether the episodes left would take at least ``eval.parallel_min_s`` in this
process; if not, it plays them alone. Worker processes that are already running are always
used. Either way the episodes are the same (per-episode seeds).

A worker process keeps the player of the run it serves between its tasks
(:class:`_ProcessPlayer`), rebuilt when a task of another run arrives.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import signal
import threading
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from types import TracebackType
from typing import TYPE_CHECKING, Any

from urbex.eval.execution import ChunkWork, Execution, Played, Progress, RunWork, play_chunk
from urbex.eval.shards import ShardWriter

if TYPE_CHECKING:
    from urbex.eval.episodes import Written
    from urbex.eval.player import EpisodePlayer
    from urbex.query import Query

__all__ = ["WorkerPool", "Workers"]


# ---------------------------------------------------------------------------------------------
# in a worker process
# ---------------------------------------------------------------------------------------------


class _ProcessPlayer:
    """A worker process's player, kept between its tasks: built on the first task of a run,
    replaced on the first task of another."""

    def __init__(self) -> None:
        self._key: str | None = None
        self._player: EpisodePlayer | None = None

    def of(self, run: RunWork) -> EpisodePlayer:
        """The player of ``run`` (the one kept, if it serves ``run``)."""
        if self._player is None or self._key != run.key:
            self._player = None  # the previous run's player is released before building
            self._player = run.player()
            self._key = run.key
        return self._player


#: The player slot of this worker process: set by :func:`_worker_init` in each spawned worker
#: process (a process's tasks share nothing else between them), None in any other process.
_PROCESS_PLAYER: _ProcessPlayer | None = None


def _process_player(run: RunWork) -> EpisodePlayer:
    if _PROCESS_PLAYER is None:
        raise RuntimeError("a worker task outside a WorkerPool's process")
    return _PROCESS_PLAYER.of(run)


def _prepare(task: ChunkWork) -> None:
    """A worker process's first task of a run: build its player, open the chunk's scene."""
    _process_player(task.run).warm(task.queries[0])


def _play_task(task: ChunkWork) -> tuple[int, Written]:
    """A worker process's task: one chunk, played and published; the episodes played and the
    shard tables written (sent back, so that the parent merges the run without reading them)."""
    player = _process_player(task.run)
    with ShardWriter(task.run.directory, rows=player.rows) as writer:
        n = play_chunk(player, task.queries, writer)
    return n, writer.written


#: How often a worker process checks that its parent is alive, seconds.
_PARENT_CHECK_S = 0.5


def _exit_with_parent(parent: int) -> None:
    """End this process once ``parent`` is gone (this process was re-parented).

    A parent killed with SIGKILL closes nothing in order: its workers would wait forever on the
    task pipe (each holds a write end of it too), holding their scenes' memory maps, and the
    resource tracker would wait on them. ``PR_SET_PDEATHSIG`` is no answer here: it fires when
    the *thread* that spawned the process ends, and a kept pool outlives that thread.
    """
    while os.getppid() == parent:
        time.sleep(_PARENT_CHECK_S)
    os._exit(1)


def _worker_init(parent: int) -> None:
    """A worker process's start: its player slot; Ctrl-C ignored (the terminal sends it to the
    whole process group): the parent cancels the chunks not started, lets the running ones
    finish their shards (a rerun skips them) and prints the one line. A worker killed mid-chunk
    would instead print its own traceback, and the pool's manager thread another (CPython 3.11
    sets an exception on the cancelled futures: InvalidStateError). They exit when their
    parent dies (:func:`_exit_with_parent`; ``parent`` is the pid that started them, given, not
    read here: a parent that died before this ran has already been replaced)."""
    global _PROCESS_PLAYER
    _PROCESS_PLAYER = _ProcessPlayer()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(
        target=_exit_with_parent, args=(parent,), name="urbex-parent-check", daemon=True
    ).start()


# ---------------------------------------------------------------------------------------------
# the pool (owned by the caller)
# ---------------------------------------------------------------------------------------------


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


class WorkerPool:
    """Spawned worker processes for the runs of parallel-safe policies, owned by the caller.

    Nothing starts until a run needs the processes (:meth:`start`); they are then kept for
    every later run given this pool (``evaluate(..., pool=pool)``), and stopped by
    :meth:`close` — at the end of the ``with`` block, or when this process exits.

    >>> with WorkerPool() as pool:
    ...     pool.processes
    0
    """

    def __init__(self) -> None:
        self._executor: ProcessPoolExecutor | None = None
        self._n = 0

    @property
    def processes(self) -> int:
        """Worker processes running (0 before :meth:`start` and after :meth:`close`)."""
        return self._n if self._executor is not None else 0

    def start(self, n: int) -> ProcessPoolExecutor:
        """``n`` worker processes (spawned): those running, if there are ``n``; else the
        running ones are stopped and ``n`` new ones started."""
        if self._executor is not None and self._n == n:
            return self._executor
        self.close()
        executor = ProcessPoolExecutor(
            max_workers=n,
            mp_context=mp.get_context("spawn"),
            initializer=_worker_init,
            initargs=(os.getpid(),),
        )
        self._executor, self._n = executor, n
        try:
            _spawn_ignoring_sigint(executor, n)
        except BaseException:  # Ctrl-C held off until every process had its start-up data
            self.close(wait=True)  # they start, see the pool closed and exit quietly
            raise
        return executor

    def close(self, *, wait: bool = False) -> None:
        """Stop the worker processes (chunks not started are cancelled; with ``wait``, return
        once the processes have exited). A later :meth:`start` starts new ones."""
        executor, self._executor, self._n = self._executor, None, 0
        if executor is not None:
            executor.shutdown(wait=wait, cancel_futures=True)

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # on an error (Ctrl-C included) the running tasks finish their shards in the background
        self.close(wait=exc is None)


# ---------------------------------------------------------------------------------------------
# a run shared with the worker processes
# ---------------------------------------------------------------------------------------------


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
    (:func:`_prepare`): a worker still starting up never holds a chunk this process would then
    wait for at the end of a short run.
    """

    def __init__(
        self, executor: ProcessPoolExecutor, chunks: _Chunks, run: RunWork, slots: int
    ) -> None:
        self._executor, self._chunks, self._run, self._slots = executor, chunks, run, slots
        self._done: queue.SimpleQueue[Future[Any] | BaseException | None] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._finished = False
        #: The shard tables the workers' finished tasks wrote (:func:`_play_task`).
        self.written: Written = {}
        #: The worker processes were found dead before any chunk was handed out.
        self.broken = False
        self._thread = threading.Thread(target=self._run_feeder, name="urbex-feeder", daemon=True)
        self._thread.start()

    def _task(self, chunk: list[Query]) -> ChunkWork:
        return ChunkWork(run=self._run, queries=tuple(chunk))

    def _run_feeder(self) -> None:
        pending: set[Future[Any]] = set()
        try:
            first = self._chunks.take(front=False, peek=True)
            if first is None:
                return
            try:
                ready = self._executor.submit(_prepare, self._task(first))
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
                    pending.add(self._executor.submit(_play_task, self._task(c)))
                if not pending:
                    return
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in done:
                    self._done.put(f)
        except BaseException as exc:  # a broken pool: handed to collect
            self._done.put(exc)
        finally:
            self._done.put(None)

    def collect(self, progress: Progress, *, block: bool) -> int:
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
                progress.advance(k)
                n += k
        return n

    def stop(self) -> None:
        """Submit nothing more (the tasks running finish and publish their shards)."""
        self._stop.set()


class Workers(Execution):
    """This process and ``processes`` worker processes of ``pool`` sharing a run's chunks (see
    the module docstring).

    Parameters
    ----------
    pool
        The worker processes (used if running with ``processes``; started when the episodes
        left after this process's first chunk would take ``min_parallel_s``).
    processes
        Worker processes besides this one (``eval.workers - 1``).
    min_parallel_s
        ``eval.parallel_min_s``: seconds of episodes left, in this process, worth starting
        the worker processes for.
    """

    def __init__(self, pool: WorkerPool, processes: int, min_parallel_s: float) -> None:
        self.pool, self.processes, self.min_parallel_s = pool, processes, min_parallel_s

    def play(
        self,
        player: EpisodePlayer,
        run: RunWork,
        chunks: Sequence[list[Query]],
        progress: Progress,
    ) -> Played:
        with ShardWriter(run.directory, rows=player.rows) as writer:
            played, note, theirs = self._share(player, run, _Chunks(chunks), writer, progress)
        # the writer is closed here: every chunk handed to it is published and kept
        return Played(n=played, schedule=note or None, written={**writer.written, **theirs})

    def _share(
        self,
        player: EpisodePlayer,
        run: RunWork,
        chunks: _Chunks,
        writer: ShardWriter,
        progress: Progress,
    ) -> tuple[int, str, Written]:
        """Play ``chunks`` here and in the worker processes; returns the episodes played, the
        decision and the workers' shard tables."""
        n_proc = self.processes
        feeder: _Feeder | None = None
        label = f"{player.policy_name}/{player.split}"
        note = ""
        if self.pool.processes == n_proc:
            feeder = _Feeder(self.pool.start(n_proc), chunks, run, n_proc + 1)
            note = f"{label}: this process and {n_proc} running worker process(es)"
            progress.say(note)
        played = 0
        try:
            while (c := chunks.take(front=True)) is not None:
                t0, w0 = time.perf_counter(), player.warmup_s
                n = play_chunk(player, c, writer)
                played += n
                progress.advance(n)
                if feeder is None and not note and n:
                    per_ep = (time.perf_counter() - t0 - (player.warmup_s - w0)) / n
                    left = chunks.episodes()
                    est = per_ep * left
                    limit = self.min_parallel_s
                    if left and est >= limit:
                        feeder = _Feeder(self.pool.start(n_proc), chunks, run, n_proc + 1)
                        note = (
                            f"{label}: {left} episodes left ≈ {est:.1f} s in one process ≥ "
                            f"eval.parallel_min_s {limit:g} s: starting {n_proc} worker "
                            "process(es)"
                        )
                    else:
                        note = (
                            f"{label}: {left} episodes left ≈ {est:.1f} s in one process < "
                            f"eval.parallel_min_s {limit:g} s: no worker processes"
                        )
                    progress.say(note)
                if feeder is not None:
                    played += feeder.collect(progress, block=False)
            if feeder is not None:
                played += feeder.collect(progress, block=True)
                if feeder.broken:
                    self.pool.close()  # the next run starts new ones
        except BaseException:
            chunks.clear()
            if feeder is not None:
                feeder.stop()
                self.pool.close()  # the tasks running finish their shards; a rerun resumes
            raise
        return played, note, feeder.written if feeder is not None else {}
