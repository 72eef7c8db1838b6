"""Publishing a trained checkpoint: everything beside the weights, then one rename."""

from __future__ import annotations

import json

import polars as pl

from urbex.train.publish import publish_checkpoint


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
