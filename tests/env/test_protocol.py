"""The action parser: tolerant of thoughts, strict on content, never raises (hypothesis)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from urbex.env.protocol import (
    Answer,
    Invalid,
    ToolCall,
    parse_action,
    validate_tool_call,
)
from urbex.env.tools import TOOLS, openai_tool_schemas

VIEWS = {"global", "zoom_1", "oblique_2"}
OBL = {"oblique_2"}


def parse(text, **kw):
    return parse_action(text, known_views=VIEWS, oblique_views=OBL, **kw)


def call(tool, **args):
    return f"<tool_call>{json.dumps({'name': tool, 'arguments': args})}</tool_call>"


# ----------------------------------------------------------------------------- valid actions


@pytest.mark.parametrize(
    "text",
    [
        call("zoom_in", view_id="global", bbox_2d=[0, 0, 1000, 1000]),
        "Thought: the car is north.\n\n  "
        + call("zoom_in", view_id="zoom_1", bbox_2d=[1, 2, 3, 4])
        + "\n",
        "<think>maybe <answer> here? no</think>"
        + call("zoom_in", view_id="global", bbox_2d=[1, 2, 3, 4]),
        "<tool_call>\n```json\n"
        + json.dumps(
            {"name": "zoom_in", "arguments": {"view_id": "global", "bbox_2d": [1.5, 2, 3, 4]}}
        )
        + "\n```\n</tool_call>",
    ],
)
def test_parse_action_valid_zoom_tolerates_wrapping(text):
    a = parse(text)
    assert isinstance(a, ToolCall) and a.name == "zoom_in"
    assert len(a.arguments["bbox_2d"]) == 4


def test_parse_action_oblique_fills_default_elevation_and_wraps_azimuth():
    a = parse(
        call("oblique_render", view_id="zoom_1", bbox_2d=[0, 0, 10, 10], azimuth_deg=-90),
        default_elevation_deg=30,
    )
    assert isinstance(a, ToolCall)
    assert a.arguments["azimuth_deg"] == 270.0 and a.arguments["elevation_deg"] == 30.0


def test_parse_action_answer_in_zoom_view():
    a = parse('<answer>{"view_id": "zoom_1", "bbox_2d": [10, 20, 30, 40]}</answer>')
    assert a == Answer(view_id="zoom_1", bbox_2d=(10.0, 20.0, 30.0, 40.0))


# ----------------------------------------------------------------------------- invalid cases


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "no action found"),
        ("I give up", "no action found"),
        ('<answer>{"view_id": "oblique_2", "bbox_2d": [0, 0, 5, 5]}</answer>', "oblique view"),
        ('<answer>{"view_id": "zoom_9", "bbox_2d": [0, 0, 5, 5]}</answer>', "not a known view"),
        ('<answer>{"view_id": "global", "bbox_2d": [5, 0, 5, 5]}</answer>', "x1 < x2"),
        ('<answer>{"view_id": "global", "bbox_2d": [0, 9, 5, 5]}</answer>', "y1 < y2"),
        ('<answer>{"view_id": "global", "bbox_2d": [0, 0, 5, 1001]}</answer>', "within 0..1000"),
        ('<answer>{"view_id": "global", "bbox_2d": [-1, 0, 5, 5]}</answer>', "within 0..1000"),
        ('<answer>{"view_id": "global", "bbox_2d": [0, 0, 5]}</answer>', "list of 4 numbers"),
        ('<answer>{"view_id": "global", "bbox_2d": ["0", 0, 5, 5]}</answer>', "must be a number"),
        ('<answer>{"view_id": "global", "bbox_2d": [true, 0, 5, 5]}</answer>', "must be a number"),
        ('<answer>{"view_id": "global", "bbox_2d": [NaN, 0, 5, 5]}</answer>', "not valid JSON"),
        ('<answer>{"view_id": "global", "bbox_2d": [1e999, 0, 5, 5]}</answer>', "finite"),
        (
            '<answer>{"view_id": "global", "bbox_2d": [0, 0, 5, 5], "x": 1}</answer>',
            "exactly the keys",
        ),
        ('<answer>{"view_id": 3, "bbox_2d": [0, 0, 5, 5]}</answer>', "must be a string"),
        ("<answer>[1, 2]</answer>", "JSON object"),
        ("<answer>{broken</answer>", "not valid JSON"),
        ('<answer>{"view_id": "global", "bbox_2d": [0, 0, 5, 5]}', "not closed"),
        ("<answer><tool_call>{}</tool_call></answer>", "nested"),
        (call("zoom_in", view_id="global", bbox_2d=[0, 0, 5, 5]) * 2, "found 2 actions"),
        (call("teleport", x=1), "unknown tool"),
        (call("zoom_in", view_id="global"), "missing argument"),
        (call("zoom_in", view_id="global", bbox_2d=[0, 0, 5, 5], zoom=2), "unknown argument"),
        (call("zoom_in", view_id="oblique_2", bbox_2d=[0, 0, 5, 5]), "oblique view"),
        (call("landmark_query", name="", view_id="global"), "1..200 characters"),
        (call("landmark_query", name=7, view_id="global"), "must be a string"),
        (
            call("oblique_render", view_id="global", bbox_2d=[0, 0, 5, 5], azimuth_deg="north"),
            "must be a number",
        ),
        (
            call(
                "oblique_render",
                view_id="global",
                bbox_2d=[0, 0, 5, 5],
                azimuth_deg=0,
                elevation_deg=0,
            ),
            "elevation_deg",
        ),
        (
            call(
                "oblique_render",
                view_id="global",
                bbox_2d=[0, 0, 5, 5],
                azimuth_deg=0,
                elevation_deg=91,
            ),
            "elevation_deg",
        ),
        (
            '<tool_call>{"name": "zoom_in", "arguments": "view_id=global"}</tool_call>',
            "JSON object",
        ),
        ('<tool_call>{"arguments": {}}</tool_call>', '"name"'),
        ("<tool_call>" + "[" * 100_000 + "</tool_call>", "nested too deeply"),
        (12345, "expected text"),
    ],
)
def test_parse_action_invalid_has_reason(text, needle):
    a = parse(text)
    assert isinstance(a, Invalid), a
    assert needle in a.reason


def test_parse_action_past_budget_is_invalid():
    a = parse('<answer>{"view_id": "global", "bbox_2d": [0, 0, 5, 5]}</answer>', turns_left=0)
    assert isinstance(a, Invalid) and "budget" in a.reason


# ----------------------------------------------------------------------------- properties


def _reason_ok(a):
    return isinstance(a, Invalid) and isinstance(a.reason, str) and 0 < len(a.reason) < 600


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=400))
def test_parse_action_random_text_never_raises(text):
    a = parse(text)
    assert isinstance(a, ToolCall | Answer | Invalid)
    if isinstance(a, Invalid):
        assert _reason_ok(a)


json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(
    name=st.one_of(st.sampled_from([*TOOLS, "answer", "Zoom_In", ""]), json_values),
    arguments=json_values,
    tag=st.sampled_from(["tool_call", "answer"]),
    junk=st.text(max_size=30),
)
def test_parse_action_random_json_never_raises(name, arguments, tag, junk):
    body = (
        json.dumps({"name": name, "arguments": arguments})
        if tag == "tool_call"
        else json.dumps(arguments)
    )
    a = parse(f"{junk}<{tag}>{body}</{tag}>")
    assert isinstance(a, ToolCall | Answer | Invalid)
    if isinstance(a, Invalid):
        assert _reason_ok(a)


numbers = st.one_of(
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
    st.booleans(),
)


@settings(max_examples=400, deadline=None)
@given(box=st.lists(numbers, min_size=0, max_size=6), view=st.sampled_from([*VIEWS, "zoom_7", ""]))
def test_answer_boxes_validated_exactly(box, view):
    a = parse_action(
        "<answer>" + json.dumps({"view_id": view, "bbox_2d": box}) + "</answer>",
        known_views=VIEWS,
        oblique_views=OBL,
    )
    ok = (
        view in VIEWS - OBL
        and len(box) == 4
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in box)
        and all(v == v and abs(v) != float("inf") for v in box)
        and all(0 <= v <= 1000 for v in box)
        and box[0] < box[2]
        and box[1] < box[3]
    )
    assert isinstance(a, Answer) == ok, (box, view, a)
    if not ok:
        assert _reason_ok(a)


def test_validate_tool_call_non_mapping_arguments():
    a = validate_tool_call("zoom_in", [1, 2], known_views=VIEWS)
    assert isinstance(a, Invalid) and "JSON object" in a.reason and a.tool == "zoom_in"


def test_openai_schemas_match_tool_definitions():
    schemas = openai_tool_schemas()
    assert [s["function"]["name"] for s in schemas] == list(TOOLS)
    for s in schemas:
        params = s["function"]["parameters"]
        assert params["type"] == "object" and params["additionalProperties"] is False
        assert set(params["required"]) <= set(params["properties"])


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"name": "landmark_query", "arguments": {"name": "Tes\\ud800co"}}</tool_call>',
        '<answer>{"view_id": "global", "bbox_2d": [1, 2, 30, 40], "note": "\\udfff"}</answer>',
    ],
    ids=["tool_call", "answer"],
)
def test_parse_action_json_holding_a_lone_surrogate_is_invalid(text):
    """ASCII text whose JSON decodes to a lone surrogate: no file could record the action."""
    action = parse(text)
    assert isinstance(action, Invalid) and "lone surrogate" in action.reason
