"""The tool vocabulary (urbex.tool_vocabulary): one enum of names, one typed model per action's
arguments, and the exact JSON schemas models are shown."""

from __future__ import annotations

import json
import typing

import polars as pl
import pyarrow as pa
import pytest

from urbex.config_env import EnvParams
from urbex.tool_vocabulary import (
    ENV_TOOLS,
    TOOL_ARGUMENTS,
    AnswerArgs,
    ArgKind,
    EnvTool,
    MarkAnswerArgs,
    ObliqueRenderArgs,
    ToolName,
    ZoomInArgs,
    arg_specs,
    arguments_json,
    json_schema,
)

# The schemas as models have always been shown them (a tokenizer is trained on these texts):
# the typed models must reproduce them key for key, in order.
_VIEW_ID = {
    "type": "string",
    "description": 'id of a BEV view you have seen: "global" or "zoom_N" (not "oblique_N")',
}
_BBOX = {
    "type": "array",
    "description": "box [x1, y1, x2, y2] in that view, integers 0-1000 normalised to the view's "
    "width/height, top-left origin, x1 < x2 and y1 < y2",
    "items": {"type": "number", "minimum": 0, "maximum": 1000},
    "minItems": 4,
    "maxItems": 4,
}
PINNED = {
    "landmark_query": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "landmark name, e.g. a street or building"},
            "view_id": _VIEW_ID,
        },
        "required": ["name", "view_id"],
        "additionalProperties": False,
    },
    "zoom_in": {
        "type": "object",
        "properties": {"view_id": _VIEW_ID, "bbox_2d": _BBOX},
        "required": ["view_id", "bbox_2d"],
        "additionalProperties": False,
    },
    "oblique_render": {
        "type": "object",
        "properties": {
            "view_id": _VIEW_ID,
            "bbox_2d": _BBOX,
            "azimuth_deg": {
                "type": "number",
                "description": "camera direction, degrees clockwise from north (0 = from the "
                "north, 90 = from the east)",
            },
            "elevation_deg": {
                "type": "number",
                "description": "camera elevation above the horizon, degrees (0, 90]; default 45",
                "exclusiveMinimum": 0,
                "maximum": 90,
            },
        },
        "required": ["view_id", "bbox_2d", "azimuth_deg"],
        "additionalProperties": False,
    },
}
PINNED_ANSWER = {
    "type": "object",
    "properties": {
        "view_id": {"type": "string", "description": 'a BEV view: "global" or "zoom_N"'},
        "bbox_2d": _BBOX,
    },
    "required": ["view_id", "bbox_2d"],
    "additionalProperties": False,
}
PINNED_MARK_ANSWER = {
    "type": "object",
    "properties": {
        "mark": {
            "type": "integer",
            "minimum": 0,
            "description": "the number of a mark shown so far (give either mark, or view_id "
            "and bbox_2d)",
        },
        "view_id": {"type": "string", "description": 'a BEV view: "global" or "zoom_N"'},
        "bbox_2d": {
            "type": "array",
            "description": "box [x1, y1, x2, y2] in that view, integers 0-1000",
            "items": {"type": "number", "minimum": 0, "maximum": 1000},
            "minItems": 4,
            "maxItems": 4,
        },
    },
    "additionalProperties": False,
}


@pytest.mark.parametrize("name", list(PINNED))
def test_tool_schema_is_byte_identical_to_the_pinned_one(name):
    schema = json_schema(TOOL_ARGUMENTS[ToolName(name)])
    assert json.dumps(schema) == json.dumps(PINNED[name])


def test_answer_schemas_are_byte_identical_to_the_pinned_ones():
    assert json.dumps(json_schema(AnswerArgs)) == json.dumps(PINNED_ANSWER)
    assert json.dumps(json_schema(MarkAnswerArgs)) == json.dumps(PINNED_MARK_ANSWER)


def test_json_schema_is_a_fresh_dict():
    a = json_schema(ZoomInArgs)
    a["properties"]["bbox_2d"]["items"]["maximum"] = 5
    assert json_schema(ZoomInArgs)["properties"]["bbox_2d"]["items"]["maximum"] == 1000


def test_names_behave_as_their_strings():
    assert [str(t) for t in ENV_TOOLS] == ["landmark_query", "zoom_in", "oblique_render"]
    assert ToolName.ANSWER == "answer" and hash(ToolName.ZOOM_IN) == hash("zoom_in")
    assert f"{ToolName.ZOOM_IN}" == "zoom_in" and repr([ToolName.ZOOM_IN]) == "['zoom_in']"
    assert json.dumps({"name": ToolName.OBLIQUE_RENDER}) == '{"name": "oblique_render"}'
    assert type(str(ToolName.ZOOM_IN)) is str
    assert {"zoom_in": 1}[ToolName.ZOOM_IN] == 1 and ToolName("zoom_in") is ToolName.ZOOM_IN


def test_names_reach_polars_and_arrow_as_strings():
    df = pl.DataFrame({"tool": ["zoom_in", "answer"]})
    assert df.filter(pl.col("tool") == ToolName.ZOOM_IN).height == 1
    assert pa.array([ToolName.ZOOM_IN]).to_pylist() == ["zoom_in"]


def test_configured_tools_are_the_enum():
    assert typing.get_args(EnvTool) == ENV_TOOLS
    assert EnvParams().tools == list(ENV_TOOLS)
    assert all(type(t) is str for t in EnvParams().tools)


def test_every_environment_tool_has_an_arguments_model():
    assert tuple(TOOL_ARGUMENTS) == ENV_TOOLS
    assert ToolName.ANSWER not in TOOL_ARGUMENTS


def test_arg_specs_and_arguments_json():
    specs = arg_specs(ObliqueRenderArgs)
    assert [a.name for a in specs if a.required] == ["view_id", "bbox_2d", "azimuth_deg"]
    assert [a.kind for a in specs] == [ArgKind.VIEW, ArgKind.BOX, ArgKind.AZIMUTH, ArgKind.NUMBER]
    args = ObliqueRenderArgs(view_id="zoom_1", bbox_2d=(1, 2, 3, 4), azimuth_deg=90)
    assert json.dumps(arguments_json(args)) == (
        '{"view_id": "zoom_1", "bbox_2d": [1, 2, 3, 4], "azimuth_deg": 90}'
    )
    assert arguments_json(MarkAnswerArgs(mark=3)) == {"mark": 3}
