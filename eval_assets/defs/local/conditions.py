"""The assets' automation conditions, evaluated in process as the daemon's automation sensor does,
and the cursor that says what a storage root has already handled."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
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
        with partitions_read_once(self.instance):
            return quietly(BetaWarning, lambda: evaluate_automation_conditions(
                defs=self.defs, instance=self.instance, cursor=cursor))


@contextmanager
def partitions_read_once(instance: DagsterInstance) -> Iterator[None]:
    """Within the block, each dynamic partitions definition's keys are read from ``instance``
    once.

    Writing the new cursor, Dagster's evaluator asks the instance itself (not its caching
    queryer) for the recordings' keys once per serialized subset: about 2,000 SQLite queries
    per evaluation, 6 s of CPU each time on the demo. Nothing adds partitions during an
    evaluation, so the first answer stands for the whole of it.
    """
    read = instance.get_dynamic_partitions
    seen: dict[str, Sequence[str]] = {}

    def get_dynamic_partitions(partitions_def_name: str) -> Sequence[str]:
        if partitions_def_name not in seen:
            seen[partitions_def_name] = tuple(read(partitions_def_name))
        return list(seen[partitions_def_name])

    instance.get_dynamic_partitions = get_dynamic_partitions  # type: ignore[method-assign]
    try:
        yield
    finally:
        del instance.get_dynamic_partitions


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
