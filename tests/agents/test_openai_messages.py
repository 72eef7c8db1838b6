"""An OpenAI reply as protocol text (:func:`urbex.agents.openai_messages.from_openai_message`)
when the server sends what no model should: nesting past json's recursion, lone surrogates."""

from __future__ import annotations

import json

import pytest

from urbex.agents.openai_api import OpenAIPolicy
from urbex.agents.openai_messages import from_openai_message
from urbex.env.protocol import Answer, Invalid, ToolCall, parse_action
from urbex.errors import PolicyError


def _deep(levels: int) -> dict:
    """``{"a": {"a": ... {}}}`` ``levels`` deep, built without recursion."""
    root: dict = {}
    node = root
    for _ in range(levels):
        node["a"] = {}
        node = node["a"]
    return root


def _call(arguments: object, name: str = "zoom_in") -> dict:
    return {"content": None, "tool_calls": [{"function": {"name": name, "arguments": arguments}}]}


@pytest.mark.parametrize(
    "message",
    [
        _call("[" * 10_000 + "]" * 10_000),
        _call('{"view_id": "global", "bbox_2d": ' + "[" * 10_000 + "]" * 10_000 + "}"),
        _call(_deep(10_000)),  # a server that sends parsed arguments
    ],
    ids=["string_list", "string_in_object", "parsed"],
)
def test_from_openai_message_arguments_10000_deep_are_an_invalid_turn(message):
    text = from_openai_message(message)
    action = parse_action(text, known_views={"global"})
    assert isinstance(action, Invalid), action
    text.encode("utf-8")


@pytest.mark.parametrize(
    ("message", "where"),
    [
        (_call('{"name": "Tes\\ud800co"}', name="landmark_query"), "<tool_call>"),
        (_call({"name": "Tes\ud800co"}, name="landmark_query"), "<tool_call>"),
        (
            {"content": '<answer>{"view_id": "gl\ud800obal", "bbox_2d": [1, 2, 3, 4]}</answer>'},
            "<answer>",
        ),
    ],
    ids=["escaped_arguments", "parsed_arguments", "content"],
)
def test_from_openai_message_lone_surrogate_is_an_invalid_turn_that_can_be_recorded(message, where):
    text = from_openai_message(message)
    assert "\\ud800" in text
    text.encode("utf-8")  # the step's model_text: Parquet and JSON lines write UTF-8
    action = parse_action(text, known_views={"global"})
    assert isinstance(action, Invalid) and f"{where} holds a lone surrogate" in action.reason


def test_from_openai_message_lone_surrogate_in_the_prose_leaves_the_action():
    text = from_openai_message(
        {"content": 'hm\ud800 <answer>{"view_id": "global", "bbox_2d": [1, 2, 3, 4]}</answer>'}
    )
    assert text.startswith("hm\\ud800 ")
    assert isinstance(parse_action(text, known_views={"global"}), Answer | ToolCall)


class _Reply:
    """What the policy reads of an HTTP reply: its text and its JSON."""

    def __init__(self, text: str) -> None:
        self.text = text

    def json(self) -> object:
        return json.loads(self.text)


def test_openai_reply_nested_10000_deep_is_a_policy_error(monkeypatch):
    body = '{"choices": [{"message": {"content": ' + "[" * 10_000 + "]" * 10_000 + "}}]}"
    pol = OpenAIPolicy(base_url="http://127.0.0.1:9/v1", model="m", api_key_env=None)
    monkeypatch.setattr(pol, "_attempt", lambda *a: _Reply(body))
    with pytest.raises(PolicyError, match="reply is nested too deeply to read"):
        pol.act([{"role": "user", "content": "Query: the red car"}], [])
