"""Training logs as data: one row per GRPO step (``training_log.parquet``, warehouse ``training_log``).

trl logs what the trainer sees (the summed reward per reward function, loss, completion lengths,
step time); the paper's Figure 7 and the questions a user asks of a run ("does it still call
zoom_in?", "is the invalid rate falling?", "how much of a step is the environment?") need what
the *environment* saw. Every rollout's episode is summarised when it ends
(:func:`episode_summary`: the reward split into its components, IoU, tool calls, invalid turns,
environment seconds); :class:`TrainingLogCallback` joins the summaries of the rollouts of one
step with trl's log entry of that step into one :data:`TRAINING_LOG_SCHEMA` row.

A summary is a projection of the episode's records (its :class:`~urbex.env.records.Step` list and
:class:`~urbex.env.records.EpisodeOutcome`): every figure is one the environment computed and
recorded, nothing is scored a second time. Reward components of an episode (they sum to its
return, :attr:`EpisodeOutcome.reward`)::

    terminal_iou   λ_iou · IoU_bev                 outcome.terminal_terms (0 without an answer)
    terminal_dist  λ_dist · exp(−d / τ)            outcome.terminal_terms (d: BEV centre
                                                   distance, world metres)
    step_cost      −λ_step · T / T_max             outcome.terminal_terms
    zoom           Σ zoom shaping of the valid zoom_in turns              (Step.reward_shaping)
    oblique        Σ oblique shaping of the valid oblique_render turns    (Step.reward_shaping)
    invalid        Σ penalties of the invalid turns (an invalid final turn included)

The terms of the terminal reward are :func:`urbex.env.rewards.terminal_terms`; the IoU is the one
the reward used (:attr:`EpisodeOutcome.iou_bev`); tool calls are
:func:`urbex.env.trajectory.tool_counts` (every recorded call, valid or not).
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from urbex.atomic import atomic_path
from urbex.env.rewards import TERMINAL_TERMS
from urbex.env.trajectory import TOOL_NAMES, invalid_turns, tool_counts
from urbex.tool_vocabulary import ToolName

if TYPE_CHECKING:
    from urbex.env.records import EpisodeOutcome, Step

__all__ = [
    "COMPONENTS",
    "RESUME_LOG_FILE",
    "TIMING_COLUMNS",
    "TOOL_COLUMNS",
    "TRAINING_LOG_SCHEMA",
    "EpisodeSummary",
    "TrainingLogCallback",
    "TrainingRecorder",
    "episode_summary",
    "read_training_log",
    "training_log_frame",
]

#: Reward components, in the order they are logged (see the module docstring).
COMPONENTS: tuple[str, ...] = (*TERMINAL_TERMS, "zoom", "oblique", "invalid")
#: ``calls_<tool>``: mean calls per episode of each tool (valid and invalid calls alike).
TOOL_COLUMNS: tuple[str, ...] = tuple(f"calls_{t}" for t in TOOL_NAMES)
#: The shaping component of a valid call of each shaped tool.
_SHAPED: dict[str | None, str] = {ToolName.ZOOM_IN: "zoom", ToolName.OBLIQUE_RENDER: "oblique"}

#: Beside each trainer checkpoint (``checkpoint-N/``): the log rows and tool counts up to it.
RESUME_LOG_FILE = "urbex_training_log.json"

#: The columns of :data:`TRAINING_LOG_SCHEMA` that are measured seconds (they differ between two
#: runs of the same inputs): ``training_log.parquet`` keeps the others, ``timings/`` these with
#: ``run`` and ``step`` (the warehouse joins them back).
TIMING_COLUMNS: tuple[str, ...] = ("s_per_step", "env_s", "env_share")

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


def episode_summary(
    outcome: EpisodeOutcome | None, steps: Sequence[Step], *, env_s: float
) -> EpisodeSummary:
    """Summarise a finished episode from its records (see the module docstring).

    Parameters
    ----------
    outcome
        How it ended (``GroundingEnv.outcome``, ``Trajectory.outcome``); None while it runs.
    steps
        Its steps, in order.
    env_s
        Seconds spent in the environment.

    Raises
    ------
    ValueError
        The episode has not ended (``outcome`` is None).
    """
    if outcome is None:
        raise ValueError("episode_summary: the episode has not ended")
    comps = dict.fromkeys(COMPONENTS, 0.0)
    comps.update(outcome.terminal_terms)
    for step in steps:
        kind = "invalid" if not step.valid else _SHAPED.get(step.tool)
        if kind is not None:
            comps[kind] += step.reward_shaping
    calls = tool_counts(steps, valid_only=False)
    return EpisodeSummary(
        reward=float(outcome.reward),
        components=comps,
        iou_bev=float(outcome.iou_bev),
        answered=bool(outcome.answered),
        turns=int(outcome.turns),
        invalid_turns=invalid_turns(steps),
        tool_calls={t: calls[f"n_{t}"] for t in TOOL_NAMES},
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
            for t in TOOL_NAMES
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


def read_training_log(checkpoint_dir: Path) -> pl.DataFrame:
    """A published checkpoint's ``training_log.parquet`` with its measured columns
    (:data:`TIMING_COLUMNS`, kept in the unversioned ``timings/`` folder) joined back on
    ``run`` and ``step``; null where the timings are missing (a checkpoint pulled by DVC)."""
    from urbex.layout import TIMINGS_DIR, TRAINING_LOG_FILE

    d = Path(checkpoint_dir)
    log = pl.read_parquet(d / TRAINING_LOG_FILE).drop(
        [c for c in TIMING_COLUMNS if c in pl.read_parquet_schema(d / TRAINING_LOG_FILE)]
    )
    times = d / TIMINGS_DIR / TRAINING_LOG_FILE
    if times.is_file():
        log = log.join(pl.read_parquet(times), on=["run", "step"], how="left")
    else:
        log = log.with_columns(pl.lit(None, dtype=pl.Float64).alias(c) for c in TIMING_COLUMNS)
    return log.select(list(TRAINING_LOG_SCHEMA)).sort("step")


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

    def __init__(
        self, recorder: TrainingRecorder, run: str, counts: dict[str, int] | None = None
    ) -> None:
        self.recorder = recorder
        self.run = run
        self.rows: list[dict[str, Any]] = []
        #: Tool calls played so far (the caller's counter), saved and restored with the rows.
        self.counts: dict[str, int] = counts if counts is not None else {}

    def on_log(self, state: Any, logs: dict[str, Any] | None) -> None:
        """Record a row when ``logs`` is a training step's entry (has ``reward``)."""
        if not logs or "reward" not in logs:  # the final train_runtime summary, eval logs
            return
        self.rows.append(step_row(self.run, int(state.global_step), self.recorder.drain(), logs))

    def save(self, checkpoint_dir: Path) -> None:
        """Write the rows and counts so far beside a trainer checkpoint (``checkpoint-N/``), so a
        run resumed from it logs every step, not only those after the restart."""
        data = {"rows": self.rows, "counts": dict(self.counts)}
        with atomic_path(Path(checkpoint_dir) / RESUME_LOG_FILE) as tmp:  # whole or absent
            tmp.write_text(json.dumps(data))

    def restore(self, checkpoint_dir: Path) -> bool:
        """Take the rows and counts saved with ``checkpoint_dir``; False if it holds none."""
        path = Path(checkpoint_dir) / RESUME_LOG_FILE
        if not path.is_file():
            return False
        data = json.loads(path.read_text())
        self.rows = list(data["rows"])
        self.counts.clear()
        self.counts.update({str(k): int(v) for k, v in data["counts"].items()})
        return True

    def callback(self) -> Any:
        """A transformers ``TrainerCallback`` forwarding ``on_log`` and ``on_save`` here (imports
        transformers only when training)."""
        from transformers import TrainerCallback
        from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

        owner = self

        class _Forward(TrainerCallback):  # type: ignore[misc]
            def on_log(
                self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any
            ) -> None:
                owner.on_log(state, logs)

            def on_save(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
                d = Path(args.output_dir) / f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}"
                if state.is_world_process_zero and d.is_dir():
                    owner.save(d)

        return _Forward()
