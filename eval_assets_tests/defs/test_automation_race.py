"""A cell's run that ends while an automation tick evaluates is not launched a second time.

Evaluated with Dagster's own evaluator on a real instance, as the daemon's automation sensor does.
The runs are made the way the daemon's are (created with their asset selection, so their assets'
materializations are planned; then materialized, then ended); only their timing is chosen: one
run writes ``benchmark_results`` and ends right after the tick has taken its snapshot of the asset
records, before it asks what is in progress. That is the window in which the daemon launched a
second ``benchmark_results`` run for a cell whose run had just materialized it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from dagster import (
    AssetKey,
    AssetMaterialization,
    AssetObservation,
    DagsterEvent,
    DagsterEventType,
    DagsterInstance,
    DagsterRun,
    MultiPartitionKey,
    build_sensor_context,
)
from dagster._core.definitions.data_version import DATA_VERSION_TAG
from dagster._core.definitions.declarative_automation.automation_condition_evaluator import (
    AutomationConditionEvaluator,
)
from dagster._core.definitions.sensor_definition import SensorType
from dagster._core.events import StepMaterializationData
from dagster._core.storage.dagster_run import DagsterRunStatus

from eval_assets.defs import keys
from eval_assets.defs.automation_conditions import EVERY_PARTITION, written_after
from eval_assets.defs.local.conditions import Conditions
from eval_assets.defs.partitions import MODEL_DIM, RECORDING_DIM, model_partitions
from eval_assets.scoring.circular import CIRCULAR
from eval_assets.scoring.judge import JUDGE
from eval_assets.scoring.mcq import MCQ
from eval_assets.scoring.numeric import NUMERIC
from eval_assets.scoring.pope import POPE
from eval_assets.scoring.vqa import VQA

RECORDINGS = ("alpha", "bravo")
JUDGED = (keys.METRICS[JUDGE.name], keys.BENCHMARK_RESULTS)


class Ticks:
    """Evaluations in sequence, each from the previous one's cursor, as the daemon's ticks."""

    def __init__(self, instance: DagsterInstance) -> None:
        from eval_assets.defs.definitions import defs

        self.conditions = Conditions(defs, instance)
        self.graph = defs.resolve_asset_graph()
        self.cursor = None

    def tick(self) -> set[tuple[str, str | None]]:
        """One evaluation: the (asset, partition) pairs it requests."""
        result = self.conditions.evaluate(self.cursor)
        self.cursor = result.cursor
        return {(key.path[-1], None if p is None else str(p))
                for key in self.graph.materializable_asset_keys
                if result.get_num_requested(key) for p in result.get_requested_partitions(key)}


def _cell(recording: str, model: int = 0) -> MultiPartitionKey:
    return MultiPartitionKey({RECORDING_DIM: recording,
                              MODEL_DIM: model_partitions.get_partition_keys()[model]})


def populate(instance: DagsterInstance, recordings: tuple[str, ...],
             pending: frozenset[tuple[AssetKey, str]] = frozenset()) -> None:
    """``recordings`` registered, every asset materialized and every input observed, except the
    cell assets named in ``pending`` as (asset, recording), left unmaterialized for every model."""
    instance.add_dynamic_partitions("recordings", list(recordings))
    observed: list[tuple[AssetKey, str | None]] = [(keys.JUDGE_CONFIG, None)]
    observed += [(keys.MODEL_CONFIG, m) for m in model_partitions.get_partition_keys()]
    for recording in recordings:
        observed += [(keys.RECORDING_FILE, recording), (keys.LABEL_OVERRIDES, recording)]
        for key in keys.RECORDING_CHAIN:
            instance.report_runless_asset_event(AssetMaterialization(key, partition=recording))
        for cell in (MultiPartitionKey({RECORDING_DIM: recording, MODEL_DIM: m})
                     for m in model_partitions.get_partition_keys()):
            for key in keys.CELL_ASSETS:
                if (key, recording) not in pending:
                    instance.report_runless_asset_event(AssetMaterialization(key, partition=cell))
    for key, partition in observed:
        instance.report_runless_asset_event(AssetObservation(
            key, partition=partition, tags={DATA_VERSION_TAG: "v1"}))
    for key in (keys.LEADERBOARD, keys.REPORT):
        instance.report_runless_asset_event(AssetMaterialization(key))


@pytest.fixture
def instance() -> Iterator[DagsterInstance]:
    """Two recordings and every asset materialized, inputs observed: nothing left to do."""
    with DagsterInstance.ephemeral() as instance:
        populate(instance, RECORDINGS)
        yield instance


def _start_run(instance: DagsterInstance, recording: str, assets: tuple[AssetKey, ...],
               model: int = 0) -> DagsterRun:
    """A run of ``assets`` for the recording's cell, started: its materializations are planned."""
    from eval_assets.defs.definitions import defs

    cell = _cell(recording, model)
    return instance.create_run_for_job(
        defs.resolve_implicit_global_asset_job_def(), asset_selection=frozenset(assets),
        tags={"dagster/partition": str(cell),
              **{f"dagster/partition/{dim}": key for dim, key in cell.keys_by_dimension.items()}},
        status=DagsterRunStatus.STARTED)


def _materialize(instance: DagsterInstance, run: DagsterRun, key: AssetKey) -> None:
    partition = str(run.tags["dagster/partition"])
    instance.report_dagster_event(DagsterEvent(
        DagsterEventType.ASSET_MATERIALIZATION.value, job_name=run.job_name,
        event_specific_data=StepMaterializationData(AssetMaterialization(key, partition=partition)),
    ), run.run_id)


def _end(instance: DagsterInstance, run: DagsterRun) -> None:
    instance.report_dagster_event(DagsterEvent(DagsterEventType.RUN_SUCCESS.value,
                                               job_name=run.job_name), run.run_id)


def _after_the_snapshot(monkeypatch: pytest.MonkeyPatch, action: Callable[[], None]) -> None:
    """Run ``action`` once, in the next evaluation, right after it prefetched the asset records."""
    prefetch = AutomationConditionEvaluator.prefetch

    def prefetch_then_act(self: AutomationConditionEvaluator) -> None:
        prefetch(self)
        monkeypatch.setattr(AutomationConditionEvaluator, "prefetch", prefetch)
        action()

    monkeypatch.setattr(AutomationConditionEvaluator, "prefetch", prefetch_then_act)


def _judge_edited(instance: DagsterInstance, ticks: Ticks) -> set[tuple[str, str | None]]:
    """Observe a new judge config; the next tick's requests (no run of the judged assets is in
    flight: acted on at once)."""
    instance.report_runless_asset_event(AssetObservation(
        keys.JUDGE_CONFIG, tags={DATA_VERSION_TAG: "v2"}))
    return ticks.tick()


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::dagster.BetaWarning")
def test_a_run_ending_during_a_tick_is_not_launched_again(
        instance: DagsterInstance, monkeypatch: pytest.MonkeyPatch) -> None:
    ticks = Ticks(instance)
    assert ticks.tick() == set()
    models = len(model_partitions.get_partition_keys())
    requested = _judge_edited(instance, ticks)
    assert len(requested) == len(JUDGED) * len(RECORDINGS) * models, requested

    # The daemon launches one run per cell; they start, and write the judge metric, alpha's
    # first: the metric's latest materialization is bravo's.
    runs = {recording: _start_run(instance, recording, JUDGED) for recording in RECORDINGS}
    assert ticks.tick() == set()
    for recording in RECORDINGS:
        _materialize(instance, runs[recording], keys.METRICS[JUDGE.name])
    assert ticks.tick() == set()

    # Alpha's run writes benchmark_results and ends while the next tick evaluates.
    def alpha_ends() -> None:
        _materialize(instance, runs["alpha"], keys.BENCHMARK_RESULTS)
        _end(instance, runs["alpha"])

    _after_the_snapshot(monkeypatch, alpha_ends)
    assert ticks.tick() == set(), "alpha's benchmark_results launched again"
    assert instance.get_run_by_id(runs["alpha"].run_id).status == DagsterRunStatus.SUCCESS
    assert ticks.tick() == set()

    # Bravo's ends between ticks. Nothing more to do for either cell (the leaderboard and
    # report follow; they are not what this test is about).
    _materialize(instance, runs["bravo"], keys.BENCHMARK_RESULTS)
    _end(instance, runs["bravo"])
    for _ in range(2):
        assert not {(a, p) for a, p in ticks.tick() if p is not None}


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::dagster.BetaWarning")
def test_a_cell_whose_run_ended_after_the_snapshot_waits_for_the_second_look(
        instance: DagsterInstance, monkeypatch: pytest.MonkeyPatch) -> None:
    """The judge's config is edited while a run of alpha's judged assets is in flight; that run
    ends (without writing them) after the next tick's snapshot. That tick cannot know what the
    run wrote: alpha's judged assets wait for the next one. Every other cell's last run had
    ended long before: acted on at once."""
    ticks = Ticks(instance)
    assert ticks.tick() == set()
    run = _start_run(instance, "alpha", JUDGED)
    assert ticks.tick() == set()
    instance.report_runless_asset_event(AssetObservation(
        keys.JUDGE_CONFIG, tags={DATA_VERSION_TAG: "v2"}))
    _after_the_snapshot(monkeypatch, lambda: _end(instance, run))
    alpha = str(_cell("alpha"))
    others = {(k.path[-1], str(_cell(r, m))) for k in JUDGED for r in RECORDINGS
              for m in range(len(model_partitions.get_partition_keys()))} - {
        (k.path[-1], alpha) for k in JUDGED}
    assert ticks.tick() == others
    assert instance.get_run_by_id(run.run_id).status == DagsterRunStatus.SUCCESS
    assert ticks.tick() == {(k.path[-1], alpha) for k in JUDGED}


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::dagster.BetaWarning")
def test_an_upstream_update_by_a_run_without_it_is_followed(instance: DagsterInstance) -> None:
    """A metric materialized alone (from the UI, say) makes its cell's benchmark_results stale:
    requested once, at the first tick that sees it, since no run of it was in flight."""
    ticks = Ticks(instance)
    assert ticks.tick() == set()
    run = _start_run(instance, "alpha", (keys.METRICS[VQA.name],))
    _materialize(instance, run, keys.METRICS[VQA.name])
    _end(instance, run)
    cell = str(_cell("alpha"))
    assert ticks.tick() == {(keys.BENCHMARK_RESULTS.path[-1], cell)}
    assert not {(a, p) for a, p in ticks.tick() if p is not None}


def test_what_a_snapshot_may_lack_of_a_partition(instance: DagsterInstance) -> None:
    """What lets an update be acted on at the first look: nothing planned or wrote the partition
    after the snapshot's last event, and no run that planned it ended after it (runs in flight
    are the caller's "in progress")."""
    cell = str(_cell("alpha"))

    def unsure(key: AssetKey, last: int) -> set[str | None]:
        return written_after(instance, key, last)

    def newest() -> int:
        return instance.event_log_storage.get_maximum_record_id() or 0

    # Populated by events without runs: nothing planned, nothing in flight.
    before = newest()
    assert unsure(keys.BENCHMARK_RESULTS, before) == set()
    run = _start_run(instance, "alpha", (keys.METRICS[VQA.name], keys.BENCHMARK_RESULTS))
    assert unsure(keys.BENCHMARK_RESULTS, before) == {cell}, "planned after the snapshot"
    planned = newest()
    assert unsure(keys.BENCHMARK_RESULTS, planned) == set(), "in flight: the caller's"
    _materialize(instance, run, keys.METRICS[VQA.name])
    _materialize(instance, run, keys.BENCHMARK_RESULTS)
    assert unsure(keys.BENCHMARK_RESULTS, planned) == {cell}, "written after the snapshot"
    written = newest()
    _end(instance, run)
    assert unsure(keys.BENCHMARK_RESULTS, written) == {cell}, "its run ended after the snapshot"
    assert unsure(keys.PREDICTIONS, written) == set(), "not planned by that run"
    assert unsure(keys.BENCHMARK_RESULTS, newest()) == set()
    snapshot = newest()
    instance.report_runless_asset_event(
        AssetMaterialization(keys.BENCHMARK_RESULTS, partition=cell))
    assert unsure(keys.BENCHMARK_RESULTS, snapshot) == {cell}, "written without a run"
    assert unsure(keys.METRICS[VQA.name], snapshot) == set()
    instance.report_runless_asset_event(AssetMaterialization(keys.LEADERBOARD))
    assert unsure(keys.LEADERBOARD, snapshot) == {EVERY_PARTITION}, "unpartitioned: all of it"


LABEL_METRICS = tuple(keys.METRICS[spec.name] for spec in (VQA, CIRCULAR, POPE, MCQ, NUMERIC))


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::dagster.BetaWarning")
def test_a_cell_waits_for_its_answers_and_the_board_for_every_cell(
        instance: DagsterInstance) -> None:
    """Alpha's dataset is rebuilt (a replaced recording) and its label overrides edited at the
    same moment. The daemon's ticks never ask for a metric of alpha's cells before, or without,
    their predictions (the metrics would score the old answers against the new labels), and
    never for the leaderboard or report while any of those is still to come."""
    ticks = Ticks(instance)
    # Graph order, every asset (the chain's too: a per-recording asset downstream of the dataset
    # is requested once the dataset is written).
    graph_order = [key.path[-1] for key in ticks.graph.toposorted_asset_keys]
    assert ticks.tick() == set()
    # The edit, and alpha's new dataset written (by a run of the replaced recording's chain),
    # before the next tick.
    instance.report_runless_asset_event(AssetObservation(
        keys.LABEL_OVERRIDES, partition="alpha", tags={DATA_VERSION_TAG: "v2"}))
    for key in (keys.PUBLIC_CASES, keys.PRIVATE_LABELS):
        instance.report_runless_asset_event(AssetMaterialization(key, partition="alpha"))
    cells = {str(_cell("alpha", m)) for m in range(len(model_partitions.get_partition_keys()))}
    answered: set[str] = set()  # cells whose predictions were materialized again
    done: list[tuple[str, str | None]] = []
    for _ in range(8):
        requested = ticks.tick()
        for cell in cells:
            metrics = {a for a, p in requested if p == cell and a in
                       {k.path[-1] for k in LABEL_METRICS}}
            if metrics and cell not in answered:
                assert (keys.PREDICTIONS.path[-1], cell) in requested, (metrics, requested)
        if {(keys.LEADERBOARD.path[-1], None), (keys.REPORT.path[-1], None)} & requested:
            # Every cell of alpha answered again, and its metrics and results came after.
            assert answered == cells, (answered, done)
            for cell in cells:
                order = [a for a, p in done if p == cell]
                assert order.index(keys.PREDICTIONS.path[-1]) < min(
                    order.index(k.path[-1]) for k in LABEL_METRICS), order
                assert order[-1] == keys.BENCHMARK_RESULTS.path[-1], order
        # The daemon's runs: each request materialized, in graph order within its partition.
        for asset, partition in sorted(requested, key=lambda r: graph_order.index(r[0])):
            instance.report_runless_asset_event(AssetMaterialization(asset, partition=partition))
            done.append((asset, partition))
            if asset == keys.PREDICTIONS.path[-1] and partition is not None:
                answered.add(partition)
    assert ("report", None) in done and answered == cells, done



@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::dagster.BetaWarning")
@pytest.mark.parametrize("edited", [keys.LABEL_OVERRIDES, keys.MODEL_CONFIG],
                         ids=["label-overrides", "model-entry"])
def test_a_cell_waits_for_its_recording_chain_requested_in_the_same_tick(
        instance: DagsterInstance, edited: AssetKey) -> None:
    """Alpha's recording is replaced under the same name and, in the same sensor tick, alpha's
    label overrides (or the first model's entry) are edited: the tick that requests alpha's chain
    (recording partitions) would also request its cells' metrics (or predictions), triggered by
    the edit, in runs of their own that read the dataset while the chain rewrites it. No cell of
    alpha is requested before the chain has written the new dataset; then each is answered and
    scored once, the metrics with or after the new answers, and the board comes last."""
    ticks = Ticks(instance)
    assert ticks.tick() == set()
    first_model = model_partitions.get_partition_keys()[0]
    for source, observed in ((keys.RECORDING_FILE, "alpha"),
                             (edited, "alpha" if edited == keys.LABEL_OVERRIDES else first_model)):
        instance.report_runless_asset_event(AssetObservation(
            source, partition=observed, tags={DATA_VERSION_TAG: "v2"}))
    order = [key.path[-1] for key in ticks.graph.toposorted_asset_keys]
    chain = {key.path[-1] for key in keys.RECORDING_CHAIN}
    cells = {str(_cell("alpha", m)) for m in range(len(model_partitions.get_partition_keys()))}
    label_metrics = {k.path[-1] for k in LABEL_METRICS}
    prediction = keys.PREDICTIONS.path[-1]
    done: list[tuple[int, str, str | None]] = []  # (tick, asset, partition) as the runs wrote
    for number in range(10):
        requested = ticks.tick()
        chain_now = {(a, p) for a, p in requested if a in chain and p == "alpha"}
        chain_done = [n for n, a, p in done if a == keys.PRIVATE_LABELS.path[-1] and p == "alpha"]
        for asset, partition in requested:
            if partition not in cells:
                continue
            # No cell of alpha in the tick that requests its chain, nor before the chain ran.
            assert not chain_now and chain_done, (number, asset, partition, sorted(requested))
            if asset in label_metrics and not any(
                    a == prediction and p == partition and n > chain_done[0] for n, a, p in done):
                assert (prediction, partition) in requested, (number, asset, sorted(requested))
        for asset, partition in sorted(requested, key=lambda r: order.index(r[0])):
            instance.report_runless_asset_event(AssetMaterialization(asset, partition=partition))
            done.append((number, asset, partition))
    assert ("report", None) in {(a, p) for _, a, p in done}, done
    for cell in cells:
        runs = [a for _, a, p in done if p == cell]
        # Each asset of the cell once (answered and scored from the new dataset, no second run),
        # the label metrics after the answers, the results last.
        assert runs.count(prediction) == 1 and runs[-1] == keys.BENCHMARK_RESULTS.path[-1], runs
        assert all(runs.count(m) == 1 and runs.index(m) > runs.index(prediction)
                   for m in label_metrics), runs


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::dagster.BetaWarning")
def test_a_backfilled_recordings_cells_follow_its_run_not_the_backfill_daemon(
        instance: DagsterInstance) -> None:
    """A backfill of alpha's chain: its cells wait while the backfill's run is in progress, and
    are requested once the run has ended, although the backfill still reads as requested (its
    daemon marks it done at its next iteration, up to 30 s later); so are the leaderboard and
    the report once the cells' runs have ended."""
    from dagster._core.execution.backfill import BulkActionStatus, PartitionBackfill

    from eval_assets.defs.definitions import defs

    ticks = Ticks(instance)
    assert ticks.tick() == set()
    backfill = PartitionBackfill.from_asset_partitions(
        backfill_id="alphachain", asset_graph=ticks.graph, partition_names=["alpha"],
        asset_selection=keys.RECORDING_CHAIN, backfill_timestamp=0.0, tags={},
        dynamic_partitions_store=instance, all_partitions=False, title=None, description=None,
        run_config=None)
    instance.add_backfill(backfill)
    run = instance.create_run_for_job(
        defs.resolve_implicit_global_asset_job_def(),
        asset_selection=frozenset(keys.RECORDING_CHAIN),
        tags={"dagster/partition": "alpha", "dagster/backfill": backfill.backfill_id},
        status=DagsterRunStatus.STARTED)
    # The run has not yet written the dataset (public cases and labels): the cells wait for it.
    written = keys.RECORDING_CHAIN.index(keys.PUBLIC_CASES)
    for key in keys.RECORDING_CHAIN[:written]:
        _materialize(instance, run, key)
    for _ in range(3):
        assert not {(a, p) for a, p in ticks.tick() if p is not None}
    for key in keys.RECORDING_CHAIN[written:]:
        _materialize(instance, run, key)
    _end(instance, run)
    backfills = instance.get_backfills(status=BulkActionStatus.REQUESTED)
    assert [b.backfill_id for b in backfills] == [backfill.backfill_id]
    # The chain's run ended before the tick; the cells' last runs long before: at once.
    requested = ticks.tick()
    cells = {str(_cell("alpha", m)) for m in range(len(model_partitions.get_partition_keys()))}
    assert {(k.path[-1], c) for k in keys.CELL_ASSETS for c in cells} <= requested, (
        sorted(requested))
    assert not {p for _, p in requested if p is not None} - cells, sorted(requested)
    # The cells' runs end while the backfill still reads as requested: the leaderboard and the
    # report are requested together (one run), not the report alone once the backfill daemon
    # has looked again.
    for model in range(len(cells)):
        cell_run = _start_run(instance, "alpha", keys.CELL_ASSETS, model=model)
        for key in keys.CELL_ASSETS:
            _materialize(instance, cell_run, key)
        _end(instance, cell_run)
    assert [b.backfill_id for b in instance.get_backfills(status=BulkActionStatus.REQUESTED)
            ] == [backfill.backfill_id]
    board: set[tuple[str, str | None]] = set()
    for _ in range(2):
        if board := {(a, p) for a, p in ticks.tick() if p is None}:
            break
    assert board == {("leaderboard", None), ("report", None)}, sorted(board)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::dagster.BetaWarning")
def test_the_automation_sensor_evaluates_the_cells_condition_in_the_code_server() -> None:
    """The cells' condition has a class of ours (not deserializable by the daemon): the automation
    sensor evaluates it in the code server, as the daemon's sensor loop asks it to. Once two
    evaluations in a row have seen nothing new, it skips ticks; alpha's recording replaced and its
    label overrides edited together: at the tick that acts on both, the sensor requests alpha's
    chain and no cell of alpha."""
    from eval_assets.defs.automation import automation_sensor
    from eval_assets.defs.definitions import defs

    assert automation_sensor.sensor_type == SensorType.AUTOMATION
    with DagsterInstance.ephemeral() as instance:
        populate(instance, RECORDINGS)

        skipped = []

        def tick(cursor: str | None) -> tuple[set[tuple[str, str | None]], str | None]:
            data = automation_sensor.evaluate_tick(build_sensor_context(
                instance=instance, repository_def=defs.get_repository_def(), cursor=cursor))
            skipped.append("nothing the conditions read has changed" in (data.skip_message or ""))
            return ({(key.path[-1], request.partition_key) for request in data.run_requests or []
                     for key in request.asset_selection or []}, data.cursor)

        requested, cursor = tick(None)
        assert requested == set()
        requested, kept = tick(cursor)
        assert requested == set()
        requested, cursor = tick(kept)
        assert requested == set() and cursor == kept and skipped == [False, False, True]
        for key in (keys.RECORDING_FILE, keys.LABEL_OVERRIDES):
            instance.report_runless_asset_event(AssetObservation(
                key, partition="alpha", tags={DATA_VERSION_TAG: "v2"}))
        # The first look at the new versions acts: no run of alpha is in flight.
        requested, cursor = tick(cursor)
        chain = {key.path[-1] for key in keys.RECORDING_CHAIN}
        assert {asset for asset, _ in requested} == chain, requested
        assert {partition for _, partition in requested} == {"alpha"}, requested
        assert skipped[3:] == [False], "the tick after the new versions was skipped"
