"""Episodes in flight: many episodes of one thread-safe policy played at once, one thread each.

A model behind a server (``openai``: a hosted API, or ``vllm serve`` batching hundreds of
sequences) spends nearly all of an episode waiting for replies; one episode at a time leaves the
server idle. :func:`play_in_flight` keeps ``n`` episodes going in ``n`` worker threads, each
with its own :class:`~urbex.env.episode.GroundingEnv` (a
:meth:`~urbex.env.episode.GroundingEnv.sibling` of the player's: its scene provider, landmark
index and global views, each scene's view built once), through
:meth:`urbex.eval.player.EpisodePlayer.play_in`. The policy must be thread-safe (``policy.max_concurrency >= n``; :class:`urbex.agents.openai_api.OpenAIPolicy`
keeps each thread's seed, deadline and HTTP client apart).

What stays exact:

* **each episode** is played as one at a time would play it: its own seed
  (:func:`urbex.env.play.episode_seed` of its query id), its own turn order, its own retries,
  backoff sleeps and deadline (a 429 answer sleeps in that episode's thread only);
* **the results**: episodes are independent, so the set of finished episodes and each one's
  record do not depend on ``n`` or on completion order (the runner's shards are read back
  sorted by ``query_id``; a killed run resumed equals an uninterrupted one).

Failure: the first error stops new episodes from starting; the episodes already in flight run
to their end (each bounded by its deadline) and are yielded, then the error is raised — so the
caller can write every finished episode before it propagates, as with one at a time.

Latency: each episode's ``latency_s`` is its own wall time, waiting included (other episodes'
environment steps share the cores, so it can exceed a one-at-a-time run's).

:class:`InFlight` is the scheduler's execution of this kind (:mod:`urbex.eval.execution`): it
writes a shard each time ``chunk_size`` episodes have finished.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING

from urbex.eval.episodes import write_chunk
from urbex.eval.execution import Execution, Played, Progress, RunWork

if TYPE_CHECKING:
    from urbex.env.episode import GroundingEnv
    from urbex.eval.player import EpisodePlayer
    from urbex.eval.rows import EpisodeRecord, StepRow
    from urbex.query import Query

__all__ = ["InFlight", "in_flight_workers", "play_in_flight"]


class InFlight(Execution):
    """Episodes in flight (:func:`play_in_flight`, ``n`` threads), the chunks played in order
    (one scene after another); a shard written each time ``chunk_size`` episodes have finished.

    Parameters
    ----------
    n
        Episodes in flight at once (:func:`in_flight_workers`).
    chunk_size
        Finished episodes per shard (``eval.chunk_size``).
    """

    def __init__(self, n: int, chunk_size: int) -> None:
        self.n, self.chunk_size = n, chunk_size

    def play(
        self,
        player: EpisodePlayer,
        run: RunWork,
        chunks: Sequence[list[Query]],
        progress: Progress,
    ) -> Played:
        played = 0
        flat = [q for c in chunks for q in c]
        for k in self._shards(player, flat, run.directory):
            played += k
            progress.advance(k)
        return Played(n=played)

    def _shards(
        self, player: EpisodePlayer, queries: Sequence[Query], directory: Path
    ) -> Iterator[int]:
        """Play ``queries``; write a shard per ``chunk_size`` finished episodes and yield its
        size; on an error, write the finished episodes, then re-raise."""
        eps: list[EpisodeRecord] = []
        steps: list[StepRow] = []
        try:
            for rec, st in play_in_flight(player, queries, self.n):
                eps.append(rec)
                steps.extend(st)
                if len(eps) >= self.chunk_size:
                    write_chunk(directory, eps, steps)
                    k = len(eps)
                    eps, steps = [], []
                    yield k
        finally:
            write_chunk(directory, eps, steps)
        if eps:
            yield len(eps)


def in_flight_workers(player: EpisodePlayer, n_pending: int) -> int:
    """Threads :func:`play_in_flight` would use: ``policy.max_concurrency``, at most
    ``n_pending``; 1 for a batching policy (``max_batch > 1`` plays in lockstep batches).

    Policies without the attribute count as 1 (not thread-safe).
    """
    pol = player.policy
    if int(getattr(pol, "max_batch", 1)) > 1:
        return 1
    return max(1, min(int(getattr(pol, "max_concurrency", 1)), n_pending))


def play_in_flight(
    player: EpisodePlayer, queries: Sequence[Query], n: int
) -> Iterator[tuple[EpisodeRecord, list[StepRow]]]:
    """Play ``queries`` with up to ``n`` episodes in flight; yield each as it finishes.

    Parameters
    ----------
    player
        The run's player; its policy must allow ``n`` threads (``policy.max_concurrency``).
    queries
        Episodes to play, started in this order (completion order may differ).
    n
        Episodes in flight at once (worker threads), >= 1.

    Yields
    ------
    (EpisodeRecord, list[StepRow])
        One finished, scored episode, in completion order.

    Raises
    ------
    ValueError
        ``n < 1``, or ``n`` above the policy's ``max_concurrency``.
    Exception
        The first error of any episode (e.g. :class:`~urbex.errors.PolicyError`), after the
        episodes already in flight have finished and been yielded.
    """
    limit = int(getattr(player.policy, "max_concurrency", 1))
    if not 1 <= n <= max(limit, 1):
        raise ValueError(
            f"n: expected 1 <= n <= policy.max_concurrency ({limit}), got {n}; a policy that is "
            "not thread-safe plays one episode at a time"
        )
    local = threading.local()

    def env_of_thread() -> GroundingEnv:
        env = getattr(local, "env", None)
        if env is None:  # shares the player's scenes, landmarks and global views
            env = local.env = player.env.sibling()
        return env

    def one(q: Query) -> tuple[EpisodeRecord, list[StepRow]]:
        return player.play_in(env_of_thread(), q)

    todo = iter(queries)
    failure: BaseException | None = None
    with ThreadPoolExecutor(max_workers=n, thread_name_prefix="urbex-episode") as pool:
        running: set[Future[tuple[EpisodeRecord, list[StepRow]]]] = set()
        try:
            for q in todo:
                running.add(pool.submit(one, q))
                if len(running) >= n:
                    break
            while running:
                done, running = wait(running, return_when=FIRST_COMPLETED)
                for fut in done:
                    exc = fut.exception()
                    if exc is not None:
                        failure = failure or exc
                        continue
                    yield fut.result()
                    if failure is None:
                        nxt = next(todo, None)
                        if nxt is not None:
                            running.add(pool.submit(one, nxt))
        except BaseException:  # the consumer stopped (or an interrupt): start nothing new
            for fut in running:
                fut.cancel()
            raise
    if failure is not None:
        raise failure
