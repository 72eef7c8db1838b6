"""The rows of an evaluation run's tables: one :class:`EpisodeRecord` per played episode, one
:class:`StepRow` per turn, and their Arrow schemas.

Both rows are flat projections of a played episode (a :class:`~urbex.env.trajectory.Trajectory`
and its metrics, :func:`urbex.eval.metrics.trajectories_metrics`). :func:`episode_record` and
:func:`step_rows` name every field and where it comes from, so that a field added to a row
without a source, or a source field renamed, fails when the module is type-checked rather than
at run time. The files these rows are written to are :mod:`urbex.eval.episodes`'.

Frames: predicted boxes are world metres (``pred_x_min`` … ``pred_z_max``); step ``arguments``
are the validated arguments as JSON (boxes in view units 0–1000); ``region_*_m`` are world
metres.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

    from urbex.env.records import Step
    from urbex.env.trajectory import Trajectory
    from urbex.query import Query

__all__ = [
    "EPISODE_COLUMNS",
    "STEP_COLUMNS",
    "EpisodeRecord",
    "StepRow",
    "episode_record",
    "episode_schema",
    "step_rows",
    "step_schema",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class EpisodeRecord:
    """One evaluated episode (a row of the ``episodes`` table).

    Boxes are world metres; ``pred_*`` are None without a valid answer. ``answer_mark`` is the
    numbered mark (proposal) the answer named or snapped to (``env.marks``, ``env.answer_snap``;
    ``snapped``: a box answer replaced by it), else None. Metric fields follow
    :func:`urbex.eval.metrics.episode_metrics` (fractions in [0, 1], rank 0 = unranked → null).
    Times are seconds of *warm online* latency: ``env_s`` (reset + tool execution + answer
    lifting, excluding scene loading), ``policy_s`` (model calls), ``latency_s`` their sum plus
    the loop's own overhead.
    """

    run_id: str
    policy: str
    split: str
    query_id: str
    scene_id: str
    object_id: str
    class_name: str
    seed: int
    valid_answer: bool
    answer_view_id: str | None
    answer_mark: int | None
    snapped: bool
    pred_x_min: float | None
    pred_y_min: float | None
    pred_z_min: float | None
    pred_x_max: float | None
    pred_y_max: float | None
    pred_z_max: float | None
    iou_bev: float
    iou_3d: float
    point_precision: float
    point_recall: float
    point_f1: float
    center_dist_m: float | None
    target_rank: int | None
    target_rank_nz: int | None
    target_rank_ciou: int | None
    hit1: bool
    hit3: bool
    hit5: bool
    hit1_iou25: bool
    area_ratio: float | None
    n_candidates: int
    n_pos_overlap: int
    n_iou25: int
    turns: int
    n_landmark_query: int
    n_zoom_in: int
    n_oblique_render: int
    n_invalid: int
    latency_s: float
    env_s: float
    policy_s: float
    reward: float
    terminated: bool
    truncated: bool
    timed_out: bool
    stop_reason: str

    def __post_init__(self) -> None:
        for name in ("run_id", "policy", "split", "query_id", "scene_id"):
            v = getattr(self, name)
            if not isinstance(v, str) or not v:
                raise ValueError(f"EpisodeRecord.{name}: expected a non-empty string, got {v!r}")
        if self.turns < 0:
            raise ValueError(f"EpisodeRecord.turns: expected >= 0, got {self.turns}")
        if self.valid_answer and self.pred_x_min is None:
            raise ValueError("EpisodeRecord: valid_answer=True needs the predicted box pred_*")
        if self.stop_reason not in ("answer", "budget", "timeout"):
            raise ValueError(
                f"EpisodeRecord.stop_reason: expected answer/budget/timeout, got {self.stop_reason!r}"
            )
        # NaN / 0-rank → None so that Parquet and SQL see nulls, not sentinels.
        for f in ("center_dist_m", "area_ratio", *(f"pred_{a}" for a in _AXES)):
            v = getattr(self, f)
            if v is not None and not math.isfinite(float(v)):
                object.__setattr__(self, f, None)
        for f in ("target_rank", "target_rank_nz", "target_rank_ciou"):
            v = getattr(self, f)
            if v is not None and int(v) <= 0:
                object.__setattr__(self, f, None)

    def to_row(self) -> dict[str, Any]:
        """A plain dict (Parquet row)."""
        return {name: getattr(self, name) for name in EPISODE_COLUMNS}


_AXES = ("x_min", "y_min", "z_min", "x_max", "y_max", "z_max")


@dataclass(frozen=True, slots=True, kw_only=True)
class StepRow:
    """One assistant turn of an episode (a row of the ``steps`` table).

    ``tool`` is the tool name, ``"answer"``, or ``None`` when the turn had no recognisable action
    (then ``valid`` is False and ``error`` says why). ``arguments`` is JSON text (view units
    0–1000 for boxes). ``reward`` is the step's shaping (plus the terminal reward on the last
    turn). ``latency_s = policy_s + env_s``. ``model_text`` is the model's raw output, cut to
    4,000 characters. ``region_x_min_m`` … ``region_y_max_m`` are the world BEV box (metres) of
    the view a valid ``zoom_in`` / ``oblique_render`` created (the zoom crop / the rendered
    region), else None.
    """

    run_id: str
    query_id: str
    scene_id: str
    turn: int
    tool: str | None
    arguments: str
    valid: bool
    error: str | None
    view_id: str | None
    reward: float
    latency_s: float
    env_s: float
    policy_s: float
    model_text: str
    region_x_min_m: float | None = None
    region_y_min_m: float | None = None
    region_x_max_m: float | None = None
    region_y_max_m: float | None = None

    def __post_init__(self) -> None:
        if self.turn < 1:
            raise ValueError(f"StepRow.turn: expected >= 1, got {self.turn}")
        if len(self.model_text) > 4000:
            object.__setattr__(self, "model_text", self.model_text[:4000])

    def to_row(self) -> dict[str, Any]:
        """A plain dict (Parquet row)."""
        return {name: getattr(self, name) for name in STEP_COLUMNS}


def _arrow_type(annotation: str) -> pa.DataType:
    import pyarrow as pa

    base = annotation.replace(" | None", "")
    return {"str": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}[base]


def episode_schema() -> pa.Schema:
    """The Arrow schema of an episodes shard (column order = :class:`EpisodeRecord` fields)."""
    import pyarrow as pa

    return pa.schema([(f.name, _arrow_type(str(f.type))) for f in fields(EpisodeRecord)])


def step_schema() -> pa.Schema:
    """The Arrow schema of a steps shard (column order = :class:`StepRow` fields)."""
    import pyarrow as pa

    return pa.schema([(f.name, _arrow_type(str(f.type))) for f in fields(StepRow)])


#: Column names of the episodes / steps shards.
EPISODE_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(EpisodeRecord))
STEP_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(StepRow))


def episode_record(
    traj: Trajectory, metrics: Mapping[str, Any], *, run_id: str, policy: str, split: str
) -> EpisodeRecord:
    """The ``episodes`` row of a played episode.

    Parameters
    ----------
    traj
        The episode: its query (what was asked), seed, outcome (answer, stop reason, turns,
        reward), timings and steps (tool calls, invalid turns).
    metrics
        The episode's scores (:func:`urbex.eval.metrics.trajectories_metrics`: ``iou_bev`` …
        ``n_iou25``).
    run_id, policy, split
        The run it belongs to.
    """
    q, o = traj.query, traj.outcome
    box = o.pred_box_3d_m if o.pred_box_3d_m is not None else [None] * 6
    x0, y0, z0, x1, y1, z1 = (None if v is None else float(v) for v in box)
    return EpisodeRecord(
        run_id=run_id,
        policy=policy,
        split=split,
        query_id=q.query_id,
        scene_id=q.scene_id,
        object_id=q.object_id,
        class_name=q.class_name,
        seed=traj.seed,
        valid_answer=o.answered,
        answer_view_id=o.answer_view_id,
        answer_mark=o.answer_mark,
        snapped=o.snapped,
        pred_x_min=x0,
        pred_y_min=y0,
        pred_z_min=z0,
        pred_x_max=x1,
        pred_y_max=y1,
        pred_z_max=z1,
        iou_bev=metrics["iou_bev"],
        iou_3d=metrics["iou_3d"],
        point_precision=metrics["point_precision"],
        point_recall=metrics["point_recall"],
        point_f1=metrics["point_f1"],
        center_dist_m=metrics["center_dist_m"],
        target_rank=metrics["target_rank"],
        target_rank_nz=metrics["target_rank_nz"],
        target_rank_ciou=metrics["target_rank_ciou"],
        hit1=metrics["hit1"],
        hit3=metrics["hit3"],
        hit5=metrics["hit5"],
        hit1_iou25=metrics["hit1_iou25"],
        area_ratio=metrics["area_ratio"],
        n_candidates=metrics["n_candidates"],
        n_pos_overlap=metrics["n_pos_overlap"],
        n_iou25=metrics["n_iou25"],
        turns=o.turns,
        n_invalid=traj.n_invalid,
        latency_s=traj.latency_s,
        env_s=traj.env_s,
        policy_s=traj.policy_s,
        reward=o.reward,
        terminated=o.answered,
        truncated=o.stop_reason == "budget",
        timed_out=o.stop_reason == "timeout",
        stop_reason=o.stop_reason,
        # one n_<tool> column per counted tool (urbex.env.trajectory.TOOL_NAMES)
        **traj.tool_counts(),
    )


def step_rows(traj: Trajectory, *, run_id: str) -> list[StepRow]:
    """The ``steps`` rows of a played episode, one per turn."""
    return [_step_row(s, traj.query, run_id=run_id) for s in traj.steps]


def _step_row(step: Step, query: Query, *, run_id: str) -> StepRow:
    """The ``steps`` row of one turn of ``query``'s episode."""
    x0, y0, x1, y1 = step.region_m or (None, None, None, None)
    return StepRow(
        run_id=run_id,
        query_id=query.query_id,
        scene_id=query.scene_id,
        turn=step.turn,
        tool=step.tool,
        arguments=json.dumps(step.arguments),
        valid=step.valid,
        error=step.error,
        view_id=step.view_id,
        reward=step.reward,
        latency_s=step.latency_s,
        env_s=step.env_s,
        policy_s=step.policy_s,
        model_text=step.model_text,
        region_x_min_m=x0,
        region_y_min_m=y0,
        region_x_max_m=x1,
        region_y_max_m=y1,
    )
