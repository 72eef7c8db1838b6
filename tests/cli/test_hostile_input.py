"""The command line given hostile or careless input (issue 36): one line naming what is wrong,
exit status 2, before anything is read, allocated or played."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tests.fixtures.small_project import REPO_ROOT, write_small_project
from urbex.cli import main


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "Traceback" not in err[0]
    return err[0]


# ---------------------------------------------------------------- params files


def _alias_bomb() -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    return "\n".join(lines) + "\nenv:\n  tools: *a9\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("env:\n  max_turns: 4\nscene:\n  resolution: 0.2\nenv:\n  zoom_size: [64, 64]\n",
         "duplicate key 'env' (lines 1 and 5)"),
        (_alias_bomb(), "the aliases expand to more than 100,000 values"),
        ("env: " + "[" * 10_000 + "]" * 10_000 + "\n", "nested deeper than 32 levels"),
        ("env:\n  lambda_iou: .inf\n", "env.lambda_iou: Input should be a finite number"),
        ("diagnose:\n  distance_bins_m: [.nan, 100.0]\n", "Input should be a finite number"),
        ("eval:\n  sample_seed: -1\n", "eval.sample_seed: Input should be greater than or equal to 0"),
        ("eval:\n  landmark_perturbation_seed: -2\n", "eval.landmark_perturbation_seed: Input"),
    ],
    ids=["duplicate_key", "alias_bomb", "deep", "inf", "nan", "sample_seed", "perturbation_seed"],
)  # fmt: skip
def test_a_hostile_params_file_is_one_line_and_exit_2_within_a_second(
    tmp_path, capsys, text, message
):
    params = tmp_path / "params.yaml"
    params.write_text(text)
    t0 = time.perf_counter()
    assert main(["--params", str(params), "-q", "evaluate", "--policy", "oracle"]) == 2
    assert time.perf_counter() - t0 < 1.0
    err = _one_line(capsys)
    assert str(params) in err and message in err
    assert not (tmp_path / "assets").exists()


# ---------------------------------------------------------------- synth


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--size", "inf"], "--size inf: synth.size: Input should be a finite number"),
        (["--size", "1e6"], "points per block; at most 100,000,000"),
        (["--density", "inf"], "--density inf: synth.density: Input should be a finite number"),
        (["--density", "1e4", "--size", "1000"], "points per block"),
        (["--seed", "-1"], "--seed -1: synth.seed: Input should be greater than or equal to 0"),
    ],
)
def test_synth_past_its_bounds_is_one_line_before_any_allocation(tmp_path, capsys, flags, message):
    out = tmp_path / "out"
    assert main(["-q", "synth", str(out), "--scenes", "1", *flags]) == 2
    assert message in _one_line(capsys)
    assert not out.exists()


# ---------------------------------------------------------------- evaluate


def test_evaluate_limit_past_its_bound_is_refused_before_playing(tmp_path, capsys):
    params = write_small_project(tmp_path)
    argv = ["--params", str(params), "-q", "evaluate", "--policy", "oracle"]
    assert main([*argv, "--limit", str(10**20)]) == 2
    err = _one_line(capsys)
    assert f"--limit {10**20}: eval.limit: Input should be less than or equal to 1000000000" in err
    assert not (tmp_path / "assets" / "eval").exists()


# ---------------------------------------------------------------- ground


@pytest.mark.parametrize("scene", ["../../escape", ".", "a/../b"])
def test_ground_scene_that_is_not_a_name_is_one_line(tmp_path, capsys, scene):
    params = write_small_project(tmp_path)
    argv = ["--params", str(params), "-q", "ground", "--scene", scene, "--query", "the red car"]
    assert main([*argv, "--policy", "landmark_prior"]) == 2
    err = _one_line(capsys)
    assert f"--scene: expected a plain name (no path separators), got {scene!r}" in err


def test_ground_query_of_bytes_that_are_not_utf8_is_one_line(tmp_path):
    """Bytes that are not UTF-8 on the command line (Python decodes them to lone surrogates)."""
    params = write_small_project(tmp_path)
    argv = [sys.executable, "-m", "urbex.cli", "--params", str(params), "-q", "ground"]
    argv += ["--scene", "synthville_block_0", "--policy", "landmark_prior"]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PYTHONUTF8": "1", "HF_HUB_OFFLINE": "1"}
    r = subprocess.run(
        [*argv, "--query", b"the caf\xe9 car"], env=env, capture_output=True, timeout=120
    )
    err = r.stderr.decode("utf-8", "replace").strip().splitlines()
    assert r.returncode == 2, err
    assert len(err) == 1 and "--query: not UTF-8" in err[0], err
