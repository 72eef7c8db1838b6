"""Evaluation records and their Parquet files: one episode row per (run, query), one step row per turn.

Layout of a run (globs of the warehouse's ``episodes``/``steps``/``metrics`` tables)::

    <assets>/eval/runs/<run_id>/
        run.json                       what was run and its status (urbex.eval.rundir.RunRecord)
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

The rows themselves, and how a played episode becomes one, are :mod:`urbex.eval.rows`'
(:class:`EpisodeRecord`, :class:`StepRow`; re-exported here).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from urbex.arrow import read_parquet, table
from urbex.atomic import remove_stale, write_table_atomic
from urbex.errors import CacheError
from urbex.eval.rows import (
    EPISODE_COLUMNS,
    STEP_COLUMNS,
    EpisodeRecord,
    StepRow,
    episode_record,
    episode_schema,
    step_rows,
    step_schema,
)
from urbex.layout import TIMINGS_DIR

if TYPE_CHECKING:
    import polars as pl
    import pyarrow as pa

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
]


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
