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
``run.json``, which the runner never leaves, is shown as is.) A ``run.json`` that
:func:`urbex.eval.rundir.read_run` refuses — corrupt, or of an older schema (written before
:data:`~urbex.eval.rundir.RUN_SCHEMA`) — is left out with a warning naming it and the command
that plays the run again; its run is listed in ``runs`` as ``failed`` with that reason, and its
rows in the other views are left out. The refresh never fails because of one run.

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
``*_timings``  the measured seconds and timestamps of ``episodes``, ``steps``, ``metrics``,
               ``runs`` and ``training_log`` (``<run or checkpoint>/timings/``, not versioned),
               joined back into those views on their row keys (:mod:`urbex.report.views`)

The table list (globs, columns, keys, joins) is :data:`urbex.report.views.TABLES`.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from urbex.atomic import remove_stale, staging_path, umask_mode
from urbex.errors import ConfigError, WarehouseError
from urbex.eval.rundir import read_run
from urbex.layout import AssetLayout
from urbex.report.views import RUN_COLUMNS, TABLE9_ACCURACY, TABLE9_TOOL_USE, TABLES, TableSpec

__all__ = [
    "RUN_COLUMNS",
    "TABLE9_ACCURACY",
    "TABLE9_TOOL_USE",
    "TABLES",
    "SkippedFile",
    "TableSpec",
    "connect",
    "glob_escape",
    "readable_runs",
    "refresh_warehouse",
    "scan_assets",
]


def _sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


#: The filter of a ``complete_runs`` view.
_COMPLETE_ONLY = (
    " WHERE run_id NOT IN (SELECT run_id FROM runs WHERE status IS NOT NULL"
    " AND status <> 'complete')"
)


def glob_escape(path: str) -> str:
    """``path`` as a DuckDB glob that matches only itself: ``[``, ``*`` and ``?`` in brackets.

    An assets folder may be called ``proj[1]``; unescaped, DuckDB would read ``proj1/``.

    >>> glob_escape("/data/proj[1]/a*b?.parquet")
    '/data/proj[[]1]/a[*]b[?].parquet'
    """
    return "".join(f"[{c}]" if c in "[*?" else c for c in path)


@dataclass(frozen=True, slots=True)
class SkippedFile:
    """A file the warehouse left out: unreadable Parquet or JSON (``run_id`` when in a run)."""

    path: Path
    reason: str
    table: str
    run_id: str | None = None


def _run_of(path: Path, assets: Path) -> str | None:
    try:
        return path.relative_to(AssetLayout(assets).runs).parts[0]
    except (ValueError, IndexError):
        return None


def _unreadable(path: Path, spec: TableSpec) -> str | None:
    """Why ``path`` cannot be read (a one-line reason), or None; reads only the footer/JSON.

    A ``run.json`` is read as its :class:`~urbex.eval.rundir.RunRecord`
    (:func:`~urbex.eval.rundir.read_run`): one of an older schema is unreadable, its reason the
    command that plays the run again, so the run is listed ``failed`` rather than shown with
    columns it does not hold."""
    try:
        if spec.name == "runs":
            read_run(path)
        elif spec.format == "json":
            obj = json.loads(path.read_bytes())
            if not isinstance(obj, dict):
                return f"{path.name} holds a {type(obj).__name__}, not an object"
        else:
            pq.read_metadata(path)
    except ConfigError as exc:  # the message without the path (the warning names it)
        return str(exc).removeprefix(f"{exc.path}: ")
    except (OSError, ValueError, pa.ArrowException) as exc:
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".strip()
    return None


def scan_assets(
    assets: Path, *, tables: Iterable[str] | None = None
) -> tuple[dict[str, list[Path]], list[SkippedFile]]:
    """The files of ``tables`` (default every table) under ``assets`` (listed by Python: the
    root is never a pattern) and the files left out because they cannot be read."""
    files: dict[str, list[Path]] = {}
    skipped: list[SkippedFile] = []
    wanted = TABLES.values() if tables is None else [TABLES[t] for t in tables]
    for spec in wanted:
        good = []
        for f in sorted(assets.glob(spec.glob)):
            why = _unreadable(f, spec)
            if why is None:
                good.append(f)
            else:
                skipped.append(SkippedFile(f, why, spec.name, _run_of(f, assets)))
        files[spec.name] = good
    return files, skipped


#: The tables whose files live in run directories (what :func:`readable_runs` reads).
_RUN_TABLES = tuple(
    n for n, t in TABLES.items() if t.glob.startswith(AssetLayout.relative().runs.as_posix())
)


def readable_runs(assets: Path) -> list[Path]:
    """The run directories under ``<assets>/eval/runs`` (public names, sorted) whose files can
    all be read: what the report, the page and the tables read run by run. The others are the
    ``failed`` rows :func:`refresh_warehouse` warns about."""
    runs = AssetLayout(assets).runs
    if not runs.is_dir():
        return []
    bad = {s.run_id for s in scan_assets(assets, tables=_RUN_TABLES)[1]}
    return sorted(
        d for d in runs.iterdir() if d.is_dir() and not d.name.startswith(".") and d.name not in bad
    )


def _empty(spec: TableSpec) -> str:
    cols = ", ".join(f'CAST(NULL AS {t}) AS "{c}"' for c, t in spec.columns)
    return f"SELECT {cols} WHERE false"


def _source(spec: TableSpec, assets: Path, files: list[Path], *, listed: bool) -> str:
    """The view's file argument: the glob (new files appear without a refresh), or, when some
    file of the table was left out, the list of the readable ones (until the next refresh)."""
    if listed:
        return "[" + ", ".join(_sql_str(glob_escape(str(f.resolve()))) for f in files) + "]"
    return _sql_str(glob_escape(str(assets.resolve())) + "/" + spec.glob)


def _view_sql(
    spec: TableSpec,
    assets: Path,
    files: list[Path],
    skipped: list[SkippedFile],
    *,
    timed: bool = False,
) -> str:
    """The view of ``spec`` over ``files``; ``timed``: its timings table has files."""
    listed = any(s.table == spec.name for s in skipped)
    if not files:
        body = _empty(spec)
    elif spec.format == "json":
        shown = [(c, t) for c, t in spec.columns if c != "run_id"]
        keys = shown if spec.json_keys is None else list(spec.json_keys)
        cols = ", ".join(f"{_sql_str(c)}: {_sql_str(t)}" for c, t in keys)
        derived = dict(spec.derived)
        sel = ", ".join(
            f'CAST({derived[c]} AS {t}) AS "{c}"' if c in derived else f'"{c}"' for c, t in shown
        )
        run_dir = "filename"
        for _ in range(spec.run_dir_up):
            run_dir = f"parse_dirpath({run_dir})"
        body = (
            f"SELECT parse_filename({run_dir}) AS run_id, {sel} FROM read_json("
            f"{_source(spec, assets, files, listed=listed)}, columns={{{cols}}}, filename=true, "
            "format='auto')"
        )
    else:
        where = _COMPLETE_ONLY if spec.complete_runs else ""
        body = (
            f"SELECT * FROM read_parquet({_source(spec, assets, files, listed=listed)}, "
            f"union_by_name=true){where}"
        )
    if files and spec.unique:
        body = f"SELECT DISTINCT ON ({_names(spec.keys)}) * FROM ({body})"
    if files and spec.timings is not None:
        body = _with_timings(body, spec, TABLES[spec.timings], files, timed=timed)
    if spec.name == "runs":
        body = _runs_with_skipped(body, spec, skipped)
    return f"CREATE OR REPLACE VIEW {spec.name} AS {body}"


def _names(cols: Iterable[str]) -> str:
    return ", ".join(f'"{c}"' for c in cols)


def _with_timings(
    body: str, spec: TableSpec, timings: TableSpec, files: list[Path], *, timed: bool
) -> str:
    """``body`` left-joined with its timings table on the row keys: the measured columns added
    (null where a run has no timings, e.g. pulled by DVC), or, where the files themselves still
    hold them (written before timings had a folder), filled from them when the timings lack
    them."""
    if spec.format == "json":
        legacy = set(timings.measured)  # every documented column is selected (run.json: null)
    else:
        legacy = {c for f in files for c in pq.read_schema(f).names} & set(timings.measured)
    types = dict(timings.columns)
    if not timed:  # nothing to join: the documented columns, null
        nulls = [f'CAST(NULL AS {types[c]}) AS "{c}"' for c in timings.measured if c not in legacy]
        return f"SELECT b.*{''.join(', ' + n for n in nulls)} FROM ({body}) AS b"
    kept = [c for c in timings.measured if c in legacy]
    added = ", ".join(f't."{c}"' for c in timings.measured if c not in legacy)
    replace = ", ".join(f'COALESCE(t."{c}", b."{c}") AS "{c}"' for c in kept)
    select = "b.*" + (f" REPLACE ({replace})" if replace else "") + (f", {added}" if added else "")
    keys = _names(spec.keys)
    return f"SELECT {select} FROM ({body}) AS b LEFT JOIN {timings.name} AS t USING ({keys})"


def _runs_with_skipped(body: str, spec: TableSpec, skipped: list[SkippedFile]) -> str:
    """``runs`` with every run that holds an unreadable file marked ``failed`` (its reason in
    ``error``), including a run whose ``run.json`` itself is unreadable."""
    reasons: dict[str, str] = {}
    for s in skipped:
        if s.run_id is not None and s.run_id not in reasons:
            reasons[s.run_id] = f"unreadable file {s.path.name} ({s.reason}); the run is left out"
    if not reasons:
        return body
    values = ", ".join(f"({_sql_str(r)}, {_sql_str(why)})" for r, why in reasons.items())
    types = dict(spec.columns)
    return (
        "SELECT r.* REPLACE (CASE WHEN b.why IS NULL THEN r.status ELSE 'failed' END AS status, "
        "COALESCE(b.why, r.error) AS error) "
        f"FROM ({body}) AS r LEFT JOIN (VALUES {values}) AS b(bad_id, why) ON r.run_id = b.bad_id "
        "UNION ALL BY NAME "
        f"SELECT CAST(b.bad_id AS {types['run_id']}) AS run_id, 'failed' AS status, b.why AS error "
        f"FROM (VALUES {values}) AS b(bad_id, why) WHERE b.bad_id NOT IN (SELECT run_id FROM "
        f"({body}))"
    )


def _require_assets(assets: Path) -> None:
    if not assets.is_dir():
        raise ConfigError(
            f"paths.assets {assets} is not a folder (a typo? the commands that build assets "
            "create it: urbex synth, urbex cache)",
            field="paths.assets",
        )


def refresh_warehouse(
    assets: Path, *, db_path: Path | None = None, con: duckdb.DuckDBPyConnection | None = None
) -> dict[str, int]:
    """(Re)create every warehouse view over the Parquet files now under ``assets``.

    Parameters
    ----------
    assets
        The assets root (``params.assets``); it must exist.
    db_path
        The DuckDB file; default ``<assets>/warehouse.duckdb``. Ignored when ``con`` is given.
    con
        An open connection to use instead (e.g. an in-memory one in tests and the report).

    Returns
    -------
    dict
        Row count per table.

    The file is built under a staging name and renamed over the old one, so a refresh never
    waits for DuckDB's file lock: a reader that holds the old file open keeps reading it, the
    next connection opens the new one. (The file is rebuilt whole each time: it holds views
    only; keep your own tables in another database.) A file that cannot be read (a truncated
    Parquet shard, a corrupt ``run.json``) is left out with a warning naming it; its run shows
    in ``runs`` as ``failed`` with the reason, and the other runs are unaffected.
    """
    assets = Path(assets)
    _require_assets(assets)
    files, skipped = scan_assets(assets)
    for s in skipped:
        warnings.warn(
            f"warehouse: {s.path}: left out, cannot be read ({s.reason})", UserWarning, stacklevel=2
        )
    if con is not None:
        return _create_views(con, assets, files, skipped)
    db = Path(db_path) if db_path is not None else AssetLayout(assets).warehouse
    # staged without a suffix, so DuckDB's ``<file>.wal`` beside it is a staging name too
    # (``.warehouse.duckdb.tmp-<pid>-<token>.wal``): a killed refresh leaves nothing remove_stale
    # does not sweep
    remove_stale(db.parent, name=db.name)
    tmp = staging_path(db)
    wal = Path(f"{tmp}.wal")
    try:
        try:
            own = duckdb.connect(str(tmp))
        except (duckdb.IOException, PermissionError) as exc:
            raise WarehouseError(
                f"cannot write the warehouse here ({str(exc).splitlines()[0]}); the Parquet "
                "files can still be queried in memory: "
                "refresh_warehouse(assets, con=duckdb.connect())",
                path=db,
            ) from exc
        try:
            counts = _create_views(own, assets, files, skipped)
        finally:
            own.close()
        wal.unlink(missing_ok=True)
        os.chmod(tmp, umask_mode())
        os.replace(tmp, db)
    except BaseException:
        tmp.unlink(missing_ok=True)
        wal.unlink(missing_ok=True)
        raise
    return counts


def _create_views(
    con: duckdb.DuckDBPyConnection,
    assets: Path,
    files: dict[str, list[Path]],
    skipped: list[SkippedFile],
) -> dict[str, int]:
    counts: dict[str, int] = {}
    for spec in TABLES.values():
        timed = spec.timings is not None and bool(files[spec.timings])
        con.execute(_view_sql(spec, assets, files[spec.name], skipped, timed=timed))
        # fetchall: a fully consumed result leaves the connection free for the caller
        rows = con.execute(f"SELECT count(*) FROM {spec.name}").fetchall()
        counts[spec.name] = int(rows[0][0]) if rows else 0
    return counts


def connect(assets: Path, *, read_only: bool = True) -> duckdb.DuckDBPyConnection:
    """Open ``<assets>/warehouse.duckdb`` (read-only by default, safe while a run writes)."""
    return duckdb.connect(str(AssetLayout(assets).warehouse), read_only=read_only)
