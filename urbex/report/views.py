"""The warehouse's tables: each view's files (a glob under the assets root) and its columns.

:data:`TABLES` lists them in creation order (``runs`` before the views that filter on it; a
timings table before the view that joins it). What :mod:`urbex.report.warehouse` builds views
from; kept apart so that the list of tables reads in one place.

Timings
-------
A run's versioned files hold no measured seconds (they would differ between two runs of the
same inputs; :data:`urbex.layout.TIMINGS_DIR`): ``episodes``, ``steps``, ``metrics``, ``runs``
and ``training_log`` each join their ``*_timings`` table (``latency_s``, ``env_s``,
``policy_s``; ``created``/``updated``; ``s_per_step``, ``env_share``) on their row keys, so the
views keep every documented column. A run pulled by DVC has no timings: those columns are null.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import polars as pl
import pyarrow as pa

from urbex.annotations.clean import QUERY_SCHEMA
from urbex.atomic import PUBLIC
from urbex.env.trajectory import TOOL_NAMES
from urbex.eval.episodes import ROW_KEYS, SHARD_GLOB, episode_schema, step_schema, timing_schema
from urbex.eval.metrics import TIMING_COLUMNS as METRIC_TIMING
from urbex.eval.metrics import metrics_schema
from urbex.eval.runspec import SPEC_COLUMNS
from urbex.landmarks.table import LANDMARK_SCHEMA
from urbex.layout import RUN_TIMES_FILE, TIMINGS_DIR, TRAINING_LOG_FILE, AssetLayout
from urbex.scene.instances import INSTANCE_SCHEMA
from urbex.scene.meta import SCENE_COLUMNS
from urbex.train.logs import TIMING_COLUMNS as LOG_TIMING
from urbex.train.logs import TRAINING_LOG_SCHEMA

__all__ = [
    "RUN_COLUMNS",
    "TABLE9_ACCURACY",
    "TABLE9_TOOL_USE",
    "TABLES",
    "TableSpec",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class TableSpec:
    """A warehouse table: the Parquet glob (relative to the assets root) and its empty schema."""

    name: str
    glob: str
    columns: tuple[tuple[str, str], ...]  # (name, DuckDB type) of the documented columns
    #: ``json``: one row per JSON file (``runs``: ``run.json``, ``run_id`` its directory name).
    format: Literal["parquet", "json"] = "parquet"
    #: Keep only the rows of runs that ``runs`` does not mark running or failed.
    complete_runs: bool = False
    #: The columns that identify a row: what a timings table is joined on (and unique by).
    keys: tuple[str, ...] = ()
    #: The timings table whose measured columns this view adds (joined on :attr:`keys`).
    timings: str | None = None
    #: A timings table: one row per :attr:`keys` (the first, if a file repeats one).
    unique: bool = False
    #: JSON files: how many folders above the file the run directory (``run_id``) is.
    run_dir_up: int = 1
    #: JSON files: the keys read and their DuckDB types (None: the columns but ``run_id``).
    json_keys: tuple[tuple[str, str], ...] | None = None
    #: JSON files: ``(column, SQL expression over the keys read)`` of the columns not read as
    #: a key of their name (cast to the column's type).
    derived: tuple[tuple[str, str], ...] = ()

    @property
    def measured(self) -> tuple[str, ...]:
        """A timings table's measured columns (its columns but the keys)."""
        return tuple(c for c, _ in self.columns if c not in self.keys)


#: DuckDB types of the polars dtype names of :data:`urbex.scene.instances.INSTANCE_SCHEMA`.
_POLARS_TO_DUCKDB = {
    "String": "VARCHAR",
    "Int32": "INTEGER",
    "Int64": "BIGINT",
    "Float64": "DOUBLE",
    "Boolean": "BOOLEAN",
    "List(String)": "VARCHAR[]",
}
#: DuckDB types of the Arrow types of the episodes / steps shard schemas.
_ARROW_TO_DUCKDB = {
    "string": "VARCHAR",
    "large_string": "VARCHAR",
    "int32": "INTEGER",
    "int64": "BIGINT",
    "double": "DOUBLE",
    "bool": "BOOLEAN",
}


def _polars_columns(schema: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """(name, DuckDB type) of a polars schema (lists of strings → ``VARCHAR[]``)."""
    return tuple((c, _POLARS_TO_DUCKDB[str(t)]) for c, t in schema.items())


def _arrow_columns(schema: pa.Schema) -> tuple[tuple[str, str], ...]:
    """``(name, DuckDB type)`` of an Arrow schema (a record's Parquet shard schema)."""
    return tuple((f.name, _ARROW_TO_DUCKDB[str(f.type)]) for f in schema)


#: Table 9's columns (:mod:`urbex.report.table9`; the ``diagnostics_table9`` view's schema).
#: Its accuracy columns (fractions), from the run's metrics row.
TABLE9_ACCURACY: tuple[str, ...] = ("n", "hit1", "hit3", "iou_bev")
#: Its tool-use columns, from :func:`urbex.report.diagnostics.tool_use` (calls per episode, rates).
TABLE9_TOOL_USE: tuple[str, ...] = (
    *TOOL_NAMES,
    "invalid_rate",
    "turns",
    "lzoa_share",
)

#: The ``runs`` row: ``run_id`` (the run directory's name), the spec's flat columns (derived
#: from ``run.json``'s ``"spec"``, :data:`_RUN_SPEC_SQL`), then its ``status``, ``error``, the
#: ISO-8601 UTC times (from the run's ``timings/run.json``) and the query and episode counts
#: (:class:`urbex.eval.rundir.RunRecord`).
RUN_COLUMNS: tuple[tuple[str, str], ...] = (
    ("run_id", "VARCHAR"),
    *SPEC_COLUMNS,
    ("status", "VARCHAR"),
    ("error", "VARCHAR"),
    ("created", "VARCHAR"),
    ("updated", "VARCHAR"),
    ("n_queries", "BIGINT"),
    ("n_episodes", "BIGINT"),
)

#: ``run.json``'s ``"spec"`` (:meth:`urbex.eval.runspec.RunSpec.to_dict`) as DuckDB reads it.
_SPEC_STRUCT = (
    "STRUCT(policy VARCHAR, split VARCHAR, checkpoint VARCHAR, "
    'perturbation STRUCT("mode" VARCHAR, noise_m DOUBLE, seed BIGINT), '
    'sample STRUCT("limit" BIGINT, seed BIGINT), repeat_seed BIGINT, tools VARCHAR[], '
    "benchmark VARCHAR, marks BOOLEAN, answer_snap VARCHAR)"
)
#: The spec's flat columns (:meth:`urbex.eval.runspec.RunSpec.columns`) as SQL over that struct:
#: the ``runs`` view's, so that ``run.json`` holds the spec once. The tag is
#: :func:`urbex.eval.perturb.perturbation_tag` (DuckDB's ``{:g}`` is Python's); a test checks
#: the view's row against ``RunSpec.columns`` for every kind of field.
_RUN_SPEC_SQL: dict[str, str] = {
    "policy": "spec.policy",
    "split": "spec.split",
    "checkpoint": "spec.checkpoint",
    "landmark_perturbation": (
        "CASE spec.perturbation.\"mode\" WHEN 'noise' THEN "
        "'noise' || format('{:g}', spec.perturbation.noise_m) "
        'ELSE spec.perturbation."mode" END'
    ),
    "landmark_perturbation_mode": 'spec.perturbation."mode"',
    "landmark_noise_m": "spec.perturbation.noise_m",
    "landmark_perturbation_seed": "spec.perturbation.seed",
    "sample_limit": 'spec.sample."limit"',
    "sample_seed": "spec.sample.seed",
    "repeat_seed": "spec.repeat_seed",
    "tools": "CASE WHEN spec.tools IS NULL THEN 'all' ELSE array_to_string(spec.tools, ',') END",
    "benchmark": "spec.benchmark",
    "marks": "spec.marks",
    "answer_snap": "spec.answer_snap",
}
if set(_RUN_SPEC_SQL) != {c for c, _ in SPEC_COLUMNS}:  # pragma: no cover - a missed column
    raise AssertionError("views: _RUN_SPEC_SQL must derive every SPEC_COLUMNS column")

#: The layout relative to the assets root: with :data:`~urbex.atomic.PUBLIC` (``[!.]*``) for a
#: name, its paths are the globs. Not ``*``: DuckDB's ``*`` also matches the hidden staging names
#: of :mod:`urbex.atomic` (a killed build's ``scenes/.<id>.tmp-<pid>-<token>/``).
_REL = AssetLayout.relative()


def _glob(path: Path) -> str:
    return path.as_posix()


def _select(schema: Mapping[str, Any], *names: Sequence[str]) -> dict[str, Any]:
    return {c: schema[c] for group in names for c in group}


#: The row keys of ``training_log`` and ``metrics`` (a run has one split: ``policy`` is implied).
_LOG_KEYS = ("run", "step")
_METRIC_KEYS = ("run_id", "split")


TABLES: dict[str, TableSpec] = {
    t.name: t
    for t in (
        TableSpec(name="scenes", glob=_glob(_REL.scene_row(PUBLIC)), columns=SCENE_COLUMNS),
        TableSpec(
            name="instances",
            glob=_glob(_REL.instances(PUBLIC)),
            columns=tuple((c, _POLARS_TO_DUCKDB[t]) for c, t in INSTANCE_SCHEMA),
        ),
        TableSpec(
            name="landmarks",
            glob=_glob(_REL.landmark_table(PUBLIC)),
            columns=_polars_columns(LANDMARK_SCHEMA),
        ),
        TableSpec(
            name="queries",
            glob=_glob(_REL.queries),
            columns=_polars_columns({**QUERY_SCHEMA, "split": pl.String}),
        ),
        TableSpec(
            name="annotation_drops",
            glob=_glob(_REL.annotation_drops),
            columns=(
                ("scene_id", "VARCHAR"),
                ("object_id", "VARCHAR"),
                ("ann_id", "BIGINT"),
                ("description", "VARCHAR"),
                ("reason", "VARCHAR"),
            ),
        ),
        # timings before the views that join them
        TableSpec(
            name="training_log_timings",
            glob=_glob(_REL.checkpoint(PUBLIC) / TIMINGS_DIR / TRAINING_LOG_FILE),
            columns=_polars_columns(_select(TRAINING_LOG_SCHEMA, _LOG_KEYS, LOG_TIMING)),
            keys=_LOG_KEYS,
            unique=True,
        ),
        TableSpec(
            name="training_log",
            glob=_glob(_REL.training_log(PUBLIC)),
            columns=_polars_columns(TRAINING_LOG_SCHEMA),
            keys=_LOG_KEYS,
            timings="training_log_timings",
        ),
        TableSpec(
            name="run_timings",
            glob=_glob(_REL.run(PUBLIC) / TIMINGS_DIR / RUN_TIMES_FILE),
            columns=(("run_id", "VARCHAR"), ("created", "VARCHAR"), ("updated", "VARCHAR")),
            format="json",
            keys=("run_id",),
            unique=True,
            run_dir_up=2,
        ),
        # runs before the views that filter on it
        TableSpec(
            name="runs",
            glob=_glob(_REL.run_json(PUBLIC)),
            columns=RUN_COLUMNS,
            format="json",
            keys=("run_id",),
            timings="run_timings",
            json_keys=(
                ("spec", _SPEC_STRUCT),
                ("status", "VARCHAR"),
                ("error", "VARCHAR"),
                ("n_queries", "BIGINT"),
                ("n_episodes", "BIGINT"),
            ),
            # the times are the timings table's (joined in); run.json holds none
            derived=(
                *_RUN_SPEC_SQL.items(),
                ("created", "NULL"),
                ("updated", "NULL"),
            ),
        ),
        *(
            TableSpec(
                name=f"{kind[:-1]}_timings",
                glob=_glob(_REL.run(PUBLIC) / TIMINGS_DIR / kind / SHARD_GLOB),
                columns=_arrow_columns(timing_schema(kind)),
                keys=ROW_KEYS[kind],
                unique=True,
            )
            for kind in ("episodes", "steps")
        ),
        TableSpec(
            name="episodes",
            glob=_glob(_REL.run_episodes(PUBLIC) / SHARD_GLOB),
            columns=_arrow_columns(episode_schema()),
            complete_runs=True,
            keys=ROW_KEYS["episodes"],
            timings="episode_timings",
        ),
        TableSpec(
            name="steps",
            glob=_glob(_REL.run_steps(PUBLIC) / SHARD_GLOB),
            columns=_arrow_columns(step_schema()),
            complete_runs=True,
            keys=ROW_KEYS["steps"],
            timings="step_timings",
        ),
        TableSpec(
            name="metric_timings",
            glob=_glob(_REL.run(PUBLIC) / TIMINGS_DIR / _REL.run_metrics(PUBLIC).name),
            columns=_polars_columns(_select(metrics_schema(), _METRIC_KEYS, METRIC_TIMING)),
            keys=_METRIC_KEYS,
            unique=True,
        ),
        TableSpec(
            name="metrics",
            glob=_glob(_REL.run_metrics(PUBLIC)),
            complete_runs=True,
            columns=(
                *_polars_columns(metrics_schema()),
                *((c, t) for c, t in SPEC_COLUMNS if c not in ("policy", "split")),
            ),
            keys=_METRIC_KEYS,
            timings="metric_timings",
        ),
        *(
            TableSpec(
                name=f"diagnostics_{name}",
                glob=_glob(_REL.diagnostic_table(name)),
                columns=(("run_id", "VARCHAR"), ("policy", "VARCHAR"), ("split", "VARCHAR"), *cols),
            )
            for name, cols in (
                (
                    "matching_rules",
                    (
                        ("rule", "VARCHAR"),
                        ("n", "BIGINT"),
                        ("hit1", "DOUBLE"),
                        ("hit3", "DOUBLE"),
                        ("hit1_spread", "DOUBLE"),
                        ("hit3_spread", "DOUBLE"),
                    ),
                ),
                (
                    "box_extent",
                    (
                        ("n", "BIGINT"),
                        ("n_valid", "BIGINT"),
                        ("hit1", "DOUBLE"),
                        ("hit1_iou25", "DOUBLE"),
                        ("n_pos_overlap_mean", "DOUBLE"),
                        ("n_iou25_median", "DOUBLE"),
                        ("area_ratio_median", "DOUBLE"),
                        ("area_ratio_p90", "DOUBLE"),
                        ("hit1_drop", "DOUBLE"),
                    ),
                ),
                (
                    "area_ratio",
                    (
                        ("bin", "VARCHAR"),
                        ("bin_order", "BIGINT"),
                        ("count", "BIGINT"),
                        ("share", "DOUBLE"),
                    ),
                ),
                (
                    "disambiguation",
                    (
                        ("factor", "VARCHAR"),
                        ("bin", "VARCHAR"),
                        ("bin_order", "BIGINT"),
                        ("n", "BIGINT"),
                        ("regional_success", "DOUBLE"),
                        ("n_regional", "BIGINT"),
                        ("local_success", "DOUBLE"),
                        ("hit1", "DOUBLE"),
                    ),
                ),
                (
                    "landmark_availability",
                    (
                        ("landmark_perturbation", "VARCHAR"),
                        ("subset", "VARCHAR"),
                        ("clean_run_id", "VARCHAR"),
                        ("n", "BIGINT"),
                        ("hit1", "DOUBLE"),
                        ("clean_hit1", "DOUBLE"),
                        ("delta_hit1", "DOUBLE"),
                    ),
                ),
                (
                    "table11",
                    (
                        ("method", "VARCHAR"),
                        ("n", "BIGINT"),
                        ("iou_bev", "DOUBLE"),
                        ("iou_3d", "DOUBLE"),
                        ("point_f1", "DOUBLE"),
                    ),
                ),
                (
                    "table9",
                    (
                        ("pair", "BIGINT"),
                        ("mode", "VARCHAR"),
                        ("method", "VARCHAR"),
                        ("backend", "VARCHAR"),
                        ("n", "BIGINT"),
                        *((c, "DOUBLE") for c in (*TABLE9_ACCURACY[1:], *TABLE9_TOOL_USE)),
                    ),
                ),
                (
                    "repeated_decoding",
                    (
                        ("method", "VARCHAR"),
                        ("n_repeats", "BIGINT"),
                        ("seeds", "VARCHAR"),
                        *(
                            (f"{m}_{s}", "DOUBLE")
                            for m in ("hit1", "hit3", "iou_bev")
                            for s in ("mean", "lo", "hi")
                        ),
                    ),
                ),
                (
                    "proposal_recall",
                    (
                        ("class_name", "VARCHAR"),
                        ("n_targets", "BIGINT"),
                        ("n_proposals", "BIGINT"),
                        ("recall_iou25", "DOUBLE"),
                        ("recall_iou50", "DOUBLE"),
                    ),
                ),
                (
                    "tool_use",
                    (
                        ("n", "BIGINT"),
                        *((t, "DOUBLE") for t in TOOL_NAMES),
                        ("invalid_rate", "DOUBLE"),
                        ("turns", "DOUBLE"),
                        ("lzoa_share", "DOUBLE"),
                    ),
                ),
            )
        ),
    )
}
