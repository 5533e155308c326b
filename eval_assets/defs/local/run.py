"""Run the whole chain for one recording on the persistent local instance: what ``eval-assets
run`` / ``demo`` and the Python API call.

It launches the same jobs the UI, the sensors and the nightly schedule launch
(``recording_pipeline`` for the recording, then ``model_benchmark`` for each (recording, model),
then ``leaderboard_report``) and lets the assets' own automation conditions decide what runs, as
the automation sensor does under the daemon.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dagster import DagsterInstance, Definitions

from eval_assets.defs import keys
from eval_assets.defs.assets.sources import (
    judge_version,
    model_versions,
    observation,
    overrides_version,
    recording_version,
)
from eval_assets.defs.local.conditions import Conditions, read_cursor, write_cursor
from eval_assets.defs.local.events import (
    PROGRESS_LOGGER,
    JobReport,
    Listeners,
    StepReport,
)
from eval_assets.defs.local.instance import ensure_dagster_home, log_file_for, run_lock
from eval_assets.defs.local.launch import Launcher
from eval_assets.defs.local.plan import (
    JobAssets,
    Partition,
    Plan,
    Scope,
    never_materialized,
    requested,
)
from eval_assets.defs.local.published import published_repairs
from eval_assets.defs.partitions import RECORDINGS, current_model_specs, model_partitions
from eval_assets.defs.resources import JudgeResource
from eval_assets.errors import InputError
from eval_assets.frames.admission import admit_recording
from eval_assets.layout import (
    SKIPPED_FRAMES_FILE,
    StorageLayout,
    default_labels_dir,
    default_storage_root,
    list_recordings,
    name_clash_message,
    overrides_file_for,
    partition_key_for,
    recording_name_clashes,
    selection_file_for,
)
from eval_assets.local_models.registry import preload
from eval_assets.recording.errors import RecordingError
from eval_assets.recording.watch import ContentHashes
from eval_assets.scoring.inputs import load_private_dataset
from eval_assets.vqa.overrides import INVALID, read_overrides

if TYPE_CHECKING:
    from dagster import AssetKey
    from dagster._core.definitions.asset_daemon_cursor import AssetDaemonCursor

MAX_PASSES = 16
"""Evaluations per run at most: the chain is at most 4 runs deep, each stage after an upstream
update takes one evaluation, two where a run of it ended after the first one's snapshot; the bound
only stops a loop."""


@dataclass(frozen=True)
class LocalRun:
    """Where one local run's outputs landed, and the Dagster runs behind it."""

    recording: str
    models: tuple[str, ...]
    run_ids: tuple[str, ...]
    layout: StorageLayout
    log_file: Path | None = None

    @property
    def report(self) -> Path:
        """The HTML report."""
        return self.layout.report_file()

    @property
    def leaderboard(self) -> Path:
        """The leaderboard folder (Parquet + JSON)."""
        return self.layout.leaderboard_dir()


def run_locally(
    recording: Path,
    storage_root: Path | None = None,
    models: Sequence[str] | None = None,
    *,
    on_step: Callable[[StepReport], None] = lambda _: None,
    on_job: Callable[[JobReport], None] = lambda _: None,
    on_stage: Callable[[str], None] = lambda _: None,
    verbose: bool = False,
    wait: bool = True,
) -> LocalRun:
    """Bring ``recording``'s dataset, ``models``' (default: all configured) results on it and
    the leaderboard and report up to date. Raises the first failing step's own error.

    The recording is validated first (its structure, and its ``<name>.selection.yaml`` if any): a
    file that fails never becomes a partition. Damaged rows are reported; the frame stage skips
    them and fails only past the selection's ``max_bad_fraction``. Then the recording (with its
    selection file), each model's settings and the judge config are observed (content hashes as
    Dagster data versions) and the assets' own automation conditions decide what runs, exactly
    as the automation sensor does under the daemon: missing partitions, changed data upstream,
    changed code versions. Whatever is up to date is skipped and counted. The recording's folder
    serves as the recordings folder and its stem is the partition key.

    Dagster's event stream goes to the instance and a log file; ``on_step``, ``on_job`` and
    ``on_stage`` get one line each per finished step, finished run and stage. ``verbose=True``
    brings Dagster's console logger back.

    Every published dataset, results file, the leaderboard and the report are verified by
    content first (:mod:`eval_assets.defs.local.published`): a file of this run's partitions
    damaged or edited since publication is named and rebuilt from its inputs; one of another
    recording or model raises :class:`~eval_assets.defs.local.published.PublishedFilesDamaged`
    naming the command that rebuilds it.

    Another run on the same storage root is waited for (one line to ``on_stage`` names its pid);
    with ``wait=False`` this raises :class:`~eval_assets.defs.local.instance.RunInProgress`
    instead.
    """
    recording = Path(recording).resolve()
    _validate(recording, on_stage)
    scope = Scope.of(partition_key_for(recording), _chosen_models(models))
    layout = StorageLayout(storage_root.resolve() if storage_root else default_storage_root())
    # One run at a time per instance (and so per storage root): a second waits, saying for whom.
    with run_lock(layout.dagster_home(), wait=wait, on_wait=on_stage):
        ensure_dagster_home(layout)
        log_file = log_file_for(layout)
        listeners = Listeners(on_step, on_job, on_stage)
        with DagsterInstance.get() as instance:
            run_ids = _bring_up_to_date(instance, recording, layout, scope, listeners,
                                        _run_config(recording.parent, layout, verbose), log_file)
    return LocalRun(recording=scope.recording, models=scope.models, run_ids=run_ids,
                    layout=layout, log_file=log_file)


def _validate(recording: Path, on_stage: Callable[[str], None]) -> None:
    """Check the recording and its selection file as the recordings sensor does; say so."""
    started = time.perf_counter()
    key = partition_key_for(recording)
    alike = recording_name_clashes(list_recordings(recording.parent)).get(key)
    if alike:  # the folder is the recordings folder of the run: the key must name one file
        raise RecordingError(name_clash_message(key, alike), path=recording)
    checked = admit_recording(recording)
    selection_file = selection_file_for(recording)
    on_stage(f"validated {recording.name}: {checked.inventory.image_count} images, "
             f"{len(checked.inventory.streams)} streams, selection "
             f"{selection_file.name if selection_file.is_file() else 'by default policy'} "
             f"({time.perf_counter() - started:.1f} s)")
    if checked.problems:
        on_stage(f"  {checked.summary()}: such frames are skipped (listed in the rectified "
                 f"frames' {SKIPPED_FRAMES_FILE})")


def _chosen_models(models: Sequence[str] | None) -> tuple[str, ...]:
    """``models``, or every declared model; an undeclared name is an input error."""
    known = model_partitions.get_partition_keys()
    chosen = tuple(models) if models else tuple(known)
    unknown = sorted(set(chosen) - set(known))
    if unknown:
        raise InputError(f"models {unknown} are not declared in the models file; known: {known}. "
                         "Fix: add them to data/models.yaml (or $EVAL_ASSETS_MODELS) or pass one "
                         "of the known names to --model.")
    return chosen


def _run_config(recordings_dir: Path, layout: StorageLayout, verbose: bool) -> dict[str, Any]:
    """Every run's config: this recording's folder and storage root, and the loggers."""
    console_level = "DEBUG" if verbose else "CRITICAL"
    return {
        "resources": {"storage": {"config": {
            "recordings_dir": str(recordings_dir), "storage_root": str(layout.root)}}},
        "loggers": {"console": {"config": {"log_level": console_level}}, PROGRESS_LOGGER: {}},
    }


def _bring_up_to_date(instance: DagsterInstance, recording: Path, layout: StorageLayout,
                      scope: Scope, listeners: Listeners, run_config: dict[str, Any],
                      log_file: Path) -> tuple[str, ...]:
    """Observe the inputs, materialize what the conditions ask for, then what they cannot see;
    store the cursor. Returns the ids of the runs launched."""
    defs = _code_location()
    # Resolved inside the instance's context: Dagster reads its definitions state storage from
    # the instance entered last, and a disposed one from an earlier call would fail.
    graph = defs.resolve_asset_graph()
    jobs = JobAssets.resolve(graph)
    conditions = Conditions(defs, instance)
    cursor_file = layout.automation_cursor_file()
    cursor = read_cursor(cursor_file)
    if cursor is None:
        # Conditions never fire on their first evaluation: take it before anything changes.
        cursor = conditions.evaluate().cursor
    _observe(instance, recording, layout, scope)
    # Published means verified: what was damaged or edited since its asset published it is
    # rebuilt first (or the run refuses, naming the fix), so nothing is built on it.
    repairs = published_repairs(layout, scope, listeners.on_stage)
    launcher = Launcher(defs, instance, graph, jobs, scope, run_config, log_file, listeners)
    preloading: list[threading.Thread | None] = []

    def before(plan: Plan) -> None:
        # The served local models (SmolLM2: seconds to load) load on the idle core while the
        # recording's chain runs, once this command is sure to compute something.
        if not preloading and (plan.recording or plan.per_model):
            preloading.append(preload(_served_models(scope)))

    try:
        if not repairs.empty():
            before(repairs)
            launcher.execute(repairs)
        cursor, runs_seen = _follow_conditions(conditions, cursor, launcher, before)
        missing = never_materialized(instance, jobs, scope)
        before(missing)
        launcher.execute(missing)
        if _board_due(instance, jobs.board, launcher.executed):
            launcher.execute(Plan(unpartitioned=set(jobs.board)))
    finally:
        for thread in preloading:
            if thread is not None:
                thread.join()
    if len(launcher.run_ids) > runs_seen:
        # One more evaluation takes in this command's own materializations. Without it the
        # next command would see them as new, and a change it brings in the same window
        # (an edited judge config, say) would count as already handled and be skipped. (The
        # conditions' last evaluations already took in every run before them: ~1-2 s saved.)
        cursor = conditions.evaluate(cursor).cursor
    write_cursor(cursor_file, cursor)
    # After the run: said of the dataset as it is now (a replaced recording orphans overrides).
    _announce_overrides(layout, scope, listeners.on_stage)
    listeners.on_stage(_recomputed(scope, launcher.executed))
    listeners.on_stage(_summary(jobs, scope, launcher.executed))
    return tuple(launcher.run_ids)


def _code_location() -> Definitions:
    # Imported when a run starts, not with this module: the code location chooses its executor
    # from $EVAL_ASSETS_EXECUTOR when it loads, and callers set it before they call.
    from eval_assets.defs.definitions import defs

    return defs


def _observe(instance: DagsterInstance, recording: Path, layout: StorageLayout,
             scope: Scope) -> None:
    """Register the recording as a partition and report the data versions of the recording, the
    chosen models' settings, the judge config and the recording's label overrides, as the
    recordings sensor does."""
    if not instance.has_dynamic_partition(RECORDINGS, scope.recording):
        instance.add_dynamic_partitions(RECORDINGS, [scope.recording])
    hashes = ContentHashes(layout.content_hashes_file())
    events = [observation(keys.RECORDING_FILE, recording_version(hashes, recording),
                          scope.recording)]
    events += [observation(keys.MODEL_CONFIG, version, model)
               for model, version in model_versions().items() if model in scope.models]
    events.append(observation(keys.JUDGE_CONFIG, judge_version(JudgeResource())))
    events.append(observation(keys.LABEL_OVERRIDES, overrides_version(
        overrides_file_for(default_labels_dir(), scope.recording)), scope.recording))
    for event in events:
        instance.report_runless_asset_event(event)


def _announce_overrides(layout: StorageLayout, scope: Scope,
                        on_stage: Callable[[str], None]) -> None:
    """One line on the recording's label overrides, if it has any: how many there are and, when
    its dataset is published, how many apply to it and how many are orphaned."""
    path = overrides_file_for(default_labels_dir(), scope.recording)
    overrides = read_overrides(path)
    if not overrides:
        return
    dataset = layout.dataset_dir(scope.recording)
    resolution = (load_private_dataset(dataset, path).overrides
                  if dataset.is_dir() else None)
    detail = resolution.summary() if resolution is not None else "the dataset is not built yet"
    on_stage(f"label overrides {path}: {len(overrides)} ({detail}); the metrics that read gold "
             "answers recompute when this file changes, the models are not asked again")
    # Invalid lines (hand edits) are named one by one: the summary alone says how many, not
    # which line to fix.
    for state in resolution.states if resolution is not None else ():
        if state.state in INVALID and (problem := state.problem(path)) is not None:
            on_stage(f"  {problem}")


def _served_models(scope: Scope) -> set[str]:
    """The local models that the scope's models start (their ``serve``). Not the judge's: it
    is asked only when its calibration is not cached, and loading SmolLM2 for a run of the
    random baseline alone would cost it seconds it never needed."""
    return {spec.endpoint.serve for spec in current_model_specs()
            if spec.name in scope.models and spec.endpoint.serve is not None
            and spec.endpoint.served}


def _follow_conditions(conditions: Conditions, cursor: AssetDaemonCursor,
                       launcher: Launcher, before: Callable[[Plan], None]
                       ) -> tuple[AssetDaemonCursor, int]:
    """Evaluate and execute until two evaluations in a row ask for nothing more of this run's
    scope. This loop's own runs end before the next evaluation, which acts on their updates at
    once; an update whose asset was written by another process's run that ended after an
    evaluation's snapshot is acted on at the second evaluation that sees it
    (:data:`eval_assets.defs.automation_conditions.EAGER`), so one empty evaluation is not the
    end. ``before`` is called with each plan before it runs. Returns the cursor and how many of
    the launcher's runs its last evaluation had seen."""
    idle = 0
    seen = len(launcher.run_ids)
    for _ in range(MAX_PASSES):
        seen = len(launcher.run_ids)
        result = conditions.evaluate(cursor)
        cursor = result.cursor
        plan = requested(result, launcher.graph, launcher.scope)
        if plan.recording:
            # The cells and the board asked for with the recording's chain would read the
            # dataset it is about to replace (the daemon launches them as separate runs too):
            # this pass runs the chain alone, and its new dataset triggers them again.
            plan = Plan(recording=plan.recording)
        if not plan.empty():
            idle = 0
            before(plan)
            launcher.execute(plan)
        elif (idle := idle + 1) == 2:
            break
    return cursor, seen


def _board_due(instance: DagsterInstance, board: frozenset[AssetKey],
               executed: set[tuple[AssetKey, Partition]]) -> bool:
    """Whether the leaderboard and report must be rebuilt now.

    This command's batch is the models it was given: models not asked for are not coming, so the
    board is rebuilt if anything changed, rather than when every declared model has a result
    (what the daemon waits for), unless this run already rebuilt it.
    """
    changed = any(partition is not None for _, partition in executed)
    never_built = any(not instance.get_latest_materialization_event(k) for k in board)
    return (changed or never_built) and not board <= {k for k, p in executed if p is None}


def _recomputed(scope: Scope, executed: set[tuple[AssetKey, Partition]]) -> str:
    """What this command materialized, grouped by partition: ``recomputed: a, b [sample];
    c [sample, random]; leaderboard, report``, or ``recomputed: nothing``."""
    by_partition: dict[Partition, list[str]] = {}
    for asset_key, partition in executed:
        by_partition.setdefault(partition, []).append(asset_key.to_user_string())
    parts = []
    for partition in sorted(by_partition, key=lambda p: (p is None, str(p))):
        names = ", ".join(sorted(by_partition[partition]))
        if partition is None:
            parts.append(names)
        elif partition in scope.cells:
            parts.append(f"{names} [{scope.recording}, {scope.cells[partition]}]")
        else:
            parts.append(f"{names} [{partition}]")
    return "recomputed: " + ("; ".join(parts) if parts else "nothing")


def _summary(jobs: JobAssets, scope: Scope, executed: set[tuple[AssetKey, Partition]]) -> str:
    total = jobs.total(scope)
    owned = scope.partitions()
    done_now = sum(1 for _, partition in executed if partition in owned)
    return (f"up to date, skipped: {total - done_now} of {total} asset partitions "
            f"(recording {scope.recording}, models {', '.join(scope.models)}, leaderboard, "
            "report)")
