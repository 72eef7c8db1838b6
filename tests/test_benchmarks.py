"""Every benchmark still runs (``--quick``) and prints its figures; no timing is asserted here."""

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("bench_*.py"))


def test_benchmarks_are_found():
    assert {b.stem for b in BENCHMARKS} >= {
        "bench_io",
        "bench_synth",
        "bench_scene",
        "bench_env",
        "bench_eval",
    }


@pytest.mark.parametrize("bench", BENCHMARKS, ids=lambda p: p.stem)
def test_benchmark_quick_mode_runs(bench, tmp_path):
    out = subprocess.run(
        [sys.executable, str(bench), "--quick"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert any(ch.isdigit() for ch in out.stdout), "a benchmark must print its figures"
