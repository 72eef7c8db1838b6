"""``make demo``'s DVC record: ``dvc commit`` turns the files Dagster wrote into ``dvc.lock``."""

from __future__ import annotations

import subprocess

import pytest

from pipelines.demo import QUIET_LOGGERS, dvc_env, dvc_executable, record_with_dvc
from tests.fixtures.small_project import REPO_ROOT

DVC = dvc_executable(REPO_ROOT)


def test_demo_quiet_logger_config_is_warning():
    assert QUIET_LOGGERS == {"console": {"config": {"log_level": "WARNING"}}}


def test_record_with_dvc_skips_without_a_dvc_project(tmp_path, capsys):
    record_with_dvc(tmp_path)
    assert "skipped" in capsys.readouterr().out
    assert not (tmp_path / "dvc.lock").exists()


@pytest.mark.skipif(DVC is None, reason="no dvc (scripts/setup.sh installs it in .venv-dvc)")
def test_record_with_dvc_makes_status_clean(tmp_path, monkeypatch, capsys):
    assert DVC is not None
    monkeypatch.setenv("URBEX_DVC", str(DVC))  # the one record_with_dvc runs
    run = {"cwd": tmp_path, "capture_output": True, "text": True, "check": True, "env": dvc_env()}
    subprocess.run(["git", "init", "-q"], **run)
    subprocess.run([str(DVC), "init", "-q"], **run)
    (tmp_path / "params.yaml").write_text("k: 1\n")
    (tmp_path / "dvc.yaml").write_text(
        "stages:\n  a:\n    cmd: never run\n    params: [k]\n    outs: [out]\n"
    )
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "f.bin").write_bytes(b"written by the other door")
    record_with_dvc(tmp_path)
    assert "dvc commit dvc.yaml" in capsys.readouterr().out
    assert "out" in (tmp_path / "dvc.lock").read_text()
    status = subprocess.run([str(DVC), "status", "dvc.yaml"], **run).stdout
    assert "up to date" in status.lower(), status


def test_dvc_executable_prefers_urbex_dvc_then_the_isolated_env(tmp_path, monkeypatch):
    fake = tmp_path / ".venv-dvc" / "bin" / "dvc"
    fake.parent.mkdir(parents=True)
    fake.write_text("#!/bin/sh\n")
    monkeypatch.delenv("URBEX_DVC", raising=False)
    assert dvc_executable(tmp_path) == fake  # setup's isolated environment, before any other
    other = tmp_path / "elsewhere-dvc"
    other.write_text("#!/bin/sh\n")
    monkeypatch.setenv("URBEX_DVC", str(other))
    assert dvc_executable(tmp_path) == other


def test_demo_training_writes_none_of_the_training_pipelines_outputs():
    """The demo's shortened training (params-demo.yaml) has checkpoint names of its own: it never
    writes training/dvc.yaml's outputs (the full CPU recipe), so `dvc status` cannot mistake a
    demo for a changed run of that pipeline. Every stage's outs are resolved from the recipe's
    params, whatever section they name (``${reader.checkpoint}``, ``${sft.run_name}``, ...)."""
    import re

    import yaml

    from pipelines.demo import DEMO_RESOURCES
    from urbex.config import load_params

    stages = yaml.safe_load((REPO_ROOT / "training" / "dvc.yaml").read_text())["stages"]
    recipe = load_params([REPO_ROOT / "params.yaml", REPO_ROOT / "params-cpu.yaml"])
    demo = DEMO_RESOURCES["training_params"].load()

    def resolve(path: str, params) -> str:
        return re.sub(
            r"\$\{(\w+)\.(\w+)\}", lambda m: str(getattr(getattr(params, m[1]), m[2])), path
        )

    outs, sections = set(), set()
    for stage in stages.values():
        for out in stage["outs"]:
            path = next(iter(out)) if isinstance(out, dict) else out
            sections |= set(re.findall(r"\$\{(\w+)\.", path))
            outs.add((REPO_ROOT / resolve(path, recipe)).resolve())
    assert len(outs) == len(stages) and "$" not in "".join(map(str, outs))
    written = set()
    for name in sections:  # every checkpoint the demo's training reads or writes
        section = getattr(demo, name)
        written.add(demo.layout.checkpoint(section.run_name).resolve())
        if section.checkpoint is not None:
            written.add((demo.base_dir / section.checkpoint).resolve())
    assert not written & outs, written & outs
    assert (demo.base_dir / demo.train.checkpoint).resolve() == demo.layout.checkpoint(
        demo.sft.run_name
    ).resolve()  # GRPO starts from the demo's own SFT checkpoint
    assert demo.sft.steps < recipe.sft.steps and demo.train.max_steps < recipe.train.max_steps
    assert demo.env == recipe.env and demo.vlm == recipe.vlm  # otherwise the same recipe


def test_workflow_probe_counts_valid_answers_in_the_partitions_own_runs(monkeypatch):
    """The demo materializes the fixed workflow's partitions on a probe sample first
    (``SampleConfig.limit``) and counts the valid answers of those runs (none: it stops there
    and says so). The probe's runs are the ones the whole splits extend: a sampled spec has the
    run id of the unsampled one."""
    import polars as pl

    import urbex.eval.episodes as episodes
    from pipelines import demo as demo_mod
    from pipelines.defs.training import CHECKPOINT_SPLITS
    from pipelines.demo import DEMO_RESOURCES
    from urbex.eval.runspec import RunSpec

    read: list[str] = []
    valid = {"test_nd": [False, None, True, False], "test_no": [False] * 4}

    def fake_read(d):  # type: ignore[no-untyped-def]
        read.append(d.name)
        return pl.DataFrame({"valid_answer": valid[d.name.split("-")[1]]})

    monkeypatch.setattr(episodes, "read_episodes", fake_read)
    params = DEMO_RESOURCES["training_params"].load()
    ckpt = params.layout.checkpoint("demo-grpo")
    assert demo_mod._valid_answers(params, "demo-grpo") == 1
    probe = demo_mod.DEMO_WORKFLOW_PROBE
    assert read == [
        RunSpec.from_params(params, policy="workflow", split=s, checkpoint=ckpt, limit=probe).run_id
        for s in CHECKPOINT_SPLITS
    ]
    valid["test_nd"] = [False] * 4
    assert demo_mod._valid_answers(params, "demo-grpo") == 0
