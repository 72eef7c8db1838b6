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
    assert resolve_checkpoint(params.base_dir, "ckpt", field="vlm.checkpoint") == tmp_path / "ckpt"
    assert resolve_checkpoint(None, tmp_path / "ckpt", field="vlm.checkpoint") == tmp_path / "ckpt"


@pytest.mark.parametrize("make", ["missing", "file", "no_config"])
def test_resolve_checkpoint_not_a_checkpoint_dir_raises_policy_error(tmp_path, make):
    p = tmp_path / "ckpt"
    if make == "file":
        p.write_text("x")
    elif make == "no_config":
        p.mkdir()
    with pytest.raises(PolicyError, match=r"config.json missing.*never downloads") as e:
        resolve_checkpoint(Params(base_dir=tmp_path).base_dir, "ckpt", field="train.checkpoint")
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


def _header(path, header) -> None:
    """Replace the checkpoint's weights by a file with this safetensors header (and 64 bytes)."""
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    (path / "model.safetensors").write_bytes(len(raw).to_bytes(8, "little") + raw + b"\0" * 64)


def _config(path, config) -> None:
    (path / "config.json").write_text(json.dumps(config))


_WIDE = {"lm_head.weight": {"dtype": "F32", "shape": [4, 64], "data_offsets": [0, 16]}}


@pytest.mark.parametrize(
    ("damage", "file", "message"),
    [
        (lambda p: _header(p, [1, 2]), "model.safetensors", "header is a JSON list"),
        (lambda p: _header(p, {"w": {"dtype": "F32", "shape": [4], "data_offsets": ["0", "16"]}}),
         "model.safetensors", "data_offsets ['0', '16']"),
        (lambda p: _header(p, {"w": {"dtype": "F32", "shape": "4", "data_offsets": [0, 16]}}),
         "model.safetensors", "shape '4'"),
        (lambda p: _header(p, b"[" * 10_000 + b"]" * 10_000), "model.safetensors", "too deeply"),
        (lambda p: (p / "model.safetensors.index.json").write_text('{"weight_map": {"a": 1}}'),
         "model.safetensors.index.json", "must be shard file names, got 1"),
        (lambda p: (p / "model.safetensors.index.json").write_text("[" * 10_000 + "]" * 10_000),
         "model.safetensors.index.json", "unreadable weight index"),
        (lambda p: _config(p, {"hidden_size": "big"}), "config.json", "hidden_size: expected"),
        (lambda p: _config(p, {"text_config": {"num_hidden_layers": 2.5}}), "config.json",
         "text_config.num_hidden_layers: expected a whole number > 0, got 2.5"),
        (lambda p: (_header(p, _WIDE), _config(p, {"text_config": {"hidden_size": 32}})),
         "config.json", "hidden_size 32 but the weights are 64 wide (lm_head.weight"),
        (lambda p: _config(p, [1]), "config.json", "a JSON list"),
        (lambda p: (p / "config.json").write_text("{" * 10_000), "config.json", "unreadable"),
    ],
    ids=["header_list", "string_offsets", "string_shape", "deep_header", "int_weight_map",
         "deep_index", "hidden_big", "float_layers", "wider_weights", "config_list",
         "deep_config"],
)  # fmt: skip
def test_check_checkpoint_damaged_is_one_line_naming_the_file(tmp_path, damage, file, message):
    p = _fake_checkpoint(tmp_path / "ckpt")
    damage(p)
    with pytest.raises(PolicyError) as e:
        check_checkpoint(p, field="vlm.checkpoint")
    text = str(e.value)
    assert text.startswith(f"{p / file}: ") and message in text and "\n" not in text
    assert len(text) < 400


def test_load_local_vlm_of_another_model_type_is_one_short_line(tmp_path):
    from urbex.train.tiny import make_tiny_model

    path = make_tiny_model(tmp_path / "tiny", seed=0)
    config = json.loads((path / "config.json").read_text())
    _config(path, {**config, "model_type": "bert"})
    with pytest.raises(PolicyError) as e:
        load_local_vlm(path, field="vlm.checkpoint")
    text = str(e.value)
    assert text.startswith(f"{path / 'config.json'}: ") and "model_type 'bert'" in text
    assert "\n" not in text and len(text) < 400


def test_recipe_record_chains_the_steps_and_smoke_of_the_stages_behind(tmp_path):
    """Each training stage records the recipe and the steps of every stage behind its
    checkpoint; a smoke base makes the checkpoint smoke, whatever its own recipe says."""
    from urbex.agents.checkpoints import read_recipe, recipe_record

    demo = Params(recipe={"name": "demo", "smoke": True})
    full = Params(recipe={"name": "cpu"})
    tiny = tmp_path / "tiny"
    tiny.mkdir()
    assert read_recipe(tiny) is None  # a base model: no record
    reader = tmp_path / "reader"
    reader.mkdir()
    (reader / "reader.json").write_text(
        json.dumps({"recipe": recipe_record(demo.recipe, "reader", 20, tiny)})
    )
    sft = tmp_path / "sft"
    sft.mkdir()
    rec = recipe_record(full.recipe, "sft", 500, reader)
    assert rec == {"name": "cpu", "smoke": True, "steps": {"reader": 20, "sft": 500}}
    (sft / "sft.json").write_text(json.dumps({"recipe": rec}))
    assert read_recipe(sft) == rec
    assert recipe_record(full.recipe, "grpo", 40, tiny) == {
        "name": "cpu", "smoke": False, "steps": {"grpo": 40}
    }  # fmt: skip
    (sft / "sft.json").write_text("{not json")
    assert read_recipe(sft) is None  # a label, never an error
    with pytest.raises(ValueError, match="stage 'rl'"):
        recipe_record(full.recipe, "rl", 1, tiny)


def test_recipe_name_is_checked_like_a_run_name():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=r"recipe\.name: expected a safe name"):
        Params.model_validate({"recipe": {"name": "../x"}})
