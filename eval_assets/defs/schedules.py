"""The nightly benchmark: every current recording × every configured model."""

from __future__ import annotations

from dagster import (
    DefaultScheduleStatus,
    MultiPartitionKey,
    RunRequest,
    ScheduleEvaluationContext,
    SkipReason,
    schedule,
)

from eval_assets.defs.jobs import model_benchmark_job
from eval_assets.defs.partitions import (
    MODEL_DIM,
    RECORDING_DIM,
    model_partitions,
    recordings_partitions,
)


@schedule(job=model_benchmark_job, cron_schedule="0 2 * * *", execution_timezone="UTC",
          default_status=DefaultScheduleStatus.STOPPED,
          description="02:00 UTC: benchmark every configured model on every recording.")
def nightly_benchmark(context: ScheduleEvaluationContext):
    """One run per (recording, model) of the current partitions.

    ``build_schedule_from_partitioned_job`` rejects dynamic partitions, so the requests are built
    here from the instance's current recordings. Run keys carry the scheduled date: a tick that is
    evaluated twice launches nothing twice.
    """
    recordings = context.instance.get_dynamic_partitions(recordings_partitions.name)
    if not recordings:
        return SkipReason("no recordings yet: drop *.db files into the recordings folder")
    day = context.scheduled_execution_time.strftime("%Y-%m-%d")
    return [
        RunRequest(
            run_key=f"{day}:{recording}:{model}",
            partition_key=MultiPartitionKey({RECORDING_DIM: recording, MODEL_DIM: model}),
            tags={"eval_assets/trigger": "nightly"},
        )
        for recording in sorted(recordings)
        for model in model_partitions.get_partition_keys()
    ]
