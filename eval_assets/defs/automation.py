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
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from dagster import (
    AssetCheckKey,
    AssetObservation,
    AssetSelection,
    BetaWarning,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    MultiPartitionKey,
    RunRequest,
    RunsFilter,
    ScheduleEvaluationContext,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    load_asset_checks_from_modules,
    schedule,
    sensor,
)

from eval_assets.defs import keys
from eval_assets.defs.accepted import quietly
from eval_assets.defs.assets.sources import (
    judge_version,
    model_versions,
    observation,
    overrides_version,
    recording_version,
)
from eval_assets.defs.automation_conditions import NIGHT_TAG
from eval_assets.defs.automation_inputs import SkippingAutomationSensor
from eval_assets.defs.jobs import model_benchmark_job
from eval_assets.defs.partitions import (
    MODEL_DIM,
    RECORDING_DIM,
    RECORDINGS,
    model_partitions,
    recordings_partitions,
)
from eval_assets.defs.resources import JudgeResource, ProjectStorage
from eval_assets.frames.admission import admit_recording
from eval_assets.frames.selection import FrameSelectionError
from eval_assets.layout import (
    list_recordings,
    name_clash_message,
    partition_key_for,
    recording_name_clashes,
)
from eval_assets.recording import RecordingError
from eval_assets.recording.watch import ContentHashes, FileState, file_state, quiet_seconds
from eval_assets.schemas.predictions import ModelsFileError

automation_sensor = quietly(BetaWarning, lambda: SkippingAutomationSensor(
    "eval_assets_automation",
    target=AssetSelection.all(),
    default_status=DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=int(os.environ.get("EVAL_ASSETS_AUTOMATION_INTERVAL_S", "15")),
    description="Evaluates each asset's automation condition: the graph decides what runs.",
    # Runs, one per partition, launched at the tick that requests them. Dagster's default hands
    # a tick that requests several partitions of an asset (two models' cells of a new
    # recording) to the backfill daemon, which loops every 30 s and launched a cell's
    # predictions and its metrics at two iterations: up to a minute per change before a cell
    # started (the end-to-end automation test spent most of its 11.5 min there).
    emit_backfills=False,
    # Evaluated in the code server, with the conditions as Python objects: the cells' condition
    # includes a class of ours (automation_conditions.RequestedThisTick: a dependency requested
    # in this tick in another run), which the daemon cannot deserialize, so an asset daemon
    # evaluation would see no condition at all for them. At most 500 assets and checks per
    # sensor in this mode (Dagster refuses the tick beyond); test_automation_race evaluates a
    # tick the way the daemon asks the code server to.
    use_user_code_server=True,
))


def _load_cursor(raw: str | None) -> dict[str, str]:
    try:
        value = json.loads(raw) if raw else {}
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


@dataclass
class RecordingsTick:
    """What one look at the recordings folder did, said in the tick's reason (the UI shows it)."""

    registered: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)
    writing: dict[str, str] = field(default_factory=dict)
    inputs: list[str] = field(default_factory=list)
    unreadable: dict[str, str] = field(default_factory=dict)
    watched: int = 0

    def reason(self) -> str:
        """One line per kind of outcome, e.g. ``registered 1 recording as a partition: alpha``.

        Dagster marks every tick without a run request SKIPPED (this sensor never requests one:
        the automation conditions do); the reason is what tells the UI's reader what happened.
        """
        parts = []
        if self.registered:
            parts.append(f"registered {len(self.registered)} recording(s) as partitions: "
                         f"{', '.join(self.registered)} (the automation sensor runs their chain)")
        if self.changed:
            parts.append(f"new content for {len(self.changed)} recording(s): "
                         f"{', '.join(self.changed)}")
        if self.refused:
            parts.append(f"refused {len(self.refused)} recording(s): " + "; ".join(
                f"{name}: {why}" for name, why in sorted(self.refused.items())))
        if self.writing:
            parts.append("still being written, looked at again next tick: " + "; ".join(
                f"{name} ({why})" for name, why in sorted(self.writing.items())))
        if self.inputs:
            parts.append(f"new data versions of {', '.join(self.inputs)}")
        if self.unreadable:
            parts.append("kept the last versions of unreadable inputs: " + "; ".join(
                f"{name}: {why}" for name, why in sorted(self.unreadable.items())))
        if not parts:
            return (f"nothing new: {self.watched} recording file(s) watched, none new, changed "
                    "or refused; models and judge unchanged")
        return "; ".join(parts)


def _still_written(state: FileState, reported: dict[str, str], key: str, now: float,
                   quiet: float) -> str | None:
    """Why the file is not finished yet, or None; records this look in ``reported``.

    Finished: SQLite shows nothing pending, no write for ``quiet`` seconds, and the same size
    and modification time at an earlier tick at least ``quiet`` seconds ago (so a copy that
    preserves an old mtime, or a writer that closed its file for a pause, is not taken half).
    """
    seen_fp, _, seen_at = reported.get(f"seen:{key}", "").partition("@")
    if seen_fp == state.fingerprint:
        unchanged_for = max(0.0, now - float(seen_at))
    else:
        unchanged_for = 0.0
        reported[f"seen:{key}"] = f"{state.fingerprint}@{now:.3f}"
    if state.writing is not None:
        return state.writing
    ahead = state.future_s(now)
    if ahead:
        # Its time cannot say how long ago it was written: waiting for the clock to pass it could
        # take hours, so the two looks alone decide.
        if unchanged_for < quiet:
            return (f"its modification time is {ahead:.0f} s in the future (the clock of the "
                    "machine that wrote it is ahead, or a copy kept such a time), so its size "
                    f"and time must stay the same between two looks {quiet:g} s apart; "
                    f"unchanged for {unchanged_for:.0f} s so far; to date it now: touch the file")
        return None
    age = max(0.0, now - state.mtime_ns / 1e9)
    if age < quiet:
        return f"written to {age:.0f} s ago; it must stay unchanged for {quiet:g} s"
    if unchanged_for < quiet:
        return (f"its size and time must stay the same between two looks {quiet:g} s apart; "
                f"unchanged for {unchanged_for:.0f} s so far")
    return None


@sensor(minimum_interval_seconds=int(os.environ.get("EVAL_ASSETS_RECORDINGS_INTERVAL_S", "30")),
        default_status=DefaultSensorStatus.RUNNING,
        description="Registers finished, valid recordings as partitions and reports the data "
                    "versions of recordings, models and the judge config. Launches nothing; "
                    "each tick's reason says what it registered, refused or waits for.")
def recordings_sensor(context: SensorEvaluationContext, storage: ProjectStorage,
                      judge: JudgeResource) -> SensorResult:
    """Partitions for new recordings; observations for whatever changed since the last tick.

    A file still being written is left for a later tick, never called corrupt (see
    :func:`_still_written`: SQLite's view, the quiet period, and the same size and time at two
    ticks).
    A file that fails admission (structure, an invalid ``<name>.selection.yaml``, a selection
    outside its images, no selected frame that decodes, or more bad selected frames than its
    ``max_bad_fraction``) is refused with the reason and never
    becomes a partition; if it is replaced by a valid one, the next tick takes it.
    Damaged rows are logged only: the frame stage skips them. The data version covers the
    selection file, so editing it makes the recording's frames stale. The cursor remembers the
    versions already reported. The tick's reason lists what it did.
    """
    reported = _load_cursor(context.cursor)
    known = set(context.instance.get_dynamic_partitions(RECORDINGS))
    hashes = ContentHashes(storage.layout().content_hashes_file())
    tick = RecordingsTick()
    events = []
    now, quiet = time.time(), quiet_seconds()
    paths = list_recordings(storage.recordings_path())
    clashes = recording_name_clashes(paths)
    for path in paths:
        tick.watched += 1
        key = partition_key_for(path)
        if key in clashes:  # names that print alike: which file the partition means is a guess
            why = name_clash_message(key, clashes[key])
            context.log.warning(f"skipping {path.name}: {why}")
            tick.refused[path.name] = why
            continue
        state = file_state(path)
        waiting = _still_written(state, reported, key, now, quiet)
        if waiting is not None:
            context.log.info(f"{path.name}: still being written ({waiting}); will look again")
            tick.writing[path.name] = waiting
            continue
        version = recording_version(hashes, path, state)
        if reported.get(f"recording:{key}") in (version, f"invalid:{version}"):
            continue
        try:
            checked = admit_recording(path, allow_pickle=storage.allow_pickle)
        except (RecordingError, FrameSelectionError) as exc:
            context.log.warning(f"skipping {path.name}: {exc}")
            tick.refused[path.name] = str(exc)
            reported[f"recording:{key}"] = f"invalid:{version}"
            continue
        if checked.problems:
            context.log.warning(f"{path.name}: {checked.summary()}; the frame stage skips "
                                "such frames and records why")
        (tick.changed if key in known else tick.registered).append(key)
        events.append(observation(keys.RECORDING_FILE, version, key))
        reported[f"recording:{key}"] = version
    events += _model_observations(context, reported, tick)
    for key in sorted(known | set(tick.registered)):
        version = overrides_version(storage.overrides_file(key))
        if reported.get(f"labels:{key}") != version:
            events.append(observation(keys.LABEL_OVERRIDES, version, key))
            reported[f"labels:{key}"] = version
            tick.inputs.append(f"label overrides of {key}")
    version = judge_version(judge)
    if reported.get("judge") != version:
        events.append(observation(keys.JUDGE_CONFIG, version))
        reported["judge"] = version
        tick.inputs.append("the judge config")
    new = tick.registered
    return SensorResult(
        dynamic_partitions_requests=[recordings_partitions.build_add_request(new)] if new else [],
        asset_events=events,
        cursor=json.dumps(reported, sort_keys=True),
        skip_reason=tick.reason(),
    )


def _model_observations(context: SensorEvaluationContext, reported: dict[str, str],
                        tick: RecordingsTick) -> list[AssetObservation]:
    """Observations of the model entries whose content changed since they were last reported.

    The models file is read at every tick (an edited entry is a new version without a reload);
    while it is invalid, the versions already reported stand and the tick's reason says why.
    """
    try:
        versions = model_versions()
    except ModelsFileError as exc:
        context.log.warning(str(exc))
        tick.unreadable["the models file"] = str(exc)
        return []
    events = []
    for model, version in versions.items():
        if reported.get(f"model:{model}") != version:
            events.append(observation(keys.MODEL_CONFIG, version, model))
            reported[f"model:{model}"] = version
            tick.inputs.append(f"model {model}")
    return events


NIGHTLY_CRON = os.environ.get("EVAL_ASSETS_NIGHTLY_CRON", "0 2 * * *")
"""When the nightly runs (UTC); a test sets ``* * * * *`` to have the daemon tick it now."""
TICK_TAG = "eval_assets/tick"
"""The tick a nightly run was requested for (UTC, ISO), beside the night it is filed under."""


def night_of(now: datetime) -> str:
    """The night a nightly run is filed under: the UTC date it actually runs (``now``), not
    the date of the tick it was requested for.

    The daemon evaluates a tick at its scheduled time, so the two agree. The UI's tick preview
    evaluates any tick the user picks (its dialog preselects one days back), and its "launch"
    asks the models now: filed under the picked date, today's answers would pass for that
    night's in ``history/`` and in the drift check.
    """
    return now.astimezone(UTC).strftime("%Y-%m-%d")


def cell_checks() -> list[AssetCheckKey]:
    """Every asset check on the cell's assets (``nightly_drift``, the parse-failure bound): the
    daemon runs them with a run's assets anyway, but the UI launches a previewed tick's runs
    with only the checks the request names."""
    from eval_assets.defs import checks

    cell = set(keys.CELL_ASSETS)
    return sorted((key for definition in load_asset_checks_from_modules([checks])
                   for key in definition.check_keys if key.asset_key in cell),
                  key=lambda key: key.to_user_string())


@schedule(job=model_benchmark_job, cron_schedule=NIGHTLY_CRON, execution_timezone="UTC",
          default_status=DefaultScheduleStatus.STOPPED,
          description="02:00 UTC ($EVAL_ASSETS_NIGHTLY_CRON): ask every configured model afresh "
                      "on every recording and keep the night's results (hosted models drift).")
def nightly_benchmark(context: ScheduleEvaluationContext):
    """One run per (recording, model), tagged with the night it runs (:func:`night_of`), with
    the cell's assets and their checks named (:func:`cell_checks`).

    The tag is part of the answers' generation config, so stored answers are not reused, and the
    night's results are kept under ``history/<night>/``. Run keys carry the night: a tick
    evaluated twice launches nothing twice. A tick launched by hand from the UI's preview is
    filed under the day it is launched, whatever tick the dialog picked, and runs the same
    ``nightly_drift`` check as the scheduled one.
    """
    recordings = context.instance.get_dynamic_partitions(RECORDINGS)
    if not recordings:
        return SkipReason("no recordings yet: drop *.db files into the recordings folder")
    tick = context.scheduled_execution_time
    night = night_of(datetime.now(UTC))
    if tick.astimezone(UTC).strftime("%Y-%m-%d") != night:
        context.log.warning(
            f"the tick of {tick.isoformat()} is evaluated on {night}: its runs ask the models "
            f"now, so they are filed under the night {night} (history/{night}/), not the "
            "tick's date")
    # Run keys dedupe only within one tick: a second tick of the same night (a cron that fires
    # more than once a day, a daemon that catches up) would run every cell again.
    launched = {record.dagster_run.tags.get("dagster/partition") for record in
                context.instance.get_run_records(RunsFilter(tags={NIGHT_TAG: night}))}
    checks = cell_checks()
    return [
        RunRequest(
            run_key=f"{night}:{recording}:{model}",
            partition_key=MultiPartitionKey({RECORDING_DIM: recording, MODEL_DIM: model}),
            tags={"eval_assets/trigger": "nightly", NIGHT_TAG: night,
                  TICK_TAG: tick.astimezone(UTC).isoformat()},
            # Named, not implied by the job: a run without an asset selection is not "executed
            # with" its assets for the automation conditions, so its predictions, seen by a tick
            # while its metrics were finishing, triggered a second, untagged metrics run.
            asset_selection=list(keys.CELL_ASSETS),
            # Named too: the UI launches a previewed tick's runs with the checks the request
            # names and no other, so unnamed, nightly_drift did not run.
            asset_check_keys=checks,
        )
        for recording in sorted(recordings)
        for model in model_partitions.get_partition_keys()
        if f"{model}|{recording}" not in launched
    ] or SkipReason(f"every cell of the night {night} is already launched")
