"""A run's directory, ``<assets>/eval/runs/<run_id>/``: its record, the resume check, its end.

* ``run.json`` is the run's :class:`RunRecord` (schema :data:`RUN_SCHEMA`): its
  :class:`~urbex.eval.runspec.RunSpec` once, under ``"spec"``
  (:meth:`~urbex.eval.runspec.RunSpec.to_dict`), beside the fingerprint of the settings it plays
  under, its status, error and counts. :func:`write_run` writes it (atomically), :func:`read_run`
  reads it back typed; a ``run.json`` of an older schema is refused in one line naming the
  ``urbex evaluate`` command that plays the run again. :func:`read_spec` is the spec of a run
  directory; :func:`resolve_specs` the spec of each run of a set of metrics rows.
* Before a run plays, :func:`pending_queries` says which queries are left: :func:`check_run`
  checks that the directory holds the same run (or nothing), :func:`clear_run` empties a stale
  one; :class:`RunTimes` keeps its start and last
  update in the unversioned ``timings/run.json``.
* At its end, :func:`finalize_run` merges the episode shards, writes ``metrics.parquet`` with the
  spec's columns and the headline figures (:func:`run_summary`) as the DVC metrics file.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from urbex.atomic import atomic_write, write_json_atomic, write_table_atomic
from urbex.errors import ConfigError
from urbex.eval.episodes import Written, compact_run, finished_query_ids
from urbex.eval.metrics import GROUP_KEYS, aggregate
from urbex.eval.metrics import TIMING_COLUMNS as METRIC_TIMING
from urbex.eval.runlock import LOCK_FILE, LOCK_HOLDER_FILE
from urbex.eval.runspec import SPEC_COLUMNS, RunSpec, Sample
from urbex.layout import TIMINGS_DIR, AssetLayout

if TYPE_CHECKING:
    import polars as pl

    from urbex.query import Query

__all__ = [
    "RUN_SCHEMA",
    "RUN_STATUSES",
    "RunRecord",
    "RunStatus",
    "RunTimes",
    "check_run",
    "clear_run",
    "finalize_run",
    "pending_queries",
    "read_run",
    "read_spec",
    "resolve_specs",
    "run_summary",
    "write_run",
]


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


#: The layout of ``run.json`` that :class:`RunRecord` writes and :func:`read_run` reads.
#: Schema 1 is every ``run.json`` without a ``"schema"`` key: the spec under ``"spec"`` beside
#: its flat columns and loose ``policy``/``split``/``checkpoint``/``limit`` keys, or, before
#: specs, only those keys and the fingerprint. It is not read: its run is played again.
RUN_SCHEMA = 2

#: A run's ``status``: ``running`` while it plays (or killed while playing), ``complete`` at its
#: end, ``failed`` when anything raised (the ``error`` says what).
RunStatus = Literal["running", "complete", "failed"]
RUN_STATUSES: tuple[RunStatus, ...] = get_args(RunStatus)

_RECORD_KEYS = frozenset(
    ("schema", "run_id", "spec", "fingerprint", "status", "error", "n_queries", "n_episodes")
)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRecord:
    """``<assets>/eval/runs/<run_id>/run.json``: what a run is, how it played, how far it got.

    One writer (:func:`urbex.eval.runner.evaluate`, through :func:`write_run`) and one reader
    (:func:`read_run`). The spec is stored once, under ``"spec"``
    (:meth:`RunSpec.to_dict`); the warehouse's ``runs`` view derives its flat spec columns
    (:data:`SPEC_COLUMNS`) from it.

    Attributes
    ----------
    run_id
        The run directory's name (``spec.run_id`` unless a custom id was given).
    spec
        What the run is.
    fingerprint
        The settings a resumed run must share with the run it continues (the runner's
        ``_fingerprint``: ``env``, ``policy``, the backend's section ``vlm``/``openai``, seeds,
        ...), as JSON values. Compared whole by the resume check; :attr:`backend` and
        :meth:`settings` read parts of it.
    status
        :data:`RunStatus`.
    error
        ``Type: message`` on one line when ``failed``, else None.
    n_queries
        Queries selected (the split, or its seeded sample).
    n_episodes
        Episodes in the metrics once ``complete``; None before.
    schema
        :data:`RUN_SCHEMA` (a record of another schema is never built).
    """

    run_id: str
    spec: RunSpec
    fingerprint: dict[str, Any] = field(hash=False)
    status: RunStatus = "running"
    error: str | None = None
    n_queries: int
    n_episodes: int | None = None
    schema: int = RUN_SCHEMA

    def __post_init__(self) -> None:
        if not isinstance(self.run_id, str) or not self.run_id:
            raise ValueError(f"run_id: expected a non-empty name, got {self.run_id!r}")
        if not isinstance(self.spec, RunSpec):
            raise TypeError(f"spec: expected a RunSpec, got {type(self.spec).__name__}")
        if not isinstance(self.fingerprint, Mapping):
            raise TypeError(f"fingerprint: expected an object, got {self.fingerprint!r}")
        # as JSON holds it (tuples as lists, paths as strings): equal after a round trip
        fp = json.loads(json.dumps(dict(self.fingerprint), default=str))
        object.__setattr__(self, "fingerprint", fp)
        if self.status not in RUN_STATUSES:
            raise ValueError(f"status: expected one of {list(RUN_STATUSES)}, got {self.status!r}")
        if self.error is not None and not isinstance(self.error, str):
            raise ValueError(f"error: expected a string or None, got {self.error!r}")
        if not _is_int(self.n_queries) or self.n_queries < 0:
            raise ValueError(f"n_queries: expected an int >= 0, got {self.n_queries!r}")
        if self.n_episodes is not None and (not _is_int(self.n_episodes) or self.n_episodes < 0):
            raise ValueError(f"n_episodes: expected an int >= 0 or None, got {self.n_episodes!r}")
        if self.schema != RUN_SCHEMA:
            raise ValueError(f"schema: expected {RUN_SCHEMA}, got {self.schema!r}")

    @property
    def backend(self) -> str:
        """The model backend the policy played with (the fingerprint's ``policy.backend``;
        ``vlm`` when it names none)."""
        pol = self.fingerprint.get("policy")
        return str((pol.get("backend") if isinstance(pol, dict) else None) or "vlm")

    def settings(self, *sections: str) -> tuple[Any, ...]:
        """The fingerprint's ``sections`` (None where absent): two runs played with the same
        settings of those sections when these are equal (``settings("env", "vlm")``)."""
        return tuple(self.fingerprint.get(s) for s in sections)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``run.json``); :meth:`from_dict` reads it back."""
        return {
            "schema": self.schema,
            "run_id": self.run_id,
            "spec": self.spec.to_dict(),
            "fingerprint": self.fingerprint,
            "status": self.status,
            "error": self.error,
            "n_queries": self.n_queries,
            "n_episodes": self.n_episodes,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunRecord:
        """Inverse of :meth:`to_dict` (of :data:`RUN_SCHEMA`).

        Raises
        ------
        ValueError, TypeError
            Missing or unknown keys, or invalid values.
        """
        if set(d) != _RECORD_KEYS:
            raise ValueError(
                f"expected keys {sorted(_RECORD_KEYS)}, got missing "
                f"{sorted(_RECORD_KEYS - set(d))}, unknown {sorted(set(d) - _RECORD_KEYS)}"
            )
        if not isinstance(d["spec"], Mapping):
            raise TypeError(f"spec: expected an object, got {d['spec']!r}")
        return cls(
            run_id=d["run_id"],
            spec=RunSpec.from_dict(d["spec"]),
            fingerprint=d["fingerprint"],
            status=d["status"],
            error=d["error"],
            n_queries=d["n_queries"],
            n_episodes=d["n_episodes"],
            schema=d["schema"],
        )


def write_run(record: RunRecord, path: Path) -> Path:
    """Write ``record`` to ``path`` (``run.json``) atomically, as indented JSON with sorted
    keys; returns ``path``."""
    path = Path(path)
    with atomic_write(path, "w") as fh:
        fh.write(json.dumps(record.to_dict(), indent=2, sort_keys=True) + "\n")
    return path


def read_run(path: Path) -> RunRecord:
    """The :class:`RunRecord` in ``path`` (a run's ``run.json``).

    A ``run.json`` of an older schema (no ``"schema"`` key: written before the record, with
    the spec beside its flat columns, or before specs) is refused with a one-line error naming
    the file and the command that plays the run again (:meth:`RunSpec.evaluate_command`, from
    what it records) — ``urbex evaluate ... --restart-stale`` replaces the directory (the DVC
    stages pass it, so ``dvc repro`` rebuilds such runs by itself) — or deleting the directory.
    The warehouse lists such a run as ``failed`` with that reason and a warning naming the file,
    and leaves its episodes, steps and metrics out (:func:`urbex.report.warehouse.scan_assets`);
    the readers of single runs (the report's tables, the page, the dataset export) read only
    the runs it keeps, or raise this error.

    Raises
    ------
    ConfigError
        The file cannot be read, is not a JSON object, is of another schema, or holds a
        malformed record; the message names ``path``.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # JSONDecodeError and UnicodeDecodeError: ValueErrors
        what = "is not JSON" if isinstance(exc, ValueError) else "cannot be read"
        raise ConfigError(f"run.json {what} ({_first_line(exc)})", path=path) from exc
    if not isinstance(data, dict):
        raise ConfigError(f"run.json holds a {type(data).__name__}, not an object", path=path)
    schema = data.get("schema", 1)
    if schema != RUN_SCHEMA:
        if _is_int(schema) and schema > RUN_SCHEMA:
            raise ConfigError(
                f"run.json of schema {schema}, newer than this urbex reads ({RUN_SCHEMA}): "
                "update urbex, or delete the run directory",
                path=path,
            )
        raise ConfigError(
            f"run.json of schema {schema} (before {RUN_SCHEMA}): rerun "
            f"`{_rebuild_command(data, path.parent.name)}` or delete the run directory",
            path=path,
        )
    try:
        return RunRecord.from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(
            f"run.json: malformed run record ({_first_line(exc)}); delete the run directory",
            path=path,
        ) from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _rebuild_command(data: Mapping[str, Any], run_id: str) -> str:
    """The ``urbex evaluate`` command that plays again the run an old ``run.json`` records:
    from its ``"spec"``, else its loose ``policy``/``split``/``checkpoint``/``limit`` keys."""
    try:
        if isinstance(data.get("spec"), Mapping):
            spec = RunSpec.from_dict(data["spec"])
        else:
            lim, ck = data.get("limit"), data.get("checkpoint")
            spec = RunSpec(
                policy=data["policy"],
                split=data["split"],
                checkpoint=None if ck is None else str(ck),
                sample=None if lim is None else Sample(limit=int(lim)),
            )
    except (KeyError, TypeError, ValueError):
        return f"urbex evaluate --policy P --split S --run-id {run_id} --restart-stale"
    return " ".join(spec.evaluate_command(run_id).split())  # one line


def read_spec(directory: Path) -> RunSpec | None:
    """The spec of the run in ``directory`` (``<assets>/eval/runs/<run_id>``); None without a
    ``run.json``.

    Raises
    ------
    ConfigError
        ``run.json`` cannot be read as a :class:`RunRecord` (:func:`read_run`).
    """
    path = Path(directory) / "run.json"
    if not path.is_file():
        return None
    return read_run(path).spec


def resolve_specs(rows: Iterable[Mapping[str, Any]], runs_dir: Path) -> dict[str, RunSpec | None]:
    """The spec of each run of ``rows`` (metrics rows with ``run_id``): from the row's spec
    columns, else from ``<runs_dir>/<run_id>/run.json``, else None (no spec known)."""
    out: dict[str, RunSpec | None] = {}
    for row in rows:
        rid = str(row["run_id"])
        if out.get(rid) is not None:
            continue
        spec = RunSpec.from_columns(row)
        out[rid] = spec if spec is not None else read_spec(Path(runs_dir) / rid)
    return out


# ---------------------------------------------------------------------------------------------
# the run directory: the resume check, a stale run cleared, the timings, the end of a run
# ---------------------------------------------------------------------------------------------


def clear_run(directory: Path) -> None:
    """Delete what a run directory holds except its lock (held by the caller): a stale run."""
    import shutil

    for p in directory.iterdir():
        if p.name in (LOCK_FILE, LOCK_HOLDER_FILE):
            continue
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        else:
            p.unlink()


def check_run(
    directory: Path, spec: RunSpec, fp: dict[str, Any], *, restart_stale: bool = False
) -> None:
    """Check that the run in ``directory`` (if any) is the same run: its ``run.json`` has the
    spec's policy and split and the fingerprint ``fp``.

    A run of another policy/split or fingerprint raises :class:`ConfigError`, as does a
    ``run.json`` that :func:`~urbex.eval.rundir.read_run` refuses (an older schema names the
    command that replays it); with ``restart_stale`` either is deleted (the caller holds the
    run lock) and the run starts afresh."""
    path = directory / "run.json"
    if not path.is_file():
        return
    try:
        old = read_run(path)
    except ConfigError:
        if not restart_stale:
            raise
        clear_run(directory)
        return
    policy, split = spec.policy, spec.split
    new = json.loads(json.dumps(fp, default=str))
    same = old.spec.policy == policy and old.spec.split == split and old.fingerprint == new
    if not same and restart_stale:
        clear_run(directory)
        return
    if old.spec.policy != policy or old.spec.split != split:
        raise ConfigError(
            f"run {directory.name!r} is policy={old.spec.policy!r} split={old.spec.split!r}; "
            f"got policy={policy!r} split={split!r}. Pass another run_id.",
            path=path,
        )
    if old.fingerprint != new:
        was = old.fingerprint
        diff = sorted(k for k in set(was) | set(new) if was.get(k) != new.get(k))
        raise ConfigError(
            f"params changed since run {directory.name!r} started ({diff}); resuming would mix "
            "settings. Pass another run_id, or delete the run directory.",
            path=path,
        )


def pending_queries(
    directory: Path,
    spec: RunSpec,
    fp: dict[str, Any],
    queries: Sequence[Query],
    *,
    restart_stale: bool = False,
) -> list[Query]:
    """The ``queries`` the run in ``directory`` has not played yet (the caller holds its lock).

    :func:`check_run` first (the same run, or nothing); then the episodes already written are
    skipped. Episodes of queries outside ``queries`` (another ``limit``, ``eval.sample_seed`` or
    split table since the run started) raise :class:`ConfigError`, since its metrics would mix
    both; with ``restart_stale`` the run is cleared and every query is pending.
    """
    check_run(directory, spec, fp, restart_stale=restart_stale)
    done = finished_query_ids(directory)
    extra = sorted(done - {q.query_id for q in queries})
    if extra and restart_stale:
        clear_run(directory)
        done, extra = set(), []
    if extra:
        raise ConfigError(
            f"run {directory.name!r} holds {len(extra)} episodes outside the selected queries "
            f"({extra[:3]}): limit, eval.sample_seed or the split table changed since it "
            "started, and its metrics would mix both. Pass another run_id, or delete the run "
            "directory.",
            path=directory / "episodes",
        )
    return [q for q in queries if q.query_id not in done]


@dataclass(slots=True)
class RunTimes:
    """``timings/run.json``: ``run_id``, ``created`` (kept from an earlier start) and
    ``updated`` (each :meth:`touch`)."""

    path: Path
    run_id: str

    def touch(self) -> None:
        now = datetime.now(UTC).isoformat(timespec="seconds")
        try:
            created = json.loads(self.path.read_text()).get("created") or now
        except (OSError, ValueError, AttributeError):
            created = now
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {"run_id": self.run_id, "created": created, "updated": now}
        write_json_atomic(data, self.path)


def finalize_run(lay: AssetLayout, run_id: str, written: Written | None = None) -> pl.DataFrame:
    """Aggregate a run's episodes into ``metrics.parquet`` (atomic) and return the rows.

    First merges the run's shards into one per folder (:func:`urbex.eval.episodes.compact_run`;
    ``written``: the shards this process wrote, kept in memory, so that they are not read
    back): a finished run's files do not depend on its chunking or on a resume. The measured columns
    (:data:`urbex.eval.metrics.TIMING_COLUMNS`) go to the unversioned ``timings/metrics.parquet``
    (the returned frame and the warehouse's ``metrics`` view hold them).

    Also writes the headline figures as flat JSON, ``eval/summaries/<run_id>.json``
    (:func:`run_summary`, timings left out): the evaluation stages' DVC metrics file, what
    ``dvc exp show`` and ``dvc metrics diff`` compare across a sweep.

    The rows carry the run's spec (read from ``run.json``, :func:`urbex.eval.rundir.read_spec`)
    as the columns of :data:`urbex.eval.runspec.SPEC_COLUMNS`: ``checkpoint``,
    ``landmark_perturbation`` (``none`` or the tag, e.g. ``noise10``), its mode and parameters,
    the sample and the repeat seed. A run without ``run.json`` gets null spec columns
    (``landmark_perturbation`` ``none``).
    """
    import polars as pl

    d = lay.run(run_id)
    eps = compact_run(d, written)
    spec = read_spec(d)
    cols: dict[str, Any] = spec.columns() if spec is not None else {"landmark_perturbation": "none"}
    dtypes = {"VARCHAR": pl.String, "DOUBLE": pl.Float64, "BIGINT": pl.Int64, "BOOLEAN": pl.Boolean}
    metrics = aggregate(eps)
    metrics = metrics.with_columns(
        pl.lit(cols.get(name), dtype=dtypes[t]).alias(name)
        for name, t in SPEC_COLUMNS
        if name not in metrics.columns
    )
    timing = [c for c in METRIC_TIMING if c in metrics.columns]
    versioned = metrics.drop(timing)
    summary = run_summary(versioned)
    # computed first, then written: the measured columns (unversioned), the metrics, the summary
    metrics_path, summary_path = lay.run_metrics(run_id), lay.run_summary(run_id)
    write_table_atomic(
        metrics.select([*GROUP_KEYS, *timing]).to_arrow(), d / TIMINGS_DIR / metrics_path.name
    )
    write_table_atomic(versioned.to_arrow(), metrics_path)
    write_json_atomic(summary, summary_path)
    return metrics


def run_summary(metrics: pl.DataFrame) -> dict[str, int | float | None]:
    """The numeric metric columns of a run's one metrics row (not the spec's columns,
    :data:`~urbex.eval.runspec.SPEC_COLUMNS`; NaN as None); ``{"n": 0}`` without one.

    >>> import polars as pl
    >>> run_summary(pl.DataFrame({"split": ["val"], "n": [4], "hit1": [0.5], "iou_bev": [float("nan")]}))
    {'n': 4, 'hit1': 0.5, 'iou_bev': None}
    >>> run_summary(pl.DataFrame({"split": [], "n": []}))
    {'n': 0}
    """
    import math

    if metrics.height != 1:
        return {"n": int(metrics["n"].sum()) if metrics.height else 0}
    row = metrics.row(0, named=True)
    spec = {name for name, _ in SPEC_COLUMNS}
    out: dict[str, int | float | None] = {}
    for name, dtype in metrics.schema.items():
        if dtype.is_numeric() and name not in spec:
            v = row[name]
            out[name] = None if v is None or (isinstance(v, float) and math.isnan(v)) else v
    return out
