"""The records of an episode: one step per assistant turn and the episode's outcome (the query
it plays is :class:`urbex.query.Query`).

Frames are in the field names: ``*_m`` world metres (the scene cache's world frame; BEV boxes
``[x_min, y_min, x_max, y_max]``, 3D boxes ``[x_min, y_min, z_min, x_max, y_max, z_max]``),
``*_view`` view units 0–1000 of a view (x right, y down).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from urbex.env.rewards import TERMINAL_TERMS, terminal_sum
from urbex.geometry import checked_box

if TYPE_CHECKING:
    from urbex.env.views import EpisodeView

__all__ = ["STOP_REASONS", "EpisodeOutcome", "PointCounts", "Step", "StopReason"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """One assistant turn: what the agent did, what the environment made of it, and its cost.

    The environment creates it (``policy_s`` 0, ``model_text`` the raw turn, or ``""`` for an
    action handed over already parsed); the episode loop adds the policy's time
    (:meth:`with_policy`). Parquet rows, ``steps.jsonl`` lines and pictures are projections.

    Attributes
    ----------
    turn : int
        1-based assistant turn.
    tool : str or None
        ``landmark_query``, ``zoom_in``, ``oblique_render``, ``answer``; None when the turn had
        no recognisable action (then ``valid`` is False and ``error`` says why).
    arguments : dict
        The validated arguments (boxes ``bbox_2d`` in view units 0–1000); ``{"raw": text}``
        (cut to 2,000 characters) when the turn could not be parsed.
    valid : bool
    error : str or None
        The error text shown to the agent when invalid or when the tool failed.
    view : EpisodeView or None
        The view this turn produced (zoom crop or oblique render).
    reward_shaping, reward_terminal : float
        Tool shaping (or invalid penalty) and, on the last turn, the terminal reward.
    env_s : float
        Environment seconds for this turn (parse, tool, scoring).
    policy_s : float
        Policy seconds for this turn (the model call).
    model_text : str
        The policy's raw output for the turn.
    """

    turn: int
    tool: str | None
    arguments: dict[str, Any]
    valid: bool
    error: str | None
    view: EpisodeView | None = field(default=None, repr=False, compare=False)
    reward_shaping: float
    reward_terminal: float
    env_s: float
    policy_s: float = 0.0
    model_text: str = ""

    def __post_init__(self) -> None:
        if self.turn < 1:
            raise ValueError(f"Step.turn: expected >= 1, got {self.turn}")
        if not isinstance(self.arguments, dict):
            raise TypeError(f"Step.arguments: expected a dict, got {type(self.arguments).__name__}")

    @property
    def reward(self) -> float:
        """``reward_shaping + reward_terminal``."""
        return self.reward_shaping + self.reward_terminal

    @property
    def latency_s(self) -> float:
        """Policy + environment seconds of the turn."""
        return self.policy_s + self.env_s

    @property
    def view_id(self) -> str | None:
        """The id of the view this turn produced, else None."""
        return None if self.view is None else self.view.view_id

    @property
    def region_m(self) -> tuple[float, float, float, float] | None:
        """World BEV box (metres) of the view a valid zoom/oblique produced (the zoom crop / the
        rendered region), else None."""
        if not self.valid or self.view is None or self.view.kind not in ("zoom", "oblique"):
            return None
        x0, y0, x1, y1 = (float(v) for v in self.view.world_box)
        return (x0, y0, x1, y1)

    def with_policy(self, *, policy_s: float, model_text: str) -> Step:
        """This step with the policy's seconds and raw text filled in."""
        return replace(self, policy_s=float(policy_s), model_text=model_text)


StopReason = Literal["answer", "budget", "timeout", "stopped"]
#: Why an episode ended: the agent answered, the turn budget ran out, the episode timeout hit
#: (the evaluation loop), or the caller stopped it (a trainer that stopped generating).
STOP_REASONS: tuple[StopReason, ...] = ("answer", "budget", "timeout", "stopped")


@dataclass(frozen=True, slots=True, kw_only=True)
class PointCounts:
    """Point counts for point-level F1 (:func:`urbex.eval.point_metrics.point_f1_counts`).

    Over the points of the scene under the union of the predicted and target BEV boxes:
    ``n_pred`` lie under the predicted footprint (all z), ``n_target`` belong to the target
    instance, ``n_both`` both.
    """

    n_pred: int
    n_target: int
    n_both: int

    def __post_init__(self) -> None:
        if min(self.n_pred, self.n_target, self.n_both) < 0 or self.n_both > min(
            self.n_pred, self.n_target
        ):
            raise ValueError(
                "PointCounts: expected 0 <= n_both <= min(n_pred, n_target), got "
                f"{self.n_pred}, {self.n_target}, {self.n_both}"
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class EpisodeOutcome:
    """How an episode ended and what it answered (the environment's final word).

    Attributes
    ----------
    stop_reason : {"answer", "budget", "timeout", "stopped"}
    answer_view_id : str or None
        The view the answer was given in.
    answer_box_view : tuple of 4 float or None
        The answer box in that view, view units 0–1000.
    answer_mark : int or None
        The proposal (numbered mark, ``env.marks``) the answer is: named by the agent
        (``{"mark": N}``), or the one a box answer snapped to (``env.answer_snap``). Its BEV
        box, 3D box and points are the answer's (no lift).
    snapped : bool
        A box answer was replaced by the proposal :attr:`answer_mark` (``env.answer_snap``).
    pred_box_2d_m : ndarray, shape (4,), or None
        The answer's world BEV box, metres.
    pred_box_3d_m : ndarray, shape (6,), or None
        The answer lifted to 3D (its footprint, and the z-range of its points), metres
        (``env.answer_lift``, :mod:`urbex.env.lift`).
    n_pred_points : int
        The answer's points: those of the target's class under its footprint (``semantic``
        lift), or every point under it (``zrange``).
    point_counts : PointCounts or None
        Set when asked for (``reset(options={"point_metrics": True})``), the query has a target
        instance id and the agent answered.
    turns : int
        Assistant turns used.
    reward_shaping, reward_terminal : float
        Summed shaping (and invalid penalties) of the episode; its terminal reward.
    terminal_terms : dict of str to float
        The terminal reward's terms as the environment computed them
        (:func:`urbex.env.rewards.terminal_terms`; keys ``terminal_iou``, ``terminal_dist``,
        ``step_cost``); they sum to ``reward_terminal``.
    iou_bev : float
        The BEV IoU of the answer with :attr:`urbex.query.Query.target_box_2d` that the terminal reward used
        (0 without an answer or without ground truth). The evaluation's metric is
        :func:`urbex.eval.metrics.episode_metrics`' ``iou_bev``.
    """

    stop_reason: StopReason
    answer_view_id: str | None = None
    answer_box_view: tuple[float, float, float, float] | None = None
    answer_mark: int | None = None
    snapped: bool = False
    pred_box_2d_m: NDArray[np.float64] | None = None
    pred_box_3d_m: NDArray[np.float64] | None = None
    n_pred_points: int = 0
    point_counts: PointCounts | None = None
    turns: int
    reward_shaping: float
    reward_terminal: float
    terminal_terms: dict[str, float]
    iou_bev: float

    def __post_init__(self) -> None:
        if tuple(self.terminal_terms) != TERMINAL_TERMS or not math.isclose(
            float(terminal_sum(self.terminal_terms)), self.reward_terminal, abs_tol=1e-12
        ):
            raise ValueError(
                f"EpisodeOutcome.terminal_terms: expected the terms {TERMINAL_TERMS} summing to "
                f"reward_terminal {self.reward_terminal}, got {self.terminal_terms}"
            )
        if self.stop_reason not in STOP_REASONS:
            raise ValueError(
                f"EpisodeOutcome.stop_reason: expected one of {STOP_REASONS}, got {self.stop_reason!r}"
            )
        for name, n in (("pred_box_2d_m", 4), ("pred_box_3d_m", 6)):
            v = getattr(self, name)
            if v is not None:
                object.__setattr__(self, name, checked_box(v, n, f"EpisodeOutcome.{name}"))
        if (self.stop_reason == "answer") != (self.pred_box_2d_m is not None):
            raise ValueError(
                "EpisodeOutcome: an answer needs pred_box_2d_m and only an answer has one, got "
                f"stop_reason={self.stop_reason!r}, pred_box_2d_m={self.pred_box_2d_m!r}"
            )

    @property
    def answered(self) -> bool:
        """The agent gave a valid answer."""
        return self.stop_reason == "answer"

    @property
    def reward(self) -> float:
        """The episode return: ``reward_shaping + reward_terminal``."""
        return self.reward_shaping + self.reward_terminal


def json_arguments(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Validated tool arguments as JSON-native values (tuples → lists), as the agent wrote them
    (a step's ``arguments``).

    >>> json_arguments({"bbox_2d": (1.0, 2.0, 3.0, 4.0), "view_id": "global"})
    {'bbox_2d': [1.0, 2.0, 3.0, 4.0], 'view_id': 'global'}
    """
    return {k: list(v) if isinstance(v, tuple) else v for k, v in arguments.items()}
