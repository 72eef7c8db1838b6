"""The agent's tools, each defined ONCE: name, description, arguments model, handler.

The names and the typed arguments models (from which every JSON schema is derived) are
:mod:`urbex.tool_vocabulary`'s.

The same definitions feed the Python episode API (:class:`urbex.env.episode.GroundingEnv`),
OpenAI-style tool schemas (:func:`openai_tool_schemas`) and the trl ``environment_factory``
class (:mod:`urbex.env.trl_adapter`). Handlers receive *validated* arguments
(:func:`urbex.env.protocol.validate_tool_call`) and never see the ground truth; they raise
:class:`~urbex.errors.ToolCallError` with an agent-readable message when a valid call cannot be
carried out (e.g. an empty region), which the episode turns into an error text.

Frames: ``bbox_2d`` is in view units (0–1000 of the named view's width/height); world boxes are
``[x_min, y_min, x_max, y_max]`` metres; azimuth is degrees clockwise from north (0 = camera
north of the region looking south, 90 = camera east looking west); elevation is degrees above
the horizon.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from urbex.config import EnvParams
from urbex.env.marks import (
    MarkState,
    draw_marks,
    listing_order,
    marks_text,
    marks_under_bev,
    marks_under_oblique,
)
from urbex.env.views import EpisodeView, ViewRegistry, expand_to_aspect, view_image
from urbex.errors import CacheError, ToolCallError
from urbex.landmarks.table import footprint_bounds
from urbex.language.chat import chat_safe
from urbex.tool_vocabulary import (
    TOOL_ARGUMENTS,
    AnswerArgs,
    MarkAnswerArgs,
    ToolName,
    arg_specs,
    json_schema,
)

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "ANSWER_SCHEMA",
    "MARK_ANSWER_SCHEMA",
    "TOOLS",
    "Tool",
    "ToolContext",
    "ToolResult",
    "ToolSpec",
    "mark_view",
    "offered_tools",
    "openai_tool_schemas",
]


class ToolContext(Protocol):
    """What a handler may use: the scene, the landmark index, the views, the marks (None when
    ``env.marks`` is off). No ground truth."""

    scene: Any  # urbex.scene.SceneCache
    scene_id: str
    landmarks: Any  # urbex.landmarks.LandmarkIndex | None
    views: ViewRegistry
    params: EnvParams
    turn: int
    marks: MarkState | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    """A tool's output: text for the agent and, for zoom/oblique, the new view."""

    text: str
    view: EpisodeView | None = None


class Tool(Protocol):
    """A tool handler: validated arguments in, a :class:`ToolResult` out."""

    def __call__(self, ctx: ToolContext, args: Mapping[str, Any]) -> ToolResult: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSpec:
    """One tool: its name, description, arguments model and handler.

    ``arguments`` is the tool's typed model (:data:`urbex.tool_vocabulary.TOOL_ARGUMENTS`); the
    JSON schema, the validator's checks, trl's docstring and the prompts' tool line all come
    from it.
    """

    name: ToolName
    description: str
    arguments: type[DataclassInstance]
    handler: Tool = field(repr=False)

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the arguments, as models are shown it (a fresh dict)."""
        return json_schema(self.arguments)

    def google_docstring(self) -> str:
        """The tool as a Google-style docstring (summary + ``Args:``), the form trl/transformers
        read a tool's schema from when the tool is a method (``environment_factory``)."""
        args = "\n".join(f"    {a.name}: {a.description}" for a in arg_specs(self.arguments))
        return f"{self.description}\n\nArgs:\n{args}\n"

    def openai_schema(self) -> dict[str, Any]:
        """``{"type": "function", "function": {name, description, parameters}}``."""
        return {
            "type": "function",
            "function": {
                "name": str(self.name),
                "description": self.description,
                "parameters": self.parameters,
            },
        }


# --------------------------------------------------------------------------------------------
# schemas
# --------------------------------------------------------------------------------------------

#: The final answer's schema with numbered marks on (``env.marks``): a shown mark or a box.
MARK_ANSWER_SCHEMA: dict[str, Any] = json_schema(MarkAnswerArgs)

#: The final answer's schema (an ``<answer>`` tag, or an ``answer`` function for API models).
ANSWER_SCHEMA: dict[str, Any] = json_schema(AnswerArgs)


# --------------------------------------------------------------------------------------------
# handlers
# --------------------------------------------------------------------------------------------


def _u(x: float) -> int:
    return round(float(x))


def _units_box(b: np.ndarray) -> list[int]:
    return [_u(v) for v in b]


def _bev_view(ctx: ToolContext, args: Mapping[str, Any]) -> EpisodeView:
    view = ctx.views[args["view_id"]]
    if not view.is_bev:  # the validator already rejects this; keep handlers safe on their own
        raise ToolCallError(f"view {view.view_id!r} is oblique; use a global or zoom view")
    return view


def _landmark_query(ctx: ToolContext, args: Mapping[str, Any]) -> ToolResult:
    """The landmark tool; its text carries user data (the GeoJSON's names), hence chat_safe."""
    res = _landmark_lookup(ctx, args)
    return ToolResult(text=chat_safe(res.text))


def _landmark_lookup(ctx: ToolContext, args: Mapping[str, Any]) -> ToolResult:
    view = _bev_view(ctx, args)
    name = args["name"]
    if ctx.landmarks is None:
        return ToolResult(
            text=f"landmark_query: no landmark is known in this scene; {name!r} not found."
        )
    res = ctx.landmarks.lookup(name, scene_id=ctx.scene_id, limit=ctx.params.landmark_limit)
    best = res.best if res.found else None
    if best is None:
        closest = ", ".join(repr(n) for n in list(res.closest_names)[:5]) or "none"
        return ToolResult(text=f"landmark_query: {name!r} not found; closest names: {closest}.")
    norm = best.row.get("name_norm")
    matches = [best] + [
        m for m in res.candidates[1:] if norm is not None and m.row.get("name_norm") == norm
    ]
    lines = [f"landmark_query: {len(matches)} match(es) for {name!r}:"]
    for i, m in enumerate(matches, 1):
        row = m.row
        x, y = float(m.x), float(m.y)
        kind = row.get("kind") or "landmark"
        uu, vv = view.world_to_units(x, y)
        u, v = float(uu), float(vv)
        where = f"world XY ({x:.1f}, {y:.1f}) m"
        fb = footprint_bounds(row, require_area=True)
        if i == 1 and ctx.marks is not None and ctx.params.marks.relate:
            # the best match: later listings say where their marks lie from it
            ctx.marks.add_anchor(m.name, fb if fb is not None else [x, y, x, y])
        around = _surroundings(ctx, view, fb, x, y)
        if fb is not None:
            ub = view.from_world_box(fb)
            inside = ub[2] > 0 and ub[0] < 1000 and ub[3] > 0 and ub[1] < 1000
            if inside:
                cb = np.clip(ub, 0, 1000)
                where += f'; in view "{view.view_id}": box {_units_box(cb)}'
                if (0 <= u <= 1000) and (0 <= v <= 1000):
                    where += f", centre [{_u(u)}, {_u(v)}]"
            else:
                where += f'; outside view "{view.view_id}"'
        elif (0 <= u <= 1000) and (0 <= v <= 1000):
            where += f'; in view "{view.view_id}": point [{_u(u)}, {_u(v)}]'
        else:
            where += f'; outside view "{view.view_id}"'
        if around is not None:
            where += f"; surroundings box {around}"
        lines.append(f"{i}. {m.name!r} ({kind}): {where}")
    return ToolResult(text="\n".join(lines))


def _surroundings(
    ctx: ToolContext, view: EpisodeView, footprint: Any, x: float, y: float
) -> list[int] | None:
    """With marks on: the landmark's footprint (or point ``x, y``, world m) grown by
    ``env.marks.context_m`` metres, in ``view``'s units and clipped to it — a region a
    ``zoom_in`` can copy to see the marks around the landmark; None without marks or outside."""
    if ctx.marks is None:
        return None
    c = ctx.params.marks.context_m
    base = np.asarray(footprint if footprint is not None else [x, y, x, y], dtype=np.float64)
    ub = view.from_world_box(base + np.array([-c, -c, c, c]))
    if not (ub[2] > 0 and ub[0] < 1000 and ub[3] > 0 and ub[1] < 1000):
        return None
    box = [max(0, math.floor(ub[0])), max(0, math.floor(ub[1]))]
    box += [
        min(1000, max(math.ceil(ub[2]), box[0] + 1)),
        min(1000, max(math.ceil(ub[3]), box[1] + 1)),
    ]
    return box


def mark_view(view: EpisodeView, state: MarkState) -> EpisodeView:
    """``view`` with the marks under it (``env.marks``) drawn on its image and recorded in
    :attr:`EpisodeView.marks`, as the agent sees them (its ids, map names and, with
    ``describe: attributes``, attribute words). A tool view carries at most ``max_listed`` of
    each class, nearest its centre first (its tool text lists them all); the global view
    carries the marks legible at its size (drawn), which the agent can read off the image."""
    p = state.params
    if view.kind == "oblique":
        under = marks_under_oblique(
            state.proposals, view.world_box, view.camera, limit=p.max_listed
        )
    else:
        limit = None if view.kind == "global" else p.max_listed
        under = marks_under_bev(state.proposals, view.world_box, view.from_world_box, limit=limit)
    if state.episode_numbering:
        under = listing_order(under)
        if view.kind == "global":  # number only the marks its image can carry: find them first
            trial_ids = state.number(u.mark_id for u in under)
            _, trial = draw_marks(view.image, state.describe(under, trial_ids), p)
            under = [u for u, m in zip(under, trial, strict=True) if m.drawn]
    ids = state.number(u.mark_id for u in under)
    image, marks = draw_marks(view.image, state.describe(under, ids), p)
    kept = [(u, m) for u, m in zip(under, marks, strict=True) if m.drawn or view.kind != "global"]
    state.commit({u.mark_id: ids[u.mark_id] for u, _ in kept})
    return replace(view, image=image, marks=tuple(m for _, m in kept))


def _with_marks(ctx: ToolContext, view: EpisodeView, text: str) -> ToolResult:
    """A tool view with its marks drawn and listed (``env.marks``); unchanged without marks."""
    if ctx.marks is None:
        return ToolResult(text=text, view=view)
    marked = mark_view(view, ctx.marks)
    listing = marks_text(
        view.view_id, marked.marks, ctx.params.marks.describe, layout=ctx.params.marks.layout
    )
    return ToolResult(text=f"{text}\n{listing}", view=marked)


def _zoom_in(ctx: ToolContext, args: Mapping[str, Any]) -> ToolResult:
    src = _bev_view(ctx, args)
    w, h = ctx.params.zoom_size
    asked = src.to_world_box(args["bbox_2d"])
    world = expand_to_aspect(asked, w / h, min_extent=ctx.params.min_zoom_extent_m)
    try:
        bev = ctx.scene.bev_window(world, out_size=(w, h))
    except CacheError as exc:
        raise ToolCallError(f"zoom_in failed: {exc}") from exc
    vid = ctx.views.next_id("zoom")
    view = EpisodeView(
        view_id=vid,
        kind="zoom",
        image=view_image(bev.image, (w, h)),
        world_box=np.asarray(bev.world_box, dtype=np.float64)[:4]
        if np.asarray(bev.world_box).shape == (4,)
        else world,
        transform=bev.transform,
        parent=src.view_id,
        turn=ctx.turn,
    )
    ew, eh = view.world_box[2] - view.world_box[0], view.world_box[3] - view.world_box[1]
    text = (
        f'zoom_in: new view "{vid}" ({w}x{h} px), a full-resolution crop of "{src.view_id}" box '
        f"{_units_box(np.asarray(args['bbox_2d']))}, covering {ew:.1f} m x {eh:.1f} m"
        " (widened to the image aspect and a minimum size when needed)."
    )
    return _with_marks(ctx, view, text)


_COMPASS = (
    "north",
    "north-east",
    "east",
    "south-east",
    "south",
    "south-west",
    "west",
    "north-west",
)


def _oblique_render(ctx: ToolContext, args: Mapping[str, Any]) -> ToolResult:
    src = _bev_view(ctx, args)
    w, h = ctx.params.oblique_size
    world = src.to_world_box(args["bbox_2d"])
    az = float(args["azimuth_deg"]) % 360.0
    el = float(args.get("elevation_deg", ctx.params.oblique_elevation_deg))
    try:
        render = ctx.scene.render_oblique(world, az, elevation_deg=el, size=(w, h))
    except CacheError as exc:
        raise ToolCallError(f"oblique_render failed: {exc}") from exc
    vid = ctx.views.next_id("oblique")
    view = EpisodeView(
        view_id=vid,
        kind="oblique",
        image=view_image(render.image, (w, h)),
        world_box=world,
        transform=None,
        parent=src.view_id,
        turn=ctx.turn,
        camera=getattr(render, "camera", None),
    )
    compass = _COMPASS[int((az + 22.5) // 45) % 8]
    text = (
        f'oblique_render: new view "{vid}" ({w}x{h} px), the points under "{src.view_id}" box '
        f"{_units_box(np.asarray(args['bbox_2d']))} seen from the {compass} (azimuth {az:.0f} deg, "
        f"elevation {el:.0f} deg). Evidence only: boxes and answers cannot use oblique views."
    )
    return _with_marks(ctx, view, text)


#: Every tool, by name, in :data:`urbex.tool_vocabulary.ENV_TOOLS` order.
TOOLS: dict[str, ToolSpec] = {
    s.name: s
    for s in (
        ToolSpec(
            name=ToolName.LANDMARK_QUERY,
            description="Look up a named landmark (street, building, park, ...); returns its world "
            "position and its box/point in the given view (0-1000), or the closest known names.",
            arguments=TOOL_ARGUMENTS[ToolName.LANDMARK_QUERY],
            handler=_landmark_query,
        ),
        ToolSpec(
            name=ToolName.ZOOM_IN,
            description="Crop a box of a BEV view from the full-resolution bird's-eye image; "
            'returns a new view "zoom_N" with finer detail.',
            arguments=TOOL_ARGUMENTS[ToolName.ZOOM_IN],
            handler=_zoom_in,
        ),
        ToolSpec(
            name=ToolName.OBLIQUE_RENDER,
            description="Render the 3D points under a box of a BEV view in perspective, seen from "
            'a compass direction; returns a new view "oblique_N" to check shape and height.',
            arguments=TOOL_ARGUMENTS[ToolName.OBLIQUE_RENDER],
            handler=_oblique_render,
        ),
    )
}


def offered_tools(names: Collection[str] | None = None) -> dict[str, ToolSpec]:
    """The tools offered to the agent (``env.tools``), in :data:`TOOLS` order; None = all.

    >>> list(offered_tools(["oblique_render", "landmark_query"]))
    ['landmark_query', 'oblique_render']
    >>> offered_tools(["teleport"])
    Traceback (most recent call last):
    ...
    ValueError: env.tools: unknown tool(s) ['teleport']; expected a subset of ['landmark_query', 'zoom_in', 'oblique_render']
    """
    if names is None:
        return dict(TOOLS)
    unknown = sorted(set(names) - set(TOOLS))
    if unknown:
        raise ValueError(
            f"env.tools: unknown tool(s) {unknown}; expected a subset of {list(TOOLS)}"
        )
    return {k: v for k, v in TOOLS.items() if k in names}


def openai_tool_schemas(
    *, include_answer: bool = False, tools: Collection[str] | None = None, marks: bool = False
) -> list[dict[str, Any]]:
    """OpenAI-style ``tools=[...]`` for prompted API models.

    Parameters
    ----------
    include_answer
        Also expose the final answer as an ``answer`` function (for APIs that can only act
        through function calls); otherwise the model answers with an ``<answer>`` tag.
    tools
        The tools offered (``env.tools``); None = all.
    marks
        Numbered marks are on (``env.marks``): the ``answer`` function also takes a ``mark``
        (:data:`MARK_ANSWER_SCHEMA`).

    Examples
    --------
    >>> [t["function"]["name"] for t in openai_tool_schemas(include_answer=True)]
    ['landmark_query', 'zoom_in', 'oblique_render', 'answer']
    >>> [t["function"]["name"] for t in openai_tool_schemas(tools=["zoom_in"])]
    ['zoom_in']
    >>> list(openai_tool_schemas(include_answer=True, marks=True)[-1]["function"]["parameters"]["properties"])
    ['mark', 'view_id', 'bbox_2d']
    """
    out = [s.openai_schema() for s in offered_tools(tools).values()]
    if include_answer:
        out.append(
            {
                "type": "function",
                "function": {
                    "name": str(ToolName.ANSWER),
                    "description": (
                        "Commit the final answer: a shown mark's number, or a box around the "
                        "target in a BEV view; ends the episode."
                        if marks
                        else "Commit the final box around the target in a BEV view; ends "
                        "the episode."
                    ),
                    "parameters": json_schema(MarkAnswerArgs if marks else AnswerArgs),
                },
            }
        )
    return out
