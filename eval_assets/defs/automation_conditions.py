"""The automation conditions every asset carries (see :mod:`eval_assets.defs.automation`)."""

from __future__ import annotations

from typing import Any

from dagster import (
    AssetKey,
    AssetRecordsFilter,
    AssetSelection,
    AutomationCondition,
    AutomationContext,
    AutomationResult,
    DagsterEventType,
    DagsterInstance,
    EventRecordsFilter,
    RunStatusChangeRecordsFilter,
)
from dagster._core.asset_graph_view.serializable_entity_subset import SerializableEntitySubset
from dagster._core.event_api import RunStatusChangeEventType

from eval_assets.defs.keys import CELL_ASSETS, LEADERBOARD

OWNERS = ["team:robot-evals"]
"""Shown in the UI beside every asset."""

NIGHT_TAG = "eval_assets/night"
"""Run tag of nightly runs: its value (``YYYY-MM-DD``) makes every model answer afresh, and the
night's results are kept under ``history/<night>/``."""

def _cell_pending(in_progress: AutomationCondition | None = None,
                  label: str = "result pending") -> AutomationCondition:
    """A (recording, model) result that is running, or missing or stale without having failed.

    Missing cells of registered recordings are work still to come in this batch. A cell whose own
    run or whose metrics' runs failed is not waited for: the report shows it as missing.
    ``in_progress`` is what counts as running (default: Dagster's ``in_progress()``, a run or a
    backfill that targets the partition).
    """
    failed = (AutomationCondition.execution_failed()
              | AutomationCondition.any_deps_match(AutomationCondition.execution_failed()))
    # A present result whose own trigger fired and is not yet handled is stale: it will be
    # recomputed. (``will_be_requested`` cannot say so across partitions definitions.)
    stale = (AutomationCondition.newly_missing()
             | AutomationCondition.any_deps_updated()).since_last_handled()
    running = AutomationCondition.in_progress() if in_progress is None else in_progress
    return (running | AutomationCondition.will_be_requested()
            | ((AutomationCondition.missing() | stale) & ~failed)).with_label(label)


# Handled: requested by automation, or materialized by anything (a run of automation, a backfill,
# the nightly schedule, the CLI). Unlike Dagster's ``since_last_handled()``, the first evaluation
# (a fresh daemon, or a cursor reset) does not count as handled: ``eager()`` uses it and so never
# materializes partitions that are already missing when the daemon starts.
_HANDLED = AutomationCondition.newly_requested() | AutomationCondition.newly_updated()

_AT_ONCE = (
    AutomationCondition.newly_missing()
    | AutomationCondition.any_deps_match(AutomationCondition.will_be_requested())
).since(_HANDLED).with_label("newly missing (at the first look too), or upstream requested now")

# An upstream materialization or observation, as Dagster's ``any_deps_updated()`` sees it (less
# its ``will_be_requested`` part, above), and not handled since.
_UPSTREAM_UPDATED = (
    AutomationCondition.any_deps_match(
        AutomationCondition.newly_updated() & ~AutomationCondition.executed_with_root_target())
    .since(_HANDLED) & ~AutomationCondition.in_progress()
).with_label("upstream updated since handled, not in progress")


class SeenTwice(AutomationCondition[AssetKey]):
    """True where ``operand`` is true now and was at the previous evaluation, or, if ``or_now`` is
    given, where ``operand`` is newly true and ``or_now`` is true.

    Without ``or_now``, what ``operand & ~operand.newly_true()`` says; with it,
    ``operand & (~operand.newly_true() | or_now)``. The operand is evaluated once instead of
    twice: its true subset (over every partition, as ``newly_true`` does) is kept in this node's
    own cursor. On the project's graph the second copy was about 1,000 of 6,500 condition nodes
    per tick, each evaluated and written to the cursor. ``or_now`` is evaluated only where the
    operand is newly true. At the first evaluation nothing was seen before.
    """

    def __init__(self, operand: AutomationCondition[Any], label: str | None = None,
                 or_now: AutomationCondition[Any] | None = None) -> None:
        self.operand = operand
        self.or_now = or_now
        self._label = label

    def get_label(self) -> str | None:
        """Shown in the UI's condition tree (``with_label`` copies only Dagster's records)."""
        return self._label

    @property
    def name(self) -> str:
        """Shown in the UI's condition tree."""
        return "seen_twice"

    @property
    def description(self) -> str:
        """Shown in the UI's condition tree."""
        if self.or_now is None:
            return "True at this evaluation and at the previous one"
        return "True at this evaluation and at the previous one, or at this one where it may act"

    @property
    def children(self) -> list[AutomationCondition[AssetKey]]:
        """The operand (evaluated over every partition), then ``or_now`` if given."""
        return [self.operand] if self.or_now is None else [self.operand, self.or_now]

    async def evaluate(  # type: ignore[override]
            self, context: AutomationContext[AssetKey]) -> AutomationResult[AssetKey]:
        """The operand's true subset now, within the one kept from the previous evaluation or
        ``or_now``'s."""
        child = await context.for_child_condition(
            self.operand, child_indices=[0],
            # Over every partition, so the kept subset says where it was true, not only where
            # this evaluation's candidates were.
            candidate_subset=context.asset_graph_view.get_full_subset(key=context.key),
        ).evaluate_async()
        kept = context.get_structured_cursor(as_type=SerializableEntitySubset)
        before = (context.asset_graph_view.get_subset_from_serializable_subset(kept)
                  if kept else None) or context.get_empty_subset()
        now = context.candidate_subset.compute_intersection(child.true_subset)
        true = now.compute_intersection(before)
        results = [child]
        if self.or_now is not None:
            fresh = await context.for_child_condition(
                self.or_now, child_indices=[1],
                candidate_subset=now.compute_difference(before)).evaluate_async()
            results.append(fresh)
            true = true.compute_union(fresh.true_subset)
        return AutomationResult(context, true, child_results=results,
                                structured_cursor=child.true_subset.convert_to_serializable_subset())


_RUN_ENDS: tuple[RunStatusChangeEventType, ...] = (
    DagsterEventType.RUN_SUCCESS, DagsterEventType.RUN_FAILURE, DagsterEventType.RUN_CANCELED)
# More events than this after a snapshot (a tick lasts seconds): counted as "unsure everywhere".
_MANY = 10_000
EVERY_PARTITION = None
"""In :func:`written_after`: a write (or a run's plan) not of one partition, so of every one."""


def written_after(instance: DagsterInstance, key: AssetKey, last_event_id: int
                  ) -> set[str | None]:
    """The partitions of ``key`` whose writes the event log up to ``last_event_id`` may not all
    hold: materialized or planned after it, or planned by a run that ended after it. Runs still
    in flight are not looked for (a partition of theirs is in progress, which the caller reads
    first); one created since then planned after ``last_event_id``. Contains
    :data:`EVERY_PARTITION` for a write or plan not of a single partition (or too many to list).

    Queried at each call, per asset, on purpose: a run that ends while an evaluation goes on must
    be seen by the assets whose "in progress" was read after it ended.
    """
    storage = instance.event_log_storage
    records = list(instance.fetch_materializations(AssetRecordsFilter(
        asset_key=key, after_storage_id=last_event_id), limit=_MANY).records)
    records += storage.get_event_records(EventRecordsFilter(
        DagsterEventType.ASSET_MATERIALIZATION_PLANNED, asset_key=key,
        after_cursor=last_event_id), limit=_MANY)
    ended = {record.run_id for kind in _RUN_ENDS for record in instance.fetch_run_status_changes(
        RunStatusChangeRecordsFilter(kind, after_storage_id=last_event_id), limit=_MANY).records}
    for run_id in ended:
        records += [record for record in storage.get_records_for_run(
            run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION_PLANNED).records
            if record.asset_key == key]
    if len(records) >= _MANY or len(ended) >= _MANY:
        return {EVERY_PARTITION}
    return {record.partition_key for record in records}


class SnapshotHoldsItsRuns(AutomationCondition[AssetKey]):
    """True where the evaluation's snapshot of the event log (what its asset records were read
    from) already holds every write of the partition: no run that planned it ended after the
    snapshot was taken, and nothing has planned or materialized it since. There, what the
    evaluation reads of the partition is what it is: an upstream update need not be seen twice.
    Runs in flight are not looked at: use it where the partition is not in progress.

    Not serializable (Dagster's daemon evaluates only its own classes): evaluated by the project's
    automation sensor in the code server, as :class:`RequestedThisTick`.
    """

    @property
    def name(self) -> str:
        """Shown in the UI's condition tree."""
        return "snapshot_holds_its_runs"

    @property
    def description(self) -> str:
        """Shown in the UI's condition tree."""
        return "Every run of it had ended before this evaluation's snapshot"

    @property
    def requires_cursor(self) -> bool:
        """Read from the event log at each evaluation: nothing to keep between ticks."""
        return False

    def evaluate(self, context: AutomationContext[AssetKey]) -> AutomationResult[AssetKey]:
        """The candidates less the partitions :func:`written_after` the snapshot (a few queries
        per asset, whatever the number of partitions)."""
        view = context.asset_graph_view
        last = view.last_event_id
        if last is None or context.candidate_subset.is_empty:
            return AutomationResult(context, context.get_empty_subset())
        unsure = written_after(view.instance, context.key, last)
        if not unsure:
            return AutomationResult(context, context.candidate_subset)
        if EVERY_PARTITION in unsure:
            return AutomationResult(context, context.get_empty_subset())
        held = {candidate for candidate in
                context.candidate_subset.expensively_compute_asset_partitions()
                if candidate.partition_key not in unsure}
        return AutomationResult(context, view.get_asset_subset_from_asset_partitions(
            key=context.key, asset_partitions=held))


# Acted on at once where the tick's snapshot holds every write of the partition, else at the
# second evaluation in a row that sees it; with no run of the partition in progress at either.
# Why: a daemon tick reads materializations from the snapshot it takes when it starts (the asset
# records it prefetches) but asks whether a partition is in progress live, later. A cell's run
# (predictions, metrics, benchmark_results) that writes benchmark_results during a tick leaves it
# neither updated (snapshot) nor in progress (live) for that tick. And its metrics' updates
# trigger benchmark_results: ``executed_with_root_target()`` only looks at an asset's latest
# materialization of any partition, another cell's when two cells run. So that tick launched
# benchmark_results a second time. Now such a run ends after the snapshot: its partition waits
# for the second look, when a run that had written the upstream partition before the previous
# evaluation had also created its plan for this partition before it, so the partition was in
# progress then, or already materialized, and so in this tick's snapshot. Where the last run of
# the partition ended before the snapshot (a recording's chain updating cells whose last runs
# are long over, an edited model or judge), there is nothing to wait for: acting at the second
# look cost each propagation one automation tick (5-15 s). (Missing partitions and
# ``will_be_requested`` are not deferred: no run is in flight for them.)
_UPSTREAM_SETTLED = SeenTwice(
    _UPSTREAM_UPDATED, or_now=SnapshotHoldsItsRuns(),
    label="upstream updated, with every run of it ended before the snapshot or seen at two "
          "evaluations in a row, no run of it in progress")

# A dependency queued or running in a run that has not yet written it. Dagster's
# ``any_deps_in_progress()`` also counts a backfill that targets the dependency and whose daemon has
# not yet recorded it as done: the backfill daemon loops every 30 s, so a backfilled recording's
# cells waited up to 30 s after its run had ended (24 s in the end-to-end automation test). The
# dependency's own run says whether it is still being computed; a backfill's partition whose run
# is not created yet has not been updated either, so nothing downstream fires for it.
_DEPS_IN_A_RUN = AutomationCondition.any_deps_match(
    AutomationCondition.run_in_progress()).with_label("a dependency is in a run in progress")

EAGER = (
    AutomationCondition.in_latest_time_window()
    & (_AT_ONCE | _UPSTREAM_SETTLED)
    & ~AutomationCondition.any_deps_missing()
    & ~_DEPS_IN_A_RUN
    & ~AutomationCondition.in_progress()
).with_label("eager, including partitions missing at the first evaluation")
"""``AutomationCondition.eager()`` whose trigger survives the first evaluation, and whose upstream
updates are acted on once the tick's snapshot and the runs in flight agree."""

RECOMPUTE = (
    EAGER
    | (AutomationCondition.code_version_changed() & ~AutomationCondition.in_progress()
       & ~_DEPS_IN_A_RUN)
).with_label("missing, upstream data changed or code changed")

# A dependency whose own inputs changed and that is not requested in this evaluation: it will be
# recomputed later (the second look defers it), so what reads it now would read old content. A
# recording replaced under the same name updates a cell's labels and public cases together; the
# metrics saw the labels' update, the predictions' (one evaluation later) had not come, and the
# metrics scored the old answers against the new labels.
_DEP_STALE = AutomationCondition.any_deps_match(
    _UPSTREAM_UPDATED & ~AutomationCondition.will_be_requested()
).with_label("a dependency is stale and not requested now")


class RequestedThisTick(AutomationCondition[AssetKey]):
    """The partitions of the asset that the current evaluation requests, in whichever run.

    Dagster's ``will_be_requested()`` counts a request only when it can join the evaluated asset's
    own run (same partitions definition, identity mapping): a cell (recording × model) does not
    see its recording's dataset requested in the same evaluation, since that runs apart, one run
    per recording partition. Under ``any_deps_match`` this condition is evaluated on the
    dependency's partitions, mapped from the cell's by the dependency's own partition mapping, so
    cell ``model|alpha`` sees ``private_labels[alpha]`` requested.

    Not serializable (Dagster's daemon evaluates only its own classes): the automation sensor that
    evaluates it runs in the code server (:data:`eval_assets.defs.automation.automation_sensor`).
    """

    @property
    def name(self) -> str:
        """Shown in the UI's condition tree."""
        return "requested_this_tick"

    @property
    def description(self) -> str:
        """Shown in the UI's condition tree."""
        return "Requested in this evaluation, in any run"

    @property
    def requires_cursor(self) -> bool:
        """Read from the evaluation's own requests only: nothing to keep between ticks."""
        return False

    def evaluate(self, context: AutomationContext[AssetKey]) -> AutomationResult[AssetKey]:
        """The candidates requested by this tick so far (it evaluates upstream assets first)."""
        requested = context.request_subsets_by_key.get(context.key)
        if requested is None:
            return AutomationResult(context, context.get_empty_subset())
        return AutomationResult(context, context.candidate_subset.compute_intersection(requested))


# A dependency requested now in a run of its own: the recording's chain, which the cell cannot
# join. What reads it now would read the dataset while that run rewrites it (and answers to the
# old public cases would be scored against the new labels). The whole chain of a recording is
# requested in one evaluation (EAGER's upstream-requested-now trigger, within one partitions
# definition), so the cell's direct dependencies in it (public_cases, private_labels) say so.
# In the ticks after, the chain's run is in progress (``_DEPS_IN_A_RUN``), then its
# updates make the predictions stale (``_DEP_STALE``): the cell waits until it reads the new
# dataset with the new answers.
_DEP_REQUESTED_APART = AutomationCondition.any_deps_match(
    RequestedThisTick() & ~AutomationCondition.will_be_requested()
).with_label("a dependency is requested now in another run")

CELL_RECOMPUTE = (RECOMPUTE & ~_DEP_STALE & ~_DEP_REQUESTED_APART).with_label(
    "a cell's: missing, upstream data changed or code changed, once its inputs are current")
""":data:`RECOMPUTE` for the (recording, model) assets (predictions, metrics, results): they wait
while an input is itself about to change, so no cell is computed from a dataset, answers or
labels that are on their way out (a recording replaced under the same name).

That includes a dependency requested in the same evaluation from another partitions definition
(the recording's dataset; :class:`RequestedThisTick`), which Dagster's ``will_be_requested`` does
not see: a recording replaced in the same sensor tick as its label overrides (or a model entry)
are edited has its chain run first, then its cells answered and scored from the new dataset.
The metrics' provenance check (:mod:`eval_assets.scoring.provenance`) stays as the last guard."""

# Typed as any entity's condition: Dagster types ``since_last_handled`` for conditions on assets or
# checks, and code_version_changed() is typed for assets only, although both apply to assets here.
_CHANGED: AutomationCondition[Any] = (
    AutomationCondition.any_deps_updated() | AutomationCondition.code_version_changed())

SETTLED = (
    _CHANGED.since_last_handled()
    & ~AutomationCondition.any_deps_match(_cell_pending()) & ~AutomationCondition.in_progress()
).with_label("once per settled batch: every expected result present or failed")

_CELLS = AssetSelection.assets(*CELL_ASSETS)

# The report's other inputs (the dataset, the evidence, the label overrides): pending as a cell's
# result is, except that a backfill counts only through its runs (``_DEPS_IN_A_RUN``). Dagster's
# ``in_progress()`` counts a backfill's partitions until its daemon, looping every 30 s, has
# recorded them done: after a recording's backfill the leaderboard was rebuilt as soon as the
# cells were, and the report alone in a run of its own up to 30 s later (10 s and one run more
# in the end-to-end automation test). A backfill of these inputs whose runs its daemon has not
# created yet is not waited for: nothing of it is written, and what it writes makes the cells
# stale, so the board is built again after them. The cells themselves still count a backfill of
# theirs whose runs are not created yet.
_INPUT_PENDING = _cell_pending(AutomationCondition.run_in_progress(), label="input pending")

REPORT_SETTLED = (
    _CHANGED.since_last_handled()
    & ~AutomationCondition.any_deps_match(_cell_pending()).allow(_CELLS)
    & ~AutomationCondition.any_deps_match(_INPUT_PENDING).ignore(
        _CELLS | AssetSelection.assets(LEADERBOARD))
    & ~_DEPS_IN_A_RUN & ~AutomationCondition.in_progress()
).with_label("once per settled batch, in the same run as the leaderboard when that is rebuilt")
""":data:`SETTLED` for the report, except that the leaderboard requested in the same evaluation
does not hold it back: both are then requested together, and Dagster puts them in one run (one
partitions definition), the report's step after the leaderboard's. Waiting for the leaderboard's
own run cost a batch one more evaluation and one more run start (13-25 s a batch in the
end-to-end automation test). The report still waits for every other input, the cells included,
and for a leaderboard run in progress; a leaderboard that fails skips the report's step."""
