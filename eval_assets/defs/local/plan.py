"""What a local run materializes: the partitions it owns, the assets of each job, and which asset
partitions a pass asks for."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dagster import (
    AssetKey,
    DagsterInstance,
    EvaluateAutomationConditionsResult,
    MultiPartitionKey,
)

from eval_assets.defs.jobs import (
    leaderboard_report_job,
    model_benchmark_job,
    recording_pipeline_job,
)
from eval_assets.defs.partitions import MODEL_DIM, RECORDING_DIM

if TYPE_CHECKING:
    from dagster._core.definitions.assets.graph.asset_graph import AssetGraph

Partition = str | None
"""A partition key (a recording, or a (recording, model) multi-partition key), or ``None`` for an
unpartitioned asset."""


@dataclass(frozen=True)
class Scope:
    """The partitions one local run owns: its recording, and the recording with each model."""

    recording: str
    models: tuple[str, ...]
    cells: Mapping[str, str]
    """Each (recording, model) partition key, with its model."""

    @classmethod
    def of(cls, recording: str, models: Sequence[str]) -> Scope:
        """The scope of ``recording`` with ``models``."""
        cells: dict[str, str] = {
            MultiPartitionKey({RECORDING_DIM: recording, MODEL_DIM: m}): m for m in models}
        return cls(recording, tuple(models), cells)

    def partitions(self) -> set[Partition]:
        """Every partition this run owns; ``None`` stands for the leaderboard and report."""
        return {self.recording, *self.cells, None}


@dataclass(frozen=True)
class JobAssets:
    """The assets each job selects, resolved on the asset graph."""

    by_job: Mapping[str, frozenset[AssetKey]]

    @classmethod
    def resolve(cls, graph: AssetGraph) -> JobAssets:
        """Resolve the three jobs' selections."""
        jobs = (recording_pipeline_job, model_benchmark_job, leaderboard_report_job)
        return cls({job.name: frozenset(job.selection.resolve(graph)) for job in jobs})

    @property
    def recording(self) -> frozenset[AssetKey]:
        """The per-recording assets (``recording_pipeline``)."""
        return self.by_job[recording_pipeline_job.name]

    @property
    def per_model(self) -> frozenset[AssetKey]:
        """The per-(recording, model) assets (``model_benchmark``)."""
        return self.by_job[model_benchmark_job.name]

    @property
    def board(self) -> frozenset[AssetKey]:
        """The leaderboard and report (``leaderboard_report``)."""
        return self.by_job[leaderboard_report_job.name]

    def total(self, scope: Scope) -> int:
        """How many asset partitions ``scope`` covers."""
        return len(self.recording) + len(self.per_model) * len(scope.cells) + len(self.board)


@dataclass
class Plan:
    """The asset partitions one pass materializes, by the job that materializes them."""

    recording: dict[str, set[AssetKey]] = field(default_factory=dict)  # partition key -> keys
    per_model: dict[str, set[AssetKey]] = field(default_factory=dict)  # multi-partition key -> keys
    unpartitioned: set[AssetKey] = field(default_factory=set)

    def empty(self) -> bool:
        """Nothing to materialize."""
        return not (self.recording or self.per_model or self.unpartitioned)

    def add(self, asset_key: AssetKey, partition: Partition, scope: Scope) -> None:
        """Add ``asset_key``'s ``partition`` if ``scope`` owns it; other partitions are not ours."""
        if partition is None:
            self.unpartitioned.add(asset_key)
        elif partition == scope.recording:
            self.recording.setdefault(partition, set()).add(asset_key)
        elif partition in scope.cells:
            self.per_model.setdefault(partition, set()).add(asset_key)


def requested(result: EvaluateAutomationConditionsResult, graph: AssetGraph,
              scope: Scope) -> Plan:
    """What one evaluation of the automation conditions asks of ``scope``."""
    plan = Plan()
    for asset_key in graph.materializable_asset_keys:
        for partition in result.get_requested_partitions(asset_key):
            plan.add(asset_key, partition, scope)
    return plan


def never_materialized(instance: DagsterInstance, jobs: JobAssets, scope: Scope) -> Plan:
    """``scope``'s partitions that have no materialization at all.

    The conditions cannot see them as new when they were registered by an earlier run that failed,
    before the storage root had a cursor.
    """
    plan = Plan()
    for asset_key in jobs.recording:
        if scope.recording not in instance.get_materialized_partitions(asset_key):
            plan.add(asset_key, scope.recording, scope)
    for asset_key in jobs.per_model:
        done = instance.get_materialized_partitions(asset_key)
        for partition in scope.cells:
            if partition not in done:
                plan.add(asset_key, partition, scope)
    return plan
