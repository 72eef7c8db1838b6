"""The DuckDB warehouse: views over the Parquet files under ``assets/``.

Files are the source of truth; ``assets/warehouse.duckdb`` only holds **views** over them, created
here, in one place. A run that writes Parquet never holds the DuckDB file open, so users may query
it read-only at any time (``duckdb.connect(path, read_only=True)``). When a table has no files yet,
its view is an empty relation with the documented columns, so queries never fail on a fresh
checkout. The globs never match the staging names of :mod:`urbex.atomic` (``[!.]*`` instead of
``*``), so a killed build or shard write is invisible here.

``episodes``, ``steps`` and ``metrics`` show **complete runs only**: the rows of a run whose
``run.json`` gives a status other than ``complete`` (``running``: still playing or killed;
``failed``) are left out; such a run appears in ``runs`` with its status. (A run directory without
``run.json``, or a ``run.json`` without a status, neither of which the runner leaves, is shown as
is.)

Tables
------
``scenes``     one row per scene cache   ``<assets>/scenes/[!.]*/scene.parquet``
``instances``  one row per GT instance   ``<assets>/scenes/[!.]*/instances.parquet``
``landmarks``  one row per landmark      ``<assets>/landmarks/[!.]*.parquet``
``queries``    one row per cleaned query ``<assets>/splits/queries.parquet``
``annotation_drops``                     ``<assets>/splits/annotation_drops.parquet``
``runs``       one row per run           ``<assets>/eval/runs/[!.]*/run.json`` (JSON, not Parquet)
               (:data:`RUN_COLUMNS`: the spec, ``status`` running/complete/failed, ``error``)
``episodes``   one row per (run, query)  ``<assets>/eval/runs/[!.]*/episodes/part-*.parquet``
``steps``      one row per tool call     ``<assets>/eval/runs/[!.]*/steps/part-*.parquet``
``metrics``    one row per (run, split)  ``<assets>/eval/runs/[!.]*/metrics.parquet``
               (with the run's spec: :data:`urbex.eval.runspec.SPEC_COLUMNS`)
``diagnostics_<name>``  one row per run × split × bin  ``<assets>/eval/diagnostics/<name>.parquet``
               (:data:`urbex.report.diagnostics.DIAGNOSTIC_TABLES`)
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import duckdb
import polars as pl

from urbex.annotations.clean import QUERY_SCHEMA
from urbex.atomic import PUBLIC
from urbex.eval.episodes import SHARD_GLOB, episode_schema, step_schema
from urbex.eval.metrics import metrics_schema
from urbex.eval.runspec import SPEC_COLUMNS
from urbex.landmarks.table import LANDMARK_SCHEMA
from urbex.layout import AssetLayout
from urbex.scene.instances import INSTANCE_SCHEMA
from urbex.scene.meta import SCENE_COLUMNS
from urbex.train.logs import TRAINING_LOG_SCHEMA

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "RUN_COLUMNS",
    "TABLE9_ACCURACY",
    "TABLE9_TOOL_USE",
    "TABLES",
    "TableSpec",
    "connect",
    "refresh_warehouse",
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
    "landmark_query",
    "zoom_in",
    "oblique_render",
    "invalid_rate",
    "turns",
    "lzoa_share",
)

#: The ``runs`` row: ``run_id`` (the run directory's name), then top-level keys of its
#: ``run.json`` as :func:`urbex.eval.runner.evaluate` writes them (the spec's flat columns, the
#: status and its error text, ISO-8601 UTC times, query and episode counts).
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

#: The layout relative to the assets root: with :data:`~urbex.atomic.PUBLIC` (``[!.]*``) for a
#: name, its paths are the globs. Not ``*``: DuckDB's ``*`` also matches the hidden staging names
#: of :mod:`urbex.atomic` (a killed build's ``scenes/.<id>.tmp-<pid>-<token>/``).
_REL = AssetLayout.relative()


def _glob(path: Path) -> str:
    return path.as_posix()


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
        TableSpec(
            name="training_log",
            glob=_glob(_REL.training_log(PUBLIC)),
            columns=_polars_columns(TRAINING_LOG_SCHEMA),
        ),
        # runs before the views that filter on it
        TableSpec(
            name="runs", glob=_glob(_REL.run_json(PUBLIC)), columns=RUN_COLUMNS, format="json"
        ),
        TableSpec(
            name="episodes",
            glob=_glob(_REL.run_episodes(PUBLIC) / SHARD_GLOB),
            columns=_arrow_columns(episode_schema()),
            complete_runs=True,
        ),
        TableSpec(
            name="steps",
            glob=_glob(_REL.run_steps(PUBLIC) / SHARD_GLOB),
            columns=_arrow_columns(step_schema()),
            complete_runs=True,
        ),
        TableSpec(
            name="metrics",
            glob=_glob(_REL.run_metrics(PUBLIC)),
            complete_runs=True,
            columns=(
                *_polars_columns(metrics_schema()),
                *((c, t) for c, t in SPEC_COLUMNS if c not in ("policy", "split")),
            ),
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
                        ("landmark_query", "DOUBLE"),
                        ("zoom_in", "DOUBLE"),
                        ("oblique_render", "DOUBLE"),
                        ("invalid_rate", "DOUBLE"),
                        ("turns", "DOUBLE"),
                        ("lzoa_share", "DOUBLE"),
                    ),
                ),
            )
        ),
    )
}


def _sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


#: The filter of a ``complete_runs`` view.
_COMPLETE_ONLY = (
    " WHERE run_id NOT IN (SELECT run_id FROM runs WHERE status IS NOT NULL"
    " AND status <> 'complete')"
)


def _view_sql(spec: TableSpec, assets: Path) -> str:
    pattern = _sql_str(str(assets.resolve() / spec.glob))
    if any(assets.glob(spec.glob)):
        if spec.format == "json":
            keys = [(c, t) for c, t in spec.columns if c != "run_id"]
            cols = ", ".join(f"{_sql_str(c)}: {_sql_str(t)}" for c, t in keys)
            sel = ", ".join(f'"{c}"' for c, _ in keys)
            return (
                f"CREATE OR REPLACE VIEW {spec.name} AS SELECT "
                f"parse_filename(parse_dirpath(filename)) AS run_id, {sel} FROM read_json("
                f"{pattern}, columns={{{cols}}}, filename=true, format='auto')"
            )
        where = _COMPLETE_ONLY if spec.complete_runs else ""
        return (
            f"CREATE OR REPLACE VIEW {spec.name} AS SELECT * FROM read_parquet("
            f"{pattern}, union_by_name=true){where}"
        )
    cols = ", ".join(f'CAST(NULL AS {t}) AS "{c}"' for c, t in spec.columns)
    return f"CREATE OR REPLACE VIEW {spec.name} AS SELECT {cols} WHERE false"


def refresh_warehouse(
    assets: Path, *, db_path: Path | None = None, con: duckdb.DuckDBPyConnection | None = None
) -> dict[str, int]:
    """(Re)create every warehouse view over the Parquet files now under ``assets``.

    Parameters
    ----------
    assets
        The assets root (``params.assets``).
    db_path
        The DuckDB file; default ``<assets>/warehouse.duckdb``. Ignored when ``con`` is given.
    con
        An open connection to use instead (e.g. an in-memory one in tests).

    Returns
    -------
    dict
        Row count per table.

    DuckDB allows one writer per file; if another process holds it, this retries for ~30 s
    before raising.
    """
    assets = Path(assets)
    own = con is None
    if own:
        db = Path(db_path) if db_path is not None else AssetLayout(assets).warehouse
        db.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + 30.0
        while True:
            try:
                con = duckdb.connect(str(db))
                break
            except duckdb.IOException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    assert con is not None
    try:
        counts: dict[str, int] = {}
        for spec in TABLES.values():
            con.execute(_view_sql(spec, assets))
            # fetchall: a fully consumed result leaves the connection free for the caller
            rows = con.execute(f"SELECT count(*) FROM {spec.name}").fetchall()
            counts[spec.name] = int(rows[0][0]) if rows else 0
        return counts
    finally:
        if own:
            con.close()


def connect(assets: Path, *, read_only: bool = True) -> duckdb.DuckDBPyConnection:
    """Open ``<assets>/warehouse.duckdb`` (read-only by default, safe while a run writes)."""
    return duckdb.connect(str(AssetLayout(assets).warehouse), read_only=read_only)
