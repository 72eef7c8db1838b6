"""SFT warm start: teacher trajectories, assistant-only labels, the plain training loop, errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.fixtures.city import build_eval_project
from tests.fixtures.interrupt import interrupt_at
from urbex.config import Params
from urbex.errors import AnnotationError, ConfigError, PolicyError


@pytest.fixture(scope="module")
def assets(tmp_path_factory) -> Path:
    return build_eval_project(tmp_path_factory.mktemp("sft"))


def _params(assets: Path, **sft) -> Params:
    return Params(
        paths={"assets": assets},
        env={"global_view_size": [64, 64], "zoom_size": [64, 64], "oblique_size": [64, 64]},
        sft={"per_query": 1, "batch_size": 2, "warmup_steps": 1, **sft},
    )


@pytest.fixture(scope="module")
def tiny(assets, tmp_path_factory) -> Path:
    """A tiny model whose BPE was trained on the protocol and the teacher's conversations."""
    from tests.fixtures.teacher import teacher_of
    from urbex.train.corpus import protocol_corpus
    from urbex.train.tiny import TinyModelSpec, make_tiny_model

    p = _params(assets)
    corpus = list(protocol_corpus(p.env, p.vlm, teacher_of(p, limit=6), n_actions=300))
    spec = TinyModelSpec(hidden_size=32, vocab_size=800)
    return make_tiny_model(tmp_path_factory.mktemp("m") / "tiny", seed=0, spec=spec, corpus=corpus)


def test_teacher_paths_vary_with_the_seed_and_all_answer(assets):
    from tests.fixtures.teacher import teacher_of

    trajs = teacher_of(_params(assets), per_query=3, limit=4)
    assert len(trajs) == 12 and all(t.outcome.answered for t in trajs)
    paths = {tuple(s.tool for s in t.steps) for t in trajs}
    zooms = {tuple(s.arguments["bbox_2d"]) for t in trajs for s in t.steps if s.tool == "zoom_in"}
    assert len(paths) >= 2 and len(zooms) >= 8  # several tool sequences and zoom windows
    again = teacher_of(_params(assets), per_query=3, limit=4)
    assert [s.arguments for t in again for s in t.steps] == [
        s.arguments for t in trajs for s in t.steps
    ]  # seeded
    # the student's view: with template tools the system prompt leaves the schemas out
    assert '"parameters"' not in trajs[0].messages[0]["content"]


def test_no_valid_teacher_trajectory_is_a_one_line_error(assets):
    from tests.fixtures.teacher import teacher_of

    p = _params(assets).with_updates(env={"max_turns": 1})  # the teacher zooms first: no answer
    with pytest.raises(AnnotationError, match=r"no teacher trajectory.*sft\.split"):
        teacher_of(p, limit=2)


def test_protocol_tokenizer_makes_a_tool_call_tens_of_tokens(tiny):
    from transformers import AutoProcessor

    tok = AutoProcessor.from_pretrained(tiny, local_files_only=True).tokenizer
    call = (
        '<tool_call>{"name": "zoom_in", "arguments": {"view_id": "global", '
        '"bbox_2d": [412, 380, 520, 470]}}</tool_call>'
    )
    ids = tok.encode(call, add_special_tokens=False)
    assert len(ids) <= 40 < len(call.encode())  # the byte tokenizer needs one token per byte
    assert tok.decode(ids) == call
    assert [tok.decode([i]) for i in tok.encode("[412]", add_special_tokens=False)][1:4] == [
        "4",
        "1",
        "2",
    ]  # digits one per token


def test_assistant_labels_cover_exactly_the_assistant_turns(tiny):
    from transformers import AutoProcessor

    from urbex.train.sft import assistant_labels

    proc = AutoProcessor.from_pretrained(tiny, local_files_only=True)
    msgs = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "find it"},
        {"role": "assistant", "content": "<answer>A</answer>"},
        {"role": "tool", "name": "zoom_in", "content": "ok"},
        {"role": "assistant", "content": "second"},
    ]
    text = proc.apply_chat_template(msgs, tokenize=False)
    ids = proc.tokenizer([text, text[: text.index("second")]], return_tensors="pt", padding=True)
    labels = assistant_labels(ids["input_ids"], proc.tokenizer, ids["attention_mask"])
    kept = proc.tokenizer.decode(ids["input_ids"][0][labels[0] != -100])
    assert kept == "<answer>A</answer><|im_end|>second<|im_end|>"
    # a cut conversation (and left padding) supervises only what is there
    kept1 = proc.tokenizer.decode(ids["input_ids"][1][labels[1] != -100])
    assert kept1 == "<answer>A</answer><|im_end|>"


def test_sft_trains_publishes_and_the_checkpoint_plays(assets, tiny):
    import torch
    from safetensors.torch import load_file

    from tests.fixtures.teacher import teacher_of
    from urbex.agents.vlm import VLMPolicy
    from urbex.annotations.splits import load_queries
    from urbex.env.episode import GroundingEnv
    from urbex.env.play import play_episode
    from urbex.env.scenes import CachedSceneProvider
    from urbex.train.sft import sft

    p = _params(assets, learning_rate=5e-3)
    trajs = teacher_of(p, limit=4)
    r = sft(p, checkpoint=tiny, steps=4, progress=False, trajectories=trajs)
    d = r.checkpoint_dir
    assert d == assets / "checkpoints" / "sft" and (d / "model.safetensors").is_file()
    meta = json.loads((d / "sft.json").read_text())
    assert meta["steps"] == 4 and meta["n_examples"] == len(trajs) == r.n_examples
    assert np.isfinite(r.loss_first) and np.isfinite(r.loss_last)
    assert 0 < r.assistant_tokens_mean < r.tokens_mean
    before, after = load_file(tiny / "model.safetensors"), load_file(d / "model.safetensors")
    changed = [k for k in before if not torch.equal(before[k], after[k])]
    assert len(changed) >= 0.9 * len(before)  # (almost) every parameter trained
    assert not list(d.parent.glob(".staging-*"))
    # the loss and learning rate as TensorBoard events in the checkpoint (train.report_to)
    from tests.fixtures.tensorboard import scalars

    events = scalars(d / "runs" / "sft")
    assert sorted(events) == ["train/learning_rate", "train/loss"]
    assert [s for s, _ in events["train/loss"]] == [1, 2, 3, 4]
    # the published checkpoint is a policy the loop can play (whatever it says)
    env = GroundingEnv(p.env, CachedSceneProvider(p.layout.scenes))
    pol = VLMPolicy.from_params(p.with_updates(vlm={"max_new_tokens": 8}).vlm, checkpoint=d)
    traj = play_episode(env, pol, load_queries(p.layout, "test_no", limit=1)[0], seed=0)
    assert traj.outcome.turns >= 1 and len(traj.images) >= 1


def test_sft_bad_checkpoints_are_one_line_errors(assets, tmp_path):
    from urbex.train.sft import sft

    with pytest.raises(ConfigError, match=r"sft\.checkpoint"):
        sft(_params(assets), progress=False)
    (tmp_path / "empty").mkdir()
    with pytest.raises(PolicyError, match=r"config\.json"):
        sft(_params(assets), checkpoint=tmp_path / "empty", progress=False)
    weights_only = tmp_path / "weights"
    weights_only.mkdir()
    (weights_only / "config.json").write_text("{}")
    with pytest.raises(PolicyError, match=r"processor|tokenizer|no weights"):
        sft(_params(assets), checkpoint=weights_only, progress=False)


def test_sft_example_over_max_length_names_the_field(assets, tiny):
    from tests.fixtures.teacher import teacher_of
    from urbex.train.sft import sft

    p = _params(assets, max_length=50)
    with pytest.raises(ConfigError, match=r"sft\.max_length"):
        sft(
            p,
            checkpoint=tiny,
            steps=1,
            progress=False,
            trajectories=teacher_of(p, limit=1),
        )


def test_teacher_mistakes_are_recovered_from_and_left_unsupervised(assets, tiny):
    from transformers import AutoProcessor

    from tests.fixtures.teacher import teacher_of
    from urbex.train.sft import _batch, render_examples

    p = _params(assets, mistake_rate=1.0)
    trajs = teacher_of(p, limit=4, per_query=2)
    assert trajs and all(t.outcome.answered for t in trajs)
    for t in trajs:  # exactly one invalid turn, before the (valid) zoom, then the oracle's path
        valid = [s.valid for s in t.steps]
        assert valid.count(False) == 1
        bad = valid.index(False)
        assert t.steps[bad + 1].tool == "zoom_in" and t.steps[bad + 1].valid
    kinds = {t.steps[[s.valid for s in t.steps].index(False)].tool for t in trajs}
    assert kinds == {"zoom_in", "answer"}  # both kinds of mistake occur
    proc = AutoProcessor.from_pretrained(tiny, local_files_only=True)
    ex = render_examples(trajs[:2], proc, p.env, p.vlm)
    batch = _batch(proc, ex, None)
    for row, t in enumerate(trajs[:2]):
        kept = proc.tokenizer.decode(batch["input_ids"][row][batch["labels"][row] != -100])
        bad = next(s for s in t.steps if not s.valid)
        assert bad.model_text not in kept  # the mistake is shown but never learned
        assert all(s.model_text in kept for s in t.steps if s.valid)


@pytest.fixture(scope="module")
def grafted(tmp_path_factory):
    """A Qwen2-VL checkpoint grafted from a tiny random Llama (``urbex make-grafted-model``)."""
    from tests.fixtures.llama import tiny_llama
    from urbex.train.graft import make_grafted_model

    root = tmp_path_factory.mktemp("graft")
    tiny_llama(root / "llama")
    return make_grafted_model(root / "graft", root / "llama")


@pytest.mark.parametrize("family", ["tiny", "grafted"])  # Qwen3-VL, Qwen2-VL
def test_shared_prefix_loss_equals_the_plain_loss_and_gradients(request, family):
    """One forward of the shared system prompt + the rows' suffixes on its cache == the plain
    batched forward: same loss, same gradient on every parameter (fp32 round-off)."""
    import torch
    from PIL import Image
    from transformers import AutoModelForImageTextToText, AutoProcessor

    from urbex.train.sft import SFTExample, _batch, causal_lm_loss, shared_prefix_length

    tiny = request.getfixturevalue(family)
    proc = AutoProcessor.from_pretrained(tiny, local_files_only=True)
    model = AutoModelForImageTextToText.from_pretrained(
        tiny, local_files_only=True, dtype=torch.float32
    )
    system = {"role": "system", "content": "You are a grounding agent. " * 8}
    rng = np.random.default_rng(0)

    def conv(k):
        n_images = 1 if k == 1 else 2
        ims = [
            Image.fromarray(rng.integers(0, 255, (64, 64, 3), dtype=np.uint8))
            for _ in range(n_images)
        ]
        msgs = [
            system,
            {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": f"find {k}"}]},
            {"role": "assistant", "content": '<tool_call>{"name": "zoom_in"}</tool_call>'},
        ]
        if k > 1:
            msgs += [
                {
                    "role": "tool",
                    "name": "zoom_in",
                    "content": [{"type": "image"}, {"type": "text", "text": "zoom"}],
                },
                {"role": "assistant", "content": "<answer>" + "x" * k + "</answer>"},
            ]
        text = proc.apply_chat_template(msgs, tokenize=False)
        return SFTExample(text=text, images=tuple(ims), query_id=str(k), supervised=(True, k != 2))

    inputs = _batch(proc, [conv(1), conv(2), conv(3)], None)
    tok = proc.tokenizer
    stops = [tok.convert_tokens_to_ids(t) for t in ("<|vision_start|>", "<|image_pad|>")]
    p = shared_prefix_length(inputs["input_ids"], inputs["attention_mask"], inputs["labels"], stops)
    assert p > 40  # the system prompt (and the user header)

    def grads(fn):
        model.zero_grad(set_to_none=True)
        loss = fn()
        loss.backward()
        return float(loss.detach()), {
            n: q.grad.clone() for n, q in model.named_parameters() if q.grad is not None
        }

    plain, g_plain = grads(lambda: model(**inputs).loss)
    shared, g_shared = grads(lambda: causal_lm_loss(model, inputs, stops))
    assert shared == pytest.approx(plain, rel=1e-5)
    assert g_plain.keys() == g_shared.keys() and any("visual" in n for n in g_plain)
    for n, g in g_plain.items():
        torch.testing.assert_close(g_shared[n], g, rtol=1e-3, atol=1e-6, msg=n)


def test_renamed_teacher_episodes_copy_the_new_names_through_the_real_environment(assets):
    """With sft.rename_rate 1 every renameable episode is played over a landmark index whose
    names are new: the description, the teacher's call and the environment's answer all carry
    the new name (found, with the same geometry as the original landmark)."""
    from tests.fixtures.teacher import teacher_of
    from urbex.annotations.splits import load_queries
    from urbex.landmarks.lookup import landmark_index

    p = _params(assets, rename_rate=1.0, anchor_rate=1.0)
    original = {q.query_id: q for q in load_queries(p.layout, "train")}
    trajs = teacher_of(p, per_query=2, limit=6)
    names = set(landmark_index(p.layout, p.landmarks).table["name"].to_list())
    renamed = [t for t in trajs if t.query.description != original[t.query.query_id].description]
    assert len(renamed) >= 3 and all(t.outcome.answered for t in trajs)  # some mention none
    for t in renamed:
        q0 = original[t.query.query_id]
        assert np.array_equal(t.query.target_box_2d, q0.target_box_2d)
        lq = [s for s in t.steps if s.tool == "landmark_query"]
        if not lq:
            continue
        name = lq[0].arguments["name"]
        assert name not in names and name in t.query.description
        answer = next(m for m in t.messages if m["role"] == "tool")
        text = " ".join(c["text"] for c in answer["content"] if c.get("type") == "text")
        assert f"match(es) for {name!r}" in text, text
    # the environment is left with the real index
    again = teacher_of(_params(assets), per_query=1, limit=2)
    assert all(t.query.description == original[t.query.query_id].description for t in again)


def test_recovery_round_adds_the_students_mistakes_with_the_teachers_recoveries(assets, tiny):
    """``sft.recovery_at``: partway through, the model being trained plays the split as the
    student; the episodes where it erred (and the teacher then recovered) join the training
    set, its mistakes unsupervised; the counts are in sft.json."""
    from transformers import AutoProcessor

    from tests.fixtures.teacher import recoveries_of
    from urbex.agents.vlm import VLMPolicy
    from urbex.train.sft import _batch, render_examples, sft

    p = _params(assets, limit=3, recovery_per_query=1, recovery_at=0.5)
    student = VLMPolicy.from_params(
        p.with_updates(vlm={"max_new_tokens": 24}).vlm, checkpoint=tiny, do_sample=True
    )
    trajs, stats = recoveries_of(p, student)
    assert stats.episodes == 3 and stats.kept == len(trajs) >= 1
    assert stats.with_errors >= stats.kept and 0 < stats.error_rate <= 1
    for t in trajs:  # the random student errs; the teacher finishes with a valid answer
        assert t.outcome.answered and not all(s.valid for s in t.steps)
        assert sum(not s.valid for s in t.steps) <= p.sft.recovery_max_errors
    proc = AutoProcessor.from_pretrained(tiny, local_files_only=True)
    batch = _batch(proc, render_examples(trajs[:1], proc, p.env, p.vlm), None)
    kept = proc.tokenizer.decode(batch["input_ids"][0][batch["labels"][0] != -100])
    assert all(s.model_text in kept for s in trajs[0].steps if s.valid)
    assert not any(s.model_text in kept for s in trajs[0].steps if not s.valid and s.model_text)

    r = sft(p, checkpoint=tiny, steps=2, progress=False, run_name="sft-recovery")
    meta = json.loads((r.checkpoint_dir / "sft.json").read_text())
    assert r.recovery is not None and meta["recovery"]["at_step"] == 1
    assert meta["recovery"]["episodes"] == 3
    assert r.n_examples == r.n_trajectories + r.recovery.kept


def test_an_interrupted_sft_resumes_from_its_last_saved_step_as_if_never_stopped(
    assets, tiny, monkeypatch
):
    """Ctrl-C after step 5 of 6 (state saved every 2 steps, the recovery round at step 3):
    nothing is published, the rerun resumes from step 4 (the recovery round's examples come
    from the saved state) and publishes the uninterrupted run's weights and log, bit for bit."""
    import polars as pl
    import torch
    from safetensors.torch import load_file

    from urbex.train import sft as sft_mod

    p = _params(assets, limit=3, recovery_per_query=1, recovery_at=0.5, save_steps=2)
    p = p.with_updates(vlm={"max_new_tokens": 24})  # the random student's turns stay short
    ref = sft_mod.sft(p, checkpoint=tiny, steps=6, progress=False, run_name="sft-ref")
    real = sft_mod.causal_lm_loss
    interrupt_at(monkeypatch, sft_mod, "causal_lm_loss", 6)
    with pytest.raises(KeyboardInterrupt):
        sft_mod.sft(p, checkpoint=tiny, steps=6, progress=False, run_name="sft-cut")
    final = p.layout.checkpoint("sft-cut")
    assert not final.exists()  # nothing published half-done
    resume = p.layout.checkpoint_staging("sft-cut") / "resume"
    assert json.loads((resume / "state.json").read_text())["step"] == 4
    monkeypatch.setattr(sft_mod, "causal_lm_loss", real)
    replays = {"n": 0}
    real_round = sft_mod.recovery_round

    def counted(*args, **kwargs):
        replays["n"] += 1
        return real_round(*args, **kwargs)

    monkeypatch.setattr(sft_mod, "recovery_round", counted)
    r = sft_mod.sft(p, checkpoint=tiny, steps=6, progress=False, run_name="sft-cut")
    assert r.resumed_from == 4 and replays["n"] == 0  # not replayed: restored
    assert not p.layout.checkpoint_staging("sft-cut").exists()
    a, b = (
        load_file(ref.checkpoint_dir / "model.safetensors"),
        load_file(final / "model.safetensors"),
    )
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert pl.read_parquet(final / "sft_log.parquet").equals(
        pl.read_parquet(ref.checkpoint_dir / "sft_log.parquet")
    )
    assert (
        json.loads((final / "sft.json").read_text())["recovery"]
        == json.loads((ref.checkpoint_dir / "sft.json").read_text())["recovery"]
    )
    assert json.loads((final / "timings" / "sft.json").read_text())["resumed_from"] == 4
    # other settings: a saved state is not used
    from urbex.train.sft_state import SFTState, load_state, save_state

    staging = p.layout.checkpoint_staging("other")
    state = SFTState(step=2, tensors={}, numpy_rng={}, order=[], log=[], n_tok=[], n_sup=[])
    save_state(staging, state, {"lr": 1e-3})
    assert load_state(staging, {"lr": 1e-3}) is not None
    assert load_state(staging, {"lr": 2e-3}) is None


def test_sft_drills_join_every_step_and_a_resumed_run_draws_the_same(assets, tiny, monkeypatch):
    """``sft.drills``: each step also trains on that many reading drills of the text families
    (the reader's shares); the drills change what is trained, and a run interrupted after step 3
    (saved at 2) resumes drawing the same drills: the uninterrupted run's weights, bit for bit."""
    import torch
    from safetensors.torch import load_file

    from urbex.train import sft as sft_mod

    p = _params(assets, limit=3, drills=3, save_steps=2).with_updates(
        env={"marks": {"enabled": True, "describe": "attributes", "layout": "id_last"}}
    )
    seen: list[list[str]] = []
    real_loss = sft_mod.drill_loss

    def spy(model, drills, tok, max_length):
        seen.append(sorted(d.family for d in drills))
        return real_loss(model, drills, tok, max_length)

    monkeypatch.setattr(sft_mod, "drill_loss", spy)
    ref = sft_mod.sft(p, checkpoint=tiny, steps=4, progress=False, run_name="drills-ref")
    assert len(seen) == 4 and all(len(s) == 3 for s in seen)
    assert {f for s in seen for f in s} <= {"mark_lookup", "name_copy", "box_copy"}
    assert "mark_lookup" in {f for s in seen for f in s}
    off = sft_mod.sft(
        p.with_updates(sft={"drills": 0}), checkpoint=tiny, steps=4, progress=False,
        run_name="drills-off",
    )  # fmt: skip
    assert len(seen) == 4  # no drills drawn with drills: 0
    a = load_file(ref.checkpoint_dir / "model.safetensors")
    b = load_file(off.checkpoint_dir / "model.safetensors")
    assert any(not torch.equal(a[k], b[k]) for k in a)
    real = sft_mod.causal_lm_loss
    interrupt_at(monkeypatch, sft_mod, "causal_lm_loss", 3)
    with pytest.raises(KeyboardInterrupt):
        sft_mod.sft(p, checkpoint=tiny, steps=4, progress=False, run_name="drills-cut")
    monkeypatch.setattr(sft_mod, "causal_lm_loss", real)
    r = sft_mod.sft(p, checkpoint=tiny, steps=4, progress=False, run_name="drills-cut")
    assert r.resumed_from == 2
    c = load_file(r.checkpoint_dir / "model.safetensors")
    assert a.keys() == c.keys() and all(torch.equal(a[k], c[k]) for k in a)


@pytest.mark.parametrize(
    ("summary", "index"),
    [(None, 0), ({"level": 8}, 0), ({"level": 16}, 1), ({"level": 32}, 2), ({"level": 20}, 1),
     ({"level": 4}, 0)],
)  # fmt: skip
def test_drill_level_index_is_the_level_the_reader_reached(tmp_path, summary, index):
    """SFT's drills are drawn at the reader's reached level (reader.json ``level``); no reader
    summary: the first level; a level between two counts as the shorter one."""
    from urbex.train.sft import drill_level_index

    if summary is not None:
        (tmp_path / "reader.json").write_text(json.dumps(summary), encoding="utf-8")
    assert drill_level_index(tmp_path, [8, 16, 32]) == index


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"level": "16"}', '{"level": 0}'])
def test_drill_level_index_of_a_bad_reader_summary_names_the_file(tmp_path, text):
    from urbex.train.sft import drill_level_index

    (tmp_path / "reader.json").write_text(text, encoding="utf-8")
    with pytest.raises(PolicyError, match=r"reader\.json"):
        drill_level_index(tmp_path, [8, 16, 32])


def test_sft_drills_follow_the_readers_level(assets, tiny, tmp_path, monkeypatch):
    """From a checkpoint whose reader stage reached 16 marks, SFT's drills are drawn at that
    level (index 1 of ``reader.levels``) and sft.json records it; from one without a reader
    summary, at the first level."""
    import shutil

    from urbex.train import sft as sft_mod

    base = tmp_path / "reader16"
    shutil.copytree(tiny, base)
    (base / "reader.json").write_text(json.dumps({"kind": "reader", "level": 16}), "utf-8")
    p = _params(assets, limit=2, drills=2).with_updates(
        env={"marks": {"enabled": True, "describe": "attributes", "layout": "id_last"}},
        reader={"levels": [8, 16, 32]},
    )
    seen: list[int] = []
    real = sft_mod.drill_batch

    def spy(*args, level_index, **kw):
        seen.append(level_index)
        return real(*args, level_index=level_index, **kw)

    monkeypatch.setattr(sft_mod, "drill_batch", spy)
    r = sft_mod.sft(p, checkpoint=base, steps=2, progress=False, run_name="drills-16")
    assert seen == [1, 1]
    assert json.loads((r.checkpoint_dir / "sft.json").read_text())["drill_marks"] == 16
    sft_mod.sft(p, checkpoint=tiny, steps=1, progress=False, run_name="drills-8")
    assert seen == [1, 1, 0]


@pytest.mark.parametrize(("steps", "warmup"), [(200, 10), (20, 1), (10, 0)])
def test_lr_schedule_is_linear_warmup_then_cosine_to_a_tenth(steps, warmup):
    """transformers' schedule gives the documented shape (urbex.train.sft.lr_schedule), computed
    here from the formula; the warmup is the old hand-written one's, step for step."""
    torch = pytest.importorskip("torch")
    import math

    from urbex.train.sft import MIN_LR_RATE, lr_schedule

    base = 2e-3
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.AdamW([param], lr=base, weight_decay=0.0)
    schedule = lr_schedule(opt, steps=steps, warmup_steps=warmup)
    got = []
    for _ in range(steps):
        got.append(schedule.get_last_lr()[0])
        assert opt.param_groups[0]["lr"] == got[-1]  # the rate the optimizer step uses
        opt.step()
        schedule.step()

    def expected(k: int) -> float:
        if k < warmup:
            return base * (k + 1) / warmup
        t = (k - warmup + 1) / (steps - warmup)
        return base * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))

    assert got == pytest.approx([expected(k) for k in range(steps)], rel=1e-12, abs=0)

    def hand_written(k: int) -> float:  # the loop's schedule before transformers' (issue 21)
        if k < warmup:
            return base * (k + 1) / warmup
        t = min((k - warmup) / max(steps - warmup, 1), 1.0)
        return base * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))

    # the same warmup; the same cosine, one step further along (it reaches the floor at the last
    # step, where the hand-written one stopped a step short of it)
    old = [hand_written(k) if k < warmup else hand_written(k + 1) for k in range(steps)]
    assert got == pytest.approx(old, rel=1e-12, abs=0)
    assert got[-1] == pytest.approx(MIN_LR_RATE * base, rel=1e-12)  # the floor at the last step
    if warmup:
        assert got[0] == pytest.approx(base / warmup) and got[warmup - 1] == pytest.approx(base)
    peak = max(warmup - 1, 0)  # η at the warmup's last step (without warmup, step 0 has decayed)
    assert max(got) == got[peak] and all(a > b for a, b in zip(got[peak:], got[peak + 1 :]))


def test_sft_trains_a_grafted_checkpoint_and_it_plays(assets, tmp_path):
    """The pretrained student's path (``urbex make-grafted-model``: a Qwen2-VL checkpoint) through
    SFT and the play loop, as the tiny Qwen3-VL's."""
    import torch
    from safetensors.torch import load_file

    from tests.fixtures.llama import tiny_llama
    from tests.fixtures.teacher import teacher_of
    from urbex.agents.vlm import VLMPolicy
    from urbex.annotations.splits import load_queries
    from urbex.env.episode import GroundingEnv
    from urbex.env.play import play_episode
    from urbex.env.scenes import CachedSceneProvider
    from urbex.train.graft import make_grafted_model
    from urbex.train.sft import sft

    tiny_llama(tmp_path / "llama")
    base = make_grafted_model(tmp_path / "graft", tmp_path / "llama")
    p = _params(assets, learning_rate=5e-3, run_name="sft-graft", max_length=8192)
    r = sft(p, checkpoint=base, steps=4, progress=False, trajectories=teacher_of(p, limit=2))
    d = r.checkpoint_dir
    assert json.loads((d / "config.json").read_text())["model_type"] == "qwen2_vl"
    before, after = load_file(base / "model.safetensors"), load_file(d / "model.safetensors")
    # (Qwen2-VL's files keep its original key names: ``model.layers.*``, ``visual.*``)
    changed = [k for k in before if not torch.equal(before[k], after[k])]
    assert any(".layers." in k for k in changed) and any("visual" in k for k in changed)
    env = GroundingEnv(p.env, CachedSceneProvider(p.layout.scenes))
    pol = VLMPolicy.from_params(p.with_updates(vlm={"max_new_tokens": 8}).vlm, checkpoint=d)
    traj = play_episode(env, pol, load_queries(p.layout, "test_no", limit=1)[0], seed=0)
    assert traj.outcome.turns >= 1 and len(traj.images) >= 1
