"""What a local run tells its caller: one :class:`StepReport` per finished step, one
:class:`JobReport` per finished job run, and stage lines.

Dagster's event stream is stored in the instance (the UI shows it) and written to a plain log
file; callers get these reports instead of the stream itself.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dagster import DagsterEvent, JobDefinition, logger

PROGRESS_LOGGER = "eval_assets_progress"
_LOG_FORMAT = "%(asctime)s %(levelname)s %(message)s"


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
class Listeners:
    """Where a local run reports: each finished step, each finished job run, each stage line."""

    on_step: Callable[[StepReport], None]
    on_job: Callable[[JobReport], None]
    on_stage: Callable[[str], None]


def numeric_metadata(event: DagsterEvent) -> dict[str, int | float]:
    """The int/float metadata of a materialization: the counts worth a glance in a stage line."""
    values: dict[str, int | float] = {}
    for key, value in event.step_materialization_data.materialization.metadata.items():
        raw = getattr(value, "value", None)
        if isinstance(raw, bool):
            continue
        if isinstance(raw, int | float):
            values[key] = raw
    return values


def _first_line_of_error(event: DagsterEvent) -> str:
    info = event.step_failure_data.error
    return info.message.strip().splitlines()[0] if info is not None else "failed"


class StepListener(logging.Handler):
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
        """Write ``record`` to the log file; report the step it ends, if it ends one."""
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
            self._counts.setdefault(step, {}).update(numeric_metadata(event))
        elif kind in ("STEP_SUCCESS", "STEP_FAILURE"):
            self._finished(step, event, ok=kind == "STEP_SUCCESS")

    def _finished(self, step: str, event: DagsterEvent, *, ok: bool) -> None:
        seconds = time.perf_counter() - self._started.pop(step, time.perf_counter())
        error = "" if ok else _first_line_of_error(event)
        self.steps += 1
        self.on_step(StepReport(self.job, step, ok, seconds, self._counts.pop(step, {}), error))

    def close(self) -> None:
        """Close the log file too."""
        self._file.close()
        super().close()


def with_listener(job_def: JobDefinition, listener: StepListener) -> JobDefinition:
    """``job_def`` with one more Dagster logger, which forwards every record to ``listener``."""

    @logger(config_schema=None,
            description="Forwards run events to the eval-assets command line and its log file.")
    def progress_logger(_init_context: Any) -> logging.Logger:
        log = logging.Logger(PROGRESS_LOGGER, level=logging.DEBUG)
        log.addHandler(listener)
        return log

    return job_def.with_logger_defs({**job_def.loggers, PROGRESS_LOGGER: progress_logger})
