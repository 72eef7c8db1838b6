"""Local checkpoints: the resolver's errors and relative paths, and the loader."""

from __future__ import annotations

import pytest

from urbex.agents.checkpoints import load_local_vlm, resolve_checkpoint
from urbex.config import Params
from urbex.errors import ConfigError, PolicyError


def test_resolve_checkpoint_none_names_the_flag_and_field():
    with pytest.raises(ConfigError, match=r"pass --ckpt PATH or set sft.checkpoint") as e:
        resolve_checkpoint(None, None, field="sft.checkpoint", flag="--ckpt")
    assert e.value.field == "sft.checkpoint"


def test_resolve_checkpoint_relative_path_is_resolved_against_the_params_dir(tmp_path):
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "config.json").write_text("{}")
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
