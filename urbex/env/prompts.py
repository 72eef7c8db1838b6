"""The prompts of an episode: the system prompt (task, views, coordinate convention, tools,
action format, turn budget, numbered marks) and the first user message. The actions they
describe are parsed and validated by :mod:`urbex.env.protocol`."""

from __future__ import annotations

import functools
import json
from collections.abc import Collection
from typing import TYPE_CHECKING

from urbex.config import EnvParams
from urbex.env.tools import offered_tools, openai_tool_schemas
from urbex.language.chat import chat_safe
from urbex.tool_vocabulary import (
    LandmarkQueryArgs,
    ObliqueRenderArgs,
    ToolName,
    ZoomInArgs,
    arg_specs,
    arguments_json,
)

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["query_line", "system_prompt", "user_prompt"]


_SYSTEM_TEMPLATE = """\
You are a city-scale 3D visual grounding agent. You see a bird's-eye view (BEV) image of a \
point-cloud city block (north up). Your task: find the single object that the user's \
description refers to and commit a bounding box around it.

## Views
Every image you receive is a view with a view_id: "global" (the whole block, downsampled), \
"zoom_N" (a full-resolution crop of the BEV) or "oblique_N" (a perspective 3D render, for \
checking shape and height only). All views stay available for the whole episode.

## Coordinates
Boxes are [x1, y1, x2, y2] in integers from 0 to 1000, normalised to the width (x) and \
height (y) of the view you name: (0, 0) is the top-left corner, (1000, 1000) the bottom-right; \
0 <= x1 < x2 <= 1000 and 0 <= y1 < y2 <= 1000. Boxes must refer to a "global" or "zoom_N" view; \
oblique views cannot be used for boxes.

## Tools
{tools}
{marks}## Actions
Each turn, think briefly, then output exactly ONE action:
{tool_example}- or the final answer: <answer>{{"view_id": "zoom_1", "bbox_2d": [312, 280, 655, 610]}}</answer>
{mark_example}You have at most {max_turns} turns in total, the answer included. Invalid actions cost a turn. \
Answer before the budget runs out: a box in a BEV view (global or zoom) tightly around the target.\
"""


#: The tool call the action format shows, by preference: the first offered tool's.
_TOOL_EXAMPLES: dict[ToolName, DataclassInstance] = {
    ToolName.ZOOM_IN: ZoomInArgs(view_id="global", bbox_2d=(400, 380, 520, 470)),
    ToolName.LANDMARK_QUERY: LandmarkQueryArgs(name="Merton Hall", view_id="global"),
    ToolName.OBLIQUE_RENDER: ObliqueRenderArgs(
        view_id="global", bbox_2d=(400, 380, 520, 470), azimuth_deg=180
    ),
}


def _tool_example(tools: Collection[str]) -> str:
    """The action format's tool-call line, with an offered tool (none offered: no line)."""
    for name, args in _TOOL_EXAMPLES.items():
        if name in tools:
            call = json.dumps({"name": str(name), "arguments": arguments_json(args)})
            return f"- a tool call: <tool_call>{call}</tool_call>\n"
    return ""


_MARKS_SECTION = """\
## Marks
Numbered marks outline candidate objects found in the points: a yellow box with its number on \
the views. Every tool view lists its marks, one line per class, each class nearest the view's \
centre first: "class: id [x1, y1, x2, y2]; ..." (the box in that view). You may answer with a \
mark shown so far instead of a box.

"""
#: The marks section for ``env.marks.layout: id_last`` (one line per mark, its id last).
_MARKS_SECTION_ID_LAST = """\
## Marks
Numbered marks outline candidate objects found in the points: a yellow box with its number on \
the views. Every tool view lists its marks, one line per mark, each class nearest the view's \
centre first: "[x1, y1, x2, y2] words class = id" (the box in that view). You may answer with a \
mark shown so far instead of a box.

"""
_MARK_EXAMPLE = '- or the final answer by mark: <answer>{"mark": 7}</answer>\n'


def _tool_lines(tools: Collection[str] | None = None) -> str:
    specs = offered_tools(tools)
    if not specs:
        return "No tools are offered in this episode: answer from the global view.\n"
    lines = []
    for spec in specs.values():
        args = ", ".join(f"{a.name}{'' if a.required else '?'}" for a in arg_specs(spec.arguments))
        lines.append(f"- {spec.name}({args}): {spec.description}")
    return "\n".join(lines) + "\n"


def system_prompt(params: EnvParams | None = None, *, include_tool_schemas: bool = False) -> str:
    """The system prompt: task, views, coordinate convention, tools, action format, budget.

    Parameters
    ----------
    params
        Environment parameters (for the turn budget); defaults when None.
    include_tool_schemas
        Also append the tools' JSON schemas (for prompted models whose chat template does not
        list tools itself; trl's Qwen3-VL template lists them, so leave False there).

    Examples
    --------
    >>> p = system_prompt()
    >>> "0 <= x1 < x2 <= 1000" in p and "<answer>" in p and "zoom_in(" in p
    True
    >>> p = system_prompt(EnvParams(tools=["landmark_query"]))
    >>> "landmark_query(" in p, "zoom_in" in p, "oblique_render" in p
    (True, False, False)
    >>> "<tool_call>" in system_prompt(EnvParams(tools=[]))
    False
    >>> '{"mark": 7}' in system_prompt(), '{"mark": 7}' in system_prompt(EnvParams(marks={"enabled": True}))
    (False, True)
    """
    params = params or EnvParams()
    marks = params.marks.layout if params.marks.enabled else None
    return _system_prompt(tuple(params.tools), params.max_turns, include_tool_schemas, marks)


@functools.lru_cache(maxsize=32)
def _system_prompt(
    tools: tuple[str, ...], max_turns: int, include_tool_schemas: bool, marks: str | None
) -> str:
    """:func:`system_prompt` of these settings, built once (every episode starts with it)."""
    text = _SYSTEM_TEMPLATE.format(
        tools=_tool_lines(list(tools)),
        tool_example=_tool_example(list(tools)),
        max_turns=max_turns,
        marks={None: "", "id_last": _MARKS_SECTION_ID_LAST}.get(marks, _MARKS_SECTION),
        mark_example=_MARK_EXAMPLE if marks else "",
    )
    if include_tool_schemas and tools:
        schemas = "\n".join(
            json.dumps(s["function"])
            for s in openai_tool_schemas(tools=list(tools), marks=marks is not None)
        )
        text += f"\n\n## Tool schemas\n<tools>\n{schemas}\n</tools>"
    return text


def query_line(description: str) -> str:
    """The line that states the query: the first user message opens with it, and with
    ``env.marks.remind`` every tool text ends with it (``listings``: every text listing marks).

    >>> query_line(" the red car <|im_end|> ")
    'Query: the red car ‹|im_end|>'
    """
    return f"Query: {chat_safe(description.strip())}"


def user_prompt(description: str, *, global_view_id: str = "global", max_turns: int = 8) -> str:
    """The first user message: the query and what the attached image is.

    >>> user_prompt("the red car next to the church", max_turns=8).splitlines()[0]
    'Query: the red car next to the church'
    """
    return (
        f"{query_line(description)}\n"
        f'The attached image is view "{global_view_id}" (the whole block, north up). '
        f"You have {max_turns} turns."
    )
