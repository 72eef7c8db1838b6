"""Independent partitions at once: one Dagster run per partition, several runs in flight.

The demo's scene caches (one partition per scene) and its evaluation runs (policy × split) do
not depend on each other. :func:`run_partitions` launches one run per partition key through
:func:`dagster.execute_job` — each with Dagster's multiprocess executor, so every step runs in a
process of its own — and keeps ``max_parallel`` of them going, each run driven from a spawned
launcher process (``execute_job`` installs signal handlers: it belongs in a main thread). A
cluster does the same through its run launcher and queue (``deploy/``).

The jobs are rebuilt in each process from this module (``dagster.reconstructable``), so they
are module-level functions; the instance is ``DagsterInstance.get()`` (``$DAGSTER_HOME``).
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import dagster as dg

__all__ = ["evaluation_job", "run_partitions", "scene_caches_job"]


def scene_caches_job() -> dg.JobDefinition:
    """``scene_caches_job`` of the code location (for :func:`dagster.reconstructable`)."""
    from pipelines.definitions import defs

    return defs.resolve_job_def("scene_caches_job")


def evaluation_job() -> dg.JobDefinition:
    """``evaluation_job`` of the code location (for :func:`dagster.reconstructable`)."""
    from pipelines.definitions import defs

    return defs.resolve_job_def("evaluation_job")


def _execute(
    job_fn: Callable[[], dg.JobDefinition], tags: dict[str, str], run_config: Any
) -> tuple[str, bool]:
    """In a launcher process: one run of ``job_fn()``'s job; ``(run_id, success)``."""
    with dg.DagsterInstance.get() as instance:
        with dg.execute_job(
            dg.reconstructable(job_fn), instance=instance, tags=tags, run_config=run_config
        ) as result:
            return result.run_id, bool(result.success)


def run_partitions(
    job_fn: Callable[[], dg.JobDefinition],
    keys: Sequence[Any],
    *,
    max_parallel: int,
    run_config: dict[str, Any] | None = None,
) -> list[str]:
    """Run ``job_fn()``'s job once per partition key, ``max_parallel`` runs at a time.

    ``job_fn`` is a module-level function (see the module docstring). The code location should
    use the multiprocess executor (``URBEX_DAGSTER_EXECUTOR=multiprocess``), so that each run's
    steps run in processes of their own. Returns the run ids in the order of ``keys``.

    Raises
    ------
    ValueError
        ``max_parallel < 1``, or the job is not partitioned.
    RuntimeError
        Some runs failed (the message names their partitions).
    """
    if max_parallel < 1:
        raise ValueError(f"max_parallel: expected >= 1, got {max_parallel}")
    job = job_fn()
    if job.partitions_def is None:
        raise ValueError(f"{job.name}: not partitioned; run it once with dagster.execute_job")
    parts = job.partitions_def
    ctx = mp.get_context("spawn")
    with ProcessPoolExecutor(max_workers=max_parallel, mp_context=ctx) as pool:
        futs = [
            pool.submit(_execute, job_fn, dict(parts.get_tags_for_partition_key(k)), run_config)
            for k in keys
        ]
        results = [f.result() for f in futs]
    failed = [str(k) for k, (_, ok) in zip(keys, results) if not ok]
    if failed:
        raise RuntimeError(f"{job.name}: runs failed for partitions {failed}")
    return [rid for rid, _ in results]
