"""urbex.train.drill_loss: drills padded in length groups give one padded batch's loss and
gradients; answers are numbered across a batch; an over-long drill is a one-line error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from urbex.config_env import MarksParams
from urbex.errors import ConfigError
from urbex.train.drills import Drill, DrillSources, mark_lookup_drill

MARKS = MarksParams(enabled=True, describe="attributes", layout="id_last")


def _drills(n: int, seed: int = 0) -> list[Drill]:
    """Look-up drills over random listings of 2 to 16 marks (lengths differ several-fold)."""
    rng = np.random.default_rng(seed)
    out: list[Drill] = []
    while len(out) < n:
        d = mark_lookup_drill(
            rng, DrillSources(), level=int(rng.integers(2, 17)), full=False, answers=4,
            synthetic_rate=1.0, marks=MARKS,
        )  # fmt: skip
        if d is not None:
            out.append(d)
    return out


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    from urbex.train.tiny import TinyModelSpec, make_tiny_model

    corpus = [d.text for d in _drills(40, seed=1)]
    out = tmp_path_factory.mktemp("m") / "tiny"
    spec = TinyModelSpec(hidden_size=32, vocab_size=600)
    return make_tiny_model(out, seed=0, spec=spec, corpus=corpus, number_tokens=True)


def test_drill_loss_in_length_groups_is_one_padded_batchs_loss_and_gradient(tiny):
    import torch

    from urbex.agents.checkpoints import load_local_vlm
    from urbex.train.drill_loss import answer_logits, drill_loss, encode_drills, length_groups

    model, proc = load_local_vlm(tiny)
    tok = proc.tokenizer
    drills = _drills(11)
    lengths = [len(encode_drills([d], tok, 4096)["input_ids"][0]) for d in drills]
    assert len(set(lengths)) > 5 and len(length_groups(lengths)) == 3

    def grads(loss):
        model.zero_grad(set_to_none=True)
        loss.backward()
        return [p.grad.clone() for p in model.parameters() if p.grad is not None]

    logits, target, _ = answer_logits(model, encode_drills(drills, tok, 4096))
    one = torch.nn.functional.cross_entropy(logits, target)
    g_one = grads(one)
    grouped = drill_loss(model, drills, tok, 4096)
    g_grouped = grads(grouped)
    assert float(grouped.detach()) == pytest.approx(float(one.detach()), rel=1e-5)
    assert len(g_one) == len(g_grouped)
    assert all(torch.allclose(a, b, rtol=1e-4, atol=1e-6) for a, b in zip(g_one, g_grouped))


def test_encode_drills_numbers_answers_across_the_batch(tiny):
    from urbex.agents.checkpoints import load_local_vlm
    from urbex.train.drill_loss import encode_drills

    _, proc = load_local_vlm(tiny)
    drills = _drills(3)
    b = encode_drills(drills, proc.tokenizer, 4096)
    owners = b["answer_of"][b["answer_of"] >= 0].unique().tolist()
    assert owners == list(range(sum(d.answers for d in drills)))
    assert ((b["labels"] != -100) == (b["answer_of"] >= 0)).all()


def test_a_drill_over_max_length_names_the_field(tiny):
    from urbex.agents.checkpoints import load_local_vlm
    from urbex.train.drill_loss import drill_loss

    model, proc = load_local_vlm(tiny)
    with pytest.raises(ConfigError, match=r"reader\.max_length=8"):
        drill_loss(model, _drills(2), proc.tokenizer, 8)
