"""Jobs and schedules."""

import dagster as dg

raw_job = dg.define_asset_job("raw_job", selection=["raw_dataset"])
scene_caches_job = dg.define_asset_job("scene_caches_job", selection=["scene_caches"])

JOBS = [raw_job, scene_caches_job]
SCHEDULES: list[dg.ScheduleDefinition] = []
