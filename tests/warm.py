"""Run one ``urbex`` command in a pre-imported interpreter and SIGKILL it after a delay.

Starting Python and importing urbex's dependencies takes seconds, while the stages of a tiny
project do their work in a fraction of one; a kill timed from the process start would nearly
always land in the imports. So a *warm* process (``python -m tests.warm MODULE...``) imports the
modules, says ``ready``, waits for its command on stdin and only then runs
:func:`urbex.cli.main` — the code of the ``urbex`` console script — so that the delay of a kill
is measured from the start of the command. (Forking children from one pre-imported helper would
be cheaper, but polars starts its thread pool at import and a forked child deadlocks in it.)

:class:`WarmProcesses` keeps one process importing ahead while the current one runs.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = ["WarmProcesses"]

_ROOT = Path(__file__).resolve().parents[1]


def _serve(modules: list[str]) -> None:
    for m in modules:
        importlib.import_module(m)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    line = sys.stdin.readline()
    if not line:
        os._exit(0)
    req = json.loads(line)
    fd = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    os.chdir(req["cwd"])
    from urbex.cli import main

    sys.exit(main(req["argv"]))


class WarmProcesses:
    """Warm interpreters (``modules`` imported), one command each; see the module docstring."""

    def __init__(self, modules: list[str], *, env: dict[str, str] | None = None) -> None:
        self._cmd = [sys.executable, "-m", "tests.warm", *modules]
        self._env = {**os.environ, **(env or {})}
        self._spare: subprocess.Popen[str] | None = self._start()

    def _start(self) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self._cmd,
            cwd=_ROOT,
            env=self._env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(
        self, argv: list[str], *, cwd: Path, log: Path, kill_after: float | None = None
    ) -> dict[str, Any]:
        """Run ``urbex <argv>`` (stdout/stderr to ``log``); SIGKILL it after ``kill_after`` s.

        Returns ``{"rc": exit status (-9 when killed), "killed": bool, "elapsed": s}``.
        """
        proc = self._spare if self._spare is not None else self._start()
        assert proc.stdout is not None and proc.stdin is not None
        if proc.stdout.readline().strip() != "ready":
            raise RuntimeError(f"warm process failed to start (rc {proc.wait()})")
        self._spare = self._start()  # imports while this one runs
        req = {"argv": argv, "cwd": str(cwd), "log": str(log)}
        proc.stdin.write(json.dumps(req) + "\n")
        proc.stdin.flush()
        t0 = time.monotonic()
        try:
            rc = proc.wait(timeout=kill_after)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)  # not yet reaped: the pid is still this process
            rc = proc.wait()
        elapsed = time.monotonic() - t0
        proc.stdin.close()
        proc.stdout.close()
        return {"rc": rc, "killed": rc == -signal.SIGKILL, "elapsed": elapsed}

    def close(self) -> None:
        """Stop the spare process."""
        if self._spare is not None:
            assert self._spare.stdin is not None
            self._spare.stdin.close()
            try:
                self._spare.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self._spare.kill()
                self._spare.wait()
            if self._spare.stdout is not None:
                self._spare.stdout.close()
            self._spare = None

    def __enter__(self) -> WarmProcesses:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


if __name__ == "__main__":
    _serve(sys.argv[1:])
