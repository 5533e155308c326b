"""Python API: run the whole chain for one recording on a persistent local Dagster instance.

This is what ``eval-assets demo`` / ``eval-assets run`` call. It launches the same jobs the UI, the
sensors and the nightly schedule launch — ``recording_pipeline`` for the recording, then
``model_benchmark`` for each (recording, model), then ``leaderboard_report`` — so every run is
visible in ``dagster dev`` afterwards (same ``DAGSTER_HOME``).

Dagster's event stream is stored in the instance (the UI shows it) and written to a plain log
file; callers get one :class:`StepReport` per finished step through ``on_step`` instead of the
stream itself. ``verbose=True`` brings Dagster's console logger back.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval_assets.layout import StorageLayout, default_storage_root, partition_key_for

# Runs of one partition queue behind each other (the run queue's per-value tag limit): two runs
# never write the same partition's folders at once, under the daemon or from the UI.
DAGSTER_YAML = """\
telemetry:
  enabled: false
run_coordinator:
  module: dagster._core.run_coordinator
  class: QueuedRunCoordinator
  config:
    dequeue_interval_seconds: 1
concurrency:
  runs:
    max_concurrent_runs: 4
    tag_concurrency_limits:
      - key: dagster/partition
        value:
          applyLimitPerUniqueValue: true
        limit: 1
  pools:
    default_limit: 4
"""
PROGRESS_LOGGER = "eval_assets_progress"
_LOG_FORMAT = "%(asctime)s %(levelname)s %(message)s"


def ensure_dagster_home(layout: StorageLayout) -> Path:
    """Create the instance folder (telemetry off) and point ``DAGSTER_HOME`` at it."""
    home = layout.dagster_home()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(DAGSTER_YAML)
    os.environ["DAGSTER_HOME"] = str(home)
    return home


@dataclass(frozen=True)
class StepReport:
    """One finished step of a job: what it was, how long it took, what it produced."""

    job: str
    step: str
    ok: bool
    seconds: float
    counts: dict[str, int | float] = field(default_factory=dict)
    error: str = ""


@dataclass(frozen=True)
class JobReport:
    """One finished job run."""

    job: str
    label: str
    run_id: str
    seconds: float
    steps: int


@dataclass(frozen=True)
class BenchmarkRun:
    """Where one end-to-end run's outputs landed, and the Dagster runs behind it."""

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


def _numeric_metadata(event: Any) -> dict[str, int | float]:
    """The int/float metadata of a materialization: the counts worth a glance in a stage line."""
    values: dict[str, int | float] = {}
    for key, value in event.event_specific_data.materialization.metadata.items():
        raw = getattr(value, "value", None)
        if isinstance(raw, bool):
            continue
        if isinstance(raw, int | float):
            values[key] = raw
    return values


class _StepListener(logging.Handler):
    """Turns Dagster's event records into :class:`StepReport` calls and a plain log file."""

    def __init__(self, job: str, on_step: Callable[[StepReport], None], log_file: Path) -> None:
        super().__init__(logging.DEBUG)
        self.job = job
        self.on_step = on_step
        self._file = logging.FileHandler(log_file, encoding="utf-8")
        self._file.setFormatter(logging.Formatter(_LOG_FORMAT))
        self._started: dict[str, float] = {}
        self._counts: dict[str, dict[str, int | float]] = {}
        self.steps = 0

    def emit(self, record: logging.LogRecord) -> None:
        self._file.emit(record)
        meta = getattr(record, "dagster_meta", None) or {}
        event = meta.get("dagster_event")
        step = meta.get("step_key")
        if event is None or step is None:
            return
        kind = event.event_type_value
        if kind == "STEP_START":
            self._started[step] = time.perf_counter()
        elif kind == "ASSET_MATERIALIZATION":
            self._counts.setdefault(step, {}).update(_numeric_metadata(event))
        elif kind in ("STEP_SUCCESS", "STEP_FAILURE"):
            seconds = time.perf_counter() - self._started.pop(step, time.perf_counter())
            error = ""
            if kind == "STEP_FAILURE":
                info = event.event_specific_data.error
                error = info.message.strip().splitlines()[0] if info is not None else "failed"
            self.steps += 1
            self.on_step(StepReport(self.job, step, kind == "STEP_SUCCESS", seconds,
                                    self._counts.pop(step, {}), error))

    def close(self) -> None:
        self._file.close()
        super().close()


def _with_listener(job_def: Any, listener: _StepListener) -> Any:
    """``job_def`` with one more Dagster logger, which forwards every record to ``listener``."""
    from dagster import logger

    @logger(description="Forwards run events to the eval-assets command line and its log file.")
    def progress_logger(_init_context: Any) -> logging.Logger:
        log = logging.Logger(PROGRESS_LOGGER, level=logging.DEBUG)
        log.addHandler(listener)
        return log

    return job_def.with_logger_defs({**job_def.loggers, PROGRESS_LOGGER: progress_logger})


def log_file_for(layout: StorageLayout) -> Path:
    """A new log file for one CLI run, named by its start time."""
    folder = layout.root / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / time.strftime("run-%Y%m%d-%H%M%S.log", time.gmtime())


@dataclass
class _Plan:
    """What one evaluation of the automation conditions asks of this recording and these models."""

    recording: dict[str, set[Any]] = field(default_factory=dict)  # partition key -> asset keys
    per_model: dict[str, set[Any]] = field(default_factory=dict)  # multi-partition key -> keys
    unpartitioned: set[Any] = field(default_factory=set)

    def empty(self) -> bool:
        return not (self.recording or self.per_model or self.unpartitioned)


def _read_cursor(path: Path) -> Any:
    from dagster import deserialize_value

    try:
        return deserialize_value(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None


def _write_cursor(path: Path, cursor: Any) -> None:
    from dagster import serialize_value

    from eval_assets.atomic import write_text_atomic

    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, serialize_value(cursor))


def run_benchmark(
    recording: Path,
    storage_root: Path | None = None,
    models: Sequence[str] | None = None,
    *,
    on_step: Callable[[StepReport], None] = lambda _: None,
    on_job: Callable[[JobReport], None] = lambda _: None,
    on_stage: Callable[[str], None] = lambda _: None,
    verbose: bool = False,
) -> BenchmarkRun:
    """Bring ``recording``'s dataset, ``models``' (default: all configured) benchmarks on it and
    the leaderboard and report up to date. Raises the first failing step's own error.

    The recording is validated first (its structure, and its ``<name>.selection.yaml`` if any): a
    file that fails never becomes a partition. Damaged rows are reported; the frame stage skips
    them and fails only past the selection's ``max_bad_fraction``. Then the recording (with its
    selection file), each model's settings and the judge config are observed (content hashes as
    Dagster data versions) and the assets' own automation conditions decide
    what runs, exactly as the automation sensor does under the daemon: missing partitions, changed
    data upstream, changed code versions. Whatever is up to date is skipped and counted. The
    recording's folder serves as the recordings folder and its stem is the partition key.
    """
    from eval_assets.frames.selection import load_selection_config
    from eval_assets.layout import selection_file_for
    from eval_assets.recording.validate import validate_recording

    recording = Path(recording).resolve()
    started = time.perf_counter()
    checked = validate_recording(recording)
    selection_file = selection_file_for(recording)
    load_selection_config(selection_file)
    on_stage(f"validated {recording.name}: {checked.inventory.image_count} images, "
             f"{len(checked.inventory.streams)} streams, selection "
             f"{selection_file.name if selection_file.is_file() else 'by default policy'} "
             f"({time.perf_counter() - started:.1f} s)")
    if checked.problems:
        on_stage(f"  {checked.summary()}: such frames are skipped (listed in the rectified "
                 "frames' skipped_frames.json)")

    from dagster import BetaWarning, DagsterInstance, MultiPartitionKey
    from dagster import evaluate_automation_conditions as evaluate_conditions

    from eval_assets.defs import keys
    from eval_assets.defs.accepted import quietly
    from eval_assets.defs.assets.sources import judge_version, model_versions, observation
    from eval_assets.defs.definitions import defs
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
    from eval_assets.defs.resources import JudgeResource
    from eval_assets.errors import InputError

    known = model_partitions.get_partition_keys()
    chosen = tuple(models) if models else tuple(known)
    unknown = sorted(set(chosen) - set(known))
    if unknown:
        raise InputError(f"models {unknown} are not declared in the models file; known: {known}. "
                         "Fix: add them to data/models.yaml (or $EVAL_ASSETS_MODELS) or pass one "
                         "of the known names to --model.")
    layout = StorageLayout(storage_root.resolve() if storage_root else default_storage_root())
    ensure_dagster_home(layout)
    log_file = log_file_for(layout)
    key = partition_key_for(recording)
    mine = {MultiPartitionKey({RECORDING_DIM: key, MODEL_DIM: m}): m for m in chosen}
    console_level = "DEBUG" if verbose else "CRITICAL"
    run_config = {
        "resources": {"storage": {"config": {
            "recordings_dir": str(recording.parent), "storage_root": str(layout.root)}}},
        "loggers": {"console": {"config": {"log_level": console_level}}, PROGRESS_LOGGER: {}},
    }
    cursor_file = layout.automation_cursor_file()
    run_ids: list[str] = []
    executed: set[tuple[Any, str | None]] = set()

    def downstream_within(job_name: str, requested: set[Any]) -> list[Any]:
        # A run materializes what was asked and everything after it in the same job: the next
        # evaluation would ask for those anyway, and one run costs less than several.
        selected, frontier = set(requested), list(requested)
        while frontier:
            for child in graph.get(frontier.pop()).child_keys:
                if child in job_keys[job_name] and child not in selected:
                    selected.add(child)
                    frontier.append(child)
        return sorted(selected, key=lambda k: k.to_user_string())

    def launch(job_name: str, partition_key: str | None, requested: set[Any], label: str) -> None:
        selection = downstream_within(job_name, requested)
        on_stage(f"{label}: {len(selection)} asset(s) to materialize")
        listener = _StepListener(job_name, on_step, log_file)
        job = _with_listener(defs.resolve_job_def(job_name), listener)
        begin = time.perf_counter()
        try:
            result = job.execute_in_process(run_config=run_config, instance=instance,
                                            partition_key=partition_key,
                                            asset_selection=selection)
        finally:
            listener.close()
        run_ids.append(result.run_id)
        executed.update((k, partition_key) for k in selection)
        on_job(JobReport(job_name, label, result.run_id, time.perf_counter() - begin,
                         listener.steps))

    def evaluate_automation_conditions(**kwargs: Any) -> Any:
        # Dagster's evaluator selects assets with a Beta parameter internally; the warning is
        # about its code, not ours, and would reach the user's terminal on every evaluation.
        return quietly(BetaWarning,
                       lambda: evaluate_conditions(defs=defs, instance=instance, **kwargs))

    def plan_of(result: Any) -> _Plan:
        plan = _Plan()
        for asset_key in graph.materializable_asset_keys:
            for partition in result.get_requested_partitions(asset_key):
                if partition is None:
                    plan.unpartitioned.add(asset_key)
                elif partition == key:
                    plan.recording.setdefault(partition, set()).add(asset_key)
                elif partition in mine:
                    plan.per_model.setdefault(partition, set()).add(asset_key)
        return plan

    def execute(plan: _Plan) -> None:
        for partition, requested in plan.recording.items():
            launch(recording_pipeline_job.name, partition, requested,
                   f"{recording_pipeline_job.name} [{partition}]")
        for partition, requested in sorted(plan.per_model.items()):
            launch(model_benchmark_job.name, partition, requested,
                   f"{model_benchmark_job.name} [{key}, {mine[partition]}]")
        if plan.unpartitioned:
            launch(leaderboard_report_job.name, None, plan.unpartitioned,
                   leaderboard_report_job.name)

    with DagsterInstance.get() as instance:
        # Resolved inside the instance's context: Dagster reads its definitions state storage
        # from the instance entered last, and a disposed one from an earlier call would fail.
        graph = defs.resolve_asset_graph()
        job_keys = {job.name: job.selection.resolve(graph) for job in
                    (recording_pipeline_job, model_benchmark_job, leaderboard_report_job)}
        cursor = _read_cursor(cursor_file)
        if cursor is None:
            # Conditions never fire on their first evaluation: take it before anything changes.
            cursor = evaluate_automation_conditions().cursor
        if not instance.has_dynamic_partition(recordings_partitions.name, key):
            instance.add_dynamic_partitions(recordings_partitions.name, [key])
        from eval_assets.defs.assets.sources import recording_version
        from eval_assets.recording.watch import ContentHashes

        hashes = ContentHashes(layout.content_hashes_file())
        events = [observation(keys.RECORDING_FILE, recording_version(hashes, recording), key)]
        events += [observation(keys.MODEL_CONFIG, version, model)
                   for model, version in model_versions().items() if model in chosen]
        events.append(observation(keys.JUDGE_CONFIG, judge_version(JudgeResource())))
        for event in events:
            instance.report_runless_asset_event(event)

        for _ in range(12):  # the chain is at most 4 runs deep; the bound only stops a loop
            result = evaluate_automation_conditions(cursor=cursor)
            plan = plan_of(result)
            if plan.empty():
                break
            execute(plan)
            cursor = result.cursor
        # Partitions the conditions cannot see as new (registered by an earlier run that failed,
        # before this storage root had a cursor) are materialized directly.
        fallback = _Plan()
        for asset_key in job_keys[recording_pipeline_job.name]:
            if key not in instance.get_materialized_partitions(asset_key):
                fallback.recording.setdefault(key, set()).add(asset_key)
        for asset_key in job_keys[model_benchmark_job.name]:
            done = instance.get_materialized_partitions(asset_key)
            for partition in mine:
                if partition not in done:
                    fallback.per_model.setdefault(partition, set()).add(asset_key)
        if not fallback.empty():
            execute(fallback)
        # This command's batch is the models it was given: models not asked for are not coming,
        # so the leaderboard and report are rebuilt now if anything changed, rather than when
        # every declared model has a result (what the daemon waits for).
        board = job_keys[leaderboard_report_job.name]
        changed = any(partition is not None for _, partition in executed)
        never_built = any(not instance.get_latest_materialization_event(k) for k in board)
        if (changed or never_built) and not board <= {k for k, p in executed if p is None}:
            execute(_Plan(unpartitioned=set(board)))
        if executed:
            # One more evaluation takes in this command's own materializations. Without it the
            # next command would see them as new, and a change it brings in the same window
            # (an edited judge config, say) would count as already handled and be skipped.
            cursor = evaluate_automation_conditions(cursor=cursor).cursor
        _write_cursor(cursor_file, cursor)

        total = (len(job_keys[recording_pipeline_job.name])
                 + len(job_keys[model_benchmark_job.name]) * len(mine)
                 + len(job_keys[leaderboard_report_job.name]))
        partitions_of_mine = {key, *mine, None}
        done_now = sum(1 for _, p in executed if p in partitions_of_mine)
        on_stage(f"up to date, skipped: {total - done_now} of {total} asset partitions "
                 f"(recording {key}, models {', '.join(chosen)}, leaderboard, report)")
    return BenchmarkRun(recording=key, models=chosen, run_ids=tuple(run_ids), layout=layout,
                        log_file=log_file)
