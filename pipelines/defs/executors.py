"""Where the graph runs: the executor chosen by configuration, GPU pools and Kubernetes requests.

``URBEX_DAGSTER_EXECUTOR`` (read when the code location loads, by ``pipelines/definitions.py``)
selects the executor of every job; the same definitions run everywhere:

* ``in_process`` — every step in the run's process (the default; ``make demo``);
* ``multiprocess`` — Dagster's multiprocess executor: each step in its own process, steps
  that do not depend on each other at once (``max_concurrent`` in the run config);
* ``k8s`` — ``dagster_k8s.k8s_job_executor``: each step a Kubernetes Job (``deploy/``; needs
  the ``k8s`` extra). The run launcher (``K8sRunLauncher``) is instance configuration
  (``deploy/dagster.yaml``), not code.

Model-backed assets (GRPO training, model-policy evaluation) carry :data:`GPU_POOL`: with a
pool limit (``dagster instance concurrency set gpu 1``, or ``concurrency.pools`` in
``dagster.yaml``) their steps run one at a time per limit slot, so GPU work is serialised per
device whatever the executor. On Kubernetes their step pods request a GPU
(:data:`GPU_OP_TAGS`, read by ``k8s_job_executor``); other steps get :data:`CPU_OP_TAGS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import dagster as dg

__all__ = [
    "CPU_OP_TAGS",
    "EXECUTORS",
    "EXECUTOR_ENV",
    "GPU_OP_TAGS",
    "GPU_POOL",
    "select_executor",
]

#: The environment variable that names the executor (see the module docstring).
EXECUTOR_ENV = "URBEX_DAGSTER_EXECUTOR"
#: The executors by name.
EXECUTORS = ("in_process", "multiprocess", "k8s")
#: The concurrency pool of the steps that hold a GPU.
GPU_POOL = "gpu"


def _k8s_tags(requests: Mapping[str, str], limits: Mapping[str, str]) -> dict[str, Any]:
    return {
        "dagster-k8s/config": {
            "container_config": {"resources": {"requests": dict(requests), "limits": dict(limits)}}
        }
    }


#: Step pods of model-backed assets: one GPU (``nvidia.com/gpu``), cores and memory beside it.
GPU_OP_TAGS = _k8s_tags(
    {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "1"},
    {"memory": "96Gi", "nvidia.com/gpu": "1"},
)
#: Step pods of the CPU stages (scene caches, landmarks, splits, heuristic evaluation).
CPU_OP_TAGS = _k8s_tags({"cpu": "2", "memory": "8Gi"}, {"memory": "16Gi"})


def select_executor(name: str | None) -> dg.ExecutorDefinition:
    """The executor called ``name`` (:data:`EXECUTORS`; None or empty = ``in_process``).

    Raises
    ------
    ValueError
        An unknown name (the message lists the known ones).
    ImportError
        ``k8s`` without ``dagster-k8s`` installed (``pip install -e '.[k8s]'``).
    """
    name = (name or "in_process").strip()
    if name == "in_process":
        return dg.in_process_executor
    if name == "multiprocess":
        return dg.multiprocess_executor
    if name == "k8s":
        try:
            from dagster_k8s import k8s_job_executor
        except ImportError as exc:
            raise ImportError(
                f"{EXECUTOR_ENV}=k8s needs the dagster-k8s package: pip install -e '.[k8s]'"
            ) from exc
        return k8s_job_executor
    raise ValueError(f"{EXECUTOR_ENV}: expected one of {list(EXECUTORS)}, got {name!r}")
