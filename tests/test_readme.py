"""The README's "Use from Python" section: its snippets run, as they are, in a built project."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.fixtures.city import build_eval_project

REPO = Path(__file__).resolve().parents[1]


def section(title: str) -> str:
    """The README's ``## title`` section (up to the next ``## ``)."""
    text = (REPO / "README.md").read_text()
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else None]


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_readme_use_from_python_is_short_and_the_readme_under_300_lines():
    assert len(section("Use from Python").rstrip().splitlines()) <= 25
    assert len((REPO / "README.md").read_text().splitlines()) <= 300
    assert python_blocks(section("Use from Python"))


def test_readme_use_from_python_snippets_run_in_a_built_project(tmp_path, monkeypatch, capsys):
    pytest.importorskip("gymnasium")
    build_eval_project(tmp_path)  # tmp_path/assets: scenes, landmarks, splits
    (tmp_path / "params.yaml").write_text(
        "paths: {assets: assets}\n"
        "env: {global_view_size: [64, 64], zoom_size: [64, 64], oblique_size: [64, 64]}\n"
    )
    monkeypatch.chdir(tmp_path)
    scope: dict[str, object] = {}
    for block in python_blocks(section("Use from Python")):
        exec(compile(block, "README.md", "exec"), scope)
    out = capsys.readouterr().out
    assert "landmark_prior" in out and "test_nd" in out  # the warehouse's metrics row
    assert scope["traj"].outcome.answered  # type: ignore[attr-defined]
    assert (tmp_path / "assets" / "eval" / "runs").is_dir()
