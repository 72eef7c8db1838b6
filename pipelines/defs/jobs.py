"""Jobs and schedules."""

import dagster as dg

raw_job = dg.define_asset_job("raw_job", selection=["raw_dataset"])
scene_caches_job = dg.define_asset_job("scene_caches_job", selection=["scene_caches"])
evaluation_job = dg.define_asset_job("evaluation_job", selection=["evaluation"])
model_evaluation_job = dg.define_asset_job("model_evaluation_job", selection=["model_evaluation"])
report_job = dg.define_asset_job(
    "report_job", selection=["warehouse", "evaluation_report", "diagnostics"]
)


report_schedule = dg.ScheduleDefinition(
    job=report_job, cron_schedule="30 4 * * *", execution_timezone="UTC"
)

JOBS = [raw_job, scene_caches_job, evaluation_job, model_evaluation_job, report_job]
#: The nightly evaluation is of the latest checkpoint (``training.nightly_checkpoint_evaluation``):
#: re-running the deterministic heuristics every night would measure nothing.
SCHEDULES = [report_schedule]
