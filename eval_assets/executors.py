"""Executor selection by configuration, so one code location serves laptops and clusters.

``EVAL_ASSETS_EXECUTOR`` picks the executor for every job of the code location:

- ``multiprocess`` (default): steps in parallel subprocesses, at most ``EVAL_ASSETS_MAX_CONCURRENT``
  (default: the CPU count) at once;
- ``in_process``: everything in the launching process — the demo and the tests use this, it starts
  fastest and is easiest to debug.

Users who outgrow one machine keep the assets unchanged and set the executor in run config or swap
this function's result for ``dagster_k8s.k8s_job_executor`` / ``dagster_celery.celery_executor``
(see README, "Scaling out").
"""

from __future__ import annotations

import os

from dagster import ExecutorDefinition, in_process_executor, multiprocess_executor

EXECUTORS = ("multiprocess", "in_process")


def executor_from_env() -> ExecutorDefinition:
    """The executor named by ``EVAL_ASSETS_EXECUTOR``; an unknown name is a clear error."""
    name = os.environ.get("EVAL_ASSETS_EXECUTOR", "multiprocess")
    if name == "in_process":
        return in_process_executor
    if name == "multiprocess":
        max_concurrent = int(os.environ.get("EVAL_ASSETS_MAX_CONCURRENT", os.cpu_count() or 1))
        return multiprocess_executor.configured({"max_concurrent": max_concurrent})
    raise ValueError(
        f"EVAL_ASSETS_EXECUTOR={name!r} is not supported; use one of {EXECUTORS} "
        "(or configure a distributed executor as described in the README)"
    )
