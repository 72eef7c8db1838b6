"""Evaluation records and their Parquet files: one episode row per (run, query), one step row per turn.

Layout of a run (globs of the warehouse's ``episodes``/``steps``/``metrics`` tables)::

    <assets>/eval/runs/<run_id>/
        run.json                       what was run (policy, split, params, checkpoint, status)
        episodes/part-<token>.parquet  finished episodes, one shard per written chunk
        steps/part-<token>.parquet     the same chunk's steps (same file name)
        metrics.parquet                the aggregate (urbex.eval.metrics.aggregate)

A chunk's steps shard is written **before** its episodes shard, each atomically (temp file +
``os.replace``). An episode counts as finished once its row is in an episodes shard; a steps
shard without its episodes twin (a run killed between the two writes) is an orphan and
:func:`finished_query_ids` deletes it, so a resumed run redoes those episodes without leaving
duplicate steps.

Both rows are flat projections of a :class:`~urbex.env.trajectory.Trajectory`
(:func:`episode_record`, :func:`step_rows`): every field that the record already holds is taken
from it by name, so a renamed field fails loudly instead of drifting.

Frames: predicted boxes are world metres (``pred_x_min`` … ``pred_z_max``); step ``arguments``
are the validated arguments as JSON (boxes in view units 0–1000); ``region_*_m`` are world
metres.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from urbex.atomic import atomic_path, atomic_write, remove_stale
from urbex.errors import CacheError

if TYPE_CHECKING:
    import polars as pl
    import pyarrow as pa

    from urbex.env.records import Step
    from urbex.env.trajectory import Trajectory

__all__ = [
    "EPISODE_COLUMNS",
    "SHARD_GLOB",
    "STEP_COLUMNS",
    "EpisodeRecord",
    "StepRow",
    "episode_record",
    "episode_schema",
    "finished_query_ids",
    "read_episodes",
    "read_steps",
    "step_rows",
    "step_schema",
    "write_chunk",
    "write_json_atomic",
    "write_table_atomic",
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
        return asdict(self)


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
        return asdict(self)


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


def write_table_atomic(table: pa.Table, path: Path) -> Path:
    """Write ``table`` to ``path`` via a temp file in the same directory + ``os.replace``."""
    import pyarrow.parquet as pq

    path = Path(path)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")
    return path


def write_json_atomic(data: dict[str, Any], path: Path) -> Path:
    """Write ``data`` as indented JSON to ``path`` atomically."""
    path = Path(path)
    with atomic_write(path, "w") as fh:
        fh.write(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
    return path


def write_chunk(
    directory: Path, episodes: Sequence[EpisodeRecord], steps: Sequence[StepRow]
) -> str | None:
    """Write one chunk: its steps shard, then its episodes shard (same name). Returns the name.

    Parameters
    ----------
    directory
        The run directory (:meth:`urbex.layout.AssetLayout.run`).
    episodes, steps
        The chunk's finished episodes and all their steps. Nothing is written for no episodes.
    """
    import pyarrow as pa

    if not episodes:
        return None
    name = f"part-{uuid.uuid4().hex[:16]}.parquet"
    d = Path(directory)
    st = pa.Table.from_pylist([s.to_row() for s in steps], schema=step_schema())
    write_table_atomic(st, d / "steps" / name)
    ep = pa.Table.from_pylist([e.to_row() for e in episodes], schema=episode_schema())
    write_table_atomic(ep, d / "episodes" / name)
    return name


#: The name of a published shard (:func:`write_chunk`); a staging file (``.part-….tmp-…``) of
#: :mod:`urbex.atomic` never matches it.
SHARD_GLOB = "part-*.parquet"


def _shards(directory: Path, kind: str) -> list[Path]:
    return sorted((Path(directory) / kind).glob(SHARD_GLOB))


def finished_query_ids(directory: Path, *, clean_orphans: bool = True) -> set[str]:
    """Query ids with a row in an episodes shard of the run; deletes orphan steps shards.

    With ``clean_orphans`` it also removes the partial shard files of dead writers (a run killed
    while writing a shard leaves ``.part-<token>.parquet.tmp-<pid>-…``; see
    :func:`urbex.atomic.remove_stale`); they are never read.

    Raises
    ------
    CacheError
        A shard cannot be read (a corrupt file); delete it to redo its episodes.
    """
    import pyarrow.parquet as pq

    d = Path(directory)
    done: set[str] = set()
    names = set()
    for p in _shards(d, "episodes"):
        try:
            done.update(pq.read_table(p, columns=["query_id"]).column("query_id").to_pylist())
        except Exception as exc:  # pyarrow raises several types for corrupt files
            raise CacheError(
                f"unreadable episodes shard ({exc}); delete it to redo it", path=p
            ) from exc
        names.add(p.name)
    if clean_orphans:
        for kind in ("episodes", "steps"):
            remove_stale(d / kind)
        for p in _shards(d, "steps"):
            if p.name not in names:
                p.unlink()
    return done


def _read(directory: Path, kind: str, schema: pa.Schema) -> pl.DataFrame:
    import polars as pl
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = [pq.read_table(p) for p in _shards(directory, kind)]
    if not tables:
        return pl.from_arrow(schema.empty_table())  # type: ignore[return-value]
    return pl.from_arrow(pa.concat_tables(tables, promote_options="permissive"))  # type: ignore[return-value]


def read_episodes(directory: Path) -> pl.DataFrame:
    """All finished episodes of a run, sorted by ``query_id``.

    Raises
    ------
    CacheError
        The same query appears in two shards (the run directory was tampered with).
    """
    df = _read(directory, "episodes", episode_schema()).sort("query_id")
    dup = df.filter(df["query_id"].is_duplicated())["query_id"].unique().to_list()
    if dup:
        raise CacheError(
            f"queries evaluated twice in one run: {sorted(dup)[:5]}; delete the run and rerun",
            path=Path(directory) / "episodes",
        )
    return df


def read_steps(directory: Path) -> pl.DataFrame:
    """All steps of a run's finished episodes, sorted by ``(query_id, turn)``."""
    return _read(directory, "steps", step_schema()).sort(["query_id", "turn"])


def _by_name(cls: type, *sources: Any, **extra: Any) -> dict[str, Any]:
    """``cls``'s field values taken, by field name, from ``extra`` or the first source having
    that attribute (dicts by key); a field found nowhere is an error (no silent defaults)."""
    out: dict[str, Any] = {}
    for f in fields(cls):
        if f.name in extra:
            out[f.name] = extra[f.name]
            continue
        for src in sources:
            if isinstance(src, dict) and f.name in src:
                out[f.name] = src[f.name]
                break
            if not isinstance(src, dict) and hasattr(src, f.name):
                out[f.name] = getattr(src, f.name)
                break
        else:
            raise TypeError(f"{cls.__name__}.{f.name}: no source holds this field")
    return out


def episode_record(
    traj: Trajectory, metrics: dict[str, Any], *, run_id: str, policy: str, split: str
) -> EpisodeRecord:
    """The ``episodes`` row of a trajectory and its metrics
    (:func:`urbex.eval.metrics.trajectory_metrics`)."""
    o = traj.outcome
    box = o.pred_box_3d_m if o.pred_box_3d_m is not None else [None] * 6
    return EpisodeRecord(
        **_by_name(
            EpisodeRecord,
            metrics,
            traj.query,
            o,
            traj,
            traj.tool_counts(),
            run_id=run_id,
            policy=policy,
            split=split,
            valid_answer=o.answered,
            reward=o.reward,
            terminated=o.answered,
            truncated=o.stop_reason == "budget",
            timed_out=o.stop_reason == "timeout",
            **{f"pred_{a}": None if v is None else float(v) for a, v in zip(_AXES, box)},
        )
    )


def step_rows(traj: Trajectory, *, run_id: str) -> list[StepRow]:
    """The ``steps`` rows of a trajectory, one per turn."""
    return [_step_row(s, traj, run_id) for s in traj.steps]


def _step_row(step: Step, traj: Trajectory, run_id: str) -> StepRow:
    region = step.region_m or (None, None, None, None)
    return StepRow(
        **_by_name(
            StepRow,
            step,
            traj.query,
            run_id=run_id,
            arguments=json.dumps(step.arguments),
            **dict(
                zip(
                    ("region_x_min_m", "region_y_min_m", "region_x_max_m", "region_y_max_m"), region
                )
            ),
        )
    )
