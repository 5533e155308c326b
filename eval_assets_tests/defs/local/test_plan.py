"""What a local run owns and asks for: partitions sorted into the job that materializes them."""

from __future__ import annotations

from dagster import DagsterInstance, MultiPartitionKey

from eval_assets.defs import keys
from eval_assets.defs.definitions import defs
from eval_assets.defs.local.plan import JobAssets, Plan, Scope, never_materialized


def test_a_plan_keeps_only_the_partitions_of_its_scope() -> None:
    scope = Scope.of("hall", ["random", "blind-smollm2"])
    plan = Plan()
    plan.add(keys.RECTIFIED_FRAMES, "hall", scope)
    plan.add(keys.RECTIFIED_FRAMES, "kitchen", scope)  # another recording: not this run's
    mine = MultiPartitionKey({"recording": "hall", "model": "random"})
    other = MultiPartitionKey({"recording": "kitchen", "model": "random"})
    plan.add(keys.PREDICTIONS, mine, scope)
    plan.add(keys.PREDICTIONS, other, scope)
    plan.add(keys.REPORT, None, scope)
    assert plan.recording == {"hall": {keys.RECTIFIED_FRAMES}}
    assert plan.per_model == {mine: {keys.PREDICTIONS}}
    assert plan.unpartitioned == {keys.REPORT}
    assert not plan.empty() and Plan().empty()
    assert scope.cells[mine] == "random" and scope.partitions() >= {"hall", mine, None}


def test_each_job_owns_its_assets_and_a_scope_counts_them_per_model() -> None:
    jobs = JobAssets.resolve(defs.resolve_asset_graph())
    assert keys.RECORDING_INGEST in jobs.recording and keys.PREDICTIONS in jobs.per_model
    assert jobs.board == {keys.LEADERBOARD, keys.REPORT}
    assert not (jobs.recording & jobs.per_model) and not (jobs.per_model & jobs.board)
    one, two = Scope.of("hall", ["random"]), Scope.of("hall", ["random", "blind-smollm2"])
    assert jobs.total(two) - jobs.total(one) == len(jobs.per_model)


def test_on_a_fresh_instance_every_partition_of_the_scope_is_never_materialized() -> None:
    jobs = JobAssets.resolve(defs.resolve_asset_graph())
    scope = Scope.of("hall", ["random"])
    with DagsterInstance.ephemeral() as instance:
        plan = never_materialized(instance, jobs, scope)
    assert plan.recording == {"hall": set(jobs.recording)}
    assert plan.per_model == {next(iter(scope.cells)): set(jobs.per_model)}
    assert plan.unpartitioned == set()  # the board is the runner's own decision
