"""A run's shards written on a background thread (:class:`ShardWriter`): episodes are played
while the previous ones are scored and encoded as Parquet (:func:`urbex.eval.episodes.write_chunk`;
pyarrow drops the GIL while it writes)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from urbex.eval.episodes import Written, write_chunk
from urbex.eval.rows import EpisodeRecord, StepRow

__all__ = ["ShardWriter"]


class ShardWriter:
    """Writes a run's chunks (:func:`write_chunk`) on a background thread, so that episodes are
    played while Parquet is encoded (pyarrow drops the GIL while it writes).

    :meth:`put` hands a chunk over and returns at once. A shard pair is written at most every
    ``every_s`` seconds, holding every chunk handed over since the last one: a slow policy's
    chunks are each published as soon as they are played (one shard per chunk, the resume
    granularity ``eval.chunk_size``), while fast episodes (hundreds per second) are not slowed
    by writing a small file every few milliseconds — a kill then loses at most the episodes of
    the last ``every_s`` seconds and the chunk in flight. :meth:`close` (or leaving the ``with``
    block, also on an error or Ctrl-C) publishes every chunk handed over, then raises a write's
    error; a failed write also fails the next :meth:`put`.

    With ``rows`` (played episodes → their episodes and steps rows, e.g.
    :meth:`urbex.eval.player.EpisodePlayer.rows`), :meth:`put_played` hands over played
    episodes instead, turned into rows here, all of a shard's at once.

    ``written`` keeps the tables of every shard published (:func:`write_chunk`'s ``keep``),
    which :func:`urbex.eval.episodes.compact_run` merges instead of reading them back; read
    it after :meth:`close`.
    """

    def __init__(
        self,
        directory: Path,
        *,
        every_s: float = 0.25,
        rows: Callable[[list[Any]], tuple[list[EpisodeRecord], list[StepRow]]] | None = None,
    ) -> None:
        import queue
        import threading

        self.directory = Path(directory)
        self._every_s = every_s
        self._rows = rows
        self._queue: queue.SimpleQueue[tuple[list[Any], list[Any], list[Any]] | None] = (
            queue.SimpleQueue()
        )
        self._error: BaseException | None = None
        self.written: Written = {}
        self._thread = threading.Thread(target=self._run, name="urbex-shards", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import time

        last = time.monotonic()
        item = self._queue.get()
        while item is not None:
            episodes, steps, played = list(item[0]), list(item[1]), list(item[2])
            while (item := self._next(last + self._every_s)) not in (None, False):
                episodes += item[0]
                steps += item[1]
                played += item[2]
            if self._error is None:
                try:
                    if played and self._rows is not None:
                        more_episodes, more_steps = self._rows(played)
                        episodes, steps = episodes + more_episodes, steps + more_steps
                    write_chunk(self.directory, episodes, steps, keep=self.written)
                except BaseException as exc:  # handed to the caller by put/close
                    self._error = exc
            last = time.monotonic()
            if item is False:  # nothing more before the deadline: wait for the next chunk
                item = self._queue.get()

    def _next(self, deadline: float) -> Any:
        """The next chunk handed over before ``deadline`` (monotonic seconds); ``None`` at the
        end (:meth:`close`), ``False`` when none came in time."""
        import queue
        import time

        try:
            return self._queue.get(timeout=max(deadline - time.monotonic(), 0.0))
        except queue.Empty:
            return False

    def _raise(self) -> None:
        if self._error is not None:
            raise self._error

    def put(self, episodes: Sequence[EpisodeRecord], steps: Sequence[StepRow]) -> None:
        """Queue one chunk: its finished episodes and all their steps (none: nothing)."""
        self._raise()
        if episodes:
            self._queue.put((list(episodes), list(steps), []))

    def put_played(self, played: Sequence[Any]) -> None:
        """Queue one chunk of played episodes (none: nothing), turned into rows by ``rows``."""
        if self._rows is None:
            raise TypeError("ShardWriter.put_played: this writer was made without rows=")
        self._raise()
        if played:
            self._queue.put(([], [], list(played)))

    def close(self) -> None:
        """Wait until every queued chunk is published; raise the first write error."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        self._raise()

    def __enter__(self) -> ShardWriter:
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if exc is None:
            self.close()
            return
        try:  # the chunks already handed over are still published
            self.close()
        except BaseException as err:
            exc.add_note(f"writing a shard also failed: {type(err).__name__}: {err}")
