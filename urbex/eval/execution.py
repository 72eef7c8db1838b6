"""How a run's pending episodes are played: the work items and the one interface of the three
executions.

The scheduler (:func:`urbex.eval.schedule.play_pending`) cuts a run's pending queries into
chunks (never spanning two scenes), builds the run's :class:`~urbex.eval.player.EpisodePlayer`
and hands both to one :class:`Execution`:

* :class:`Serial` (here): in this process, one chunk after another, one episode at a time or,
  for a batching policy (``policy.max_batch > 1``), in lockstep batches;
* :class:`urbex.eval.inflight.InFlight`: episodes in flight, one thread each, for a thread-safe
  policy;
* :class:`urbex.eval.workers.Workers`: this process and spawned worker processes (a
  :class:`urbex.eval.workers.WorkerPool` the caller owns) sharing the chunks, for a
  parallel-safe policy.

Each execution publishes the run's episodes as Parquet shards as they are played and, on an
error, the finished episodes before the error propagates, so that a rerun resumes. The
episodes are the same whichever plays them (per-episode seeds).
"""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tqdm.auto import tqdm

from urbex.eval.player import EpisodePlayer, RunWork
from urbex.eval.shards import ShardWriter

if TYPE_CHECKING:
    from urbex.env.trajectory import Trajectory
    from urbex.eval.episodes import Written
    from urbex.query import Query

__all__ = ["ChunkWork", "Execution", "Played", "Progress", "RunWork", "Serial", "play_chunk"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkWork:
    """One chunk of a run: a worker process's task (or, for its first chunk, what it prepares).

    Attributes
    ----------
    run
        The run the chunk belongs to.
    queries
        The chunk's queries, all of one scene, in playing order.
    """

    run: RunWork
    queries: tuple[Query, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Played:
    """What an execution did.

    Attributes
    ----------
    n : int
        Episodes played.
    schedule : str or None
        How the episodes were shared out, when worker processes were allowed (the decision and
        the figures it was made on).
    written : dict or None
        The tables of the shards this process and its worker processes published
        (:class:`~urbex.eval.shards.ShardWriter`'s ``written``; the workers send theirs back
        with their episodes), for :func:`urbex.eval.episodes.compact_run`.
    """

    n: int
    schedule: str | None = None
    written: Written | None = None


class Progress:
    """A run's progress: a tqdm bar of its episodes and one-line notes on stderr (both silent
    unless ``enabled``)."""

    def __init__(self, *, total: int, desc: str, enabled: bool) -> None:
        self._enabled = enabled
        self._bar = tqdm(total=total, desc=desc, unit="ep", disable=not enabled)

    def advance(self, n: int) -> None:
        """``n`` more episodes played."""
        self._bar.update(n)

    def say(self, text: str) -> None:
        """A note of the run (``urbex evaluate: <text>``), above the bar."""
        if self._enabled:
            tqdm.write(f"urbex evaluate: {text}", file=sys.stderr)

    def close(self) -> None:
        """Close the bar (the run is over, or failed)."""
        self._bar.close()


class Execution(ABC):
    """One way of playing a run's chunks (see the module docstring for the three)."""

    @abstractmethod
    def play(
        self,
        player: EpisodePlayer,
        run: RunWork,
        chunks: Sequence[list[Query]],
        progress: Progress,
    ) -> Played:
        """Play ``chunks`` (at least one, each of one scene) of ``run`` with ``player``,
        publishing their shards in ``run.directory``; count them on ``progress``.

        On an error, every finished episode is published before the error propagates.
        """


def play_chunk(player: EpisodePlayer, queries: Sequence[Query], writer: ShardWriter) -> int:
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


class Serial(Execution):
    """In this process, one chunk after another (one episode at a time, or lockstep batches for
    a batching policy); each chunk published by a :class:`~urbex.eval.shards.ShardWriter` on a
    background thread as soon as it is played."""

    def play(
        self,
        player: EpisodePlayer,
        run: RunWork,
        chunks: Sequence[list[Query]],
        progress: Progress,
    ) -> Played:
        played = 0
        with ShardWriter(run.directory, rows=player.rows) as writer:
            for c in chunks:
                n = play_chunk(player, c, writer)
                played += n
                progress.advance(n)
        # the writer is closed here: every chunk handed to it is published and kept
        return Played(n=played, written=writer.written)
