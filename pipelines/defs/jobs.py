"""Jobs and schedules."""

import dagster as dg

raw_job = dg.define_asset_job("raw_job", selection=["raw_dataset"])
scene_caches_job = dg.define_asset_job("scene_caches_job", selection=["scene_caches"])
evaluation_job = dg.define_asset_job("evaluation_job", selection=["evaluation"])
model_evaluation_job = dg.define_asset_job("model_evaluation_job", selection=["model_evaluation"])
report_job = dg.define_asset_job(
    "report_job", selection=["warehouse", "evaluation_report", "diagnostics"]
)


@dg.schedule(job=evaluation_job, cron_schedule="0 3 * * *", execution_timezone="UTC")
def nightly_evaluation(context: dg.ScheduleEvaluationContext):
    """Re-evaluate the heuristic floor and the oracle on both test splits every night."""
    for policy in ("oracle", "landmark_prior"):
        for split in ("test_nd", "test_no"):
            key = dg.MultiPartitionKey({"policy": policy, "split": split})
            yield dg.RunRequest(
                run_key=f"{context.scheduled_execution_time:%Y%m%d}-{key}", partition_key=key
            )


report_schedule = dg.ScheduleDefinition(
    job=report_job, cron_schedule="30 4 * * *", execution_timezone="UTC"
)

JOBS = [raw_job, scene_caches_job, evaluation_job, model_evaluation_job, report_job]
SCHEDULES = [nightly_evaluation, report_schedule]
