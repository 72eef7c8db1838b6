"""The protocol corpus a tiny model's tokenizer is trained on."""

from __future__ import annotations

import json
import re

import pytest

from urbex.config import EnvParams, VLMParams
from urbex.train.corpus import protocol_corpus

pytest.importorskip("trl")


def test_protocol_corpus_is_deterministic_per_seed():
    a = list(protocol_corpus(EnvParams(), VLMParams(), n_actions=40, seed=1))
    assert a == list(protocol_corpus(EnvParams(), VLMParams(), n_actions=40, seed=1))
    assert a != list(protocol_corpus(EnvParams(), VLMParams(), n_actions=40, seed=2))
    assert len(a) == 2 + 40  # two system prompts, then the actions


def test_protocol_corpus_actions_are_in_the_exact_action_format():
    texts = list(protocol_corpus(EnvParams(), VLMParams(), n_actions=200))[2:]
    tools, answers, turns = set(), 0, 0
    for t in texts:
        if m := re.fullmatch(r"<tool_call>(.*)</tool_call>", t):
            call = json.loads(m.group(1))
            tools.add(call["name"])
            box = call["arguments"]["bbox_2d"]
        elif m := re.fullmatch(r"<answer>(.*)</answer>", t):
            answers += 1
            box = json.loads(m.group(1))["bbox_2d"]
        else:
            assert re.fullmatch(r"\nTurns left: \d+\.", t), t
            turns += 1
            continue
        assert 0 <= box[0] < box[2] <= 1000 and 0 <= box[1] < box[3] <= 1000
    assert tools == {"zoom_in", "oblique_render"} and answers > 0 and turns > 0


def test_protocol_corpus_renders_the_system_prompt_with_and_without_schemas():
    with_schemas, without = list(protocol_corpus(EnvParams(), VLMParams(), n_actions=0))
    assert "<|im_start|>system" in with_schemas and "<|im_start|>system" in without
    assert "zoom_in" in with_schemas
    assert len(with_schemas) > len(without)


def test_protocol_corpus_renders_trajectories_conversations():
    class _T:
        messages = (
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "find the red car"},
            {"role": "assistant", "content": "<answer>{}</answer>"},
        )

    texts = list(protocol_corpus(EnvParams(), VLMParams(), [_T()], n_actions=0))
    assert len(texts) == 3
    assert "find the red car" in texts[-1] and "<|im_start|>assistant" in texts[-1]
