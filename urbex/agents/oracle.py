"""The oracle policy: the environment's end-to-end correctness check (not a baseline).

It reads the ground truth of the episode it plays (privileged) and follows the paper's
landmark → zoom → oblique → answer pattern:

1. ``landmark_query`` for a landmark the description mentions (else the landmark nearest the
   target, else it skips this step);
2. ``zoom_in`` on the global view over a window ``zoom_factor`` × the target (at least
   ``min_window_m``), rounded outwards to integer view units;
3. ``oblique_render`` of the target box in that zoom view, seen from the south;
4. ``<answer>`` with the target box in the zoom view (or the global view with
   ``answer_view="global"``), rounded to integer view units — the only loss is the 0–1000
   quantisation of the view it answers in.

It cannot play a free-text query (no ground truth): :meth:`OraclePolicy.act` raises
:class:`~urbex.errors.PolicyError` then.
"""

from __future__ import annotations

import json
import math
import re
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from urbex.env.policy import PolicyBase
from urbex.env.protocol import Invalid, parse_action
from urbex.errors import PolicyError
from urbex.geometry import iou_2d
from urbex.landmarks.table import footprint_bounds
from urbex.tool_vocabulary import ToolName

if TYPE_CHECKING:
    from PIL import Image

    from urbex.env.episode import GroundingEnv
    from urbex.env.views import EpisodeView

__all__ = ["OraclePolicy", "RecoveryTeacher", "TeacherPolicy"]


def _call(tool: str, **arguments: Any) -> str:
    return f"<tool_call>{json.dumps({'name': tool, 'arguments': arguments})}</tool_call>"


def _mark_answer(mark: int) -> str:
    return f"<answer>{json.dumps({'mark': int(mark)})}</answer>"


def _outward(units: NDArray[np.float64]) -> list[int]:
    """Round a view-unit box outwards and clip to [0, 1000], keeping x1 < x2 and y1 < y2."""
    x1, y1 = (max(0, min(999, math.floor(v))) for v in units[:2])
    x2, y2 = (max(1, min(1000, math.ceil(v))) for v in units[2:])
    return [x1, y1, max(x2, x1 + 1), max(y2, y1 + 1)]


def _nearest(units: NDArray[np.float64]) -> list[int]:
    """Round a view-unit box to the nearest integers, clipped to [0, 1000], non-degenerate."""
    x1, y1, x2, y2 = (round(float(np.clip(v, 0, 1000))) for v in units)
    if x2 <= x1:
        x2 = min(x1 + 1, 1000)
        x1 = x2 - 1
    if y2 <= y1:
        y2 = min(y1 + 1, 1000)
        y1 = y2 - 1
    return [x1, y1, x2, y2]


class OraclePolicy(PolicyBase):
    """Ground-truth policy bound to one environment (it reads ``env.query`` and ``env.views``).

    Parameters
    ----------
    env : GroundingEnv
        The environment it plays in (privileged access to the query and views).
    answer_view : {"zoom", "global"}
        Where to answer: in its zoom view (BEV IoU limited by zoom-view quantisation) or in
        the global view (shows the 0–1000 quantisation loss at city scale).
    zoom_factor : float
        Zoom window side / target side.
    min_window_m : float
        Smallest zoom window side, metres.
    use_tools : bool
        False: answer directly on turn 1 (no landmark/zoom/oblique).
    """

    def __init__(
        self,
        env: GroundingEnv,
        *,
        answer_view: Literal["zoom", "global"] = "zoom",
        zoom_factor: float = 2.0,
        min_window_m: float = 8.0,
        use_tools: bool = True,
    ) -> None:
        if answer_view not in ("zoom", "global"):
            raise ValueError(f"answer_view: expected 'zoom' or 'global', got {answer_view!r}")
        if not zoom_factor >= 1.0:
            raise ValueError(f"zoom_factor: expected >= 1, got {zoom_factor}")
        self.env = env
        self.answer_view = answer_view
        self.zoom_factor = float(zoom_factor)
        self.min_window_m = float(min_window_m)
        self.use_tools = use_tools

    def _target(self) -> NDArray[np.float64]:
        """The target BEV box (world metres); :class:`PolicyError` for a free-text query."""
        q = self.env.query
        if q.target_box_2d is None:
            raise PolicyError(
                f"the oracle policy reads the ground-truth target, but query {q.query_id!r} "
                f"(scene {q.scene_id!r}) has none (a free-text query); name the target object "
                "(urbex ground --object-id ID) or use a policy that needs no ground truth, "
                "e.g. landmark_prior"
            )
        return q.target_box_2d

    def act(self, messages: list[dict[str, Any]], images: list[Image.Image]) -> str:
        """The next action for the env's current state (``messages``/``images`` are ignored).

        Raises
        ------
        PolicyError
            The query has no ground truth (free-text query).
        """
        env = self.env
        target = self._target()
        done = {r.tool for r in env.steps if r.valid}
        zoom = env.views.last("zoom")
        if self.use_tools:
            if ToolName.LANDMARK_QUERY not in done and ToolName.ZOOM_IN not in done:
                name = self._landmark_name()
                if name is not None:
                    return _call(ToolName.LANDMARK_QUERY, name=name, view_id="global")
            if zoom is None:
                return _call(
                    ToolName.ZOOM_IN, view_id="global", bbox_2d=self._zoom_box(env.views["global"])
                )
            if ToolName.OBLIQUE_RENDER not in done:
                box = _outward(zoom.from_world_box(target))
                return _call(
                    ToolName.OBLIQUE_RENDER, view_id=zoom.view_id, bbox_2d=box, azimuth_deg=180
                )
        mark = self._target_mark()
        if mark is not None:
            return _mark_answer(mark)
        view = zoom if (self.answer_view == "zoom" and zoom is not None) else env.views["global"]
        box = _nearest(view.from_world_box(target))
        return f"<answer>{json.dumps({'view_id': view.view_id, 'bbox_2d': box})}</answer>"

    def _target_mark(self) -> int | None:
        """With marks on: the target's mark — the proposal with the best BEV IoU with the
        ground truth — when a view has shown it and it overlaps the target at all; else None."""
        shown = self.env.marks_shown
        if not shown:
            return None
        props = self.env.scene.proposals
        if len(props) == 0:
            return None
        ious = np.asarray(iou_2d(self._target()[None], props.box_2d_m)).reshape(-1)
        best = int(np.argmax(ious))
        marks = self.env.marks
        assert marks is not None  # shown is not None
        mark = marks.displayed(int(props.mark_id[best]))  # the id the agent sees, if any
        return mark if ious[best] > 0 and mark is not None and mark in shown else None

    def _landmark_name(self) -> str | None:
        env = self.env
        idx = env.landmarks
        if idx is None:
            return None
        q = env.query
        names = idx.mentions(q.description, q.scene_id)
        if names:
            return names[0]
        table = idx.table
        rows = table.filter(table["scene_id"] == q.scene_id)
        if rows.height == 0:
            return None
        t = self._target()
        tc = (t[:2] + t[2:]) / 2
        d = (rows["x"].to_numpy() - tc[0]) ** 2 + (rows["y"].to_numpy() - tc[1]) ** 2
        return str(rows["name"][int(np.argmin(d))])

    def _zoom_box(self, view: EpisodeView) -> list[int]:
        t = self._target()
        c = (t[:2] + t[2:]) / 2
        half = np.maximum((t[2:] - t[:2]) * self.zoom_factor, self.min_window_m) / 2
        window = np.concatenate([c - half, c + half])
        return _outward(view.from_world_box(window))


class TeacherPolicy(OraclePolicy):
    """The oracle with seeded variety: the demonstrations SFT learns from (``urbex sft``).

    Per episode (seeded by :meth:`begin_episode`): the landmark query is made with probability
    ``p_landmark``, the zoom window is ``zoom_factor`` ∈ ``zoom_range`` × the target with its
    centre shifted by up to ``jitter`` of the window side (the target stays inside), and the
    oblique render is made with probability ``p_oblique`` from a random compass direction. With
    probability ``p_anchor`` the episode is *anchored* on what the student can read: it queries
    the first mentioned landmark that has an area (a park, a building, not a road), zooms on
    exactly the box the ``landmark_query`` answer printed for it (global view units, copied from
    the tool response), and answers the target's box in that zoom view, moved inside the view
    when the target lies beyond the landmark (a box of the target's size at the nearest place
    inside; the terminal distance term still pays for it). Every number of an anchored episode
    but the answer is in the conversation, so a small student can learn to produce it. With
    probability ``p_mistake`` the episode holds one deliberate invalid turn before the zoom — a
    zoom box with its corners swapped, or an answer in a ``zoom_1`` that does not exist yet — and
    then recovers (SFT shows the error text and the correct next action, with no loss on the
    mistake itself: :func:`urbex.train.sft_examples.assistant_labels`). The answer is the target box in the
    zoom view, as the oracle's.
    """

    def __init__(
        self,
        env: GroundingEnv,
        *,
        p_landmark: float = 0.7,
        p_oblique: float = 0.5,
        zoom_range: tuple[float, float] = (1.5, 3.0),
        jitter: float = 0.2,
        p_mistake: float = 0.0,
        p_anchor: float = 0.0,
    ) -> None:
        super().__init__(env)
        probs = (
            ("p_landmark", p_landmark),
            ("p_oblique", p_oblique),
            ("p_mistake", p_mistake),
            ("p_anchor", p_anchor),
        )
        for name, p in probs:
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"{name}: expected a probability in [0, 1], got {p}")
        if not 1.0 <= zoom_range[0] <= zoom_range[1]:
            raise ValueError(f"zoom_range: expected 1 <= lo <= hi, got {zoom_range}")
        if not 0.0 <= jitter < 0.5:
            raise ValueError(f"jitter: expected 0 <= jitter < 0.5, got {jitter}")
        self.p_landmark, self.p_oblique = float(p_landmark), float(p_oblique)
        self.zoom_range, self.jitter = zoom_range, float(jitter)
        self.p_mistake = float(p_mistake)
        self.p_anchor = float(p_anchor)
        self.begin_episode(seed=0)

    def begin_episode(self, *, seed: int, deadline: float | None = None) -> None:
        """Draw this episode's path (which tools, zoom window, oblique direction)."""
        rng = np.random.default_rng(seed)
        self._use_landmark = bool(rng.random() < self.p_landmark)
        self._use_oblique = bool(rng.random() < self.p_oblique)
        self.zoom_factor = float(rng.uniform(*self.zoom_range))
        self._shift = rng.uniform(-self.jitter, self.jitter, size=2)
        self._azimuth = int(rng.choice([0, 90, 180, 270]))
        self._mistake = bool(rng.random() < self.p_mistake)
        self._mistake_kind = int(rng.integers(0, 2))
        self._anchor = bool(rng.random() < self.p_anchor)

    def act(self, messages: list[dict[str, Any]], images: list[Image.Image]) -> str:
        if self._anchor:
            action = self._anchored(messages)
            if action is not None:
                return action
            self._anchor = False  # nothing to anchor on: the episode goes on unanchored
        env = self.env
        target = self._target()
        done = {r.tool for r in env.steps if r.valid}
        zoom = env.views.last("zoom")
        if self._use_landmark and not done & {ToolName.LANDMARK_QUERY, ToolName.ZOOM_IN}:
            name = self._landmark_name()
            if name is not None:
                return _call(ToolName.LANDMARK_QUERY, name=name, view_id="global")
        if zoom is None:
            box = self._zoom_box(env.views["global"])
            if self._mistake and not any(not r.valid for r in env.steps):
                if self._mistake_kind == 0:  # corners swapped: x1 > x2
                    return _call(
                        ToolName.ZOOM_IN, view_id="global", bbox_2d=[box[2], box[1], box[0], box[3]]
                    )
                return f"<answer>{json.dumps({'view_id': 'zoom_1', 'bbox_2d': box})}</answer>"
            return _call(ToolName.ZOOM_IN, view_id="global", bbox_2d=box)
        if self._use_oblique and ToolName.OBLIQUE_RENDER not in done:
            box = _outward(zoom.from_world_box(target))
            return _call(
                ToolName.OBLIQUE_RENDER,
                view_id=zoom.view_id,
                bbox_2d=box,
                azimuth_deg=self._azimuth,
            )
        mark = self._target_mark()
        if mark is not None:
            return _mark_answer(mark)
        box = _nearest(zoom.from_world_box(target))
        return f"<answer>{json.dumps({'view_id': zoom.view_id, 'bbox_2d': box})}</answer>"

    def _zoom_box(self, view: EpisodeView) -> list[int]:
        t = self._target()
        c = (t[:2] + t[2:]) / 2
        side = np.maximum((t[2:] - t[:2]) * self.zoom_factor, self.min_window_m)
        # shift the window, but keep the whole target inside it
        slack = np.maximum((side - (t[2:] - t[:2])) / 2, 0.0)
        c = c + np.clip(self._shift * side, -slack, slack)
        window = np.concatenate([c - side / 2, c + side / 2])
        return _outward(view.from_world_box(window))

    def _anchored(self, messages: list[dict[str, Any]]) -> str | None:
        """The anchored episode's next action, or None where it cannot anchor (no mentioned
        landmark with an area, or its box is not in the answer the student read)."""
        env = self.env
        target = self._target()
        done = {r.tool for r in env.steps if r.valid}
        zoom = env.views.last("zoom")
        marks = env.marks is not None
        if ToolName.LANDMARK_QUERY not in done:
            name = self._area_landmark()
            if name is None and marks:  # marks: a road's surroundings are worth a look too
                name = self._landmark_name()
            if name is None:
                return None
            return _call(ToolName.LANDMARK_QUERY, name=name, view_id="global")
        if zoom is None:
            box = _printed_box(messages, surroundings=marks)
            if box is None:
                return None
            if self._mistake and not any(not r.valid for r in env.steps):
                return _call(
                    ToolName.ZOOM_IN, view_id="global", bbox_2d=[box[2], box[1], box[0], box[3]]
                )
            return _call(ToolName.ZOOM_IN, view_id="global", bbox_2d=box)
        inside = _nearest(_into_view(zoom.from_world_box(target)))
        mark = self._target_mark()
        if self._use_oblique and not marks and ToolName.OBLIQUE_RENDER not in done:
            return _call(
                ToolName.OBLIQUE_RENDER,
                view_id=zoom.view_id,
                bbox_2d=inside,
                azimuth_deg=self._azimuth,
            )
        if mark is not None:
            return _mark_answer(mark)
        return f"<answer>{json.dumps({'view_id': zoom.view_id, 'bbox_2d': inside})}</answer>"

    def _area_landmark(self) -> str | None:
        """The first landmark the description mentions whose footprint has an area."""

        env = self.env
        idx = env.landmarks
        if idx is None:
            return None
        q = env.query
        table = idx.table
        rows = table.filter(table["scene_id"] == q.scene_id)
        for name in idx.mentions(q.description, q.scene_id):
            hit = rows.filter(rows["name"] == name)
            if (
                hit.height
                and footprint_bounds(hit.row(0, named=True), require_area=True) is not None
            ):
                return name
        return None


class RecoveryTeacher(PolicyBase):
    """A student's own mistakes, each followed by the teacher's recovery (DAgger-style data).

    Each turn the ``student`` proposes an action; a proposal the protocol rejects (it would be
    an invalid turn: unparsable JSON, a tool call closed as an answer, ``x1 > x2``, a view that
    does not exist) is played as it is, the environment answers with its real error text, and
    the episode goes on; any other proposal is replaced by the ``teacher``'s action. After
    ``max_errors`` rejected proposals the teacher plays alone. SFT supervises only the valid
    turns (:func:`urbex.train.sft_examples.assistant_labels`), so the student learns what to do *after
    its own errors* — the states it reaches at evaluation, which the teacher's clean
    demonstrations never show (Ross et al., 2011, DAgger).

    Parameters
    ----------
    env : GroundingEnv
        The environment both play in (the teacher reads its ground truth).
    student : Policy
        Proposes; e.g. a :class:`~urbex.agents.vlm.VLMPolicy` of the model being trained.
    teacher : TeacherPolicy
        Acts wherever the student's proposal is acceptable.
    max_errors : int
        Student mistakes played per episode (the teacher needs the rest of the budget).
    """

    def __init__(
        self, env: GroundingEnv, student: Any, teacher: TeacherPolicy, *, max_errors: int = 2
    ) -> None:
        if max_errors < 1:
            raise ValueError(f"max_errors: expected >= 1, got {max_errors}")
        self.env, self.student, self.teacher = env, student, teacher
        self.max_errors = int(max_errors)
        self.template_lists_tools = teacher.template_lists_tools
        self.errors = 0  # this episode's rejected proposals
        self.proposals = 0  # the student's proposals, all episodes

    def begin_episode(self, *, seed: int, deadline: float | None = None) -> None:
        self.teacher.begin_episode(seed=seed)
        self.student.begin_episode(seed=seed)
        self.errors = 0

    def act(self, messages: list[dict[str, Any]], images: list[Image.Image]) -> str:

        env = self.env
        if self.errors < self.max_errors:
            text = self.student.act(messages, images)
            self.proposals += 1
            action = parse_action(
                text,
                known_views=env.views.ids,
                oblique_views=env.views.oblique_ids,
                turns_left=env.turns_left,
                default_elevation_deg=env.params.oblique_elevation_deg,
                offered_tools=env.params.tools,
                marks_shown=env.marks_shown,
            )
            if isinstance(action, Invalid):
                self.errors += 1
                return text
        return self.teacher.act(messages, images)


_PRINTED_BOX = re.compile(r'^1\. .*in view "global": box \[(\d+), (\d+), (\d+), (\d+)\]', re.M)
_SURROUNDINGS = re.compile(r"^1\. .*; surroundings box \[(\d+), (\d+), (\d+), (\d+)\]", re.M)


def _printed_box(messages: list[dict[str, Any]], *, surroundings: bool = False) -> list[int] | None:
    """The first match's box (global view units) in the last ``landmark_query`` response
    (``surroundings``: its surroundings box, printed with marks on)."""
    for m in reversed(messages):
        if m.get("role") == "tool" and m.get("name") == ToolName.LANDMARK_QUERY:
            content = m.get("content")
            parts = content if isinstance(content, list) else [{"type": "text", "text": content}]
            text = "\n".join(str(p.get("text", "")) for p in parts if isinstance(p, dict))
            found = (_SURROUNDINGS if surroundings else _PRINTED_BOX).search(text)
            if found is None:
                return None
            box = [int(v) for v in found.groups()]
            return box if box[0] < box[2] and box[1] < box[3] else None
    return None


def _into_view(units: NDArray[np.float64]) -> NDArray[np.float64]:
    """A view-unit box moved (not shrunk) to lie inside [0, 1000] where it fits, else clipped.

    >>> _into_view(np.array([1100.0, 200.0, 1300.0, 300.0])).tolist()
    [800.0, 200.0, 1000.0, 300.0]
    >>> _into_view(np.array([-50.0, -2000.0, 50.0, 2000.0])).tolist()
    [0.0, 0.0, 100.0, 1000.0]
    """
    lo, hi = units[:2].copy(), units[2:].copy()
    size = hi - lo
    shift = np.where(lo < 0, -lo, 0.0) + np.where(hi > 1000, 1000 - hi, 0.0)
    fits = size <= 1000
    lo = np.where(fits, lo + shift, lo)
    hi = np.where(fits, hi + shift, hi)
    return np.clip(np.concatenate([lo, hi]), 0.0, 1000.0)
