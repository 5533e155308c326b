"""The automation sensor skips a tick whose inputs are those of its last two evaluations, and
only such a tick: each kind of input it reads, changed, brings the next evaluation back.

A two-asset graph with the project's own condition (:data:`RECOMPUTE`) on a real (ephemeral)
instance, evaluated as the daemon asks the code server to; the project's graph in
``test_automation_race.py`` (its code-server test).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from dagster import (
    AssetKey,
    AssetMaterialization,
    AssetObservation,
    AssetSelection,
    AutomationCondition,
    BetaWarning,
    DagsterEvent,
    DagsterEventType,
    DagsterInstance,
    DagsterRun,
    DagsterRunStatus,
    DailyPartitionsDefinition,
    Definitions,
    DynamicPartitionsDefinition,
    asset,
    build_sensor_context,
)
from dagster._core.definitions.data_version import DATA_VERSION_TAG
from dagster._core.definitions.sensor_definition import SensorExecutionData
from dagster._core.execution.backfill import PartitionBackfill

from eval_assets.defs.accepted import quietly
from eval_assets.defs.automation_conditions import RECOMPUTE
from eval_assets.defs.automation_inputs import (
    SkippingAutomationSensor,
    reads_only_automation_inputs,
)

pytestmark = pytest.mark.filterwarnings("ignore::dagster.BetaWarning")

RECS = DynamicPartitionsDefinition(name="recs")
UP, DOWN = AssetKey("up"), AssetKey("down")
SKIPPED = "nothing the conditions read has changed"


@asset(key=UP, partitions_def=RECS, automation_condition=RECOMPUTE)
def up() -> None:
    """The upstream asset."""


@asset(key=DOWN, partitions_def=RECS, deps=[UP], automation_condition=RECOMPUTE)
def down() -> None:
    """Recomputed when ``up`` changes."""


def _sensor() -> SkippingAutomationSensor:
    return quietly(BetaWarning, lambda: SkippingAutomationSensor(
        "auto", target=AssetSelection.all(), use_user_code_server=True))


DEFS = Definitions(assets=[up, down], sensors=[_sensor()])


class Ticks:
    """The sensor's ticks in sequence, each from the cursor the last one returned."""

    def __init__(self, instance: DagsterInstance, sensor: SkippingAutomationSensor) -> None:
        self.instance, self.sensor, self.cursor = instance, sensor, None
        self.repository = DEFS.get_repository_def()

    def tick(self, cursor: str | None = None) -> SensorExecutionData:
        data = self.sensor.evaluate_tick(build_sensor_context(
            instance=self.instance, repository_def=self.repository,
            cursor=cursor if cursor is not None else self.cursor))
        self.cursor = data.cursor
        return data

    def requested(self) -> set[tuple[str, str | None]]:
        data = self.tick()
        assert SKIPPED not in (data.skip_message or ""), "skipped a tick that had news"
        return {(key.path[-1], request.partition_key) for request in data.run_requests or []
                for key in request.asset_selection or []}

    def skipped(self) -> bool:
        before = self.cursor
        data = self.tick()
        if SKIPPED in (data.skip_message or ""):
            assert data.cursor == before and not data.run_requests
            return True
        return False


@pytest.fixture
def instance() -> Iterator[DagsterInstance]:
    """Partition ``a`` of both assets materialized: nothing to do."""
    with DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions("recs", ["a"])
        for key in (UP, DOWN):
            instance.report_runless_asset_event(AssetMaterialization(key, partition="a"))
        yield instance


def _settle(ticks: Ticks) -> None:
    """Two evaluations that request nothing (the first sees a change), then skipped ticks."""
    assert ticks.requested() == set()
    assert ticks.requested() == set()
    assert ticks.skipped()
    assert ticks.skipped()


def test_a_tick_with_nothing_new_is_skipped_and_the_cursor_kept(instance: DagsterInstance
                                                                 ) -> None:
    ticks = Ticks(instance, _sensor())
    assert ticks.requested() == set()  # the first evaluation
    first = ticks.cursor
    assert ticks.requested() == set()
    kept = ticks.cursor
    assert ticks.skipped()
    # What it skipped is what an evaluation would have done: nothing, from the same cursor.
    fresh = Ticks(instance, _sensor())
    fresh.cursor = kept
    assert fresh.requested() == set()
    # A cursor other than the last one returned (set from the UI, say) is evaluated.
    assert SKIPPED not in (ticks.tick(cursor=first).skip_message or "")


def test_an_upstream_update_after_skipped_ticks_is_acted_on_at_once(
        instance: DagsterInstance) -> None:
    ticks = Ticks(instance, _sensor())
    _settle(ticks)
    instance.report_runless_asset_event(AssetMaterialization(UP, partition="a"))
    # No run of down[a] in flight or ended after the snapshot: the first look acts.
    assert ticks.requested() == {("down", "a")}
    assert ticks.requested() == set()  # it was requested at the last evaluation: evaluated
    assert ticks.requested() == set()
    assert ticks.skipped()


def _run(instance: DagsterInstance) -> DagsterRun:
    return instance.create_run_for_job(
        DEFS.resolve_implicit_global_asset_job_def(), asset_selection=frozenset({DOWN}),
        tags={"dagster/partition": "a"}, status=DagsterRunStatus.STARTED)


def _backfill(instance: DagsterInstance) -> None:
    instance.add_backfill(PartitionBackfill.from_asset_partitions(
        backfill_id="b1", asset_graph=DEFS.resolve_asset_graph(), partition_names=["a"],
        asset_selection=[UP], backfill_timestamp=0.0, tags={}, dynamic_partitions_store=instance,
        all_partitions=False, title=None, description=None, run_config=None))


CHANGES: dict[str, Callable[[DagsterInstance], object]] = {
    "a materialization": lambda i: i.report_runless_asset_event(
        AssetMaterialization(UP, partition="a")),
    "an observation": lambda i: i.report_runless_asset_event(
        AssetObservation(UP, partition="a", tags={DATA_VERSION_TAG: "v2"})),
    "a run created": _run,
    "a new partition": lambda i: i.add_dynamic_partitions("recs", ["b"]),
    "a backfill": _backfill,
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_each_kind_of_input_changed_is_evaluated(instance: DagsterInstance, change: str) -> None:
    ticks = Ticks(instance, _sensor())
    _settle(ticks)
    CHANGES[change](instance)
    ticks.requested()  # not skipped (asserted there)


def test_a_run_ending_is_evaluated(instance: DagsterInstance) -> None:
    ticks = Ticks(instance, _sensor())
    run = _run(instance)
    _settle(ticks)
    instance.handle_run_event(run.run_id, DagsterEvent(
        DagsterEventType.RUN_FAILURE.value, job_name=run.job_name))
    assert ticks.requested() == set()


def test_a_new_partition_is_requested_at_once(instance: DagsterInstance) -> None:
    ticks = Ticks(instance, _sensor())
    _settle(ticks)
    instance.add_dynamic_partitions("recs", ["b"])
    # Missing partitions are requested at once, the downstream one with its upstream.
    assert ticks.requested() == {("up", "b"), ("down", "b")}


def test_conditions_that_read_the_clock_turn_skipping_off() -> None:
    @asset(automation_condition=AutomationCondition.on_cron("0 * * * *"))
    def hourly() -> None:
        """Read the clock."""

    @asset(partitions_def=DailyPartitionsDefinition("2026-01-01"),
           automation_condition=AutomationCondition.missing())
    def daily() -> None:
        """Time-partitioned."""

    assert reads_only_automation_inputs(DEFS.get_repository_def().asset_graph) is None
    cron = reads_only_automation_inputs(Definitions(assets=[hourly]).get_repository_def()
                                        .asset_graph)
    assert cron is not None and "hourly" in cron
    window = reads_only_automation_inputs(Definitions(assets=[daily]).get_repository_def()
                                          .asset_graph)
    assert window == "daily is time-partitioned"


def test_the_project_sensor_skips_unchanged_ticks() -> None:
    from eval_assets.defs.automation import automation_sensor
    from eval_assets.defs.definitions import defs

    assert isinstance(automation_sensor, SkippingAutomationSensor)
    assert defs.get_repository_def().get_sensor_def(automation_sensor.name) is automation_sensor
    assert reads_only_automation_inputs(defs.get_repository_def().asset_graph) is None


@pytest.mark.parametrize("with_or_now", [False, True])
def test_seen_twice_is_the_operand_and_not_newly_true(with_or_now: bool) -> None:
    """``SeenTwice(X)`` (X evaluated once) fires where ``X & ~X.newly_true()`` does, tick by tick,
    and ``SeenTwice(X, or_now=H)`` where ``X & (~X.newly_true() | H)`` does, with X the
    project's "upstream updated since handled" and H its "the snapshot holds every run of it"
    (two copies of the same asset, one per form, read the same upstream; a run of both in
    flight for a while)."""
    from dagster import evaluate_automation_conditions

    from eval_assets.defs.automation_conditions import (
        _UPSTREAM_UPDATED,
        SeenTwice,
        SnapshotHoldsItsRuns,
    )

    held = SnapshotHoldsItsRuns() if with_or_now else None
    unseen = ~_UPSTREAM_UPDATED.newly_true()

    @asset(key="old_form", partitions_def=RECS, deps=[UP],
           automation_condition=_UPSTREAM_UPDATED & (unseen if held is None else unseen | held))
    def old_form() -> None:
        """Dagster's operators."""

    @asset(key="new_form", partitions_def=RECS, deps=[UP],
           automation_condition=SeenTwice(_UPSTREAM_UPDATED, or_now=held))
    def new_form() -> None:
        """Ours."""

    defs = Definitions(assets=[up, old_form, new_form])
    events: list[Callable[[DagsterInstance], object]] = [
        lambda i: None,
        lambda i: i.report_runless_asset_event(AssetMaterialization(UP, partition="a")),
        lambda i: None,
        lambda i: i.add_dynamic_partitions("recs", ["b"]),
        lambda i: i.report_runless_asset_event(AssetMaterialization(UP, partition="b")),
        lambda i: i.report_runless_asset_event(AssetMaterialization(UP, partition="a")),
        lambda i: None,
        lambda i: i.report_runless_asset_event(AssetMaterialization("old_form", partition="a")),
        lambda i: None,
        lambda i: runs.append(i.create_run_for_job(
            defs.resolve_implicit_global_asset_job_def(),
            asset_selection=frozenset({AssetKey("old_form"), AssetKey("new_form")}),
            tags={"dagster/partition": "b"}, status=DagsterRunStatus.STARTED)),
        lambda i: i.report_runless_asset_event(AssetMaterialization(UP, partition="b")),
        lambda i: i.report_dagster_event(DagsterEvent(
            DagsterEventType.RUN_SUCCESS.value, job_name=runs[0].job_name), runs[0].run_id),
        lambda i: None,
        lambda i: None,
    ]
    runs: list[DagsterRun] = []
    fired = []
    with DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions("recs", ["a"])
        cursor = None
        for event in events:
            event(instance)
            result = quietly(BetaWarning, lambda c=cursor: evaluate_automation_conditions(
                defs=defs, instance=instance, cursor=c))
            cursor = result.cursor
            old, new = (sorted(result.get_requested_partitions(AssetKey(k)))
                        for k in ("old_form", "new_form"))
            assert old == new, (len(fired), old, new)
            fired.append(old)
    assert any(fired), "neither form ever fired: the sequence tests nothing"
