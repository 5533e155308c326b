"""dagster-celery's executor, plus a watch on the worker that runs each step.

dagster-celery submits each step as a Celery task and polls its result with no time limit. A
worker acknowledges a task when it starts it (Celery's default, kept: ``task_acks_late`` with
Redis would redeliver any step running longer than the broker's ``visibility_timeout`` to a second
worker while the first still runs it), so when the worker's machine dies mid-step the task is
lost: its result stays pending and the run waits forever, STARTED.

This watch closes that. The worker that starts a step says so in the run's event log (dagster-
celery's "Executing steps … in celery worker" engine event names its Celery hostname). Every
``POLL_S`` seconds the launching process asks the workers that run its steps for their ``stats``
(a Celery remote-control request, answered by a prefork worker's main process while its children
run steps). A worker silent for ``lost_worker_timeout_s`` seconds is lost: its task is revoked
(with SIGKILL, should the worker come back) and the step is submitted again, to any worker, up to
``lost_worker_retries`` times; after that the step fails with an error naming the worker (or is
retried by the op's own ``RetryPolicy``), and the run ends.

A step never runs twice at once on two workers that answer: only a worker that answered this run
once and then fell silent for the whole timeout is counted lost. A worker with the solo pool cannot
answer while it runs a step, so it is never watched (an engine event says so): start workers with
the prefork pool, the default of ``dagster-celery worker start``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from dagster import DagsterEventType, Field, InitExecutorContext, Noneable
from dagster._core.events import DagsterEvent, EngineEventData
from dagster._core.execution.context.system import PlanOrchestrationContext
from dagster._core.execution.plan.plan import ExecutionPlan
from dagster._core.execution.plan.state import KnownExecutionState
from dagster._core.execution.plan.step import ExecutionStep
from dagster._core.execution.retries import RetryMode
from dagster._serdes import serialize_value
from dagster._utils.error import SerializableErrorInfo
from dagster_celery.core_execution_loop import core_celery_execution_loop
from dagster_celery.executor import CeleryExecutor, _submit_task

DEFAULT_LOST_WORKER_TIMEOUT_S = 60.0
DEFAULT_LOST_WORKER_RETRIES = 1
POLL_S = 2.0  # how often the workers running steps are asked whether they are alive
REPLY_S = 1.0  # how long one request waits for the workers' replies
WORKER_EVENT = "in celery worker"  # dagster_celery.tasks' engine event when a worker starts a step
WORKER_METADATA = "Celery worker"
SOLO_POOL = "celery.concurrency.solo"

LOST_WORKER_CONFIG = {
    "lost_worker_timeout_s": Field(
        Noneable(float), is_required=False, default_value=DEFAULT_LOST_WORKER_TIMEOUT_S,
        description="Seconds the worker running a step may leave Celery's remote-control "
        "requests unanswered before the step is counted lost (its machine died): it is then "
        "submitted again or failed. null: never (the run waits for the worker).",
    ),
    "lost_worker_retries": Field(
        int, is_required=False, default_value=DEFAULT_LOST_WORKER_RETRIES,
        description="How many times a step whose worker was lost is submitted again, to any "
        "worker, before it fails with an error naming the lost worker.",
    ),
}


def unwatched_reason(pool: str | None) -> str | None:
    """Why a worker whose stats named ``pool`` (None: it never answered) cannot be told lost from
    busy, or None when it can: a worker that never answered may be a busy solo one."""
    if pool is None:
        return "it never answered a remote-control request"
    if pool.startswith(SOLO_POOL):
        return "solo pool: it cannot answer while it runs a step"
    return None


@dataclass
class _Running:
    """One submitted step: which worker started it (once known) and since when."""

    step: ExecutionStep
    submit: Callable[[], Any]
    known_state: KnownExecutionState
    result: Any
    lost: list[str] = field(default_factory=list)
    host: str | None = None
    started_at: float = 0.0


class WorkerWatch:
    """The workers that run this run's steps, and whether each still answers."""

    def __init__(self, plan_context: PlanOrchestrationContext, timeout_s: float | None,
                 retries: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._context = plan_context
        self._timeout_s = timeout_s
        self._retries = retries
        self._clock = clock
        self._app: Any = None
        self._cursor: str | None = None
        self._next_poll = 0.0
        self._running: dict[str, _Running] = {}
        self._pools: dict[str, str] = {}  # hostname -> pool implementation, once it answered
        self._answered: dict[str, float] = {}  # hostname -> last time it answered
        self._warned: set[str] = set()

    def submit(self, app: Any, plan_context: PlanOrchestrationContext, step: ExecutionStep,
               queue: str, priority: int, known_state: KnownExecutionState) -> WatchedResult:
        """dagster-celery's ``step_execution_fn``: submit the step's task, and watch it."""
        if self._app is None and self._timeout_s is not None:
            self._app = app
            self._ask(None)  # every worker idle now tells its pool, before it starts a step

        def send() -> Any:
            return _submit_task(app, plan_context, step, queue, priority, known_state)

        self._running[step.key] = _Running(step, send, known_state, send())
        return WatchedResult(self, step.key)

    def result(self, step_key: str) -> Any:
        """The Celery result of the step's current attempt."""
        return self._running[step_key].result

    def lost_step_events(self, step_key: str) -> list[str] | None:
        """None while the step's worker lives (or is not watched). When it is lost: resubmit the
        step and return None, or, without retries left, the step's serialized failure event."""
        if self._timeout_s is None:
            return None
        self._poll()
        running = self._running[step_key]
        if running.host is None or not self._is_lost(running.host, running.started_at,
                                                     self._timeout_s):
            return None
        running.lost.append(running.host)
        silent = self._clock() - max(self._answered[running.host], running.started_at)
        message = (f'Celery worker {running.host} running step "{step_key}" has not answered for '
                   f"{silent:.0f} s (lost_worker_timeout_s={self._timeout_s:g}): counted lost")
        running.result.revoke(terminate=True, signal="SIGKILL")  # should it come back
        if len(running.lost) <= self._retries:
            self._event(running.step, f"{message}; submitting the step again "
                        f"(retry {len(running.lost)} of lost_worker_retries={self._retries}).")
            running.host = None
            running.result = running.submit()
            return None
        error = SerializableErrorInfo(
            message=f"{message}, after {len(running.lost) - 1} retries "
                    f"(lost_worker_retries={self._retries}); lost workers: "
                    f"{', '.join(running.lost)}. The worker's machine or process died "
                    "mid-step; its logs say why.",
            stack=[], cls_name="LostCeleryWorker")
        event = self._context.executor.log_failure_or_retry_event_after_error(
            self._context.for_step(running.step), error, running.known_state)
        return [serialize_value(event)]

    def forget(self, step_key: str) -> None:
        """The step's result was collected: stop watching it."""
        self._running.pop(step_key, None)

    def _is_lost(self, host: str, started_at: float, timeout_s: float) -> bool:
        silent = self._clock() - max(self._answered.get(host, started_at), started_at)
        reason = unwatched_reason(self._pools.get(host))
        if reason is not None:
            if silent > timeout_s and host not in self._warned:
                self._warned.add(host)
                self._event(None, f"Celery worker {host} is not watched for loss ({reason}); if "
                            "it died, this run waits for it. Start workers with the prefork pool "
                            "(the default of dagster-celery worker start).")
            return False
        return silent > timeout_s

    def _poll(self) -> None:
        now = self._clock()
        if now < self._next_poll:
            return
        self._next_poll = now + POLL_S
        self._read_worker_events()
        hosts = {r.host for r in self._running.values() if r.host is not None}
        if hosts:
            self._ask(hosts)

    def _read_worker_events(self) -> None:
        """Which worker started each running step: dagster-celery's engine event names it."""
        instance, run_id = self._context.instance, self._context.dagster_run.run_id
        while True:
            page = instance.get_records_for_run(
                run_id, cursor=self._cursor, of_type=DagsterEventType.ENGINE_EVENT, limit=1000)
            self._cursor = page.cursor
            for record in page.records:
                event = record.event_log_entry.dagster_event
                running = self._running.get(event.step_key or "") if event else None
                if (event is None or running is None or running.host is not None
                        or WORKER_EVENT not in (event.message or "")):
                    continue
                host = event.engine_event_data.metadata.get(WORKER_METADATA)
                if host is not None:
                    running.host, running.started_at = str(host.value), self._clock()
            if not page.has_more:
                return

    def _ask(self, hosts: Iterable[str] | None) -> None:
        """Ask ``hosts`` (None: every worker) for their stats: an answer says the worker lives,
        and which pool it runs."""
        destination = sorted(hosts) if hosts is not None else None
        inspect = self._app.control.inspect(
            destination=destination, timeout=REPLY_S,
            limit=len(destination) if destination else None)
        replies = inspect.stats() or {}
        now = self._clock()
        for host, stats in replies.items():
            self._answered[host] = now
            pool = stats.get("pool", {}).get("implementation") if isinstance(stats, dict) else None
            self._pools[host] = str(pool or "unknown")

    def _event(self, step: ExecutionStep | None, message: str) -> None:
        context = self._context.for_step(step) if step is not None else self._context
        DagsterEvent.engine_event(context, message, EngineEventData())


class WatchedResult:
    """What dagster-celery's loop polls for a step: the Celery result of its current attempt, or
    the step's failure once its worker is lost for good."""

    def __init__(self, watch: WorkerWatch, step_key: str) -> None:
        self._watch = watch
        self._step_key = step_key
        self._failure: list[str] | None = None

    def ready(self) -> bool:
        """True when the attempt finished, or when the step failed for a lost worker."""
        if self._failure is not None or self._watch.result(self._step_key).ready():
            return True
        self._failure = self._watch.lost_step_events(self._step_key)
        return self._failure is not None

    def get(self) -> Any:
        """The step's serialized events (dagster-celery's task result), or its failure."""
        try:
            if self._failure is not None:
                return self._failure
            return self._watch.result(self._step_key).get()
        finally:
            self._watch.forget(self._step_key)

    def revoke(self) -> None:
        """The run is stopping: revoke the current attempt."""
        self._watch.result(self._step_key).revoke()


class WatchedCeleryExecutor(CeleryExecutor):
    """dagster-celery's executor whose steps' workers are watched (module docstring)."""

    def __init__(self, lost_worker_timeout_s: float | None, lost_worker_retries: int,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if lost_worker_timeout_s is not None and lost_worker_timeout_s <= 0:
            raise ValueError(f"lost_worker_timeout_s must be > 0 or null, not "
                             f"{lost_worker_timeout_s}")
        if lost_worker_retries < 0:
            raise ValueError(f"lost_worker_retries must be >= 0, not {lost_worker_retries}")
        self.lost_worker_timeout_s = lost_worker_timeout_s
        self.lost_worker_retries = lost_worker_retries

    def execute(self, plan_context: PlanOrchestrationContext,
                execution_plan: ExecutionPlan) -> Any:
        """dagster-celery's execution loop, with each step's worker watched."""
        watch = WorkerWatch(plan_context, self.lost_worker_timeout_s, self.lost_worker_retries)
        return core_celery_execution_loop(plan_context, execution_plan,
                                          step_execution_fn=watch.submit)


def create_executor(init_context: InitExecutorContext) -> WatchedCeleryExecutor:
    """The executor from its run config: dagster-celery's options and ``LOST_WORKER_CONFIG``."""
    config: dict[str, Any] = dict(init_context.executor_config)
    return WatchedCeleryExecutor(
        broker=config.get("broker"), backend=config.get("backend"),
        config_source=config.get("config_source"), include=config.get("include"),
        retries=RetryMode.from_config(config["retries"]),
        lost_worker_timeout_s=config.get("lost_worker_timeout_s"),
        lost_worker_retries=config["lost_worker_retries"])
