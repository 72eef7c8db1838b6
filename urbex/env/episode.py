"""One grounding episode, shaped like a Gymnasium environment.

``reset(query=...) -> (observation, info)`` shows the global BEV view and the query;
``step(model_text) -> (observation, reward, terminated, truncated, info)`` parses one assistant
turn (:func:`urbex.env.protocol.parse_action`), runs the tool or scores the answer, and logs a
:class:`~urbex.env.records.Step`. ``terminated`` = answered; ``truncated`` = turn budget used up. Invalid
actions cost a turn and a penalty and return an error text; they never raise. Calling
``step`` after the episode ended is caller misuse and raises ``RuntimeError``.

Frames: boxes in actions are view units (0–1000); ``Query`` boxes and every box in ``info`` are
world metres (BEV ``[x_min, y_min, x_max, y_max]``, 3D ``[x_min, y_min, z_min, x_max, y_max,
z_max]``), in the scene cache's world frame. Ground truth is used for rewards only, never in
observations. The final ``info["outcome"]`` (:class:`~urbex.env.records.EpisodeOutcome`) holds
the predicted boxes and what the metrics need (point counts); the metrics themselves are
computed once, by :mod:`urbex.eval.metrics`.

Free-text queries (``query.has_target`` False, no ground truth): the episode runs the same way,
but every reward term that needs ground truth is 0 — tool shaping (zoom progress, oblique
overlap) and the terminal IoU and distance terms; the step cost ``−λ_step·T/T_max`` and the
invalid-action penalty still apply.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from urbex.config import EnvParams, env_params
from urbex.env import rewards as R
from urbex.env.answering import answer_points, snap_to_proposal
from urbex.env.marks import MarkState, shuffled_ids
from urbex.env.prompts import query_line, user_prompt
from urbex.env.protocol import (
    Action,
    Answer,
    Invalid,
    MarkAnswer,
    ToolCall,
    parse_action,
    validate_tool_call,
)
from urbex.env.records import EpisodeOutcome, Step, StopReason, json_arguments
from urbex.env.scene_marks import SceneMarksCache
from urbex.env.scenes import SceneProvider
from urbex.env.tools import TOOLS, ToolResult, mark_view
from urbex.env.views import EpisodeView, GlobalViews, ViewRegistry, make_global_view
from urbex.errors import ToolCallError
from urbex.geometry import center_distance_2d, iou_2d
from urbex.language import parse
from urbex.query import Query
from urbex.tool_vocabulary import ToolName

__all__ = [
    "GroundingEnv",
    "Observation",
    "Query",
    "Step",
    "make_global_view",
]

#: ``{"text": str, "images": list[PIL.Image.Image], "view_ids": list[str]}`` — the new content.
Observation = dict[str, Any]


@dataclass(slots=True)
class _Ctx:
    """The tool context: what handlers may see (no ground truth)."""

    scene: Any
    scene_id: str
    landmarks: Any
    views: ViewRegistry
    params: EnvParams
    turn: int = 0
    marks: MarkState | None = None


@dataclass(slots=True)
class _Outcome:
    text: str
    images: list[Any] = field(default_factory=list)
    view_ids: list[str] = field(default_factory=list)
    shaping: float = 0.0
    terminal: float = 0.0
    terminated: bool = False
    error: str | None = None
    view: EpisodeView | None = None
    snap: dict[str, Any] | None = None


class GroundingEnv:
    """The interactive grounding environment (one episode at a time).

    Parameters
    ----------
    params : EnvParams or None
        ``params.env`` (budget, image sizes, reward weights).
    scene_provider : callable
        ``scene_id → SceneCache`` (e.g. :class:`CachedSceneProvider`).
    landmark_index : urbex.landmarks.LandmarkIndex or None
        Landmark lookup for ``landmark_query`` (None: every lookup is "not found").
    global_views : GlobalViews or None
        The global views to draw from (shared with :meth:`sibling` environments); default a
        cache of this environment's own.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(
        self,
        params: EnvParams | None,
        scene_provider: SceneProvider,
        landmark_index: Any = None,
        *,
        global_views: GlobalViews | None = None,
    ) -> None:
        self.params = env_params(params)
        if global_views is not None and global_views.params != self.params:
            raise ValueError(
                "global_views: built for other env params (global_view_size "
                f"{global_views.params.global_view_size}, expected "
                f"{self.params.global_view_size}); share it only between environments of one "
                "configuration (GroundingEnv.sibling)"
            )
        self.scene_provider = scene_provider
        self._landmarks = landmark_index
        self.np_random = np.random.default_rng()
        self.global_views = global_views or GlobalViews(self.params)
        self._query: Query | None = None
        self._ctx: _Ctx | None = None
        self._turn = 0
        self._done = True
        self._steps: list[Step] = []
        self._shaping_total = 0.0
        self._terminal: float | None = None
        self._outcome: EpisodeOutcome | None = None
        self._point_metrics = False
        self._marks_cache = SceneMarksCache()
        self._mark_id_seed: int | None = None

    # ---------------------------------------------------------------- state (read-only)
    @property
    def landmarks(self) -> Any:
        """The landmark index ``landmark_query`` looks names up in (None: none)."""
        return self._landmarks

    def use_landmarks(self, landmark_index: Any) -> None:
        """Look landmarks up in ``landmark_index`` from the next :meth:`reset` on (a perturbed or
        renamed world of the same scenes); None: every lookup is "not found"."""
        self._landmarks = landmark_index

    @property
    def query(self) -> Query:
        if self._query is None:
            raise RuntimeError("GroundingEnv: call reset(query=...) first")
        return self._query

    @property
    def views(self) -> ViewRegistry:
        if self._ctx is None:
            raise RuntimeError("GroundingEnv: call reset(query=...) first")
        return self._ctx.views

    @property
    def scene(self) -> Any:
        if self._ctx is None:
            raise RuntimeError("GroundingEnv: call reset(query=...) first")
        return self._ctx.scene

    @property
    def marks(self) -> MarkState | None:
        """The episode's numbered marks (None with ``env.marks`` off)."""
        if self._ctx is None:
            raise RuntimeError("GroundingEnv: call reset(query=...) first")
        return self._ctx.marks

    @property
    def marks_shown(self) -> frozenset[int] | None:
        """Mark ids the views so far have shown (None with ``env.marks`` off)."""
        m = self.marks
        return None if m is None else frozenset(m.shown)

    @property
    def turn(self) -> int:
        """Assistant turns used so far."""
        return self._turn

    @property
    def turns_left(self) -> int:
        return max(self.params.max_turns - self._turn, 0)

    @property
    def done(self) -> bool:
        return self._done

    @property
    def steps(self) -> list[Step]:
        """Every step so far (a copy)."""
        return list(self._steps)

    @property
    def outcome(self) -> EpisodeOutcome | None:
        """How the episode ended (None while it runs)."""
        return self._outcome

    @property
    def shaping_total(self) -> float:
        """Sum of the tool-shaping and invalid-action rewards so far."""
        return self._shaping_total

    @property
    def terminal_reward(self) -> float | None:
        """The terminal reward once the episode ended, else None."""
        return self._terminal

    @property
    def episode_return(self) -> float:
        return self._shaping_total + (self._terminal or 0.0)

    # ---------------------------------------------------------------- life cycle
    def sibling(self) -> GroundingEnv:
        """A new environment over the same params, scenes, landmarks and global views, with
        its own RNG and episode state: for another thread's episodes or another batch slot."""
        return GroundingEnv(
            self.params, self.scene_provider, self.landmarks, global_views=self.global_views
        )

    def reset(
        self, *, query: Query, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[Observation, dict[str, Any]]:
        """Start an episode on ``query``.

        Parameters
        ----------
        query
            The query (its ground truth feeds rewards and ``info`` only).
        seed
            Re-seeds the environment's RNG (``np_random``) when given.
        options
            ``{"point_metrics": True}`` also counts the points the metrics' point F1 needs at
            termination (:class:`~urbex.env.records.PointCounts`; needs instance ids in the
            scene cache and a numeric target ``object_id``).

        Returns
        -------
        observation : dict
            ``text`` (the user prompt), ``images`` ([global view]), ``view_ids`` (["global"]).
        info : dict
            ``query_id``, ``scene_id``, ``max_turns``.
        """
        if not isinstance(query, Query):
            raise TypeError(f"reset(query=...): expected a Query, got {type(query).__name__}")
        if seed is not None:
            self.np_random = np.random.default_rng(seed)
        opts = dict(options or {})
        unknown = set(opts) - {"point_metrics"}
        if unknown:
            raise ValueError(
                f"reset(options=...): unknown keys {sorted(unknown)}; known: ['point_metrics']"
            )
        self._point_metrics = bool(opts.get("point_metrics", False))
        scene = self.scene_provider(query.scene_id)
        views = ViewRegistry()
        glob = self.global_views(query.scene_id, scene)
        marks = None
        if self.params.marks.enabled:  # a cache without proposals: StaleCacheError naming the fix
            props, words, names, marked, numbered = self._marks_cache.get(
                query.scene_id, scene, glob, landmarks=self.landmarks, params=self.params.marks
            )
            shuffle = None
            if self._mark_id_seed is not None and self.params.marks.numbering == "scene":
                shuffle = shuffled_ids(props.mark_id, self._mark_id_seed, query.query_id)
            marks = MarkState(
                proposals=props, params=self.params.marks, words=words, names=names,
                to_display=shuffle,
            )  # fmt: skip
            marks.commit(numbered)  # episode numbering: the global view numbers alike each time
            glob = marked if shuffle is None else mark_view(glob, marks)
            marks.show(glob.marks)
        views.add(glob)
        self._ctx = _Ctx(
            scene=scene,
            scene_id=query.scene_id,
            landmarks=self.landmarks,
            views=views,
            params=self.params,
            marks=marks,
        )
        self._query = query
        self._turn = 0
        self._done = False
        self._steps = []
        self._shaping_total = 0.0
        self._terminal = None
        self._outcome = None
        g = views["global"]
        obs = {
            "text": user_prompt(query.description, max_turns=self.params.max_turns),
            "images": [g.image],
            "view_ids": ["global"],
        }
        info = {
            "query_id": query.query_id,
            "scene_id": query.scene_id,
            "max_turns": self.params.max_turns,
        }
        return obs, info

    def shuffle_mark_ids(self, seed: int | None) -> None:
        """From the next :meth:`reset` on, show the marks under ids shuffled per episode
        (seeded by ``seed`` and the query; SFT's augmentation: a model learns to copy the ids
        it reads); None: each mark's stable ``mark_id`` (evaluation). Unused with
        ``env.marks.numbering: episode``, whose ids are the episode's own already."""
        self._mark_id_seed = seed

    def step(self, model_text: str) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        """Play one assistant turn: parse ``model_text`` and act on it.

        Returns
        -------
        observation : dict
            ``text`` (tool output or error, plus turns left), ``images`` (new views' images),
            ``view_ids`` (their ids).
        reward : float
            Shaping of this turn, plus the terminal reward on the last turn.
        terminated : bool
            The agent answered.
        truncated : bool
            The turn budget is used up without an answer.
        info : dict
            ``step`` (the :class:`~urbex.env.records.Step`); at the end also ``outcome``
            (the :class:`~urbex.env.records.EpisodeOutcome`).
        """
        t0 = time.perf_counter()
        self._begin_turn()
        action = parse_action(
            model_text,
            known_views=self.views.ids,
            oblique_views=self.views.oblique_ids,
            turns_left=self.params.max_turns - self._turn + 1,
            default_elevation_deg=self.params.oblique_elevation_deg,
            offered_tools=self.params.tools,
            marks_shown=self.marks_shown,
        )
        return self._play(action, t0, raw=model_text)

    def step_action(self, action: Action) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        """Like :meth:`step` for an action already parsed/validated against this episode
        (:func:`~urbex.env.protocol.validate_tool_call` / ``validate_answer``; trl adapter)."""
        if not isinstance(action, ToolCall | Answer | MarkAnswer | Invalid):
            raise TypeError(
                "step_action: expected ToolCall/Answer/MarkAnswer/Invalid, got "
                f"{type(action).__name__}"
            )
        t0 = time.perf_counter()
        self._begin_turn()
        return self._play(action, t0, raw=None)

    def end_without_answer(self, reason: StopReason = "stopped") -> float:
        """End a running episode without an answer (a trainer stopped generating, or the
        evaluation loop's timeout: ``reason="timeout"``).

        Scores it like a truncation (IoU 0, no distance term, step cost of the turns used) and
        returns that terminal reward; no turn is consumed and no step is logged. Raises
        ``RuntimeError`` when the episode already ended.
        """
        if self._ctx is None or self._done:
            raise RuntimeError(
                "GroundingEnv.end_without_answer: no running episode; call reset() first"
            )
        if reason not in ("timeout", "stopped"):
            raise ValueError(f"reason: expected 'timeout' or 'stopped', got {reason!r}")
        self._terminal = self._finish(None, reason)
        self._done = True
        return self._terminal

    def _begin_turn(self) -> None:
        if self._ctx is None:
            raise RuntimeError("GroundingEnv.step: call reset(query=...) first")
        if self._done:
            raise RuntimeError(
                "GroundingEnv.step: the episode has ended (terminated or truncated); call reset() "
                "before stepping again"
            )
        self._turn += 1
        self._ctx.turn = self._turn

    # ---------------------------------------------------------------- turn logic
    def _reminds(self, out: _Outcome) -> bool:
        """Whether this tool text ends repeating the query (``env.marks.remind``)."""
        remind = self.params.marks.remind
        if not self.params.marks.enabled or remind is False:
            return False
        return remind is True or out.view is not None  # "listings": a new view lists marks

    def _play(
        self, action: Action, t0: float, raw: str | None
    ) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        tool: str | None
        args: dict[str, Any]
        if isinstance(action, Invalid):
            out = self._invalid(action.reason)
            tool, args = action.tool, {"raw": (raw or "")[:2000]}
        elif isinstance(action, ToolCall):
            out = self._tool(action)
            tool, args = action.name, json_arguments(action.arguments)
        elif isinstance(action, MarkAnswer):
            out = self._answer_mark(action)
            tool, args = ToolName.ANSWER, {"mark": action.mark}
        else:
            out = self._answer(action)
            tool = ToolName.ANSWER
            args = {"view_id": action.view_id, "bbox_2d": list(action.bbox_2d)}
            if out.snap is not None:
                args["snap"] = out.snap
        self._shaping_total += out.shaping  # first: the budget's outcome counts this turn too
        truncated = False
        if not out.terminated and self._turn >= self.params.max_turns:
            truncated = True
            out.terminal = self._finish(None, "budget")
            out.text += "\nThe turn budget is used up: the episode ends without an answer."
        elif not out.terminated:
            left = self.turns_left
            out.text += f"\nTurns left: {left}." + (" Answer now." if left == 1 else "")
            if self._reminds(out):  # the description last
                out.text += "\n" + query_line(self.query.description)
        if out.terminated or truncated:
            self._terminal = out.terminal
            self._done = True
        rec = Step(
            turn=self._turn,
            tool=None if tool is None else str(tool),  # the records hold plain strings
            arguments=args,
            valid=out.error is None,
            error=out.error,
            view=out.view,
            reward_shaping=out.shaping,
            reward_terminal=out.terminal,
            env_s=time.perf_counter() - t0,
            model_text=raw or "",
        )
        self._steps.append(rec)
        info: dict[str, Any] = {"step": rec}
        if self._done:
            info["outcome"] = self._outcome
        obs = {"text": out.text, "images": out.images, "view_ids": out.view_ids}
        return obs, float(out.shaping + out.terminal), out.terminated, truncated, info

    def _invalid(self, reason: str) -> _Outcome:
        text = f"Invalid action: {reason}"
        return _Outcome(
            text=text,
            shaping=float(R.invalid_reward(1, penalty=self.params.invalid_penalty)),
            error=reason,
        )

    def _tool(self, call: ToolCall) -> _Outcome:
        assert self._ctx is not None
        if call.name not in self.params.tools:  # env.tools: an action parsed elsewhere
            bad = validate_tool_call(call.name, {}, known_views=(), offered=self.params.tools)
            assert isinstance(bad, Invalid)
            return self._invalid(bad.reason)
        spec = TOOLS[call.name]
        try:
            res: ToolResult = spec.handler(self._ctx, call.arguments)
        except ToolCallError as exc:
            return self._invalid(str(exc))
        out = _Outcome(text=res.text)
        if res.view is not None:
            prev = self._shaping_anchor()
            self._ctx.views.add(res.view)
            if self._ctx.marks is not None:
                self._ctx.marks.show(res.view.marks)
            out.images, out.view_ids, out.view = [res.view.image], [res.view.view_id], res.view
            out.shaping = R.view_shaping(res.view, prev, self.query.target_box_2d, self.params)
        return out

    def _shaping_anchor(self) -> NDArray[np.float64]:
        """Centre (world XY) the next zoom is compared with: last zoom, else the global view."""
        last = self.views.last("zoom") or self.views["global"]
        return last.center_world()

    def _answer(self, ans: Answer) -> _Outcome:
        view = self.views[ans.view_id]
        pred2d = view.to_world_box(ans.bbox_2d)
        text = (
            f'Answer received: box {[round(v) for v in ans.bbox_2d]} in view "{ans.view_id}". '
            "The episode is over."
        )
        snap: dict[str, Any] | None = None
        mark: int | None = None
        if self.params.answer_snap == "proposal":
            target = parse(self.query.description, self._mentioned()).target_class
            snap = snap_to_proposal(pred2d, self.scene.proposals, target, self.params.snap_min_iou)
            if "mark" in snap:
                mark = int(snap["mark"])
                pred2d = np.asarray(snap["box_2d_m"], dtype=np.float64)
        terminal = self._finish(pred2d, "answer", ans, mark=mark, snap=snap)
        return _Outcome(text=text, terminal=terminal, terminated=True, snap=snap)

    def _answer_mark(self, ans: MarkAnswer) -> _Outcome:
        marks = self._ctx.marks if self._ctx is not None else None
        if marks is None:  # an action parsed elsewhere, with marks off
            return self._invalid("marks are off in this episode; answer with a box")
        if ans.mark not in marks.shown:
            return self._invalid(
                f"answer: mark {ans.mark} was never shown; marks shown so far: "
                f"{sorted(marks.shown)}"
            )
        mark = marks.scene(ans.mark)
        row = marks.proposals.row(mark)
        pred2d = marks.proposals.box_2d_m[row].copy()
        terminal = self._finish(pred2d, "answer", mark=mark)
        text = f"Answer received: mark {ans.mark}. The episode is over."
        return _Outcome(text=text, terminal=terminal, terminated=True)

    def _mentioned(self) -> list[str]:
        """The landmark names the query's description mentions (this env's landmark index):
        their words are not read as its class nouns."""
        q, index = self.query, self.landmarks
        return index.mentions(q.description, q.scene_id) if index is not None else []

    def _finish(
        self,
        pred2d: NDArray[np.float64] | None,
        reason: StopReason,
        ans: Answer | None = None,
        *,
        mark: int | None = None,
        snap: dict[str, Any] | None = None,
    ) -> float:
        """End the episode (``pred2d`` None = no answer): sets :attr:`outcome`; returns R_term.

        ``mark``: the answer is that proposal (named, or snapped to): its 3D box and points are
        the proposal's own, not a lift of the BEV box. The terminal reward's IoU and centre
        distance (world metres) need ground truth; without it (free-text query) both terms are 0.
        """
        q = self.query
        iou_b, dist = 0.0, float("inf")
        pred3d, n_pts, counts = None, 0, None
        if pred2d is not None:
            found = answer_points(
                self.scene,
                q,
                self.params,
                pred2d,
                mark=mark,
                names=self._mentioned() if mark is None else [],
                point_metrics=self._point_metrics,
            )
            pred3d, n_pts, counts = found.box_3d_m, found.n_points, found.counts
            if q.target_box_2d is not None:
                iou_b = float(iou_2d(pred2d, q.target_box_2d))
                dist = float(center_distance_2d(pred2d, q.target_box_2d))
        terms = R.terminal_terms(iou_b, dist, self._turn, **R.weights(self.params))
        terminal = float(R.terminal_sum(terms))
        box_view = None
        if ans is not None:
            x1, y1, x2, y2 = (float(v) for v in ans.bbox_2d)
            box_view = (x1, y1, x2, y2)
        self._outcome = EpisodeOutcome(
            stop_reason=reason,
            answer_view_id=None if ans is None else ans.view_id,
            answer_box_view=box_view,
            answer_mark=mark,
            snapped=snap is not None and "mark" in snap,
            pred_box_2d_m=pred2d,
            pred_box_3d_m=pred3d,
            n_pred_points=n_pts,
            point_counts=counts,
            turns=self._turn,
            reward_shaping=self._shaping_total,
            reward_terminal=terminal,
            terminal_terms={k: float(v) for k, v in terms.items()},
            iou_bev=iou_b,
        )
        return terminal
