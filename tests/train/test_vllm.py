"""``train.use_vllm``: colocate mode into ``GRPOConfig``, and a clear error where vLLM cannot run."""

from __future__ import annotations

import importlib.util

import pytest

from tests.fixtures.small_project import write_small_project
from urbex.cli import main
from urbex.config import Params
from urbex.errors import ConfigError
from urbex.train import config as tc

SMALL_ENV = {"global_view_size": [64, 64], "zoom_size": [64, 64], "oblique_size": [64, 64]}
TRAIN = {"num_generations": 2, "per_device_train_batch_size": 2, "max_completion_length": 256}


def _grpo_config(p, out, **kw):
    """``make_grpo_config`` from the ``train`` and ``env`` sections of ``p``."""
    return tc.make_grpo_config(p.train, p.env, out, **kw)


def _params(**train) -> Params:
    return Params(env=SMALL_ENV, train={**TRAIN, **train})


def _pretend_vllm(monkeypatch, present: bool) -> None:
    real = importlib.util.find_spec

    def find_spec(name, *args, **kwargs):
        if name == "vllm":
            return object() if present else None
        return real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def test_use_vllm_without_vllm_names_the_field_and_the_fix(monkeypatch, tmp_path):
    _pretend_vllm(monkeypatch, present=False)
    with pytest.raises(ConfigError, match=r"vllm package.*pip install vllm.*use_vllm: false") as e:
        _grpo_config(_params(use_vllm=True, device="cuda"), tmp_path)
    assert e.value.field == "train.use_vllm"


def test_use_vllm_on_cpu_is_refused(monkeypatch, tmp_path):
    _pretend_vllm(monkeypatch, present=True)
    with pytest.raises(ConfigError, match=r"train\.device: cuda"):
        _grpo_config(_params(use_vllm=True, device="cpu"), tmp_path)


def test_use_vllm_maps_to_colocate_mode(monkeypatch, tmp_path):
    pytest.importorskip("trl")
    _pretend_vllm(monkeypatch, present=True)
    monkeypatch.setattr(tc, "resolve_device", lambda device: "cuda")
    cfg = _grpo_config(
        _params(use_vllm=True, device="cuda", vllm_gpu_memory_utilization=0.25),
        tmp_path,
        use_cpu=True,  # no GPU here: only the mapping is checked
        bf16=False,
    )
    assert (cfg.use_vllm, cfg.vllm_mode, cfg.vllm_gpu_memory_utilization) == (
        True,
        "colocate",
        0.25,
    )
    off = _grpo_config(_params(device="cuda"), tmp_path, use_cpu=True, bf16=False)
    assert off.use_vllm is False


def test_urbex_train_with_use_vllm_fails_before_loading_anything(monkeypatch, tmp_path, capsys):
    _pretend_vllm(monkeypatch, present=False)
    params = write_small_project(
        tmp_path, env=SMALL_ENV, train={**TRAIN, "use_vllm": True, "device": "cuda", "limit": 2}
    )
    for cmd in ("synth", "cache", "landmarks", "splits"):
        assert main(["--params", str(params), "-q", cmd]) == 0
    base = tmp_path / "base"  # never loaded: the guard comes first
    base.mkdir()
    for name in ("config.json", "tokenizer.json", "processor_config.json"):
        (base / name).write_text("{}")
    (base / "model.safetensors").write_bytes((2).to_bytes(8, "little") + b"{}")  # no tensors
    rc = main(["--params", str(params), "-q", "train", "--checkpoint", str(base)])
    assert rc == 2
    assert "train.use_vllm" in capsys.readouterr().err
    assert not (tmp_path / "assets" / "checkpoints").exists()
