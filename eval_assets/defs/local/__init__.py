"""The local runner: the whole chain for one recording on a persistent local Dagster instance,
in process. ``eval-assets run`` / ``demo`` call it; so can Python::

    from eval_assets.defs.local import run_locally
    run_locally(Path("rec.db"))

``run`` is the entry point, ``plan`` decides what a pass materializes, ``launch`` runs it,
``conditions`` evaluates the automation conditions, ``events`` reports steps and runs, and
``instance`` sets up the instance.
"""

from eval_assets.defs.local.events import JobReport, StepReport
from eval_assets.defs.local.instance import (
    DAGSTER_YAML,
    RunInProgress,
    ensure_dagster_home,
    prepare_dagster_home,
)
from eval_assets.defs.local.run import LocalRun, run_locally

__all__ = ["DAGSTER_YAML", "JobReport", "LocalRun", "RunInProgress", "StepReport",
           "ensure_dagster_home", "prepare_dagster_home", "run_locally"]
