"""Independent partitions at once: one Dagster run per partition, several runs in flight.

The demo's scene caches (one partition per scene) and its evaluation runs (policy × split) do
not depend on each other. :func:`run_partitions` launches one run per partition key through
:func:`dagster.execute_job` — each with Dagster's multiprocess executor, so every step runs in a
process of its own — and keeps ``max_parallel`` of them going. A cluster does the same through
its run launcher and queue (``deploy/``).

The jobs are rebuilt in each step process from this module (``dagster.reconstructable``), so
they are module-level functions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
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


def run_partitions(
    job_fn: Callable[[], dg.JobDefinition],
    keys: Sequence[Any],
    instance: dg.DagsterInstance,
    *,
    max_parallel: int,
    run_config: dict[str, Any] | None = None,
) -> list[dg.JobExecutionResult]:
    """Run ``job_fn()``'s job once per partition key, ``max_parallel`` runs at a time.

    The code location must use the multiprocess executor (``URBEX_DAGSTER_EXECUTOR=multiprocess``):
    each run's steps then run in processes of their own and the runs truly overlap. Returns the
    results in the order of ``keys``; raises ``RuntimeError`` naming the failed partitions.
    """
    if max_parallel < 1:
        raise ValueError(f"max_parallel: expected >= 1, got {max_parallel}")
    job = job_fn()
    target = dg.reconstructable(job_fn)

    def one(key: Any) -> dg.JobExecutionResult:
        return dg.execute_job(
            target,
            instance=instance,
            tags=job.get_tags_for_partition_key(key),
            run_config=run_config,
        )

    with ThreadPoolExecutor(max_workers=max_parallel, thread_name_prefix="urbex-run") as pool:
        results = list(pool.map(one, keys))
    failed = [str(k) for k, r in zip(keys, results) if not r.success]
    if failed:
        raise RuntimeError(f"{job.name}: runs failed for partitions {failed}")
    return results
