"""Executes a :class:`~eval_assets.defs.local.plan.Plan` as in-process runs of the code location's
jobs, one run per job and partition, as the daemon would launch them."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dagster import AssetKey, DagsterInstance, Definitions

from eval_assets.defs.jobs import (
    leaderboard_report_job,
    model_benchmark_job,
    recording_pipeline_job,
)
from eval_assets.defs.local.events import JobReport, Listeners, StepListener, with_listener
from eval_assets.defs.local.plan import JobAssets, Partition, Plan, Scope

if TYPE_CHECKING:
    from dagster._core.definitions.assets.graph.asset_graph import AssetGraph


@dataclass
class Launcher:
    """Launches the runs of each plan and remembers what they materialized."""

    defs: Definitions
    instance: DagsterInstance
    graph: AssetGraph
    jobs: JobAssets
    scope: Scope
    run_config: dict[str, Any]
    log_file: Path
    listeners: Listeners
    run_ids: list[str] = field(default_factory=list)
    executed: set[tuple[AssetKey, Partition]] = field(default_factory=set)

    def execute(self, plan: Plan) -> None:
        """Materialize ``plan``: the recording's run, then each model's, then the board's."""
        for partition, requested in plan.recording.items():
            self._launch(recording_pipeline_job.name, partition, requested,
                         f"{recording_pipeline_job.name} [{partition}]")
        for partition, requested in sorted(plan.per_model.items()):
            self._launch(model_benchmark_job.name, partition, requested,
                         f"{model_benchmark_job.name} [{self.scope.recording}, "
                         f"{self.scope.cells[partition]}]")
        if plan.unpartitioned:
            self._launch(leaderboard_report_job.name, None, plan.unpartitioned,
                         leaderboard_report_job.name)

    def _launch(self, job_name: str, partition: Partition, requested: set[AssetKey],
                label: str) -> None:
        selection = self._downstream_within(job_name, requested)
        self.listeners.on_stage(f"{label}: {len(selection)} asset(s) to materialize")
        listener = StepListener(job_name, self.listeners.on_step, self.log_file)
        job = with_listener(self.defs.resolve_job_def(job_name), listener)
        begin = time.perf_counter()
        try:
            result = job.execute_in_process(run_config=self.run_config, instance=self.instance,
                                            partition_key=partition, asset_selection=selection)
        finally:
            listener.close()
        self.run_ids.append(result.run_id)
        self.executed.update((k, partition) for k in selection)
        self.listeners.on_job(JobReport(job_name, label, result.run_id,
                                        time.perf_counter() - begin, listener.steps))

    def _downstream_within(self, job_name: str, requested: set[AssetKey]) -> list[AssetKey]:
        # A run materializes what was asked and everything after it in the same job: the next
        # evaluation would ask for those anyway, and one run costs less than several.
        in_job = self.jobs.by_job[job_name]
        selected, frontier = set(requested), list(requested)
        while frontier:
            for child in self.graph.get(frontier.pop()).child_keys:
                if child in in_job and child not in selected:
                    selected.add(child)
                    frontier.append(child)
        return sorted(selected, key=lambda k: k.to_user_string())
