"""One writer per evaluation run: an OS file lock on the run directory (:func:`run_lock`).

:func:`urbex.eval.runner.evaluate` holds the lock of ``<assets>/eval/runs/<run_id>`` from before
it reads ``run.json`` until it has written the final status, so two ``urbex evaluate`` with the
same run id never both play: the second raises :class:`urbex.errors.RunLockedError` at once,
naming the holder. The lock is ``fcntl.flock`` on ``run.lock`` (kept in the run directory; only
the flock matters, never the file's existence), so the operating system releases it when the
holder dies, even by ``SIGKILL``: a crashed run never blocks the next one. The holder's pid, host
and start time are written to the sidecar ``run.lock.json`` for the second writer's message.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from urbex.atomic import write_json_atomic
from urbex.errors import RunLockedError

__all__ = ["LOCK_FILE", "LOCK_HOLDER_FILE", "lock_holder", "run_lock"]

#: The flock'ed file of a run directory.
LOCK_FILE = "run.lock"
#: The holder's ``{"pid", "host", "started"}`` while the lock is held (removed on release).
LOCK_HOLDER_FILE = "run.lock.json"


def lock_holder(directory: Path) -> dict[str, Any] | None:
    """The holder recorded in ``directory``'s sidecar, or None (none, or being written)."""
    try:
        doc = json.loads((Path(directory) / LOCK_HOLDER_FILE).read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _describe(holder: dict[str, Any] | None) -> str:
    if holder is None:
        return "another process (its pid is not recorded yet)"
    return f"pid {holder.get('pid')} on host {holder.get('host')!r} since {holder.get('started')}"


@contextmanager
def run_lock(directory: Path, *, run_id: str) -> Iterator[dict[str, Any]]:
    """Hold the write lock of the run directory ``directory`` (created if needed).

    Yields the holder record written to ``run.lock.json`` (``pid``, ``host``, ``started``).

    Raises
    ------
    RunLockedError
        Another live process holds the lock (the message names its pid, host and start time).
    """

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunLockedError(
                f"run {run_id!r} is being written by {_describe(lock_holder(directory))}; "
                "one writer per run: wait for it to finish, or pass another --run-id",
                path=directory,
            ) from None
        holder = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        write_json_atomic(holder, directory / LOCK_HOLDER_FILE)
        try:
            yield holder
        finally:
            (directory / LOCK_HOLDER_FILE).unlink(missing_ok=True)
    finally:
        os.close(fd)  # releases the flock
