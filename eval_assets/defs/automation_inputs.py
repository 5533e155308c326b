"""The automation sensor skips an evaluation when nothing its conditions read has changed.

Why: one evaluation of every asset's condition (about 6,000 condition nodes, then their cursor)
costs 1.2-2.9 s of CPU in the code server, at every tick (15 s by default). Between batches
nothing changes and every one of those evaluations requests nothing: an idle deployment spends
10-20 % of a core on them. A skipped tick costs 0.03 s (reading the inputs below). While runs
write materializations every tick is evaluated, as before.

What the conditions read (:mod:`eval_assets.defs.automation_conditions`, checked for every asset's
tree by :func:`reads_only_automation_inputs`): the asset events of the event log
(materializations, observations, planned materializations, failures), which runs and backfills
are in progress (and whether a failed run ended), the dynamic partitions, the code (a changed code
location is a new code server: a new memory here), the tick's own requests and the previous
evaluation's cursor. None reads the clock: no asset is time-partitioned and no condition is a
cron's.

So when those inputs (:class:`AutomationInputs`, read before the evaluation's own snapshot) are
the same as at the previous two evaluations, both requested nothing, and the cursor handed in is
the one the last evaluation returned, a new evaluation would find: no newly updated, missing or
requested partition (nothing happened since the last one, and the last one requested nothing);
every ``since`` unchanged (its triggers and resets are such "newly" events); every ``newly_true``
empty and every ``seen_twice`` its operand (which was equal at the last two evaluations, whose
inputs were equal; its ``or_now`` is read only where the operand is newly true: nowhere). That is
the last evaluation's result again: no request. The tick is skipped with the cursor kept, so the
next evaluation compares with the last one that ran, as after any quiet interval.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

from dagster import (
    AutomationCondition,
    AutomationConditionSensorDefinition,
    DagsterEventType,
    DagsterInstance,
    DagsterInvariantViolationError,
    DagsterRunStatus,
    DynamicPartitionsDefinition,
    EventRecordsFilter,
    MultiPartitionsDefinition,
    PartitionsDefinition,
    RunsFilter,
    SensorEvaluationContext,
    TimeWindowPartitionsDefinition,
)
from dagster._core.definitions.assets.graph.base_asset_graph import BaseAssetGraph
from dagster._core.definitions.sensor_definition import SensorExecutionData
from dagster._core.execution.backfill import BulkActionsFilter, BulkActionStatus

# Leaves whose truth is a function of AutomationInputs and the tick's own requests. Anything else
# (a cron, a freshness policy, a time window's lookback) turns skipping off.
_INPUT_LEAVES = frozenset({
    "MissingAutomationCondition", "RunInProgressAutomationCondition",
    "BackfillInProgressAutomationCondition", "ExecutionFailedAutomationCondition",
    "NewlyUpdatedCondition", "NewlyRequestedCondition", "WillBeRequestedCondition",
    "LatestRunExecutedWithRootTargetCondition", "CodeVersionChangedCondition",
    "InitialEvaluationCondition", "InLatestTimeWindowCondition", "RequestedThisTick",
    "SnapshotHoldsItsRuns",
})
# Operators whose result follows from their operands' and, for the stateful ones (since,
# newly_true, our seen_twice), from their state at the previous evaluation.
_OPERATORS = frozenset({
    "AndAutomationCondition", "OrAutomationCondition", "NotAutomationCondition",
    "SinceCondition", "NewlyTrueCondition", "AnyDepsCondition", "AllDepsCondition", "SeenTwice",
})
_ASSET_EVENTS = (DagsterEventType.ASSET_MATERIALIZATION, DagsterEventType.ASSET_OBSERVATION,
                 DagsterEventType.ASSET_MATERIALIZATION_PLANNED,
                 DagsterEventType.ASSET_FAILED_TO_MATERIALIZE)
_RUNNING = [DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING,
            DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING]
_BACKFILLING = [BulkActionStatus.REQUESTED, BulkActionStatus.CANCELING, BulkActionStatus.FAILING]


def _dimensions(partitions_def: PartitionsDefinition[Any] | None
                ) -> list[PartitionsDefinition[Any] | None]:
    """A partitions definition as its dimensions' definitions (itself if one-dimensional)."""
    if isinstance(partitions_def, MultiPartitionsDefinition):
        return [dimension.partitions_def for dimension in partitions_def.partitions_defs]
    return [partitions_def]


def _dynamic_names(graph: BaseAssetGraph) -> tuple[str, ...]:
    return tuple(sorted({
        part.name for key in graph.get_all_asset_keys()
        for part in _dimensions(graph.get(key).partitions_def)
        if isinstance(part, DynamicPartitionsDefinition) and part.name}))


def reads_only_automation_inputs(graph: BaseAssetGraph) -> str | None:
    """``None`` when every automation condition of ``graph`` is a function of
    :class:`AutomationInputs`; else why not (the first condition or asset that is not)."""
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        if any(isinstance(part, TimeWindowPartitionsDefinition)
               for part in _dimensions(node.partitions_def)):
            return f"{key.to_user_string()} is time-partitioned"
        pending: list[AutomationCondition[Any]] = (
            [node.automation_condition] if node.automation_condition else [])
        while pending:
            condition = pending.pop()
            kind = type(condition).__name__
            children = list(condition.children)
            if kind not in (_OPERATORS if children else _INPUT_LEAVES):
                return f"{key.to_user_string()}: condition {kind} ({condition.name})"
            pending += children
    for check_key in graph.asset_check_keys:
        if graph.get(check_key).automation_condition is not None:
            return f"asset check {check_key.to_user_string()} has an automation condition"
    return None


@dataclass(frozen=True)
class AutomationInputs:
    """Everything an evaluation of the conditions reads from the instance, as comparable values."""

    latest_events: tuple[int, ...]
    """The newest materialization, observation, planned materialization and failure of any
    asset (storage ids, 0 for none): any new asset event raises one."""
    assets: tuple[tuple[str, int, int, int], ...]
    """Per asset: its latest materialization, planned materialization and failure (a wipe
    lowers one)."""
    runs: int
    """How many runs the instance has (a run deleted changes what failed)."""
    runs_in_progress: tuple[str, ...]
    backfills_in_progress: tuple[str, ...]
    dynamic_partitions: tuple[tuple[str, tuple[str, ...]], ...]

    @classmethod
    def read(cls, instance: DagsterInstance, dynamic_names: tuple[str, ...]) -> AutomationInputs:
        """Read them now: before the evaluation takes its own snapshot, so that whatever lands
        during the evaluation is a change at the next tick. ``dynamic_names``: the graph's
        dynamic partitions definitions."""
        latest = []
        for event_type in _ASSET_EVENTS:
            newest = instance.event_log_storage.get_event_records(
                EventRecordsFilter(event_type=event_type), limit=1, ascending=False)
            latest.append(newest[0].storage_id if newest else 0)
        assets: list[tuple[str, int, int, int]] = []
        for record in instance.get_asset_records():
            entry = record.asset_entry
            materialized, failed = (entry.last_materialization_record,
                                    entry.last_failed_to_materialize_record)
            assets.append((entry.asset_key.to_user_string(),
                           materialized.storage_id if materialized else 0,
                           failed.storage_id if failed else 0,
                           entry.last_planned_materialization_storage_id or 0))
        return cls(
            latest_events=tuple(latest),
            assets=tuple(sorted(assets)),
            runs=instance.get_runs_count(),
            runs_in_progress=tuple(sorted(instance.get_run_ids(RunsFilter(statuses=_RUNNING)))),
            backfills_in_progress=tuple(sorted(b.backfill_id for b in instance.get_backfills(
                filters=BulkActionsFilter(statuses=_BACKFILLING)))),
            dynamic_partitions=tuple((name, tuple(instance.get_dynamic_partitions(name)))
                                     for name in dynamic_names),
        )


@dataclass(frozen=True)
class _Graph:
    """What a definitions object's graph says once for all its ticks."""

    definitions: object  # held, so that its id (the key) is not reused
    why_not: str | None  # why skipping is off, or None
    dynamic_names: tuple[str, ...]


@dataclass(frozen=True)
class _Evaluation:
    inputs: AutomationInputs
    requested: bool
    cursor: str | None


class _Memory:
    """The last two evaluations of one (instance, definitions) pair."""

    def __init__(self, definitions: object) -> None:
        self.definitions = definitions  # held: its id is part of the key
        self.evaluations: deque[_Evaluation] = deque(maxlen=2)

    def unchanged(self, inputs: AutomationInputs, cursor: str | None) -> bool:
        return (len(self.evaluations) == 2
                and all(e.inputs == inputs and not e.requested for e in self.evaluations)
                and self.evaluations[-1].cursor == cursor)


class SkippingAutomationSensor(AutomationConditionSensorDefinition):
    """Dagster's automation-condition sensor, evaluated in the code server, that skips a tick
    whose inputs are those of the last two evaluations (see the module's docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lock = threading.Lock()
        self._memories: dict[tuple[str, int], _Memory] = {}
        self._graphs: dict[int, _Graph] = {}

    def evaluate_tick(self, context: SensorEvaluationContext) -> SensorExecutionData:
        """Skip when nothing changed; otherwise Dagster's evaluation, remembered."""
        repository = context.repository_def
        try:
            instance = context.instance
        except DagsterInvariantViolationError:  # a context built without one
            return super().evaluate_tick(context)
        if repository is None:
            return super().evaluate_tick(context)
        with self._lock:
            if id(repository) not in self._graphs:
                graph = repository.asset_graph
                self._graphs[id(repository)] = _Graph(
                    repository, reads_only_automation_inputs(graph), _dynamic_names(graph))
            facts = self._graphs[id(repository)]
        if facts.why_not is not None:
            return super().evaluate_tick(context)
        key = (instance.root_directory, id(repository))
        inputs = AutomationInputs.read(instance, facts.dynamic_names)
        with self._lock:
            memory = self._memories.get(key)
            if memory is not None and memory.unchanged(inputs, context.cursor):
                return SensorExecutionData(
                    skip_message="nothing the conditions read has changed since the last two "
                                 "evaluations (asset events, runs, backfills, partitions)",
                    cursor=context.cursor)
        result = super().evaluate_tick(context)
        with self._lock:
            if key not in self._memories:
                # One code server serves one instance; tests make many: keep the latest few.
                for stale in list(self._memories)[:-3]:
                    del self._memories[stale]
                self._memories[key] = _Memory(repository)
            self._memories[key].evaluations.append(
                _Evaluation(inputs, bool(result.run_requests), result.cursor))
        return result
