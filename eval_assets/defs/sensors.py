"""Sensors: new recordings dropped into the watched folder become partitions and get runs."""

from dagster import (
    DagsterRunStatus,
    DefaultSensorStatus,
    MultiPartitionKey,
    RunRequest,
    RunStatusSensorContext,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    run_status_sensor,
    sensor,
)

from eval_assets.defs.jobs import (
    leaderboard_report_job,
    model_benchmark_job,
    recording_pipeline_job,
)
from eval_assets.defs.partitions import (
    MODEL_DIM,
    RECORDING_DIM,
    model_partitions,
    recordings_partitions,
)
from eval_assets.defs.resources import ProjectStorage
from eval_assets.layout import list_recordings, partition_key_for
from eval_assets.recording import RecordingError
from eval_assets.recording.validate import validate_recording


@sensor(
    job=recording_pipeline_job,
    minimum_interval_seconds=30,
    default_status=DefaultSensorStatus.RUNNING,
    description="Adds each new valid recording in the watched folder as a partition and runs it.",
)
def new_recordings_sensor(
    context: SensorEvaluationContext, storage: ProjectStorage
) -> SensorResult | SkipReason:
    """Partition and run every recording not yet known; corrupt files are logged and left out."""
    known = set(context.instance.get_dynamic_partitions(recordings_partitions.name))
    new: list[str] = []
    for path in list_recordings(storage.recordings_path()):
        key = partition_key_for(path)
        if key in known:
            continue
        # Validate every row here so a corrupt file never becomes a partition whose every run
        # fails.
        try:
            validate_recording(path, allow_pickle=storage.allow_pickle)
        except RecordingError as exc:
            context.log.warning(f"skipping {path.name}: {exc}")
            continue
        new.append(key)
    if not new:
        return SkipReason("no new valid recordings")
    return SensorResult(
        run_requests=[RunRequest(run_key=key, partition_key=key) for key in new],
        dynamic_partitions_requests=[recordings_partitions.build_add_request(new)],
    )


@run_status_sensor(
    run_status=DagsterRunStatus.SUCCESS,
    monitored_jobs=[recording_pipeline_job],
    request_job=model_benchmark_job,
    default_status=DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=5,
    description="Once a recording's dataset is built, benchmark every configured model on it.",
)
def benchmark_new_dataset(context: RunStatusSensorContext):
    """One ``model_benchmark`` run per configured model for the recording that just finished."""
    recording = context.dagster_run.tags.get("dagster/partition")
    if recording is None:
        return SkipReason("the finished run has no recording partition")
    return [
        RunRequest(run_key=f"{context.dagster_run.run_id}:{model}",
                   partition_key=MultiPartitionKey({RECORDING_DIM: recording, MODEL_DIM: model}))
        for model in model_partitions.get_partition_keys()
    ]


@run_status_sensor(
    run_status=DagsterRunStatus.SUCCESS,
    monitored_jobs=[model_benchmark_job],
    request_job=leaderboard_report_job,
    default_status=DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=5,
    description="After any model benchmark succeeds, refresh the leaderboard and the report.",
)
def refresh_report(context: RunStatusSensorContext) -> RunRequest:
    """A ``leaderboard_report`` run keyed by the benchmark run that triggered it."""
    return RunRequest(run_key=f"report-after:{context.dagster_run.run_id}")
