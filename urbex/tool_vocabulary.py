"""The agent's tool vocabulary: the tool names and each action's arguments as one typed model.

:class:`ToolName` names the three environment tools and the final answer. Each action's
arguments are a frozen dataclass (:class:`LandmarkQueryArgs`, :class:`ZoomInArgs`,
:class:`ObliqueRenderArgs`, :class:`AnswerArgs`, :class:`MarkAnswerArgs`) whose fields carry
their :class:`ArgKind` and the description a model reads. From these models come the JSON
schema shown to models (:func:`json_schema`), the argument checks of the action validator
(:func:`arg_specs`, used by :mod:`urbex.env.protocol`), the Google docstrings trl renders, the
OpenAI tool list and the prompts' tool lines (:mod:`urbex.env.tools`, :mod:`urbex.env.prompts`).

Frames: ``bbox_2d`` is ``[x1, y1, x2, y2]`` in view units (0–1000 of the named view's width and
height, origin top-left); ``azimuth_deg`` is degrees clockwise from north; ``elevation_deg``
degrees above the horizon.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "ENV_TOOLS",
    "TOOL_ARGUMENTS",
    "AnswerArgs",
    "ArgKind",
    "ArgSpec",
    "EnvTool",
    "LandmarkQueryArgs",
    "MarkAnswerArgs",
    "ObliqueRenderArgs",
    "ToolName",
    "ZoomInArgs",
    "arg_specs",
    "arguments_json",
    "json_schema",
]


class ToolName(enum.StrEnum):
    """The agent's actions: three environment tools and the final answer.

    A member is its name string (equal, same hash, formats as the name), and its ``repr`` is the
    string's, so a list of names reads the same in the error texts shown to models.

    >>> ToolName.ZOOM_IN == "zoom_in", f"{ToolName.ZOOM_IN}", [ToolName.ANSWER]
    (True, 'zoom_in', ['answer'])
    """

    LANDMARK_QUERY = "landmark_query"
    ZOOM_IN = "zoom_in"
    OBLIQUE_RENDER = "oblique_render"
    ANSWER = "answer"

    def __repr__(self) -> str:
        return repr(self.value)


#: The environment's tools (the answer is no tool), in the order they are offered and counted.
ENV_TOOLS: tuple[ToolName, ...] = (
    ToolName.LANDMARK_QUERY,
    ToolName.ZOOM_IN,
    ToolName.OBLIQUE_RENDER,
)

#: :data:`ENV_TOOLS` as the type of a configured tool (``env.tools``): a type checker and the
#: params' validation read the names from a ``Literal``, which cannot be built from the enum
#: (a test holds the two equal).
EnvTool = Literal["landmark_query", "zoom_in", "oblique_render"]


class ArgKind(enum.StrEnum):
    """What an argument holds, which decides its JSON type and how it is validated."""

    VIEW = "view"  # a BEV view id the episode knows (not an oblique view)
    BOX = "box"  # [x1, y1, x2, y2] view units 0-1000, x1 < x2, y1 < y2
    TEXT = "text"  # a string, stripped, 1..200 characters
    NUMBER = "number"  # a finite number within the field's bounds
    AZIMUTH = "azimuth"  # a finite number of degrees, wrapped to [0, 360)
    MARK = "mark"  # the id of a numbered mark, an integer >= 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ArgSpec:
    """One argument of an action: its kind, description, JSON bounds and whether it is required."""

    name: str
    kind: ArgKind
    description: str
    required: bool
    bounds: Mapping[str, Any]


def _arg(kind: ArgKind, description: str, *, default: Any = MISSING, **bounds: Any) -> Any:
    """A dataclass field of an arguments model (``bounds``: JSON schema keywords, e.g.
    ``exclusiveMinimum``, in the order the schema lists them)."""
    meta = {"kind": kind, "description": description, "bounds": bounds}
    return field(default=default, metadata=meta)


_VIEW_ID = 'id of a BEV view you have seen: "global" or "zoom_N" (not "oblique_N")'
_BBOX = (
    "box [x1, y1, x2, y2] in that view, integers 0-1000 normalised to the view's "
    "width/height, top-left origin, x1 < x2 and y1 < y2"
)
_ANSWER_VIEW_ID = 'a BEV view: "global" or "zoom_N"'


@dataclass(frozen=True, slots=True, kw_only=True)
class LandmarkQueryArgs:
    """``landmark_query``: a landmark's name and the BEV view to place it in."""

    name: str = _arg(ArgKind.TEXT, "landmark name, e.g. a street or building")
    view_id: str = _arg(ArgKind.VIEW, _VIEW_ID)


@dataclass(frozen=True, slots=True, kw_only=True)
class ZoomInArgs:
    """``zoom_in``: a box of a BEV view to crop at full resolution."""

    view_id: str = _arg(ArgKind.VIEW, _VIEW_ID)
    bbox_2d: tuple[float, float, float, float] = _arg(ArgKind.BOX, _BBOX)


@dataclass(frozen=True, slots=True, kw_only=True)
class ObliqueRenderArgs:
    """``oblique_render``: a box of a BEV view and the camera direction to render it from
    (``elevation_deg`` None: the environment's default, ``env.oblique_elevation_deg``)."""

    view_id: str = _arg(ArgKind.VIEW, _VIEW_ID)
    bbox_2d: tuple[float, float, float, float] = _arg(ArgKind.BOX, _BBOX)
    azimuth_deg: float = _arg(
        ArgKind.AZIMUTH,
        "camera direction, degrees clockwise from north (0 = from the north, 90 = from the east)",
    )
    elevation_deg: float | None = _arg(
        ArgKind.NUMBER,
        "camera elevation above the horizon, degrees (0, 90]; default 45",
        default=None,
        exclusiveMinimum=0,
        maximum=90,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class AnswerArgs:
    """The final answer: a box around the target in a BEV view."""

    view_id: str = _arg(ArgKind.VIEW, _ANSWER_VIEW_ID)
    bbox_2d: tuple[float, float, float, float] = _arg(ArgKind.BOX, _BBOX)


@dataclass(frozen=True, slots=True, kw_only=True)
class MarkAnswerArgs:
    """The final answer with numbered marks on (``env.marks``): a shown mark, or a box."""

    mark: int | None = _arg(
        ArgKind.MARK,
        "the number of a mark shown so far (give either mark, or view_id and bbox_2d)",
        default=None,
    )
    view_id: str | None = _arg(ArgKind.VIEW, _ANSWER_VIEW_ID, default=None)
    bbox_2d: tuple[float, float, float, float] | None = _arg(
        ArgKind.BOX, "box [x1, y1, x2, y2] in that view, integers 0-1000", default=None
    )


#: Each environment tool's arguments model.
TOOL_ARGUMENTS: dict[ToolName, type[DataclassInstance]] = {
    ToolName.LANDMARK_QUERY: LandmarkQueryArgs,
    ToolName.ZOOM_IN: ZoomInArgs,
    ToolName.OBLIQUE_RENDER: ObliqueRenderArgs,
}


@functools.cache
def arg_specs(model: type[DataclassInstance]) -> tuple[ArgSpec, ...]:
    """The arguments of an arguments model, in field order.

    >>> [(a.name, a.kind.value, a.required) for a in arg_specs(ZoomInArgs)]
    [('view_id', 'view', True), ('bbox_2d', 'box', True)]
    """
    return tuple(
        ArgSpec(
            name=f.name,
            kind=f.metadata["kind"],
            description=f.metadata["description"],
            required=f.default is MISSING and f.default_factory is MISSING,
            bounds=MappingProxyType(dict(f.metadata["bounds"])),
        )
        for f in fields(model)
    )


def _property(a: ArgSpec) -> dict[str, Any]:
    """One argument's JSON schema."""
    if a.kind is ArgKind.BOX:
        return {
            "type": "array",
            "description": a.description,
            "items": {"type": "number", "minimum": 0, "maximum": 1000},
            "minItems": 4,
            "maxItems": 4,
        }
    if a.kind is ArgKind.MARK:
        return {"type": "integer", "minimum": 0, "description": a.description}
    kind = "string" if a.kind in (ArgKind.VIEW, ArgKind.TEXT) else "number"
    return {"type": kind, "description": a.description, **a.bounds}


def json_schema(model: type[DataclassInstance]) -> dict[str, Any]:
    """The JSON schema of an arguments model, as models are shown it (a fresh dict).

    >>> json_schema(LandmarkQueryArgs)["required"], list(json_schema(MarkAnswerArgs))
    (['name', 'view_id'], ['type', 'properties', 'additionalProperties'])
    """
    specs = arg_specs(model)
    out: dict[str, Any] = {
        "type": "object",
        "properties": {a.name: _property(a) for a in specs},
    }
    required = [a.name for a in specs if a.required]
    if required:
        out["required"] = required
    out["additionalProperties"] = False
    return out


def arguments_json(args: DataclassInstance) -> dict[str, Any]:
    """An arguments model instance as the JSON object of an action (unset optionals left out).

    >>> arguments_json(ObliqueRenderArgs(view_id="global", bbox_2d=(1, 2, 3, 4), azimuth_deg=90))
    {'view_id': 'global', 'bbox_2d': [1, 2, 3, 4], 'azimuth_deg': 90}
    """
    out: dict[str, Any] = {}
    for f in fields(args):
        value = getattr(args, f.name)
        if value is not None:
            out[f.name] = list(value) if isinstance(value, tuple) else value
    return out
