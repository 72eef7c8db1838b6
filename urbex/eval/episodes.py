"""Evaluation records and their Parquet files: one episode row per (run, query), one step row per turn.

Layout of a run (globs of the warehouse's ``episodes``/``steps``/``metrics`` tables)::

    <assets>/eval/runs/<run_id>/
        run.json                       what was run (policy, split, params, checkpoint, status)
        episodes/part-<token>.parquet  finished episodes, one shard per write (ShardWriter)
        steps/part-<token>.parquet     the same chunk's steps (same file name)
        metrics.parquet                the aggregate (urbex.eval.metrics.aggregate)
        timings/                       the measured seconds of the same rows (latency_s, env_s,
                                       policy_s), keyed like them; not versioned
                                       (urbex.layout.TIMINGS_DIR)

A chunk's timings shards and its steps shard are written **before** its episodes shard, each
atomically (temp file + ``os.replace``). An episode counts as finished once its row is in an
episodes shard; a steps or timings shard without its episodes twin (a run killed between the
writes) is an orphan and :func:`finished_query_ids` deletes it, so a resumed run redoes those
episodes without leaving duplicate steps.

When the run is finished, :func:`compact_run` merges its shards into one per folder,
``part-run.parquet`` (:data:`RUN_SHARD`), rows sorted by query (and turn): the run's versioned
files are then a function of its inputs and params only — not of the chunking, the workers, the
order episodes finished in, or a resume — so rebuilding an identical run changes no DVC hash.
Their measured seconds are in ``timings/`` (:func:`read_episodes` joins them back).

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
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from urbex.arrow import read_parquet, table
from urbex.atomic import atomic_path, atomic_write, remove_stale
from urbex.errors import CacheError
from urbex.layout import TIMINGS_DIR

if TYPE_CHECKING:
    import polars as pl
    import pyarrow as pa

    from urbex.env.records import Step
    from urbex.env.trajectory import Trajectory

__all__ = [
    "EPISODE_COLUMNS",
    "ROW_KEYS",
    "RUN_SHARD",
    "SHARD_GLOB",
    "STEP_COLUMNS",
    "TIMING_COLUMNS",
    "EpisodeRecord",
    "StepRow",
    "Written",
    "compact_run",
    "episode_record",
    "episode_schema",
    "finished_query_ids",
    "read_episodes",
    "read_steps",
    "shard_schema",
    "step_rows",
    "step_schema",
    "timing_schema",
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


def write_table_atomic(table: pa.Table, path: Path, *, sweep: bool = True) -> Path:
    """Write ``table`` to ``path`` via a temp file in the same directory + ``os.replace``
    (``sweep``: see :func:`urbex.atomic.atomic_path`)."""
    import pyarrow.parquet as pq

    path = Path(path)
    with atomic_path(path, sweep=sweep) as tmp:
        pq.write_table(table, tmp, compression="zstd")
    return path


def write_json_atomic(data: dict[str, Any], path: Path) -> Path:
    """Write ``data`` as indented JSON to ``path`` atomically."""
    path = Path(path)
    with atomic_write(path, "w") as fh:
        fh.write(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
    return path


#: The measured columns of each kind of row (seconds: they differ between two runs of the same
#: inputs), written to ``timings/<kind>/`` rather than the versioned shards.
TIMING_COLUMNS: dict[str, tuple[str, ...]] = {
    "episodes": ("latency_s", "env_s", "policy_s"),
    "steps": ("latency_s", "env_s", "policy_s"),
}
#: The columns that identify a row of each kind (how timings are joined back).
ROW_KEYS: dict[str, tuple[str, ...]] = {
    "episodes": ("run_id", "query_id"),
    "steps": ("run_id", "query_id", "turn"),
}
_KINDS = ("episodes", "steps")


def _schema(kind: str) -> pa.Schema:
    return episode_schema() if kind == "episodes" else step_schema()


def shard_schema(kind: str) -> pa.Schema:
    """The Arrow schema of a versioned ``episodes`` / ``steps`` shard: the record's columns but
    the measured ones (:data:`TIMING_COLUMNS`)."""
    import pyarrow as pa

    full = _schema(kind)
    return pa.schema([f for f in full if f.name not in TIMING_COLUMNS[kind]])


def timing_schema(kind: str) -> pa.Schema:
    """The Arrow schema of a ``timings/<kind>`` shard: :data:`ROW_KEYS` + :data:`TIMING_COLUMNS`."""
    import pyarrow as pa

    full = _schema(kind)
    return pa.schema([full.field(c) for c in (*ROW_KEYS[kind], *TIMING_COLUMNS[kind])])


def _write_rows(d: Path, kind: str, t: pa.Table, name: str) -> None:
    """One chunk's rows of ``kind`` (a table of the record's schema): their timings shard, then
    their versioned shard (fresh names: no staging file to sweep)."""
    write_table_atomic(
        t.select(timing_schema(kind).names), d / TIMINGS_DIR / kind / name, sweep=False
    )
    write_table_atomic(t.select(shard_schema(kind).names), d / kind / name, sweep=False)


#: What a writer published, kept in memory: shard name → ``{"episodes": table, "steps":
#: table}`` (each of the record's full schema, timings included), as :func:`compact_run` reads.
Written = dict[str, dict[str, "pa.Table"]]


def write_chunk(
    directory: Path,
    episodes: Sequence[EpisodeRecord],
    steps: Sequence[StepRow],
    *,
    keep: Written | None = None,
) -> str | None:
    """Write one chunk: its steps shard, then its episodes shard (same name), each after its
    timings shard. Returns the name.

    Parameters
    ----------
    directory
        The run directory (:meth:`urbex.layout.AssetLayout.run`).
    episodes, steps
        The chunk's finished episodes and all their steps. Nothing is written for no episodes.
    keep
        Where to keep the tables written, by shard name (for :func:`compact_run`).
    """
    if not episodes:
        return None
    d = Path(directory)
    name = f"part-{uuid.uuid4().hex[:16]}.parquet"  # a fresh name: no staging file to sweep
    tables = {"steps": _table(steps, step_schema()), "episodes": _table(episodes, episode_schema())}
    for kind in ("steps", "episodes"):  # episodes last: their shard commits the chunk
        _write_rows(d, kind, tables[kind], name)
    if keep is not None:
        keep[name] = tables
    return name


def _table(rows: Sequence[EpisodeRecord] | Sequence[StepRow], schema: pa.Schema) -> pa.Table:
    """Records → an Arrow table of ``schema``, built column by column (:func:`urbex.arrow.table`:
    without importing pandas, as pyarrow's own constructors would)."""
    return table({name: [getattr(r, name) for r in rows] for name in schema.names}, schema)


#: The name of a published shard (:func:`write_chunk`); a staging file (``.part-….tmp-…``) of
#: :mod:`urbex.atomic` never matches it.
SHARD_GLOB = "part-*.parquet"
#: The one shard per folder of a compacted run (:func:`compact_run`); its rows take precedence
#: over another shard's rows of the same query (a compaction interrupted before it removed them).
RUN_SHARD = "part-run.parquet"


def _shards(directory: Path, kind: str) -> list[Path]:
    return sorted((Path(directory) / kind).glob(SHARD_GLOB))


def _read_shard(path: Path, columns: Sequence[str] | None = None) -> pa.Table:
    """A shard of a run, or a :class:`CacheError` naming it and what to delete to redo it."""
    try:
        return read_parquet(path, columns)
    except Exception as exc:  # pyarrow raises several types for corrupt files (ArrowInvalid, ...)
        kind, twin = path.parent.name, path.parent.parent / "episodes" / path.name
        fix = "delete it" + ("" if kind == "episodes" else f" and {twin}") + " to redo its episodes"
        if path.parent.parent.name == TIMINGS_DIR:
            fix = "delete it (it holds measured seconds only; the episodes stay)"
        raise CacheError(f"unreadable {kind} shard ({exc}); {fix}", path=path) from exc


def _kept_rows(d: Path, kind: str, written: Written | None) -> pl.DataFrame | None:
    """``written``'s rows of ``kind`` if its shards are exactly the run's shards of ``kind``
    (and their timings), on disk now; None otherwise (another process's shards, a resume)."""
    import polars as pl
    import pyarrow as pa

    if not written:
        return None
    names = set(written)
    for folder in (d / kind, d / TIMINGS_DIR / kind):
        if {p.name for p in _shards(folder.parent, folder.name)} != names:
            return None
    tables = [written[name][kind] for name in sorted(names)]
    return pl.DataFrame(pl.from_arrow(pa.concat_tables(tables))).select(_schema(kind).names)


def compact_run(directory: Path, written: Written | None = None) -> pl.DataFrame:
    """Merge a run's shards into one per folder (:data:`RUN_SHARD`), rows sorted by query (and
    turn), and remove the others: the run's versioned files become independent of how it was
    chunked, scheduled or resumed. Returns the run's episodes (as :func:`read_episodes`).

    ``written`` (what this process's shard writer kept, :func:`write_chunk`) spares reading
    the shards back where it holds exactly the shards on disk.

    Safe to interrupt anywhere: the merged shards are written timings first and episodes last
    (until then the merged ones are orphans, removed by the next :func:`finished_query_ids`);
    from then on a merged shard's rows supersede the other shards' rows of its queries
    (:func:`read_episodes`), which are removed last.
    """
    import polars as pl

    d = Path(directory)
    frames = {}
    for kind in _KINDS:
        rows = _kept_rows(d, kind, written)
        frames[kind] = (rows if rows is not None else _read(d, kind, _schema(kind))).sort(
            list(ROW_KEYS[kind][1:])
        )
    for kind in ("steps", "episodes"):  # episodes last: their merged shard commits
        t = frames[kind].to_arrow().cast(_schema(kind))
        write_table_atomic(t.select(timing_schema(kind).names), d / TIMINGS_DIR / kind / RUN_SHARD)
        write_table_atomic(t.select(shard_schema(kind).names), d / kind / RUN_SHARD)
    episodes = pl.DataFrame(pl.from_arrow(t))  # the last kind written: as read back
    for folder in (*(d / k for k in _KINDS), *(d / TIMINGS_DIR / k for k in _KINDS)):
        for p in _shards(folder.parent, folder.name):
            if p.name != RUN_SHARD:
                p.unlink()
    return _unique_episodes(episodes.sort("query_id"), d)


def finished_query_ids(directory: Path, *, clean_orphans: bool = True) -> set[str]:
    """Query ids with a row in an episodes shard of the run; deletes orphan steps shards.

    With ``clean_orphans`` it also removes the partial shard files of dead writers (a run killed
    while writing a shard leaves ``.part-<token>.parquet.tmp-<pid>-…``; see
    :func:`urbex.atomic.remove_stale`); they are never read.

    Raises
    ------
    CacheError
        A shard of finished episodes (episodes or steps) cannot be read; it names the file.
    """
    d = Path(directory)
    done: set[str] = set()
    names = set()
    for p in _shards(d, "episodes"):
        done.update(_read_shard(p, ["query_id"]).column("query_id").to_pylist())
        names.add(p.name)
    for p in (p for p in _shards(d, "steps") if p.name in names):  # finished episodes' steps
        _read_shard(p, ["query_id"])
    if clean_orphans:
        folders = [d / "episodes", d / "steps", *(d / TIMINGS_DIR / k for k in _KINDS)]
        for folder in folders:
            remove_stale(folder)
        for folder in folders[1:]:
            for p in _shards(folder.parent, folder.name):
                if p.name not in names:
                    p.unlink()
    return done


def _read_shards(folder: Path, schema: pa.Schema) -> pl.DataFrame:
    """The rows of every shard in ``folder``; a :data:`RUN_SHARD`'s queries supersede the same
    queries' rows in the other shards (a compaction that stopped before removing them)."""
    import polars as pl
    import pyarrow as pa
    import pyarrow.compute as pc

    paths = _shards(folder.parent, folder.name)
    if not paths:
        return pl.DataFrame(pl.from_arrow(table({n: [] for n in schema.names}, schema)))
    tables = [_read_shard(p) for p in paths]
    if RUN_SHARD in (names := [p.name for p in paths]) and len(paths) > 1:
        merged = tables[names.index(RUN_SHARD)]
        seen = pc.unique(merged.column("query_id"))
        tables = [merged] + [
            t.filter(pc.invert(pc.is_in(t.column("query_id"), value_set=seen)))
            for name, t in zip(names, tables, strict=True)
            if name != RUN_SHARD
        ]
    return pl.DataFrame(pl.from_arrow(pa.concat_tables(tables, promote_options="permissive")))


def _read(directory: Path, kind: str, schema: pa.Schema) -> pl.DataFrame:
    """A run's rows of ``kind`` with their timings joined back (null where the timings are
    missing: a run pulled by DVC, which does not version them), in the record's column order."""
    import polars as pl

    d = Path(directory)
    keys = list(ROW_KEYS[kind])
    rows = _read_shards(d / kind, shard_schema(kind))
    times = _read_shards(d / TIMINGS_DIR / kind, timing_schema(kind))
    timing = list(TIMING_COLUMNS[kind])
    if any(c in rows.columns for c in timing):  # a shard written before timings had a folder
        rows = rows.drop([c for c in timing if c in rows.columns])
    if times.height:
        rows = rows.join(times.unique(keys, keep="first"), on=keys, how="left")
    else:
        rows = rows.with_columns(pl.lit(None, dtype=pl.Float64).alias(c) for c in timing)
    return rows.select(schema.names)


def read_episodes(directory: Path) -> pl.DataFrame:
    """All finished episodes of a run, sorted by ``query_id``.

    Raises
    ------
    CacheError
        The same query appears in two shards (a tampered run directory); an unreadable shard.
    """
    return _unique_episodes(
        _read(directory, "episodes", episode_schema()).sort("query_id"), directory
    )


def _unique_episodes(df: pl.DataFrame, directory: Path) -> pl.DataFrame:
    """``df``, or a :class:`CacheError` if a query has two rows (a tampered run directory)."""
    dup = df.filter(df["query_id"].is_duplicated())["query_id"].unique().to_list()
    if dup:
        raise CacheError(
            f"queries evaluated twice in one run: {sorted(dup)[:5]}; delete the run and rerun",
            path=Path(directory) / "episodes",
        )
    return df


def read_steps(directory: Path) -> pl.DataFrame:
    """All steps of a run's finished episodes, sorted by ``(query_id, turn)`` (a CacheError
    names a shard that cannot be read)."""
    return _read(directory, "steps", step_schema()).sort(["query_id", "turn"])


def _by_name(cls: type, *sources: Any, **extra: Any) -> dict[str, Any]:
    """``cls``'s field values taken, by field name, from ``extra`` or the first source having
    that attribute (dicts by key); a field found nowhere is an error (no silent defaults)."""
    out: dict[str, Any] = {}
    for name in _FIELD_NAMES[cls]:
        if name in extra:
            out[name] = extra[name]
            continue
        for src in sources:
            # one look-up per source (a property is computed once)
            v = src.get(name, _MISSING) if isinstance(src, dict) else getattr(src, name, _MISSING)
            if v is not _MISSING:
                out[name] = v
                break
        else:
            raise TypeError(f"{cls.__name__}.{name}: no source holds this field")
    return out


_MISSING = object()
_FIELD_NAMES: dict[type, tuple[str, ...]] = {
    EpisodeRecord: EPISODE_COLUMNS,
    StepRow: STEP_COLUMNS,
}


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
