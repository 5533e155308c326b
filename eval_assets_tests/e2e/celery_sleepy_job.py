"""A one-step job on the Celery executor of the code location, for the lost-worker test.

Its step appends ``<pid> <attempt>`` to ``$EVAL_ASSETS_TEST_ATTEMPTS_DIR/<run id>`` and, on the
run's first attempt, sleeps ``HANG_S`` seconds (the test kills the worker meanwhile); a later
attempt returns at once. The workers import this module by name (``PYTHONPATH``), as they import
the real code location.
"""

import os
import time
from pathlib import Path

from dagster import Definitions, OpExecutionContext, job, op

from eval_assets.defs.executors import celery_executor_from_env

ATTEMPTS_DIR_ENV = "EVAL_ASSETS_TEST_ATTEMPTS_DIR"
HANG_S = 600


@op
def sleepy_step(context: OpExecutionContext) -> None:
    """Record this attempt; hang on the first one."""
    path = Path(os.environ[ATTEMPTS_DIR_ENV]) / context.run_id
    with path.open("a") as out:
        out.write(f"{os.getpid()}\n")
    if len(path.read_text().splitlines()) == 1:
        time.sleep(HANG_S)


@job(executor_def=celery_executor_from_env())
def sleepy() -> None:
    """One step that hangs on its first attempt."""
    sleepy_step()


defs = Definitions(jobs=[sleepy])
