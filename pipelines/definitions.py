"""Dagster entry point: ``dagster dev -m pipelines.definitions`` (or ``make ui``)."""

import dagster as dg

from pipelines.defs import annotations, assets, benchmarks, evaluation, jobs, resources, training

defs = dg.Definitions(
    assets=dg.load_assets_from_modules([assets, annotations, evaluation, benchmarks, training]),
    resources=resources.RESOURCES,
    jobs=[*jobs.JOBS, training.checkpoint_evaluation_job],
    schedules=[*jobs.SCHEDULES, training.nightly_checkpoint_evaluation],
    sensors=[training.new_checkpoints],
)
