"""The assets' automation conditions, evaluated in process as the daemon's automation sensor does,
and the cursor that says what a storage root has already handled."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from dagster import (
    BetaWarning,
    DagsterInstance,
    Definitions,
    EvaluateAutomationConditionsResult,
    deserialize_value,
    evaluate_automation_conditions,
    serialize_value,
)

from eval_assets.atomic import write_text_atomic
from eval_assets.defs.accepted import quietly

if TYPE_CHECKING:
    from dagster._core.definitions.asset_daemon_cursor import AssetDaemonCursor


class Conditions:
    """Evaluations of every asset's automation condition against one instance."""

    def __init__(self, defs: Definitions, instance: DagsterInstance) -> None:
        self.defs = defs
        self.instance = instance

    def evaluate(self, cursor: AssetDaemonCursor | None = None
                 ) -> EvaluateAutomationConditionsResult:
        """One evaluation since ``cursor`` (none: the first, which never fires)."""
        # Dagster's evaluator selects assets with a Beta parameter internally; the warning is
        # about its code, not ours, and would reach the user's terminal on every evaluation.
        return quietly(BetaWarning, lambda: evaluate_automation_conditions(
            defs=self.defs, instance=self.instance, cursor=cursor))


def read_cursor(path: Path) -> AssetDaemonCursor | None:
    """The cursor stored at ``path``; ``None`` if there is none or it is unreadable."""
    try:
        cursor = deserialize_value(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    return cursor  # type: ignore[return-value]


def write_cursor(path: Path, cursor: AssetDaemonCursor) -> None:
    """Store ``cursor`` at ``path``, atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, serialize_value(cursor))
