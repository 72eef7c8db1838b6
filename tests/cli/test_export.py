"""``urbex export``: refuses an existing folder without --force, one-line errors, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.city import build_eval_project

datasets = pytest.importorskip("datasets")

ENV = {"global_view_size": [64, 64], "zoom_size": [64, 64], "oblique_size": [64, 64]}


@pytest.fixture(scope="module")
def assets(tmp_path_factory) -> Path:
    return build_eval_project(tmp_path_factory.mktemp("export-cli"))


def test_export_refuses_an_existing_folder_without_force(assets, tmp_path, capsys):
    from urbex.cli import main

    out = tmp_path / "ds"
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    base = ["--params", str(_write_params(assets, tmp_path)), "--quiet", "export", str(out)]
    assert main([*base, "--split", "train", "--limit", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert "already exists; pass --force" in err and "\n" not in err
    assert (out / "mine.txt").read_text() == "keep"
    assert main([*base, "--split", "train", "--limit", "2", "--force"]) == 0
    assert not (out / "mine.txt").exists()
    assert len(datasets.load_from_disk(str(out))) >= 1


def _write_params(assets: Path, tmp_path: Path) -> Path:
    import yaml

    p = tmp_path / "params.yaml"
    p.write_text(
        yaml.safe_dump({"paths": {"assets": str(assets)}, "env": ENV, "sft": {"per_query": 1}})
    )
    return p


def test_export_unknown_split_is_argparse_s_exit_2(capsys):
    from urbex.cli import main

    with pytest.raises(SystemExit) as e:
        main(["export", "out", "--split", "dev"])
    assert e.value.code == 2 and "invalid choice: 'dev'" in capsys.readouterr().err
