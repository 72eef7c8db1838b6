"""Local checkpoints: the resolver's errors and relative paths, and the loader."""

from __future__ import annotations

import json

import pytest

from urbex.agents.checkpoints import check_checkpoint, load_local_vlm, resolve_checkpoint
from urbex.config import Params
from urbex.errors import ConfigError, PolicyError


def test_resolve_checkpoint_none_names_the_flag_and_field():
    with pytest.raises(ConfigError, match=r"pass --ckpt PATH or set sft.checkpoint") as e:
        resolve_checkpoint(None, None, field="sft.checkpoint", flag="--ckpt")
    assert e.value.field == "sft.checkpoint"


def _fake_checkpoint(path, *, tensor_bytes=16, file_bytes=None):
    """config, tokenizer and image-processor files, and one safetensors file whose header says
    it holds ``tensor_bytes`` of tensor data (the file has ``file_bytes`` of it)."""
    path.mkdir()
    for name in ("config.json", "tokenizer.json", "processor_config.json"):
        (path / name).write_text("{}")
    header = json.dumps({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, tensor_bytes]}})
    data = b"\0" * (tensor_bytes if file_bytes is None else file_bytes)
    (path / "model.safetensors").write_bytes(
        len(header).to_bytes(8, "little") + header.encode() + data
    )
    return path


def test_check_checkpoint_reads_the_safetensors_header(tmp_path):
    check_checkpoint(_fake_checkpoint(tmp_path / "ok"))
    with pytest.raises(PolicyError, match=r"16 bytes where the tensors need|truncated"):
        check_checkpoint(_fake_checkpoint(tmp_path / "short", file_bytes=8))
    bad = _fake_checkpoint(tmp_path / "garbage")
    (bad / "model.safetensors").write_bytes(b"\xff" * 64)
    with pytest.raises(PolicyError, match=r"model\.safetensors"):
        check_checkpoint(bad)


def test_check_checkpoint_follows_the_shard_index(tmp_path):
    p = _fake_checkpoint(tmp_path / "sharded")
    (p / "model.safetensors").rename(p / "model-00001-of-00002.safetensors")
    index = {"weight_map": {"a": "model-00001-of-00002.safetensors",
                            "b": "model-00002-of-00002.safetensors"}}  # fmt: skip
    (p / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(PolicyError, match="missing"):
        check_checkpoint(p)


def test_resolve_checkpoint_relative_path_is_resolved_against_the_params_dir(tmp_path):
    _fake_checkpoint(tmp_path / "ckpt")
    params = Params(base_dir=tmp_path)
    assert resolve_checkpoint(params, "ckpt", field="vlm.checkpoint") == tmp_path / "ckpt"
    assert resolve_checkpoint(None, tmp_path / "ckpt", field="vlm.checkpoint") == tmp_path / "ckpt"


@pytest.mark.parametrize("make", ["missing", "file", "no_config"])
def test_resolve_checkpoint_not_a_checkpoint_dir_raises_policy_error(tmp_path, make):
    p = tmp_path / "ckpt"
    if make == "file":
        p.write_text("x")
    elif make == "no_config":
        p.mkdir()
    with pytest.raises(PolicyError, match=r"config.json missing.*never downloads") as e:
        resolve_checkpoint(Params(base_dir=tmp_path), "ckpt", field="train.checkpoint")
    assert e.value.path == p and e.value.field == "train.checkpoint"


def test_load_local_vlm_unknown_dtype_raises(tmp_path):
    with pytest.raises(ValueError, match="dtype: expected auto/float32/bfloat16/float16"):
        load_local_vlm(tmp_path, dtype="int8")


def test_load_local_vlm_without_processor_raises_policy_error(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(PolicyError, match="no loadable processor") as e:
        load_local_vlm(tmp_path, field="vlm.checkpoint")
    assert e.value.field == "vlm.checkpoint"


def test_load_local_vlm_loads_a_tiny_model(tmp_path):
    from urbex.train.tiny import make_tiny_model

    path = make_tiny_model(tmp_path / "tiny", seed=0)
    model, processor = load_local_vlm(path)
    assert processor.tokenizer is not None and processor.image_processor is not None
    assert next(model.parameters()).dtype.is_floating_point
    assert str(next(model.parameters()).dtype) == "torch.float32"
