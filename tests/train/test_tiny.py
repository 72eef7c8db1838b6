"""The tiny offline Qwen3-VL builder."""

from __future__ import annotations

import os

import numpy as np
import pytest


def test_make_tiny_model_round_trips_offline(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from PIL import Image
    from transformers import AutoModelForImageTextToText, AutoProcessor
    from trl.chat_template_utils import qwen3_vl_chat_template, supports_tool_calling

    from urbex.train.tiny import make_tiny_model

    path = make_tiny_model(tmp_path / "tiny", seed=1)
    assert (path / "config.json").exists() and (path / "model.safetensors").exists()
    proc = AutoProcessor.from_pretrained(path)
    model = AutoModelForImageTextToText.from_pretrained(path)
    assert proc.chat_template == qwen3_vl_chat_template and supports_tool_calling(proc)
    tok = proc.tokenizer
    for t in ("<tool_call>", "</tool_call>", "<|image_pad|>", "<think>"):
        assert len(tok.encode(t, add_special_tokens=False)) == 1, t
    text = "Zürich — 東京 <answer>{}</answer>"
    assert tok.decode(tok.encode(text, add_special_tokens=False)) == text
    msgs = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "where?"}]}]
    prompt = proc.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
    inputs = proc(
        text=[prompt],
        images=[Image.fromarray(np.zeros((64, 64, 3), np.uint8))],
        return_tensors="pt",
    )
    with torch.no_grad():
        out = model.generate(**inputs, max_new_tokens=4, do_sample=False)
    assert out.shape[1] > inputs["input_ids"].shape[1]
    assert sum(p.numel() for p in model.parameters()) < 500_000


def test_make_tiny_model_is_seeded(tmp_path):
    pytest.importorskip("torch")
    from safetensors.numpy import load_file

    from urbex.train.tiny import make_tiny_model

    a = load_file(make_tiny_model(tmp_path / "a", seed=3) / "model.safetensors")
    b = load_file(make_tiny_model(tmp_path / "b", seed=3) / "model.safetensors")
    c = load_file(make_tiny_model(tmp_path / "c", seed=4) / "model.safetensors")
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert any(not np.array_equal(a[k], c[k]) for k in a)


def test_make_tiny_model_rejects_bad_size(tmp_path):
    from urbex.train.tiny import make_tiny_model

    with pytest.raises(ValueError, match="hidden_size"):
        make_tiny_model(tmp_path / "x", hidden_size=12)
    assert not os.path.exists(tmp_path / "x")


@pytest.mark.parametrize("number_tokens", [False, True])
def test_protocol_tokenizer_keeps_identifiers_whole(number_tokens):
    """A digit inside an identifier is not split off (``bbox_2d`` once tokenized as ``bbox_`` +
    ``2`` + ``d``, and a trained model wrote ``"bbox_2, 73, ...``); numbers are digit by digit,
    or with ``number_tokens`` one token per view unit 0-1000 (larger ones digit by digit)."""
    pytest.importorskip("tokenizers")
    from urbex.config import EnvParams, VLMParams
    from urbex.train.corpus import protocol_corpus
    from urbex.train.tiny import _tokenizer

    corpus = list(protocol_corpus(EnvParams(), VLMParams(), n_actions=200))
    tok = _tokenizer(corpus, vocab_size=600, number_tokens=number_tokens)
    text = '"bbox_2d": [880, 7, 1000, 0]} zoom_1 2150'
    pieces = [tok.decode([i]) for i in tok.encode(text, add_special_tokens=False)]
    assert "".join(pieces) == text
    assert any("bbox_2d" in p for p in pieces), pieces
    assert "2150" not in pieces and "".join(pieces[-4:]) == "2150"
    if number_tokens:
        assert {"880", "7", "1000", "0"} <= set(pieces)
    else:
        assert [p for p in pieces if p.isdigit()][:3] == ["8", "8", "0"]


def _sublist(short: list[int], long: list[int]) -> bool:
    return any(long[i : i + len(short)] == short for i in range(len(long) - len(short) + 1))


@pytest.mark.parametrize("words", ["merge", "names", "words"])
def test_a_landmark_name_is_the_same_tokens_in_a_description_and_in_its_call(words):
    """``words="names"`` (and ``"words"``): the ``landmark_query`` call's name tokens appear, in order, in every
    description that mentions the name — whatever stands next to it (a full stop, a quote, a
    capitalised word) — so the student copies tokens; with ``merge`` (merges across words,
    trained on text where the names recur) some do not."""
    pytest.importorskip("tokenizers")
    from urbex.config import EnvParams, VLMParams
    from urbex.train.corpus import protocol_corpus
    from urbex.train.tiny import _tokenizer

    names = ["Harborne Car Park", "Edgbaston Playing Fields", "Queen's Row", "Stourbridge Library"]
    said = [
        "the car north of {}, next to the bus stop",
        "the only parking lot beside Chapel Parade and across from {}",
        "Look near {}. It is small.",
        "It sits next to {} at the corner",
        'the building west of "{}"',
        "Behind {} there is a red car",
    ]
    corpus = list(protocol_corpus(EnvParams(), VLMParams(), n_actions=200))
    corpus += [s.format(n) for n in names for s in said] * 20  # the names recur, as in a city
    tok = _tokenizer(corpus, vocab_size=1200, words=words)

    def enc(text: str) -> list[int]:
        return list(tok.encode(text, add_special_tokens=False))

    copyable = []
    for name in names:
        head = '<tool_call>{"name": "landmark_query", "arguments": {"name": "'
        call = enc(f'{head}{name}", "view_id": "global"}}}}</tool_call>')
        tail = enc('", "view_id": "global"}}</tool_call>')
        name_ids = call[len(enc(head)) : len(call) - len(tail)]
        ok = (
            call[: len(enc(head))] == enc(head)
            and call[len(call) - len(tail) :] == tail
            and tok.decode(name_ids) == name
        )
        copyable += [ok and _sublist(name_ids, enc(s.format(name))) for s in said]
    if words in ("names", "words"):
        assert all(copyable)
    else:
        assert not all(copyable)


@pytest.mark.parametrize("words", ["names", "words"])
def test_a_listed_marks_words_are_the_same_tokens_as_a_descriptions(words):
    """``words="words"``: a listing line's attribute and class words (``] green small car =``)
    are, token for token, the words of a query that describes the mark (``the small green car``),
    so picking the mark is matching repeated tokens; with ``names`` (merges across lowercase
    words, trained on listings where the same phrases recur) some are merged with their
    neighbours into tokens the query never shows."""
    pytest.importorskip("tokenizers")
    import numpy as np

    from urbex.config import EnvParams, VLMParams
    from urbex.env.marks import marks_text
    from urbex.train.corpus import protocol_corpus
    from urbex.train.drills import random_listing
    from urbex.train.tiny import _tokenizer

    env = EnvParams()
    rng = np.random.default_rng(0)
    listings = [random_listing(rng, 8) for _ in range(60)]
    corpus = list(protocol_corpus(env, VLMParams(), n_actions=200))
    corpus += [marks_text("zoom_1", m, env.marks.describe, layout="id_last") for m in listings]
    tok = _tokenizer(corpus, vocab_size=1200, words=words)

    def enc(text: str) -> list[int]:
        return list(tok.encode(text, add_special_tokens=False))

    shared = []
    for m in listings[0] + listings[1]:
        line = f"[1, 2, 3, 4] {' '.join((*m.words, m.class_name.lower()))} = 7"
        said = enc(f"Query: the {' '.join(m.words)} {m.class_name.lower()}")
        shared.append(
            all(_sublist(enc(f" {w}"), said) for w in line.split()[4:-2])
            and _sublist(enc(" " + " ".join(line.split()[4:-2])), enc(line))
        )
    if words == "words":
        assert all(shared)
    else:
        assert not all(shared)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--hidden", "12"], "--hidden: expected a multiple of 8 in 16..512, got 12"),
        (["--heads", "3"], "--heads (3): expected a multiple of --kv-heads (2)"),
        (["--head-dim", "4"], "--head-dim: expected a multiple of 8, got 4"),
        (["--layers", "0"], "--layers, --heads, --kv-heads: expected >= 1"),
        (["--vocab", "10"], "--vocab: expected 300..65536, got 10"),
    ],
)
def test_make_tiny_model_bad_size_flag_is_one_line_naming_the_flag(
    tmp_path, flags, message, capsys
):
    from urbex.cli import main

    assert main(["-q", "make-tiny-model", str(tmp_path / "m"), *flags]) == 2
    err = capsys.readouterr().err
    assert err == f"urbex make-tiny-model: error: {message}\n"
    assert not (tmp_path / "m").exists()


def test_make_tiny_model_offers_every_word_split():
    """The CLI's ``--words`` choices (spelt out so the CLI starts without importing the
    tokenizer code) are :data:`urbex.train.tiny.WORD_SPLITS`."""
    import argparse

    from urbex.cli import _build_parser
    from urbex.train.tiny import WORD_SPLITS

    parser = _build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    tm = sub.choices["make-tiny-model"]
    words = next(a for a in tm._actions if a.dest == "words")
    assert tuple(words.choices) == WORD_SPLITS and words.default == "names"
    assert "words" in WORD_SPLITS
