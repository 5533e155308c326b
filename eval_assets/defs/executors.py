"""Executor selection by configuration, so one code location serves laptops and clusters.

``EVAL_ASSETS_EXECUTOR`` picks the executor for every job of the code location:

- ``in_process`` (default): every step of a run in the run's own process — it starts fastest,
  and runs of different partitions proceed in parallel through the instance's run queue;
- ``multiprocess``: steps in parallel subprocesses, at most ``EVAL_ASSETS_MAX_CONCURRENT``
  (default: the CPU count) at once;
- ``celery``: each step is a Celery task run by ``dagster-celery`` workers on any machine that
  reaches the broker (the optional extra ``eval_assets[celery]``). The broker's URL comes from
  ``EVAL_ASSETS_CELERY_BROKER`` (e.g. ``redis://host:6379/0``), the results backend's from
  ``EVAL_ASSETS_CELERY_BACKEND`` (default: the broker), both read when a run starts; the run
  config's ``execution: config:`` (the launchpad) overrides them and sets any other option of
  ``dagster_celery.celery_executor``, and ``lost_worker_timeout_s`` / ``lost_worker_retries``:
  a step whose worker dies is submitted again or failed within that bound (``celery_watch``);
- ``k8s``: each step in its own Kubernetes Job (``dagster_k8s.k8s_job_executor``, the optional
  extra ``eval_assets[k8s]``), with the runs launched by the ``K8sRunLauncher`` of the instance's
  ``dagster.yaml``; its options (namespace, image, env, resources) are run config.

The assets never change: only this choice does. The engine's package is imported only when it is
selected (README, "Scaling out").

Runs of the local engines (``in_process``, ``multiprocess``) lower their own CPU priority when
they start, to the niceness ``EVAL_ASSETS_RUN_NICENESS`` (default 10; 0 leaves it): on one machine
the daemon's automation ticks, the sensors and the UI then keep their share of the CPU while
runs take whatever is idle. Measured with 50 recordings x 5 models on 2 cores
(``benchmarks/graph_scale_daemon.py``): without it, ticks reached 15.6 s while two runs and the
backfill's run creation shared the cores. ``eval-assets run`` executes in its own process
(``execute_in_process``, not these executors) and keeps its priority.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

from dagster import (
    Executor,
    ExecutorDefinition,
    Field,
    InitExecutorContext,
    in_process_executor,
    multiple_process_executor_requirements,
    multiprocess_executor,
)

EXECUTORS = ("in_process", "multiprocess", "celery", "k8s")
# In process by default: a step subprocess re-imports torch and open3d (seconds each), which made
# daemon runs 10-25x slower than the work; parallelism across partitions comes from the run queue.
DEFAULT_EXECUTOR = "in_process"
RUN_NICENESS_ENV = "EVAL_ASSETS_RUN_NICENESS"
DEFAULT_RUN_NICENESS = 10
CELERY_BROKER_ENV = "EVAL_ASSETS_CELERY_BROKER"
CELERY_BACKEND_ENV = "EVAL_ASSETS_CELERY_BACKEND"


class MissingEngineError(ImportError):
    """The selected executor's engine is not installed; the message names the extra to install."""


def _engine(name: str, module: str, extra: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingEngineError(
            f"EVAL_ASSETS_EXECUTOR={name!r} needs the package {module!r}, which is not installed "
            f"({exc}). Fix: pip install 'eval_assets[{extra}]', on the launching machine and on "
            "every worker."
        ) from exc


def celery_executor_from_env() -> ExecutorDefinition:
    """dagster-celery's executor with the same config schema, whose ``broker`` and ``backend``
    default to ``$EVAL_ASSETS_CELERY_BROKER`` / ``$EVAL_ASSETS_CELERY_BACKEND`` when those are
    set (the backend falls back to the broker), so a run needs no executor config; each step's
    worker is watched, so a lost worker cannot leave the run waiting (``celery_watch``)."""
    base = _engine("celery", "dagster_celery", "celery").celery_executor
    from eval_assets.defs import celery_watch  # imports dagster_celery: only when selected

    fields = {**base.config_schema.as_field().config_type.fields, **celery_watch.LOST_WORKER_CONFIG}
    backend_env = CELERY_BACKEND_ENV if os.environ.get(CELERY_BACKEND_ENV) else CELERY_BROKER_ENV
    for key, env in (("broker", CELERY_BROKER_ENV), ("backend", backend_env)):
        if os.environ.get(env):
            fields[key] = Field(fields[key].config_type, default_value={"env": env},
                                description=f"Default: ${env}. {fields[key].description or ''}")
    return ExecutorDefinition(
        name=base.name,
        config_schema=fields,
        requirements=multiple_process_executor_requirements(),
        executor_creation_fn=celery_watch.create_executor,
        description=base.description,
    )


def run_niceness() -> int:
    """The niceness a local run takes (``$EVAL_ASSETS_RUN_NICENESS``, default 10, 0 to 19)."""
    raw = os.environ.get(RUN_NICENESS_ENV, str(DEFAULT_RUN_NICENESS))
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if not 0 <= value <= 19:
        raise ValueError(f"{RUN_NICENESS_ENV}={raw!r} must be an integer from 0 (no change) to 19 "
                         "(lowest priority)")
    return value


def lower_priority(niceness: int) -> int:
    """Raise this process's niceness to ``niceness`` (never lower it: that needs privileges);
    return the niceness it has now. Where ``os.nice`` does not exist, nothing changes."""
    if not hasattr(os, "nice"):
        return 0
    current = os.nice(0)
    return os.nice(niceness - current) if niceness > current else current


def _at_run_priority(base: ExecutorDefinition) -> ExecutorDefinition:
    """``base`` whose executor, created in the run's process when the run starts, first lowers
    that process's priority (its step processes inherit it)."""
    niceness = run_niceness()  # read when the code location loads: a bad value fails there

    def create(init_context: InitExecutorContext) -> Executor:
        lower_priority(niceness)
        return base.executor_creation_fn(init_context)  # type: ignore[misc]

    return ExecutorDefinition(name=base.name, config_schema=base.config_schema.as_field(),
                              requirements=base.get_requirements, executor_creation_fn=create,
                              description=base.description)


def executor_from_env() -> ExecutorDefinition:
    """The executor named by ``EVAL_ASSETS_EXECUTOR``; an unknown name is a clear error."""
    name = os.environ.get("EVAL_ASSETS_EXECUTOR", DEFAULT_EXECUTOR)
    if name == "in_process":
        return _at_run_priority(in_process_executor)
    if name == "multiprocess":
        max_concurrent = int(os.environ.get("EVAL_ASSETS_MAX_CONCURRENT", os.cpu_count() or 1))
        return _at_run_priority(multiprocess_executor).configured(
            {"max_concurrent": max_concurrent})
    if name == "celery":
        return celery_executor_from_env()
    if name == "k8s":
        return _engine("k8s", "dagster_k8s", "k8s").k8s_job_executor
    raise ValueError(f"EVAL_ASSETS_EXECUTOR={name!r} is not supported; use one of {EXECUTORS}")
