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
