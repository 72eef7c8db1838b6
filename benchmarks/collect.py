"""Run every benchmark and collect its figures into one file: what ``make bench`` runs.

Each ``benchmarks/bench_*.py`` prints its figures and, as its last line, one JSON object of
them. This runs them one after another (their output shown as it comes) and writes
``assets/bench/latest.json``: one key per script (``bench_eval``, ...), its object, plus
``_seconds`` (the script's wall time) and ``_load`` (the 1-minute load average when it
started: figures of a busy machine are not comparable). The file is published atomically once
every script has run; a script that fails (its exit status, or a last line that is not a JSON
object) stops the run with its name and leaves the previous file in place.

    .venv/bin/python benchmarks/collect.py                 # every benchmark at full size
    .venv/bin/python benchmarks/collect.py --quick         # each with --quick
    .venv/bin/python benchmarks/collect.py --only bench_eval bench_env --out /tmp/figures.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from urbex.atomic import atomic_write

HERE = Path(__file__).resolve().parent


class BenchmarkFailed(RuntimeError):
    """A benchmark exited with an error or did not end with its JSON line."""


def _finite(value: Any) -> Any:
    """NaN and infinities as null (strict JSON), recursively."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def run_one(script: Path, args: list[str]) -> dict[str, Any]:
    """Run ``script`` with ``args``, echo its output, return its last line's JSON object."""
    load = os.getloadavg()[0]
    t = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, str(script), *args], stdout=subprocess.PIPE, text=True, bufsize=1
    )
    assert proc.stdout is not None
    last = ""
    for line in proc.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        if line.strip():
            last = line.strip()
    code = proc.wait()
    if code != 0:
        raise BenchmarkFailed(f"{script.name} failed (exit status {code})")
    try:
        figures = json.loads(last)
    except json.JSONDecodeError as exc:
        raise BenchmarkFailed(
            f"{script.name}: its last line is not a JSON object ({exc}): {last[:200]!r}"
        ) from exc
    if not isinstance(figures, dict):
        raise BenchmarkFailed(f"{script.name}: its last line is not a JSON object: {last[:200]!r}")
    return {**_finite(figures), "_seconds": time.perf_counter() - t, "_load": load}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="run each benchmark with --quick")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="these benchmarks (bench_eval ...)")
    ap.add_argument("--out", type=Path, default=Path("assets/bench/latest.json"))
    ap.add_argument("--dir", type=Path, default=HERE, help=argparse.SUPPRESS)  # tests
    a = ap.parse_args(argv)
    scripts = sorted(a.dir.glob("bench_*.py"))
    if a.only:
        unknown = sorted(set(a.only) - {s.stem for s in scripts})
        if unknown:
            ap.error(f"--only: no benchmark {unknown}; known: {[s.stem for s in scripts]}")
        scripts = [s for s in scripts if s.stem in a.only]
    out: dict[str, Any] = {}
    for script in scripts:
        print(f"== {script.relative_to(a.dir.parent) if a.dir == HERE else script}", flush=True)
        try:
            out[script.stem] = run_one(script, ["--quick"] if a.quick else [])
        except BenchmarkFailed as exc:
            print(f"make bench: {exc}", file=sys.stderr)
            return 1
    with atomic_write(a.out, "w") as fh:
        fh.write(json.dumps(out, indent=2, sort_keys=True) + "\n")
    print(f"figures of {len(out)} benchmarks → {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
