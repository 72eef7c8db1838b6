"""``make demo``'s DVC record: ``dvc commit`` turns the files Dagster wrote into ``dvc.lock``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.demo import QUIET_LOGGERS, record_with_dvc

DVC = Path(sys.executable).with_name("dvc")


def test_demo_quiet_logger_config_is_warning():
    assert QUIET_LOGGERS == {"console": {"config": {"log_level": "WARNING"}}}


def test_record_with_dvc_skips_without_a_dvc_project(tmp_path, capsys):
    record_with_dvc(tmp_path)
    assert "skipped" in capsys.readouterr().out
    assert not (tmp_path / "dvc.lock").exists()


@pytest.mark.skipif(not DVC.is_file(), reason="dvc is not installed in this environment")
def test_record_with_dvc_makes_status_clean(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", f"{DVC.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    run = {"cwd": tmp_path, "capture_output": True, "text": True, "check": True}
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
