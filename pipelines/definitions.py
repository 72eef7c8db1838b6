"""Dagster entry point: ``dagster dev -m pipelines.definitions`` (or ``make ui``)."""

import dagster as dg

from pipelines.defs import assets, checks, jobs, resources

defs = dg.Definitions(
    assets=dg.load_assets_from_modules([assets]),
    asset_checks=dg.load_asset_checks_from_modules([checks]),
    resources=resources.RESOURCES,
    jobs=jobs.JOBS,
    schedules=jobs.SCHEDULES,
)
