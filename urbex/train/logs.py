"""Training logs as data: one row per GRPO step (``training_log.parquet``, warehouse ``training_log``).

trl logs what the trainer sees (the summed reward per reward function, loss, completion lengths,
step time); the paper's Figure 7 and the questions a user asks of a run ("does it still call
zoom_in?", "is the invalid rate falling?", "how much of a step is the environment?") need what
the *environment* saw. Every rollout's episode is summarised when it ends
(:func:`episode_summary`: the reward split into its components, IoU, tool calls, invalid turns,
environment seconds); :class:`TrainingLogCallback` joins the summaries of the rollouts of one
step with trl's log entry of that step into one :data:`TRAINING_LOG_SCHEMA` row.

Reward components of an episode (they sum to its return, :attr:`GroundingEnv.episode_return`)::

    terminal_iou   λ_iou · IoU_bev                 (0 without an answer)
    terminal_dist  λ_dist · exp(−d / τ)            (d: BEV centre distance, world metres)
    step_cost      −λ_step · T / T_max
    zoom           Σ zoom shaping of the valid zoom_in turns
    oblique        Σ oblique shaping of the valid oblique_render turns
    invalid        Σ penalties of the invalid turns (including an invalid final turn)
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from urbex.env.rewards import weights
from urbex.geometry import center_distance_2d, iou_2d

if TYPE_CHECKING:
    from urbex.env.episode import GroundingEnv

__all__ = [
    "COMPONENTS",
    "TOOL_COLUMNS",
    "TRAINING_LOG_SCHEMA",
    "EpisodeSummary",
    "TrainingLogCallback",
    "TrainingRecorder",
    "episode_summary",
    "training_log_frame",
]

#: Reward components, in the order they are logged (see the module docstring).
COMPONENTS: tuple[str, ...] = (
    "terminal_iou",
    "terminal_dist",
    "step_cost",
    "zoom",
    "oblique",
    "invalid",
)
_TOOLS: tuple[str, ...] = ("landmark_query", "zoom_in", "oblique_render")
#: ``calls_<tool>``: mean calls per episode of each tool (valid and invalid calls alike).
TOOL_COLUMNS: tuple[str, ...] = tuple(f"calls_{t}" for t in _TOOLS)

#: One row per optimizer step of one run.
TRAINING_LOG_SCHEMA: dict[str, Any] = {
    "run": pl.String,
    "stage": pl.String,
    "step": pl.Int64,
    "episodes": pl.Int64,
    "reward_mean": pl.Float64,
    "reward_std": pl.Float64,
    **{f"reward_{c}_{s}": pl.Float64 for c in COMPONENTS for s in ("mean", "std")},
    "frac_zero_std": pl.Float64,
    "iou_mean": pl.Float64,
    "valid_answer_rate": pl.Float64,
    "invalid_rate": pl.Float64,
    "turns_mean": pl.Float64,
    **{c: pl.Float64 for c in TOOL_COLUMNS},
    "completion_length": pl.Float64,
    "loss": pl.Float64,
    "learning_rate": pl.Float64,
    "s_per_step": pl.Float64,
    "env_s": pl.Float64,
    "env_share": pl.Float64,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class EpisodeSummary:
    """What one finished rollout's environment saw.

    Attributes
    ----------
    reward
        The episode return (sum of :attr:`components`).
    components
        Reward component → value (keys :data:`COMPONENTS`).
    iou_bev
        BEV IoU of the answer (0 without a valid answer).
    answered
        The episode ended in a valid answer.
    turns
        Assistant turns used.
    invalid_turns
        Turns the environment rejected (an invalid final turn included).
    tool_calls
        Tool name → calls (valid and invalid).
    env_s
        Seconds spent in the environment (reset, tools, scoring the answer).
    """

    reward: float
    components: dict[str, float]
    iou_bev: float
    answered: bool
    turns: int
    invalid_turns: int
    tool_calls: dict[str, int]
    env_s: float


def episode_summary(env: GroundingEnv, *, env_s: float) -> EpisodeSummary:
    """Summarise a finished episode of ``env`` (see the module docstring for the components).

    Raises
    ------
    ValueError
        The episode has not ended.
    """

    outcome = env.outcome
    if outcome is None:
        raise ValueError("episode_summary: the episode has not ended")
    p = env.params
    w = weights(p)
    q = env.query
    iou, dist = 0.0, math.inf
    if outcome.pred_box_2d_m is not None and q is not None and q.target_box_2d is not None:
        iou = float(iou_2d(outcome.pred_box_2d_m, q.target_box_2d))
        dist = float(center_distance_2d(outcome.pred_box_2d_m, q.target_box_2d))
    comps = dict.fromkeys(COMPONENTS, 0.0)
    comps["terminal_iou"] = float(w["lambda_iou"]) * iou
    comps["terminal_dist"] = float(w["lambda_dist"]) * math.exp(-dist / float(w["tau_m"]))
    comps["step_cost"] = -float(w["lambda_step"]) * outcome.turns / float(w["max_turns"])
    calls: dict[str, int] = dict.fromkeys(_TOOLS, 0)
    invalid = 0
    for step in env.steps:
        if step.tool in calls:
            calls[step.tool] += 1
        if not step.valid:
            invalid += 1
            comps["invalid"] += step.reward_shaping
        elif step.tool == "zoom_in":
            comps["zoom"] += step.reward_shaping
        elif step.tool == "oblique_render":
            comps["oblique"] += step.reward_shaping
    return EpisodeSummary(
        reward=float(env.episode_return),
        components=comps,
        iou_bev=iou,
        answered=bool(outcome.answered),
        turns=int(outcome.turns),
        invalid_turns=invalid,
        tool_calls=calls,
        env_s=float(env_s),
    )


class TrainingRecorder:
    """Collects :class:`EpisodeSummary` objects as rollouts end (thread-safe); drained per step."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._episodes: list[EpisodeSummary] = []
        self.env_s_unattributed = 0.0  # environment seconds of rollouts not yet finished

    def add(self, summary: EpisodeSummary) -> None:
        with self._lock:
            self._episodes.append(summary)

    def drain(self) -> list[EpisodeSummary]:
        with self._lock:
            out, self._episodes = self._episodes, []
        return out


def _stats(values: Sequence[float]) -> tuple[float, float]:
    if not values:
        return math.nan, math.nan
    a = np.asarray(values, dtype=np.float64)
    return float(a.mean()), float(a.std())


def step_row(
    run: str, step: int, episodes: Sequence[EpisodeSummary], logs: dict[str, Any]
) -> dict[str, Any]:
    """One :data:`TRAINING_LOG_SCHEMA` row: a step's episodes joined with trl's log entry."""

    def num(key: str) -> float:
        v = logs.get(key)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan

    n = len(episodes)
    row: dict[str, Any] = {"run": run, "stage": "grpo", "step": int(step), "episodes": n}
    row["reward_mean"], row["reward_std"] = _stats([e.reward for e in episodes])
    for c in COMPONENTS:
        row[f"reward_{c}_mean"], row[f"reward_{c}_std"] = _stats(
            [e.components[c] for e in episodes]
        )
    turns = sum(e.turns for e in episodes)
    row.update(
        frac_zero_std=num("frac_reward_zero_std"),
        iou_mean=_stats([e.iou_bev for e in episodes])[0],
        valid_answer_rate=_stats([float(e.answered) for e in episodes])[0],
        invalid_rate=sum(e.invalid_turns for e in episodes) / turns if turns else math.nan,
        turns_mean=_stats([float(e.turns) for e in episodes])[0],
        **{
            f"calls_{t}": _stats([float(e.tool_calls.get(t, 0)) for e in episodes])[0]
            for t in _TOOLS
        },
        completion_length=num("completions/mean_length"),
        loss=num("loss"),
        learning_rate=num("learning_rate"),
        s_per_step=num("step_time"),
    )
    env_s = float(sum(e.env_s for e in episodes))
    row["env_s"] = env_s
    sps = row["s_per_step"]
    row["env_share"] = env_s / sps if sps and sps > 0 else math.nan
    return row


def training_log_frame(rows: Sequence[dict[str, Any]]) -> pl.DataFrame:
    """Rows → a frame of exactly :data:`TRAINING_LOG_SCHEMA` (an empty run gives 0 rows)."""
    return pl.DataFrame(list(rows), schema=TRAINING_LOG_SCHEMA, strict=False)


class TrainingLogCallback:
    """Builds one :data:`TRAINING_LOG_SCHEMA` row per logged GRPO step (use :meth:`callback`).

    trl logs a training step's metrics (``reward``, ``loss``, ``step_time``, ...) in ``on_log``
    right after the step; the rollouts of that step have all ended by then, so the recorder's
    summaries are exactly that step's episodes. Needs ``logging_steps = 1`` for one row per step
    (with a larger value a row covers every step since the last log).
    """

    def __init__(self, recorder: TrainingRecorder, run: str) -> None:
        self.recorder = recorder
        self.run = run
        self.rows: list[dict[str, Any]] = []

    def on_log(self, state: Any, logs: dict[str, Any] | None) -> None:
        """Record a row when ``logs`` is a training step's entry (has ``reward``)."""
        if not logs or "reward" not in logs:  # the final train_runtime summary, eval logs
            return
        self.rows.append(step_row(self.run, int(state.global_step), self.recorder.drain(), logs))

    def callback(self) -> Any:
        """A transformers ``TrainerCallback`` forwarding ``on_log`` here (imports transformers
        only when training)."""
        from transformers import TrainerCallback

        owner = self

        class _Forward(TrainerCallback):  # type: ignore[misc]
            def on_log(
                self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any
            ) -> None:
                owner.on_log(state, logs)

        return _Forward()
