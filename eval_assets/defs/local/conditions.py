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
        with _dynamic_partitions_read_once(self.instance):
            return quietly(BetaWarning, lambda: evaluate_automation_conditions(
                defs=self.defs, instance=self.instance, cursor=cursor))


@contextmanager
def _dynamic_partitions_read_once(instance: DagsterInstance) -> Iterator[None]:
    """Within the block, each dynamic partitions definition's keys are read from storage once.

    ``evaluate_automation_conditions`` builds the new cursor with the bare instance as the
    partitions store, so every condition node's subset of a dynamic partitions definition
    re-reads the keys (a new SQLite connection, a table check and a query each): ~2,000 reads
    per evaluation of this graph, 83% of its time (cProfile of ``benchmarks/graph_scale.py``).
    The daemon's evaluation reads them once per tick through its caching queryer; this does the
    same for the in-process evaluation (the keys cannot change within one).
    """
    read = instance.get_dynamic_partitions
    cache: dict[str, Sequence[str]] = {}

    def once(partitions_def_name: str) -> Sequence[str]:
        if partitions_def_name not in cache:
            cache[partitions_def_name] = read(partitions_def_name)
        return cache[partitions_def_name]

    instance.get_dynamic_partitions = once  # type: ignore[method-assign]
    try:
        yield
    finally:
        del instance.get_dynamic_partitions  # the class's method again


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
