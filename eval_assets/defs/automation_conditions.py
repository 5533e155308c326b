"""The automation conditions every asset carries (see :mod:`eval_assets.defs.automation`)."""

from __future__ import annotations

from typing import Any

from dagster import AutomationCondition

OWNERS = ["team:robot-evals"]
"""Shown in the UI beside every asset."""

NIGHT_TAG = "eval_assets/night"
"""Run tag of nightly runs: its value (``YYYY-MM-DD``) makes every model answer afresh, and the
night's results are kept under ``history/<night>/``."""

def _cell_pending() -> AutomationCondition:
    """A (recording, model) result that is running, or missing or stale without having failed.

    Missing cells of registered recordings are work still to come in this batch. A cell whose own
    run or whose metrics' runs failed is not waited for: the report shows it as missing.
    """
    failed = (AutomationCondition.execution_failed()
              | AutomationCondition.any_deps_match(AutomationCondition.execution_failed()))
    # A present result whose own trigger fired and is not yet handled is stale: it will be
    # recomputed. (``will_be_requested`` cannot say so across partitions definitions.)
    stale = (AutomationCondition.newly_missing()
             | AutomationCondition.any_deps_updated()).since_last_handled()
    return (AutomationCondition.in_progress() | AutomationCondition.will_be_requested()
            | ((AutomationCondition.missing() | stale) & ~failed)).with_label("result pending")


# Handled: requested by automation, or materialized by anything (a run of automation, a backfill,
# the nightly schedule, the CLI). Unlike Dagster's ``since_last_handled()``, the first evaluation
# (a fresh daemon, or a cursor reset) does not count as handled: ``eager()`` uses it and so never
# materializes partitions that are already missing when the daemon starts.
_HANDLED = AutomationCondition.newly_requested() | AutomationCondition.newly_updated()

EAGER = (
    AutomationCondition.in_latest_time_window()
    & (AutomationCondition.newly_missing() | AutomationCondition.any_deps_updated()
       ).since(_HANDLED).with_label("newly missing (at the first look too) or upstream updated")
    & ~AutomationCondition.any_deps_missing()
    & ~AutomationCondition.any_deps_in_progress()
    & ~AutomationCondition.in_progress()
).with_label("eager, including partitions missing at the first evaluation")
"""``AutomationCondition.eager()`` whose trigger survives the first evaluation."""

RECOMPUTE = (
    EAGER
    | (AutomationCondition.code_version_changed() & ~AutomationCondition.in_progress()
       & ~AutomationCondition.any_deps_in_progress())
).with_label("missing, upstream data changed or code changed")

# Typed as any entity's condition: Dagster types ``since_last_handled`` for conditions on assets or
# checks, and code_version_changed() is typed for assets only, although both apply to assets here.
_CHANGED: AutomationCondition[Any] = (
    AutomationCondition.any_deps_updated() | AutomationCondition.code_version_changed())

SETTLED = (
    _CHANGED.since_last_handled()
    & ~AutomationCondition.any_deps_match(_cell_pending()) & ~AutomationCondition.in_progress()
).with_label("once per settled batch: every expected result present or failed")
