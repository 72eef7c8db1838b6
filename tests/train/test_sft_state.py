"""SFT's resume state (urbex/train/sft_state.py): whole or absent, and only for its settings.

The resume itself (a Ctrl-C'd ``sft`` that trains on bit for bit) is tested in
``tests/train/test_sft.py`` and, as a process interrupted by SIGINT, in ``tests/test_faults.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

torch = pytest.importorskip("torch")

from urbex.train.sft_state import RESUME_DIR, SFTState, load_state, save_state  # noqa: E402


def _state(step: int) -> SFTState:
    rng = np.random.default_rng(3)
    rng.random(5)
    im = Image.new("RGB", (8, 6), (10, 200, 30))
    return SFTState(
        step=step,
        tensors={"model": {"w": torch.arange(6.0)}, "torch_rng": torch.get_rng_state()},
        numpy_rng=dict(rng.bit_generator.state),
        order=[3, 1, 2],
        log=[{"step": 1, "loss": 2.5, "learning_rate": 1e-3, "seconds": 0.1}],
        n_tok=[10, 12],
        n_sup=[3, 4],
        recovery={
            "episodes": 2,
            "with_errors": 1,
            "kept": 1,
            "proposals": 5,
            "errors": 2,
            "seconds": 1.5,
        },
        recovery_examples=[
            {"text": "t", "query_id": "q", "supervised": [True, False], "images": (im,)}
        ],
        seconds=4.25,
    )


def test_a_saved_state_loads_back_whole(tmp_path):
    save_state(tmp_path, _state(4), {"lr": 1e-3})
    got = load_state(tmp_path, {"lr": 1e-3})
    assert got is not None and got.step == 4 and got.order == [3, 1, 2]
    assert torch.equal(got.tensors["model"]["w"], torch.arange(6.0))
    rng = np.random.default_rng(0)
    rng.bit_generator.state = got.numpy_rng
    ref = np.random.default_rng(3)
    ref.random(5)
    assert rng.random() == ref.random()  # the example order continues where it stopped
    (ex,) = got.recovery_examples
    assert ex["supervised"] == (True, False) and ex["text"] == "t"
    assert np.array_equal(
        np.asarray(ex["images"][0]), np.asarray(_state(4).recovery_examples[0]["images"][0])
    )
    assert got.recovery is not None and got.recovery["kept"] == 1 and got.seconds == 4.25


def test_other_settings_or_no_state_load_nothing(tmp_path):
    assert load_state(tmp_path, {"lr": 1e-3}) is None
    save_state(tmp_path, _state(2), {"lr": 1e-3})
    assert load_state(tmp_path, {"lr": 2e-3}) is None


def test_a_save_that_fails_keeps_the_previous_state(tmp_path, monkeypatch):
    save_state(tmp_path, _state(2), {"lr": 1e-3})

    def broken(*args, **kwargs):
        raise KeyboardInterrupt  # Ctrl-C while the next state is written

    monkeypatch.setattr(torch, "save", broken)
    with pytest.raises(KeyboardInterrupt):
        save_state(tmp_path, _state(4), {"lr": 1e-3})
    got = load_state(tmp_path, {"lr": 1e-3})
    assert got is not None and got.step == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == [RESUME_DIR]  # no half state left
