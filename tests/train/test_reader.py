"""The reader stage: drills from the train split, the curriculum, the published checkpoint,
resumption after Ctrl-C and its one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fixtures.city import build_eval_project
from tests.fixtures.interrupt import interrupt_at
from urbex.config import Params
from urbex.errors import ConfigError, PolicyError


@pytest.fixture(scope="module")
def assets(tmp_path_factory) -> Path:
    return build_eval_project(tmp_path_factory.mktemp("reader"))


def _params(assets: Path, **reader) -> Params:
    return Params(
        paths={"assets": assets},
        env={
            "global_view_size": [64, 64],
            "zoom_size": [64, 64],
            "oblique_size": [64, 64],
            "marks": {"enabled": True, "describe": "attributes", "layout": "id_last"},
        },
        sft={"per_query": 1, "anchor_rate": 1.0},
        reader={
            "batch_size": 6,
            "warmup_steps": 1,
            "held_out": 8,
            "eval_every": 2,
            "levels": [2, 32],
            "advance_at": 0.01,
            **reader,
        },
    )


@pytest.fixture(scope="module")
def trajs(assets):
    from tests.fixtures.teacher import teacher_of

    return teacher_of(_params(assets), split="train", per_query=1)


@pytest.fixture(scope="module")
def tiny(assets, trajs, tmp_path_factory) -> Path:
    from urbex.train.corpus import protocol_corpus
    from urbex.train.tiny import TinyModelSpec, make_tiny_model

    p = _params(assets)
    corpus = list(protocol_corpus(p.env, p.vlm, trajs, n_actions=300))
    spec = TinyModelSpec(hidden_size=32, vocab_size=800)
    out = tmp_path_factory.mktemp("m") / "tiny"
    return make_tiny_model(out, seed=0, spec=spec, corpus=corpus, number_tokens=True)


def test_reader_trains_scores_every_family_and_publishes(assets, tiny, trajs):
    import polars as pl
    from safetensors.torch import load_file

    from urbex.train.reader import train_reader

    p = _params(assets)
    r = train_reader(p, checkpoint=tiny, steps=4, progress=False, trajectories=trajs)
    out = p.layout.checkpoint("reader")
    assert r.checkpoint_dir == out and (out / "config.json").is_file()
    for name in ("reader.json", "reader_log.parquet", "reader_eval.parquet", "reader_curves.png"):
        assert (out / name).is_file(), name
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    ev = EventAccumulator(str(out / "runs" / "reader"))
    ev.Reload()
    tags = set(ev.Tags()["scalars"])
    assert {"train/loss", "train/learning_rate", "train/acc_mark_lookup"} <= tags
    assert [e.step for e in ev.Scalars("train/acc_mark_lookup")] == [2, 4]
    evals = pl.read_parquet(out / "reader_eval.parquet")
    assert evals["step"].to_list() == [2, 4]
    for fam in ("mark_lookup", "name_copy", "box_copy", "whole_turn"):
        assert 0.0 <= r.accuracy[fam] <= 1.0, fam
    meta = json.loads((out / "reader.json").read_text())
    assert meta["kind"] == "reader" and meta["steps"] == 4
    assert meta["drill_sources"]["listings"] > 0 and meta["drill_sources"]["names"] > 0
    shown = [m.mark_id for t in trajs for v in t.views if v.kind == "zoom" for m in v.marks]
    assert meta["drill_sources"]["id_pool"] == max(99, *shown)  # every listed id is drilled
    # advance_at 0.01: any held-out hit moves the curriculum on; the log says which level ran
    log = pl.read_parquet(out / "reader_log.parquet")
    assert set(log["level"].to_list()) <= {2, 32} and log["level"][0] == 2
    # every trained weight moved
    a, b = load_file(tiny / "model.safetensors"), load_file(out / "model.safetensors")
    moved = [k for k in a if "visual" not in k and not (a[k] == b[k]).all()]
    assert len(moved) >= 0.9 * len([k for k in a if "visual" not in k])


def test_an_interrupted_reader_resumes_where_it_saved(assets, tiny, trajs, monkeypatch):
    from safetensors.torch import load_file

    from urbex.train import reader as reader_mod

    p = _params(assets, save_steps=2, eval_every=100)
    ref = reader_mod.train_reader(
        p, checkpoint=tiny, steps=4, progress=False, trajectories=trajs, run_name="r-ref"
    )
    real = reader_mod.drill_loss
    interrupt_at(monkeypatch, reader_mod, "drill_loss", 4)
    with pytest.raises(KeyboardInterrupt):
        reader_mod.train_reader(
            p, checkpoint=tiny, steps=4, progress=False, trajectories=trajs, run_name="r-cut"
        )
    assert not p.layout.checkpoint("r-cut").exists()  # nothing published half-done
    monkeypatch.setattr(reader_mod, "drill_loss", real)
    r = reader_mod.train_reader(
        p, checkpoint=tiny, steps=4, progress=False, trajectories=trajs, run_name="r-cut"
    )
    assert r.resumed_from == 2
    a = load_file(ref.checkpoint_dir / "model.safetensors")
    b = load_file(r.checkpoint_dir / "model.safetensors")
    assert all((a[k] == b[k]).all() for k in a)  # as if never stopped


@pytest.mark.parametrize(
    ("reader", "field"),
    [
        ({"levels": [8, 4]}, "reader.levels"),
        ({"levels": []}, "reader.levels"),
        (
            {"mix": {"mark_lookup": 1.0, "name_copy": 0.0, "box_copy": 1.0, "whole_turn": 1.0}},
            "name_copy",
        ),
        ({"advance_at": 0.0}, "reader.advance_at"),
        ({"levels": [4, 8], "spread_from": 6}, "reader.spread_from"),
        ({"steps": 10, "max_steps": 5}, "reader.max_steps"),
    ],
)
def test_reader_params_that_cannot_work_are_one_line_errors(tmp_path, reader, field):
    import yaml

    from urbex.config import load_params

    f = tmp_path / "params.yaml"
    f.write_text(yaml.safe_dump({"reader": reader}))
    with pytest.raises(ConfigError) as e:
        load_params(f)
    msg = str(e.value)
    assert field in msg and len(msg.splitlines()) == 1


def test_spread_from_mixes_listing_sizes_up_to_the_level():
    import numpy as np

    from urbex.config_reader import ReaderParams
    from urbex.train.reader import lookup_size

    rng = np.random.default_rng(0)
    fixed = ReaderParams(levels=[2, 8, 32])
    assert {lookup_size(rng, fixed, 0) for _ in range(50)} == {2}
    assert {lookup_size(rng, fixed, 1) for _ in range(200)} == {2, 8}  # a quarter revisit 2
    spread = ReaderParams(levels=[8, 16, 32], spread_from=2)
    sizes = [lookup_size(rng, spread, 0) for _ in range(400)]
    assert set(sizes) == set(range(2, 9))  # every size from 2 to the level, none above
    later = [lookup_size(rng, spread, 2) for _ in range(400)]
    assert min(later) == 2 and max(later) == 32


def test_a_listing_longer_than_max_length_names_the_field(assets, tiny, trajs):
    from urbex.train.reader import train_reader

    p = _params(assets, max_length=64, levels=[32])
    with pytest.raises(ConfigError, match=r"reader\.max_length"):
        train_reader(p, checkpoint=tiny, steps=2, progress=False, trajectories=trajs)


def test_a_tokenizer_of_another_model_is_refused_naming_both(assets, tiny, tmp_path):
    import shutil

    from urbex.train.tiny import make_tiny_model

    other = make_tiny_model(tmp_path / "bytes", seed=0)  # the byte tokenizer: 270 tokens
    mixed = tmp_path / "mixed"
    shutil.copytree(other, mixed)
    for f in tiny.iterdir():  # tiny's processor (a larger vocabulary) beside other's weights
        if "token" in f.name or f.name.startswith(("processor", "preprocessor", "chat")):
            shutil.copy(f, mixed / f.name)
    from urbex.train.reader import train_reader

    with pytest.raises(PolicyError, match=r"tokenizer of \d+ tokens but a model of \d+"):
        train_reader(_params(assets), checkpoint=mixed, steps=1, progress=False)
    from urbex.train.sft import sft  # SFT from such a "reader" is refused the same way

    with pytest.raises(PolicyError, match=r"sft\.checkpoint"):
        sft(_params(assets), checkpoint=mixed, steps=1, progress=False, trajectories=[])


def test_max_steps_goes_on_while_the_full_length_gate_is_shut(assets, tiny, trajs, monkeypatch):
    """``reader.max_steps``: past ``steps`` the reader goes on while the look-up at the last
    level is below ``advance_at``, and stops at the first evaluation that opens it (the
    held-out scores are set here, so that the test does not wait for a tiny model to read)."""
    import polars as pl

    from urbex.train import reader as reader_mod

    def scored(value):
        def accuracy(model, tok, processor, sets, *args):
            return {k: value for k in [*sets, "whole_turn"]}

        return accuracy

    p = _params(assets, advance_at=0.5, steps=2, max_steps=8)
    monkeypatch.setattr(reader_mod, "_accuracy", scored(0.0))  # never opens: runs to max_steps
    r = reader_mod.train_reader(p, checkpoint=tiny, progress=False, trajectories=trajs,
                                run_name="r-shut")  # fmt: skip
    meta = json.loads((r.checkpoint_dir / "reader.json").read_text())
    assert r.steps == meta["steps"] == 8
    evals = pl.read_parquet(r.checkpoint_dir / "reader_eval.parquet")
    assert evals["step"].to_list() == [2, 4, 6, 8] and set(evals["level"].to_list()) == {2}
    monkeypatch.setattr(reader_mod, "_accuracy", scored(1.0))  # level 2 at step 2, 32 at 4
    r = reader_mod.train_reader(p, checkpoint=tiny, progress=False, trajectories=trajs,
                                run_name="r-open")  # fmt: skip
    assert r.steps == 4 and r.level == 32 and r.reached_full_at == 2
