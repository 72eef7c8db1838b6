"""``make ui``: the Dagster UI (``dagster dev``) under a supervisor that stops it on one Ctrl-C.

Dagster 1.13's ``dagster dev`` ignores Ctrl-C and SIGTERM for over a minute (its daemon stops its
threads, the webserver and code servers stay) and the installed Dagster has no
``dg dev`` (``dagster-dg-cli`` is not part of the stack). So this script starts ``dagster dev``
in a process group of its own (a terminal's Ctrl-C reaches only this script) and, on SIGINT or
SIGTERM, asks the group to stop (SIGINT), waits :data:`GRACE_S` seconds and kills what is left
of it (SIGKILL): one line, exit 130 (Ctrl-C) or 143 (SIGTERM), within 5 s. ``dagster dev``'s
SupersessionWarning (it points to ``dg dev``) is filtered out by its message.

    python scripts/ui.py [--host 127.0.0.1] [--port 3000] [-- dagster dev options]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

#: Seconds the group gets to stop after the first SIGINT before it is killed.
GRACE_S = 2.0
#: ``dagster dev``'s own warning, which names a command this stack does not install.
SUPERSESSION_FILTER = "ignore:Function `dev_command` is superseded"
#: The code location ``make ui`` serves.
MODULE = "pipelines.definitions"


class _Stop(Exception):
    """Raised by the signal handler in the supervisor's main loop."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_stop(signum: int, _frame: FrameType | None) -> None:
    raise _Stop(signum)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - a recycled id owned by someone else
        return False
    return True


def stop_group(proc: subprocess.Popen[bytes], grace_s: float = GRACE_S) -> None:
    """SIGINT to ``proc``'s process group, then SIGKILL to it after ``grace_s`` seconds."""
    pgid = proc.pid  # start_new_session: the child leads its group
    try:
        os.killpg(pgid, signal.SIGINT)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if proc.poll() is not None and not _group_alive(pgid):
            return
        time.sleep(0.05)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=3000)
    ap.add_argument("rest", nargs=argparse.REMAINDER, help="more `dagster dev` options after --")
    args = ap.parse_args(argv)
    rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    dagster = Path(sys.executable).with_name("dagster")
    cmd = [str(dagster), "dev", "-m", MODULE, "-h", args.host, "-p", str(args.port), *rest]
    env = dict(os.environ)
    env["PYTHONWARNINGS"] = ",".join(
        w for w in (env.get("PYTHONWARNINGS"), SUPERSESSION_FILTER) if w
    )
    signal.signal(signal.SIGINT, _raise_stop)
    signal.signal(signal.SIGTERM, _raise_stop)
    proc = subprocess.Popen(cmd, env=env, start_new_session=True)
    try:
        return proc.wait()
    except _Stop as stop:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C does not cut the cleanup
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        stop_group(proc)
        print("urbex ui: stopped", file=sys.stderr, flush=True)
        return 128 + stop.signum


if __name__ == "__main__":
    sys.exit(main())
