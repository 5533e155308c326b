"""Sensors: new recordings dropped into the watched folder become partitions and get runs."""

from dagster import (
    DefaultSensorStatus,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from eval_assets.jobs import recording_pipeline_job
from eval_assets.layout import list_recordings, partition_key_for
from eval_assets.partitions import recordings_partitions
from eval_assets.recording import Recording, RecordingError
from eval_assets.resources import ProjectStorage


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
        # Validate here so a corrupt file never becomes a partition whose every run fails.
        try:
            with Recording.open(path, allow_pickle=storage.allow_pickle):
                pass
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
