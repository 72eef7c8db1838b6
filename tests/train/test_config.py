"""GRPO configuration (:mod:`urbex.train.config`): ``params.train`` + ``params.env`` →
``trl.GRPOConfig``, and the checks that run before any model."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from tests.fixtures.small_project import write_small_project
from urbex.config import Params, load_params
from urbex.errors import ConfigError
from urbex.train.config import (
    MIN_TURN_TOKENS,
    check_completion_length,
    check_generation_batch,
    image_tokens,
    resolve_device,
)


def _grpo_config(p, out, **kw):
    """``make_grpo_config`` from the ``train`` and ``env`` sections of ``p``."""
    from urbex.train.config import make_grpo_config

    return make_grpo_config(p.train, p.env, out, **kw)


@pytest.mark.parametrize(
    ("batch", "accum", "gens", "ok"),
    [(8, 1, 8, True), (4, 2, 8, True), (4, 1, 8, False), (3, 1, 2, False), (6, 1, 3, True)],
)
def test_make_grpo_config_generation_batch_divisibility(tmp_path, batch, accum, gens, ok):
    pytest.importorskip("trl")

    params = load_params(
        write_small_project(tmp_path),
        train={
            "per_device_train_batch_size": batch,
            "gradient_accumulation_steps": accum,
            "num_generations": gens,
            "device": "cpu",
        },
    )
    if ok:
        cfg = _grpo_config(params, tmp_path / "out")
        assert cfg.generation_batch_size == batch * accum
        assert cfg.num_generations == gens
    else:
        with pytest.raises(ValueError, match=r"train\.per_device_train_batch_size"):
            _grpo_config(params, tmp_path / "out")


def test_make_grpo_config_maps_params(tmp_path):
    pytest.importorskip("trl")

    params = load_params(
        write_small_project(tmp_path, env={"max_turns": 8}),
        train={"device": "cpu", "max_steps": 300, "save_steps": 25},
    )
    cfg = _grpo_config(params, tmp_path / "out", save_strategy="no")
    assert cfg.max_tool_calling_iterations == 7  # 8 assistant turns
    assert cfg.use_cpu and not cfg.bf16 and not cfg.activation_checkpointing
    assert cfg.beta == 0.0 and cfg.loss_type == "dapo" and cfg.max_steps == 300
    assert cfg.save_steps == 25 and cfg.save_strategy == "no"
    assert cfg.output_dir == str(tmp_path / "out")


def test_check_generation_batch_counts_processes():
    assert (
        check_generation_batch(
            per_device_train_batch_size=4,
            gradient_accumulation_steps=1,
            num_generations=8,
            world_size=2,
        )
        == 8
    )
    with pytest.raises(ValueError, match="num_generations"):
        check_generation_batch(
            per_device_train_batch_size=4, gradient_accumulation_steps=1, num_generations=1
        )


def _params(tmp_path, **train):
    return load_params(write_small_project(tmp_path), train={"device": "cpu", **train})


def test_urbex_config_does_not_import_trl():
    code = "import sys, urbex.config, urbex.params_files; print('trl' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_make_grpo_config_passes_train_trl_through(tmp_path):
    pytest.importorskip("trl")

    params = _params(tmp_path, trl={"max_grad_norm": 0.25, "report_to": "none"})
    cfg = _grpo_config(params, tmp_path / "out")
    assert cfg.max_grad_norm == 0.25 and cfg.report_to == []
    default = _grpo_config(_params(tmp_path), tmp_path / "out")
    assert default.max_grad_norm != 0.25 and default.report_to == ["tensorboard"]


def test_make_grpo_config_report_to_follows_train_report_to(tmp_path):
    pytest.importorskip("trl")

    params = _params(tmp_path, report_to="none")
    assert _grpo_config(params, tmp_path / "out").report_to == []


@pytest.mark.parametrize(
    ("trl", "match"),
    [
        (
            {"max_grad_nrom": 1.0},
            r"'train\.trl\.max_grad_nrom'.*nearest GRPOConfig field: 'max_grad_norm'",
        ),
        ({"learning_rate": 1.0}, r"'train\.trl\.learning_rate'.*from train\.learning_rate"),
        (
            {"max_tool_calling_iterations": 2},
            r"'train\.trl\.max_tool_calling_iterations'.*env\.max_turns",
        ),
    ],
)
def test_make_grpo_config_bad_trl_name_is_a_config_error(tmp_path, trl, match):
    pytest.importorskip("trl")

    params = _params(tmp_path, trl=trl)  # urbex.config does not know trl: loading accepts it
    with pytest.raises(ConfigError, match=match):
        _grpo_config(params, tmp_path / "out")


def test_owned_fields_are_grpo_config_fields():
    trl = pytest.importorskip("trl")
    from urbex.train.config import OWNED_FIELDS

    names = {f.name for f in dataclasses.fields(trl.GRPOConfig)}
    assert set(OWNED_FIELDS) <= names


def test_the_typed_loss_types_are_the_ones_the_installed_trl_documents():
    # trl types GRPOConfig.loss_type as str and lists its values only in the field's help:
    # a trl upgrade that adds or drops one fails here, not in a user's run after the rollouts
    import re
    import typing

    trl = pytest.importorskip("trl")
    from urbex.config import GRPOLossType

    field = {f.name: f for f in dataclasses.fields(trl.GRPOConfig)}["loss_type"]
    listed = re.search(r"Supported values are (.*?)\.\s", field.metadata["help"])
    assert listed is not None, "trl's loss_type help no longer lists its values"
    assert set(re.findall(r"'(\w+)'", listed.group(1))) == set(typing.get_args(GRPOLossType))


def test_train_unknown_loss_type_is_a_one_line_error_at_load(tmp_path):
    import yaml

    from urbex.config import load_params

    f = tmp_path / "params.yaml"
    f.write_text(yaml.safe_dump({"train": {"loss_type": "dapoo"}}))
    with pytest.raises(ConfigError, match=r"train\.loss_type.*'dapo'.*got 'dapoo'") as e:
        load_params(f)
    assert len(str(e.value).splitlines()) == 1
    pytest.importorskip("trl")
    assert _grpo_config(_params(tmp_path, loss_type="grpo"), tmp_path / "o").loss_type == "grpo"


@pytest.mark.parametrize(
    ("train", "match"),
    [
        ({"lr_scheduler": "linearr"}, "linearr"),
        ({"trl": {"auto_find_batch_size": True}}, "auto_find_batch_size"),
    ],
)
def test_make_grpo_config_trl_validation_is_a_config_error(tmp_path, train, match):
    pytest.importorskip("trl")

    with pytest.raises(ConfigError, match=rf"field 'train': trl\.GRPOConfig rejected.*{match}"):
        _grpo_config(_params(tmp_path, **train), tmp_path / "out")


@pytest.mark.parametrize(
    ("size", "tokens"),
    [((64, 64), 4), ((512, 512), 256), ((16, 16), 1), ((1, 1), 1), ((100, 40), 5), ((96, 96), 9)],
)
def test_image_tokens_counts_merged_patches(size, tokens):
    assert image_tokens(size) == tokens


def test_image_tokens_other_patch_and_merge():
    assert image_tokens((448, 448), patch=14, merge=2) == 256
    assert image_tokens((448, 448), patch=14, merge=1) == 1024


def test_check_completion_length_needs_one_tool_image_and_a_turn():
    env = {"zoom_size": [256, 256], "oblique_size": [128, 128]}
    need = image_tokens((256, 256)) + MIN_TURN_TOKENS
    ok = Params(env=env, train={"max_completion_length": need})
    check_completion_length(ok.train, ok.env)
    short = Params(env=env, train={"max_completion_length": need - 1})
    with pytest.raises(ValueError, match=rf"set it to at least {need}"):
        check_completion_length(short.train, short.env)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_resolve_device_explicit_devices_are_kept(device):
    assert resolve_device(device) == device


def test_resolve_device_auto_and_unknown():
    import torch

    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ValueError, match=r"train\.device: expected auto, cpu or cuda, got 'tpu'"):
        resolve_device("tpu")
