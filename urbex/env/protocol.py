"""The action protocol: the parser/validator for model output (the prompts that describe it:
:mod:`urbex.env.prompts`).

A model turn is free text (thoughts, ``<think>`` blocks, code fences, whitespace) that must
contain **exactly one** action:

* a Qwen3 tool call ``<tool_call>{"name": "...", "arguments": {...}}</tool_call>``, or
* the final answer ``<answer>{"view_id": "...", "bbox_2d": [x1, y1, x2, y2]}</answer>``, or,
  with numbered marks on (``env.marks``), ``<answer>{"mark": 7}</answer>`` naming a mark shown
  so far.

Coordinates in actions are **view units**: numbers in ``[0, 1000]`` normalised to the view's
width (x) and height (y), origin top-left, ``0 ≤ x1 < x2 ≤ 1000`` and ``0 ≤ y1 < y2 ≤ 1000``
(Qwen3-VL's convention). :func:`parse_action` never raises: anything wrong becomes
:class:`Invalid` with a reason the model can learn from.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from urbex.env.tools import TOOLS, ToolSpec, offered_tools
from urbex.tool_vocabulary import ArgKind, ArgSpec, ToolName, arg_specs

__all__ = [
    "Action",
    "Answer",
    "Invalid",
    "MarkAnswer",
    "ToolCall",
    "parse_action",
    "validate_answer",
    "validate_mark",
    "validate_tool_call",
]

_MAX_TEXT_CHARS = 200_000
_MAX_NAME_CHARS = 200
_TAGS = ("tool_call", ToolName.ANSWER)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """A validated tool call.

    Attributes
    ----------
    name : str
        One of the environment tools (:data:`urbex.tool_vocabulary.ENV_TOOLS`).
    arguments : dict
        Validated, normalised arguments: ``bbox_2d`` a tuple of 4 floats (view units 0–1000),
        ``azimuth_deg`` in [0, 360), ``elevation_deg`` in (0, 90] (filled with the default when
        absent for ``oblique_render``), strings stripped.
    """

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.name not in TOOLS:
            raise ValueError(f"ToolCall.name: expected one of {sorted(TOOLS)}, got {self.name!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    """A validated final answer: a box in a BEV view (view units 0–1000, ``x1 < x2``, ``y1 < y2``)."""

    view_id: str
    bbox_2d: tuple[float, float, float, float]

    def __post_init__(self) -> None:
        _check_box_or_raise(self.bbox_2d)


@dataclass(frozen=True, slots=True, kw_only=True)
class MarkAnswer:
    """A validated final answer naming a numbered mark shown so far (``env.marks``); its boxes
    and points are the mark's proposal's own."""

    mark: int

    def __post_init__(self) -> None:
        if isinstance(self.mark, bool) or not isinstance(self.mark, int) or self.mark < 0:
            raise ValueError(f"MarkAnswer.mark: expected an int >= 0, got {self.mark!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Invalid:
    """An unusable action. ``reason`` is shown to the model; ``tool`` is the tool name if known."""

    reason: str
    tool: str | None = None


Action = ToolCall | Answer | MarkAnswer | Invalid


# --------------------------------------------------------------------------------------------
# parsing
# --------------------------------------------------------------------------------------------


def _strip_think(text: str) -> str:
    """Remove ``<think>…</think>`` blocks, and everything before a dangling ``</think>``."""
    out = []
    i = 0
    while True:
        j = text.find("<think>", i)
        if j < 0:
            out.append(text[i:])
            break
        out.append(text[i:j])
        k = text.find("</think>", j + 7)
        if k < 0:  # unclosed think: the rest is thought
            break
        i = k + 8
    s = "".join(out)
    k = s.rfind("</think>")
    return s[k + 8 :] if k >= 0 else s


def _find_actions(text: str) -> tuple[list[tuple[str, str]], str | None]:
    """All ``(tag, body)`` pairs in order; an error string for unclosed/nested tags."""
    found: list[tuple[str, str]] = []
    i = 0
    n = len(text)
    while i < n:
        starts = [(text.find(f"<{t}>", i), t) for t in _TAGS]
        starts = [(p, t) for p, t in starts if p >= 0]
        if not starts:
            break
        pos, tag = min(starts)
        body_start = pos + len(tag) + 2
        end = text.find(f"</{tag}>", body_start)
        if end < 0:
            return found, f"<{tag}> is not closed with </{tag}>"
        body = text[body_start:end]
        for t in _TAGS:
            if f"<{t}>" in body:
                return found, f"<{t}> found nested inside <{tag}>"
        found.append((tag, body))
        i = end + len(tag) + 3
    return found, None


def _strip_fence(body: str) -> str:
    s = body.strip()
    if s.startswith("```"):
        nl = s.find("\n")
        s = s[nl + 1 :] if nl >= 0 else s[3:]
        if s.rstrip().endswith("```"):
            s = s.rstrip()[:-3]
    return s.strip()


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed in JSON (numbers must be finite)")


def _loads(body: str, what: str) -> tuple[Any, str | None]:
    s = _strip_fence(body)
    if not s:
        return None, f"{what} is empty; expected a JSON object"
    try:
        obj = json.loads(s, parse_constant=_reject_constant)
    except RecursionError:
        return None, f"{what} JSON is nested too deeply"
    except ValueError as exc:  # JSONDecodeError is a ValueError
        msg = str(exc).splitlines()[0][:160]
        return None, f"{what} is not valid JSON ({msg})"
    try:  # a lone surrogate (JSON's "\ud800") is no text: no file could record the action
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        return None, f"{what} holds a lone surrogate ({exc.object[exc.start]!r}): not UTF-8 text"
    return obj, None


def _describe(v: Any) -> str:
    r = repr(v)
    return f"{type(v).__name__} {r if len(r) <= 40 else r[:37] + '...'}"


def _number(v: Any, where: str) -> tuple[float | None, str | None]:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None, f"{where} must be a number, got {_describe(v)}"
    if isinstance(v, int) and abs(v) > 10**9:
        return None, f"{where} is out of range, got {_describe(v)}"
    f = float(v)
    if not math.isfinite(f):
        return None, f"{where} must be finite, got {v!r}"
    return f, None


def _check_box(v: Any, where: str) -> tuple[tuple[float, float, float, float] | None, str | None]:
    if not isinstance(v, list | tuple) or len(v) != 4:
        return None, f"{where} must be a list of 4 numbers [x1, y1, x2, y2], got {_describe(v)}"
    vals: list[float] = []
    for i, x in enumerate(v):
        f, err = _number(x, f"{where}[{i}]")
        if err or f is None:
            return None, err
        vals.append(f)
    x1, y1, x2, y2 = vals
    if not all(0 <= c <= 1000 for c in vals):
        return None, f"{where} values must be within 0..1000, got {[_fmt(c) for c in vals]}"
    if not (x1 < x2 and y1 < y2):
        return None, (
            f"{where} must satisfy x1 < x2 and y1 < y2 (top-left then bottom-right), "
            f"got {[_fmt(c) for c in vals]}"
        )
    return (x1, y1, x2, y2), None


def _check_box_or_raise(v: Any) -> None:
    _, err = _check_box(v, "bbox_2d")
    if err:
        raise ValueError(err)


def _fmt(x: float) -> int | float:
    # huge integral floats stay floats: int(1e269) would print 270 digits into the error text
    return int(x) if float(x).is_integer() and abs(x) < 1e15 else x


def _check_view(
    v: Any, where: str, known: Collection[str], oblique: Collection[str], purpose: str
) -> str | None:
    if not isinstance(v, str):
        return f"{where} must be a string view id, got {_describe(v)}"
    if v not in known:
        shown = sorted(known)
        return f"{where} {v[:60]!r} is not a known view; known views: {shown}"
    if v in oblique:
        bev = sorted(k for k in known if k not in oblique)
        return f"{where} {v!r} is an oblique view and cannot be used {purpose}; use one of {bev}"
    return None


def validate_tool_call(
    name: Any,
    arguments: Any,
    *,
    known_views: Collection[str],
    oblique_views: Collection[str] = (),
    default_elevation_deg: float = 45.0,
    offered: Collection[str] | None = None,
) -> ToolCall | Invalid:
    """Validate a tool name and its arguments against the tool's schema and the episode state.

    Never raises. Checks: tool exists and is offered (``offered``, ``env.tools``; None = every
    tool); arguments is an object with exactly the schema's keys
    (required present, no unknown); strings are strings, numbers are finite ints/floats (bools
    and numeric strings are rejected), boxes are valid (view units 0–1000), view ids exist and
    are BEV views (not oblique), ``elevation_deg`` in (0, 90].

    Examples
    --------
    >>> validate_tool_call("zoom_in", {"view_id": "global", "bbox_2d": [0, 0, 500, 500]},
    ...                    known_views={"global"})
    ToolCall(name='zoom_in', arguments={'view_id': 'global', 'bbox_2d': (0.0, 0.0, 500.0, 500.0)})
    >>> validate_tool_call("zoom_in", {"view_id": "global", "bbox_2d": [9, 0, 5, 5]},
    ...                    known_views={"global"}).reason
    'zoom_in: bbox_2d must satisfy x1 < x2 and y1 < y2 (top-left then bottom-right), got [9, 0, 5, 5]'
    >>> validate_tool_call("zoom_in", {"view_id": "global", "bbox_2d": [0, 0, 5, 5]},
    ...                    known_views={"global"}, offered=["landmark_query"]).reason
    "tool 'zoom_in' is not offered in this episode; offered tools: ['landmark_query']"
    """
    try:
        if isinstance(name, str) and name in TOOLS and offered is not None and name not in offered:
            return Invalid(reason=_not_offered(name, offered), tool=name)
        return _validate_tool_call(
            name, arguments, known_views, oblique_views, default_elevation_deg
        )
    except Exception as exc:  # pragma: no cover - safety net: the parser must never raise
        return Invalid(reason=f"could not validate the tool call ({type(exc).__name__})")


def _not_offered(name: str, offered: Collection[str]) -> str:
    names = list(offered_tools(offered))
    if not names:
        return f"tool {name!r} is not offered in this episode; no tools are offered: answer"
    return f"tool {name!r} is not offered in this episode; offered tools: {names}"


def _validate_tool_call(
    name: Any,
    arguments: Any,
    known: Collection[str],
    oblique: Collection[str],
    default_elevation: float,
) -> ToolCall | Invalid:
    if not isinstance(name, str):
        return Invalid(reason=f'tool call "name" must be a string, got {_describe(name)}')
    if name not in TOOLS:
        return Invalid(reason=f"unknown tool {name[:60]!r}; available tools: {sorted(TOOLS)}")
    spec: ToolSpec = TOOLS[name]
    if not isinstance(arguments, Mapping):
        return Invalid(
            reason=f'{name}: "arguments" must be a JSON object, got {_describe(arguments)}',
            tool=name,
        )
    specs = {a.name: a for a in arg_specs(spec.arguments)}
    unknown = [k for k in arguments if k not in specs]
    if unknown:
        return Invalid(
            reason=f"{name}: unknown argument(s) {[str(k)[:40] for k in unknown]}; "
            f"expected {list(specs)}",
            tool=name,
        )
    missing = [k for k, a in specs.items() if a.required and k not in arguments]
    if missing:
        return Invalid(reason=f"{name}: missing argument(s) {missing}", tool=name)
    out: dict[str, Any] = {}
    for key, value in arguments.items():
        value, err = _check_arg(specs[key], value, known, oblique)
        if err:
            return Invalid(reason=f"{name}: {err}", tool=name)
        out[key] = value
    if name == ToolName.OBLIQUE_RENDER and "elevation_deg" not in out:
        out["elevation_deg"] = float(default_elevation)
    return ToolCall(name=name, arguments=out)


def _check_arg(
    a: ArgSpec, value: Any, known: Collection[str], oblique: Collection[str]
) -> tuple[Any, str | None]:
    """One tool argument checked and normalised by its kind: ``(value, None)`` or
    ``(None, error)``."""
    where = a.name
    if a.kind is ArgKind.VIEW:
        err = _check_view(value, where, known, oblique, "for boxes or landmark projection")
        return (None, err) if err else (value, None)
    if a.kind is ArgKind.BOX:
        return _check_box(value, where)
    if a.kind is ArgKind.TEXT:
        if not isinstance(value, str):
            return None, f"{where} must be a string, got {_describe(value)}"
        s = value.strip()
        if not s or len(s) > _MAX_NAME_CHARS:
            return None, f"{where} must be 1..{_MAX_NAME_CHARS} characters, got {len(s)}"
        return s, None
    if a.kind in (ArgKind.NUMBER, ArgKind.AZIMUTH):
        f, err = _number(value, where)
        if err or f is None:
            return None, err
        lo, hi = a.bounds.get("exclusiveMinimum"), a.bounds.get("maximum")
        if (lo is not None and not f > lo) or (hi is not None and not f <= hi):
            return None, f"{where} must be in ({lo}, {hi}], got {_fmt(f)}"
        return (f % 360.0 if a.kind is ArgKind.AZIMUTH else f), None
    return None, f"argument {where!r} cannot be validated"  # pragma: no cover - a kind unchecked


def validate_answer(
    view_id: Any, bbox_2d: Any, *, known_views: Collection[str], oblique_views: Collection[str] = ()
) -> Answer | Invalid:
    """Validate an answer's view id (known, BEV) and box (view units). Never raises.

    >>> validate_answer("oblique_2", [0, 0, 10, 10], known_views={"global", "oblique_2"},
    ...                 oblique_views={"oblique_2"}).reason  # doctest: +ELLIPSIS
    "answer: view_id 'oblique_2' is an oblique view and cannot be used for the answer; ..."
    """
    err = _check_view(view_id, "view_id", known_views, oblique_views, "for the answer")
    if err:
        return Invalid(reason=f"answer: {err}", tool=ToolName.ANSWER)
    box, err = _check_box(bbox_2d, "bbox_2d")
    if err or box is None:
        return Invalid(reason=f"answer: {err}", tool=ToolName.ANSWER)
    return Answer(view_id=view_id, bbox_2d=box)


def _ids(ids: Collection[int], limit: int = 120) -> str:
    """Sorted ids, at most ``limit`` of them written out."""
    s = sorted(ids)
    return str(s) if len(s) <= limit else f"{s[:limit]} … ({len(s)} in all)".replace("] …", ", …]")


def validate_mark(mark: Any, *, shown: Collection[int]) -> MarkAnswer | Invalid:
    """Validate an answer's mark id: an integer ≥ 0 that a view has shown. Never raises.

    >>> validate_mark(7, shown={3, 7})
    MarkAnswer(mark=7)
    >>> validate_mark(9, shown={3, 7}).reason
    'answer: mark 9 was never shown; marks shown so far: [3, 7]'
    >>> validate_mark(7.0, shown={7}).reason
    'answer: mark must be an integer mark id, got float 7.0'
    """
    if isinstance(mark, bool) or not isinstance(mark, int):
        return Invalid(
            reason=f"answer: mark must be an integer mark id, got {_describe(mark)}",
            tool=ToolName.ANSWER,
        )
    if mark < 0:
        return Invalid(reason=f"answer: mark must be >= 0, got {mark}", tool=ToolName.ANSWER)
    if mark not in shown:
        seen = _ids(shown) if shown else "none (zoom in to see the marks of a region)"
        return Invalid(
            reason=f"answer: mark {mark} was never shown; marks shown so far: {seen}",
            tool=ToolName.ANSWER,
        )
    return MarkAnswer(mark=mark)


def parse_action(
    text: Any,
    *,
    known_views: Collection[str],
    oblique_views: Collection[str] = (),
    turns_left: int | None = None,
    default_elevation_deg: float = 45.0,
    offered_tools: Collection[str] | None = None,
    marks_shown: Collection[int] | None = None,
) -> Action:
    """Parse and validate one model turn. **Never raises.**

    Parameters
    ----------
    text
        The model's raw output for one turn (thoughts allowed around the action).
    known_views
        View ids that exist in the episode.
    oblique_views
        The subset of ``known_views`` that are oblique (no boxes/answers there).
    turns_left
        Turns left *including* this one; ``<= 0`` makes every action invalid (budget used up).
    default_elevation_deg
        Filled in when ``oblique_render`` omits ``elevation_deg``.
    offered_tools
        The tools offered (``env.tools``); a call to another is invalid. None = every tool.
    marks_shown
        With numbered marks on (``env.marks``): the mark ids shown so far, which an answer
        ``{"mark": N}`` may name. None = marks off (a ``mark`` key is invalid).

    Returns
    -------
    ToolCall | Answer | MarkAnswer | Invalid

    Examples
    --------
    >>> parse_action('<think>go</think> <tool_call>{"name": "landmark_query", '
    ...              '"arguments": {"name": "Park", "view_id": "global"}}</tool_call>',
    ...              known_views={"global"})
    ToolCall(name='landmark_query', arguments={'name': 'Park', 'view_id': 'global'})
    >>> parse_action('<answer>{"view_id": "global", "bbox_2d": [1, 2, 30, 40]}</answer>',
    ...              known_views={"global"})
    Answer(view_id='global', bbox_2d=(1.0, 2.0, 30.0, 40.0))
    >>> parse_action("I think it's the car.", known_views={"global"}).reason  # doctest: +ELLIPSIS
    'no action found: ...'
    """
    try:
        return _parse(
            text,
            known_views,
            oblique_views,
            turns_left,
            default_elevation_deg,
            offered_tools,
            marks_shown,
        )
    except Exception as exc:  # pragma: no cover - safety net: the parser must never raise
        return Invalid(reason=f"could not parse the action ({type(exc).__name__})")


def _parse(
    text: Any,
    known: Collection[str],
    oblique: Collection[str],
    turns_left: int | None,
    default_elevation: float,
    offered: Collection[str] | None = None,
    marks_shown: Collection[int] | None = None,
) -> Action:
    if turns_left is not None and turns_left <= 0:
        return Invalid(reason="the turn budget is used up; no further actions are accepted")
    if not isinstance(text, str):
        return Invalid(reason=f"expected text, got {type(text).__name__}")
    if len(text) > _MAX_TEXT_CHARS:
        return Invalid(reason=f"turn is too long ({len(text)} > {_MAX_TEXT_CHARS} characters)")
    body_text = _strip_think(text)
    actions, err = _find_actions(body_text)
    if err:
        return Invalid(reason=err)
    if not actions:
        return Invalid(
            reason="no action found: end the turn with exactly one "
            '<tool_call>{"name": ..., "arguments": {...}}</tool_call> or '
            '<answer>{"view_id": ..., "bbox_2d": [x1, y1, x2, y2]}</answer>'
        )
    if len(actions) > 1:
        return Invalid(reason=f"found {len(actions)} actions; output exactly one action per turn")
    tag, body = actions[0]
    obj, err = _loads(body, f"<{tag}>")
    if err:
        return Invalid(reason=err, tool=ToolName.ANSWER if tag == ToolName.ANSWER else None)
    if tag == ToolName.ANSWER:
        if not isinstance(obj, dict):
            return Invalid(
                reason=f"<answer> must hold a JSON object, got {_describe(obj)}",
                tool=ToolName.ANSWER,
            )
        if marks_shown is not None and "mark" in obj:
            if "view_id" in obj or "bbox_2d" in obj:
                return Invalid(
                    reason='<answer> names a mark or a box, not both: give {"mark": N} or '
                    '{"view_id": ..., "bbox_2d": [x1, y1, x2, y2]}',
                    tool=ToolName.ANSWER,
                )
            extra = sorted(str(k)[:40] for k in obj if k != "mark")
            if extra:
                return Invalid(
                    reason=f'<answer> by mark must have exactly the key "mark"; unexpected {extra}',
                    tool=ToolName.ANSWER,
                )
            return validate_mark(obj["mark"], shown=marks_shown)
        extra = sorted(str(k)[:40] for k in obj if k not in ("view_id", "bbox_2d"))
        if extra or "view_id" not in obj or "bbox_2d" not in obj:
            return Invalid(
                reason='<answer> must have exactly the keys "view_id" and "bbox_2d"'
                + (f"; unexpected {extra}" if extra else ""),
                tool=ToolName.ANSWER,
            )
        return validate_answer(
            obj["view_id"], obj["bbox_2d"], known_views=known, oblique_views=oblique
        )
    if not isinstance(obj, dict):
        return Invalid(reason=f"<tool_call> must hold a JSON object, got {_describe(obj)}")
    extra = sorted(str(k)[:40] for k in obj if k not in ("name", "arguments"))
    if extra or "name" not in obj:
        return Invalid(
            reason='<tool_call> must have the keys "name" and "arguments"'
            + (f"; unexpected {extra}" if extra else ""),
            tool=obj.get("name")
            if isinstance(obj.get("name"), str) and obj.get("name") in TOOLS
            else None,
        )
    return validate_tool_call(
        obj["name"],
        obj.get("arguments", {}),
        known_views=known,
        oblique_views=oblique,
        default_elevation_deg=default_elevation,
        offered=offered,
    )
