"""Dagster entry point: ``dagster dev -m pipelines.definitions`` (or ``make ui``).

The executor of every job is configuration: ``URBEX_DAGSTER_EXECUTOR`` = ``in_process``
(default), ``multiprocess`` or ``k8s`` (:mod:`pipelines.defs.executors`; ``deploy/``).
"""

import os

import dagster as dg

from pipelines.defs import annotations, assets, benchmarks, evaluation, jobs, resources, training
from pipelines.defs.executors import EXECUTOR_ENV, select_executor

defs = dg.Definitions(
    assets=dg.load_assets_from_modules([assets, annotations, evaluation, benchmarks, training]),
    resources=resources.RESOURCES,
    jobs=[*jobs.JOBS, training.checkpoint_evaluation_job],
    schedules=[*jobs.SCHEDULES, training.nightly_checkpoint_evaluation],
    sensors=[training.new_checkpoints],
    executor=select_executor(os.environ.get(EXECUTOR_ENV)),
)
