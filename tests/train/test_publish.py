"""Publishing a trained checkpoint: everything beside the weights, then one rename, never over
the base checkpoint or what another run or the user left under the same name."""

from __future__ import annotations

import json

import polars as pl
import pytest

from urbex.cli import main
from urbex.errors import OutputExistsError, UrbexError
from urbex.train.publish import publish_checkpoint, refuse_replacing


class _Processor:
    """Writes what ``save_pretrained`` would: a processor file in the directory."""

    def save_pretrained(self, path):
        (path / "processor_config.json").write_text('{"ok": true}')


def test_publish_checkpoint_writes_processor_tables_summary_and_renames(tmp_path):
    staging = tmp_path / "checkpoints" / ".staging-sft"
    staging.mkdir(parents=True)
    (staging / "model.safetensors").write_bytes(b"weights")
    final = tmp_path / "checkpoints" / "sft"
    log = pl.DataFrame({"step": [1, 2], "loss": [0.5, 0.25]})
    out = publish_checkpoint(staging, final, processor=_Processor(), summary_file="sft.json",
                             summary={"steps": 2, "path": final}, tables={"log.parquet": log})  # fmt: skip
    assert out == final and not staging.exists()
    assert sorted(p.name for p in final.iterdir()) == [
        "log.parquet", "model.safetensors", "processor_config.json", "sft.json"]  # fmt: skip
    assert json.loads((final / "sft.json").read_text()) == {"steps": 2, "path": str(final)}
    assert pl.read_parquet(final / "log.parquet").equals(log)


def test_publish_checkpoint_replaces_an_older_checkpoint(tmp_path):
    final = tmp_path / "ck"
    final.mkdir()
    (final / "stale.bin").write_text("old")
    staging = tmp_path / ".staging-ck"
    staging.mkdir()
    publish_checkpoint(staging, final, processor=_Processor(), summary_file="s.json", summary={})
    assert sorted(p.name for p in final.iterdir()) == ["processor_config.json", "s.json"]
    assert [p.name for p in tmp_path.iterdir()] == ["ck"]  # the old one is gone, not beside it


# ---------------------------------------------------------------- what a run may replace


def _fake_checkpoint(path):
    """A directory :func:`urbex.agents.checkpoints.check_checkpoint` accepts (headers only)."""
    path.mkdir(parents=True)
    (path / "config.json").write_text('{"model_type": "qwen3_vl"}')
    (path / "model.safetensors").write_bytes((2).to_bytes(8, "little") + b"{}")
    (path / "tokenizer.json").write_text("{}")
    (path / "preprocessor_config.json").write_text("{}")
    return path


@pytest.fixture
def project(tmp_path):
    (tmp_path / "params.yaml").write_text("paths:\n  assets: assets\n")
    checkpoints = tmp_path / "assets" / "checkpoints"
    return tmp_path / "params.yaml", checkpoints, _fake_checkpoint(checkpoints / "base")


@pytest.mark.parametrize("command", ["sft", "train"])
@pytest.mark.parametrize("force", [[], ["--force"]])
def test_refuse_replacing_the_base_checkpoint_even_with_force(project, command, force, capsys):
    params, _, base = project
    before = (base / "model.safetensors").read_bytes()
    argv = ["--params", str(params), "-q", command, "--checkpoint", str(base), "--run-name", "base"]
    assert main([*argv, *force]) == 2
    err = capsys.readouterr().err
    assert "is the base checkpoint" in err and "Traceback" not in err and len(err.splitlines()) == 1
    assert (base / "model.safetensors").read_bytes() == before


@pytest.mark.parametrize("command", ["sft", "train"])
@pytest.mark.parametrize("kind", ["file", "folder"])
def test_refuse_replacing_a_users_file_or_folder_without_force(
    project, command, kind, monkeypatch, capsys
):
    params, checkpoints, base = project
    module = "urbex.train.sft.sft" if command == "sft" else "urbex.train.grpo.train"

    def trains(*_a, **_k):
        raise UrbexError("training starts")

    monkeypatch.setattr(module, trains)
    mine = checkpoints / "mine"
    if kind == "file":
        mine.write_text("my notes")
    else:
        mine.mkdir()
        (mine / "notes.txt").write_text("my notes")
    argv = ["--params", str(params), "-q", command, "--checkpoint", str(base), "--run-name", "mine"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{mine}: " in err and "--force" in err and len(err.splitlines()) == 1
    assert (mine if kind == "file" else mine / "notes.txt").read_text() == "my notes"
    assert main([*argv, "--force"]) == 2
    assert "training starts" in capsys.readouterr().err


def test_refuse_replacing_allows_a_rerun_and_the_other_trainers_checkpoint_only_with_force(
    tmp_path,
):
    base = _fake_checkpoint(tmp_path / "base")
    sft_out = tmp_path / "sft"
    sft_out.mkdir()
    (sft_out / "sft.json").write_text(json.dumps({"kind": "sft", "params": {"run_name": "sft"}}))
    refuse_replacing(sft_out, base=base, summary_file="sft.json", force=False)  # a rerun
    with pytest.raises(OutputExistsError, match=r"no train\.json"):
        refuse_replacing(sft_out, base=base, summary_file="train.json", force=False)
    refuse_replacing(sft_out, base=base, summary_file="train.json", force=True)
    grpo = tmp_path / "grpo"
    grpo.mkdir()
    (grpo / "train.json").write_text(json.dumps({"run_name": "other"}))  # copied, not renamed
    with pytest.raises(OutputExistsError, match="not a checkpoint of this run"):
        refuse_replacing(grpo, base=base, summary_file="train.json", force=False)
    refuse_replacing(tmp_path / "new", base=base, summary_file="train.json", force=False)
    with pytest.raises(OutputExistsError, match="base checkpoint"):  # a base inside the output
        refuse_replacing(tmp_path, base=base, summary_file="sft.json", force=True)
