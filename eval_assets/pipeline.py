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

DAGSTER_YAML = "telemetry:\n  enabled: false\n"
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
    """Build the dataset of ``recording``, benchmark ``models`` (default: all configured) on it,
    and refresh the leaderboard and report. Raises the first failing step's own error.

    The recording is fully validated first (every row decoded): a file that fails never becomes
    a partition. The recording's folder serves as the recordings folder for these runs and its
    stem is the partition key.
    """
    from eval_assets.recording.validate import validate_recording

    recording = Path(recording).resolve()
    started = time.perf_counter()
    checked = validate_recording(recording)
    on_stage(f"validated {recording.name}: {checked.inventory.image_count} images, "
             f"{len(checked.inventory.streams)} streams "
             f"({time.perf_counter() - started:.1f} s)")

    from dagster import DagsterInstance, MultiPartitionKey

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

    known = model_partitions.get_partition_keys()
    chosen = tuple(models) if models else tuple(known)
    unknown = sorted(set(chosen) - set(known))
    if unknown:
        from eval_assets.errors import InputError

        raise InputError(f"models {unknown} are not declared in the models file; known: {known}. "
                         "Fix: add them to data/models.yaml (or $EVAL_ASSETS_MODELS) or pass one "
                         "of the known names to --model.")
    layout = StorageLayout(storage_root.resolve() if storage_root else default_storage_root())
    ensure_dagster_home(layout)
    log_file = log_file_for(layout)
    key = partition_key_for(recording)
    console_level = "DEBUG" if verbose else "CRITICAL"
    run_config = {
        "resources": {"storage": {"config": {
            "recordings_dir": str(recording.parent), "storage_root": str(layout.root)}}},
        "loggers": {"console": {"config": {"log_level": console_level}}, PROGRESS_LOGGER: {}},
    }
    run_ids: list[str] = []
    with DagsterInstance.get() as instance:
        if not instance.has_dynamic_partition(recordings_partitions.name, key):
            instance.add_dynamic_partitions(recordings_partitions.name, [key])

        def launch(job_name: str, partition_key: str | None, label: str) -> None:
            on_stage(label)
            listener = _StepListener(job_name, on_step, log_file)
            job = _with_listener(defs.resolve_job_def(job_name), listener)
            begin = time.perf_counter()
            try:
                result = job.execute_in_process(
                    run_config=run_config, instance=instance, partition_key=partition_key)
            finally:
                listener.close()
            run_ids.append(result.run_id)
            on_job(JobReport(job_name, label, result.run_id, time.perf_counter() - begin,
                             listener.steps))

        launch(recording_pipeline_job.name, key, f"{recording_pipeline_job.name} [{key}]")
        for model in chosen:
            pkey = MultiPartitionKey({RECORDING_DIM: key, MODEL_DIM: model})
            launch(model_benchmark_job.name, pkey, f"{model_benchmark_job.name} [{key}, {model}]")
        launch(leaderboard_report_job.name, None, leaderboard_report_job.name)
    return BenchmarkRun(recording=key, models=chosen, run_ids=tuple(run_ids), layout=layout,
                        log_file=log_file)
