"""``urbex train`` under ``accelerate launch`` with 2 CPU processes (gloo) on the tiny model.

The multi-GPU recipe (``training/accelerate/*.yaml``) in miniature: two ranks train together,
one checkpoint is published (by rank 0), and both ranks report the same step count. Short: 2
optimizer steps, 2 queries, 2 turns, 48-token episodes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.fixtures.small_project import write_small_project
from urbex.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.distributed
def test_accelerate_two_cpu_processes_publish_one_checkpoint(tmp_path):
    pytest.importorskip("trl")
    accelerate = Path(sys.executable).with_name("accelerate")
    launcher = (
        [str(accelerate), "launch"]
        if accelerate.exists()
        else [sys.executable, "-m", "accelerate.commands.launch"]
    )
    params = write_small_project(
        tmp_path,
        env={
            "global_view_size": [64, 64],
            "zoom_size": [64, 64],
            "oblique_size": [64, 64],
            "max_turns": 2,
        },
        train={
            "limit": 2,
            "num_generations": 2,
            "per_device_train_batch_size": 2,  # x 2 processes = 4 rollouts = 2 groups
            "max_completion_length": 48,
            "device": "cpu",
            "save_steps": 1,
        },
    )
    for cmd in ("synth", "cache", "landmarks", "splits"):
        assert main(["--params", str(params), "-q", cmd]) == 0, cmd
    from urbex.train.tiny import make_tiny_model

    tiny = make_tiny_model(tmp_path / "tiny", seed=0)
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TQDM_DISABLE": "1",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    cmd = [
        *launcher,
        *("--config_file", str(ROOT / "training" / "accelerate" / "cpu.yaml")),
        *("--num_cpu_threads_per_process", "1", "--main_process_port", str(_free_port())),
        *("-m", "urbex.cli", "--params", str(params), "-q", "train"),
        *("--checkpoint", str(tiny), "--run-name", "acc", "--max-steps", "2"),
    ]
    out = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    log = out.stdout[-4000:] + out.stderr[-4000:]
    assert out.returncode == 0, log
    # each rank prints its summary line: both ran, and agree on the step count
    # (the two ranks share one pipe: their lines may run together)
    steps = re.findall(r"acc: (\d+) GRPO steps on (\d+) queries", out.stdout)
    assert steps == [("2", "2"), ("2", "2")], log
    assets = tmp_path / "assets" / "checkpoints"
    final = assets / "acc"
    assert sorted(p.name for p in assets.iterdir()) == ["acc"]  # one checkpoint, no staging left
    summary = json.loads((final / "train.json").read_text())
    assert summary["steps"] == 2
    assert (final / "config.json").is_file() and (final / "train_log.parquet").is_file()
    shutil.rmtree(tmp_path / "tiny")


def test_accelerate_configs_are_valid_yaml_for_eight_gpus():
    d = ROOT / "training" / "accelerate"
    kinds = {}
    cpu = yaml.safe_load((d / "cpu.yaml").read_text())
    assert (cpu["num_processes"], cpu["mixed_precision"]) == (2, "no")
    for name in ("ddp.yaml", "zero2.yaml", "zero3.yaml"):
        cfg = yaml.safe_load((d / name).read_text())
        assert cfg["num_processes"] == 8 and cfg["mixed_precision"] == "bf16", name
        kinds[name] = (cfg["distributed_type"], cfg.get("deepspeed_config", {}).get("zero_stage"))
    assert kinds == {
        "ddp.yaml": ("MULTI_GPU", None),
        "zero2.yaml": ("DEEPSPEED", 2),
        "zero3.yaml": ("DEEPSPEED", 3),
    }
