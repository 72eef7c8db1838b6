"""A run's ``run.json``: :class:`RunRecord` (schema :data:`RUN_SCHEMA`), its one writer and reader.

``<assets>/eval/runs/<run_id>/run.json`` holds the run's :class:`~urbex.eval.runspec.RunSpec`
once, under ``"spec"`` (:meth:`~urbex.eval.runspec.RunSpec.to_dict`), beside the fingerprint of
the settings it played under, its status, error and counts. :func:`write_run` writes it
(atomically), :func:`read_run` reads it back typed; a ``run.json`` of an older schema is
refused in one line naming the ``urbex evaluate`` command that plays the run again.
:func:`read_spec` is the spec of a run directory; :func:`resolve_specs` the spec of each run of
a set of metrics rows (their spec columns, else their ``run.json``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from urbex.atomic import atomic_write
from urbex.errors import ConfigError
from urbex.eval.runspec import RunSpec, Sample

__all__ = [
    "RUN_SCHEMA",
    "RUN_STATUSES",
    "RunRecord",
    "RunStatus",
    "read_run",
    "read_spec",
    "resolve_specs",
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
