"""Declarative automation: the asset graph is the only statement of the chain's order.

- The recordings sensor adds a partition for each finished, valid recording and reports data
  versions (content hashes) of recordings (with their selection files), model entries, the
  judge config and each recording's label overrides. It requests no run.
- Every partitioned asset carries :data:`RECOMPUTE`: materialize when missing, when an upstream
  data version changed, or when its own code version changed, once upstream is idle.
- The leaderboard and report carry :data:`SETTLED`: rebuild once after a batch of updates, when
  nothing upstream is running or about to run.
- The automation-condition sensor evaluates them; the nightly schedule re-asks every model.

``eval-assets run`` evaluates the same conditions in process (:mod:`eval_assets.defs.local`).
"""

from __future__ import annotations

import json
import os

from dagster import (
    AssetSelection,
    AutomationConditionSensorDefinition,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    MultiPartitionKey,
    RunRequest,
    ScheduleEvaluationContext,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    schedule,
    sensor,
)

from eval_assets.defs import keys
from eval_assets.defs.assets.sources import (
    judge_version,
    model_versions,
    observation,
    overrides_version,
    recording_version,
)
from eval_assets.defs.automation_conditions import NIGHT_TAG
from eval_assets.defs.jobs import model_benchmark_job
from eval_assets.defs.partitions import (
    MODEL_DIM,
    RECORDING_DIM,
    RECORDINGS,
    model_partitions,
    recordings_partitions,
)
from eval_assets.defs.resources import JudgeResource, ProjectStorage
from eval_assets.frames.selection import FrameSelectionError, load_selection_config
from eval_assets.layout import list_recordings, partition_key_for, selection_file_for
from eval_assets.recording import RecordingError
from eval_assets.recording.validate import validate_recording
from eval_assets.recording.watch import DEFAULT_QUIET_S, ContentHashes, file_state

automation_sensor = AutomationConditionSensorDefinition(
    "eval_assets_automation",
    target=AssetSelection.all(),
    default_status=DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=int(os.environ.get("EVAL_ASSETS_AUTOMATION_INTERVAL_S", "15")),
    description="Evaluates each asset's automation condition: the graph decides what runs.",
)


def _load_cursor(raw: str | None) -> dict[str, str]:
    try:
        value = json.loads(raw) if raw else {}
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


@sensor(minimum_interval_seconds=int(os.environ.get("EVAL_ASSETS_RECORDINGS_INTERVAL_S", "30")),
        default_status=DefaultSensorStatus.RUNNING,
        description="Registers finished, valid recordings as partitions and reports the data "
                    "versions of recordings, models and the judge config. Launches nothing.")
def recordings_sensor(context: SensorEvaluationContext, storage: ProjectStorage,
                      judge: JudgeResource) -> SensorResult | SkipReason:
    """Partitions for new recordings; observations for whatever changed since the last tick.

    A file still being written (recent writes, a pending SQLite journal) is left for a later tick.
    A file that fails validation (structure, or an invalid ``<name>.selection.yaml``) is logged
    and never becomes a partition; if it is replaced by a valid one, the next tick takes it.
    Damaged rows are logged only: the frame stage skips them. The data version covers the
    selection file, so editing it makes the recording's frames stale. The cursor remembers the
    versions already reported.
    """
    reported = _load_cursor(context.cursor)
    known = set(context.instance.get_dynamic_partitions(RECORDINGS))
    hashes = ContentHashes(storage.layout().content_hashes_file())
    new: list[str] = []
    events = []
    for path in list_recordings(storage.recordings_path()):
        key = partition_key_for(path)
        state = file_state(path)
        if not state.settled(DEFAULT_QUIET_S):
            context.log.info(f"{path.name}: still being written; will look again")
            continue
        version = recording_version(hashes, path, state)
        if reported.get(f"recording:{key}") in (version, f"invalid:{version}"):
            continue
        try:
            checked = validate_recording(path, allow_pickle=storage.allow_pickle)
            load_selection_config(selection_file_for(path))
        except (RecordingError, FrameSelectionError) as exc:
            context.log.warning(f"skipping {path.name}: {exc}")
            reported[f"recording:{key}"] = f"invalid:{version}"
            continue
        if checked.problems:
            context.log.warning(f"{path.name}: {checked.summary()}; the frame stage skips "
                                "such frames and records why")
        if key not in known:
            new.append(key)
        events.append(observation(keys.RECORDING_FILE, version, key))
        reported[f"recording:{key}"] = version
    for model, version in model_versions().items():
        if reported.get(f"model:{model}") != version:
            events.append(observation(keys.MODEL_CONFIG, version, model))
            reported[f"model:{model}"] = version
    for key in sorted(known | set(new)):
        version = overrides_version(storage.overrides_file(key))
        if reported.get(f"labels:{key}") != version:
            events.append(observation(keys.LABEL_OVERRIDES, version, key))
            reported[f"labels:{key}"] = version
    version = judge_version(judge)
    if reported.get("judge") != version:
        events.append(observation(keys.JUDGE_CONFIG, version))
        reported["judge"] = version
    return SensorResult(
        dynamic_partitions_requests=[recordings_partitions.build_add_request(new)] if new else [],
        asset_events=events,
        cursor=json.dumps(reported, sort_keys=True),
    )


@schedule(job=model_benchmark_job, cron_schedule="0 2 * * *", execution_timezone="UTC",
          default_status=DefaultScheduleStatus.STOPPED,
          description="02:00 UTC: ask every configured model afresh on every recording and keep "
                      "the night's results (hosted models drift).")
def nightly_benchmark(context: ScheduleEvaluationContext):
    """One run per (recording, model), tagged with the night.

    The tag is part of the answers' generation config, so stored answers are not reused, and the
    night's results are kept under ``history/<night>/``. Run keys carry the night: a tick
    evaluated twice launches nothing twice.
    """
    recordings = context.instance.get_dynamic_partitions(RECORDINGS)
    if not recordings:
        return SkipReason("no recordings yet: drop *.db files into the recordings folder")
    night = context.scheduled_execution_time.strftime("%Y-%m-%d")
    return [
        RunRequest(
            run_key=f"{night}:{recording}:{model}",
            partition_key=MultiPartitionKey({RECORDING_DIM: recording, MODEL_DIM: model}),
            tags={"eval_assets/trigger": "nightly", NIGHT_TAG: night},
        )
        for recording in sorted(recordings)
        for model in model_partitions.get_partition_keys()
    ]
