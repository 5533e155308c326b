"""Counting what automation did on a real instance: runs and materializations read back over
GraphQL, grouped into the phases of a scenario (see ``test_automation.py``)."""

from __future__ import annotations

import os
import shutil
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

from eval_assets.atomic import write_text_atomic
from eval_assets.defs import keys
from eval_assets.layout import selection_file_for
from eval_assets_tests.e2e.dagster_services import DagsterServices

REPOSITORY = {"repositoryLocationName": "eval_assets", "repositoryName": "__repository__"}
AUTOMATION_SENSOR = "eval_assets_automation"
RECORDINGS_SENSOR = "recordings_sensor"

BOARD = [keys.LEADERBOARD, keys.REPORT]
ACTIVE = {"QUEUED", "NOT_STARTED", "STARTING", "STARTED", "MANAGED", "CANCELING"}
BACKFILL_ACTIVE = {"REQUESTED", "CANCELING", "FAILING"}
UNPARTITIONED = "—"

RUNS_BRIEF = """
query { runsOrError { ... on Runs { results {
  runId status creationTime endTime tags { key value } } } } }"""

RUNS_FULL = """
query {
  runsOrError {
    ... on Runs {
      results {
        runId jobName status creationTime startTime endTime
        tags { key value }
        stepStats { stepKey status }
        assetMaterializations { assetKey { path } partition }
      }
    }
  }
}"""

TICKS = """
query Ticks($selector: SensorSelector!) {
  sensorOrError(sensorSelector: $selector) {
    __typename
    ... on Sensor { sensorState { ticks(limit: 10) {
      status timestamp endTimestamp runIds error { message } } } }
    ... on PythonError { message }
  }
}"""

MATERIALIZATIONS = """
query Mats($key: AssetKeyInput!) {
  assetOrError(assetKey: $key) {
    ... on Asset { assetMaterializations(limit: 100) { runId timestamp } }
  }
}"""

BACKFILL = """
mutation Backfill($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message }
    ... on InvalidSubsetError { message }
    ... on UnauthorizedError { message }
  }
}"""

START_SCHEDULE = """
mutation Start($selector: ScheduleSelector!) {
  startSchedule(scheduleSelector: $selector) {
    __typename
    ... on ScheduleStateResult { scheduleState { id status } }
    ... on PythonError { message }
    ... on UnauthorizedError { message }
  }
}"""

STOP_SCHEDULE = """
mutation Stop($id: String!) {
  stopRunningSchedule(id: $id) {
    __typename
    ... on ScheduleStateResult { scheduleState { id status } }
    ... on PythonError { message }
    ... on UnauthorizedError { message }
  }
}"""

SCHEDULE_STATE = """
query State($selector: ScheduleSelector!) {
  scheduleOrError(scheduleSelector: $selector) {
    __typename
    ... on Schedule { scheduleState { status ticks(limit: 1) { status timestamp } } }
    ... on PythonError { message }
  }
}"""

BACKFILLS = """
query { partitionBackfillsOrError { ... on PartitionBackfills { results { id status } } } }"""


@dataclass
class Run:
    """One run as GraphQL reports it, reduced to what the assertions count."""

    run_id: str
    status: str
    created: float
    started: float | None
    ended: float | None
    partition_tag: str | None
    backfill: str | None
    tags: dict[str, str]
    steps: list[str]
    materialized: list[tuple[str, str]]  # (asset, partition label)

    @classmethod
    def parse(cls, raw: dict) -> Run:
        tags = {t["key"]: t["value"] for t in raw["tags"]}
        return cls(
            run_id=raw["runId"], status=raw["status"], created=raw["creationTime"],
            started=raw["startTime"], ended=raw["endTime"],
            partition_tag=tags.get("dagster/partition"), backfill=tags.get("dagster/backfill"),
            tags=tags,
            steps=[s["stepKey"] for s in raw["stepStats"] if s["status"] == "SUCCESS"],
            materialized=[(m["assetKey"]["path"][-1], label(m["partition"]))
                          for m in raw["assetMaterializations"]],
        )

    @property
    def partitions(self) -> set[str]:
        """The partitions this run materialized (one, for every run automation launches)."""
        return {partition for _, partition in self.materialized}


@dataclass
class Phase:
    """One phase of the scenario: its name, when it began, and the runs created during it."""

    name: str
    began: float
    runs: list[Run] = field(default_factory=list)
    settled: float | None = None  # when wait_settled saw it settled (for the timing table)

    def materializations(self) -> Counter[tuple[str, str]]:
        """How often each (asset, partition) was materialized in this phase."""
        return Counter(m for run in self.runs for m in run.materialized)

    def runs_of(self, partition: str) -> list[Run]:
        return [run for run in self.runs if partition in run.partitions]

    def redundant(self) -> list[str]:
        """Runs that materialized nothing new: nothing at all, or only (asset, partition) pairs
        that an earlier run of the phase had already materialized."""
        seen: set[tuple[str, str]] = set()
        redundant = []
        for run in sorted(self.runs, key=lambda r: r.created):
            if not set(run.materialized) - seen:
                what = ", ".join(f"{a} {p}" for a, p in sorted(set(run.materialized)))
                redundant.append(f"{run.run_id[:8]} ({what or 'nothing'})")
            seen.update(run.materialized)
        return redundant


def label(partition: str | None) -> str:
    """A partition key as the table shows it: ``alpha``, ``alpha×random`` or ``—``."""
    if partition is None:
        return UNPARTITIONED
    if "|" in partition:
        # A multi-partition key joins its dimensions in name order: model, then recording.
        model, recording = partition.split("|")
        return f"{recording}×{model}"
    return partition


def drop_recording(sample: Path, watched: Path, name: str, *, selection: str | None = None
                   ) -> None:
    """Put a finished recording into the watched folder in one rename, its mtime an hour back;
    with ``selection``, its ``<name>.selection.yaml`` (frame selection) lands first."""
    if selection is not None:
        write_text_atomic(selection_file_for(watched / f"{name}.db"), selection)
    staging = watched.parent / f"{name}.db.staging"
    shutil.copy(sample, staging)
    an_hour_ago = time.time() - 3600
    os.utime(staging, (an_hour_ago, an_hour_ago))  # "settled": no write for longer than quiet_s
    os.replace(staging, watched / f"{name}.db")


def start_schedule(services: DagsterServices, schedule: str) -> str:
    """Start ``schedule`` over GraphQL; its state's id, to stop it with."""
    data = services.graphql(START_SCHEDULE, {"selector": {
        **REPOSITORY, "scheduleName": schedule}})["startSchedule"]
    assert data["__typename"] == "ScheduleStateResult", data
    assert data["scheduleState"]["status"] == "RUNNING", data
    return data["scheduleState"]["id"]


def stop_schedule(services: DagsterServices, schedule: str, state_id: str,
                  timeout_s: float = 60) -> None:
    """Stop ``schedule`` (its state is ``state_id``) once its tick in flight has ended, and see
    that it stays stopped.

    Dagster's scheduler ends each iteration by writing back the schedule's state as it read it
    when the iteration began (RUNNING, with the new iteration time): a stop that lands while a
    tick is still launching its runs is undone. The schedule then ticked on, and at the next
    minute launched the night's runs of a recording registered since. So: wait until no tick is
    in flight, stop, and read the state back until it has stayed STOPPED for 3 s, stopping it
    again if it was undone.
    """
    selector = {**REPOSITORY, "scheduleName": schedule}
    deadline = time.monotonic() + timeout_s
    stopped_at: float | None = None
    while time.monotonic() < deadline:
        data = services.graphql(SCHEDULE_STATE, {"selector": selector})["scheduleOrError"]
        assert data["__typename"] == "Schedule", data
        state = data["scheduleState"]
        if state["ticks"] and state["ticks"][0]["status"] == "STARTED":
            stopped_at = None
        elif state["status"] == "RUNNING":
            result = services.graphql(STOP_SCHEDULE, {"id": state_id})["stopRunningSchedule"]
            assert result["__typename"] == "ScheduleStateResult", result
            assert result["scheduleState"]["status"] == "STOPPED", result
            stopped_at = time.monotonic()
        elif stopped_at is None:  # already stopped, the tick ended: from now on it must stay so
            stopped_at = time.monotonic()
        elif time.monotonic() - stopped_at >= 3:
            return
        time.sleep(0.5)
    raise AssertionError(f"schedule {schedule} did not stay stopped\n{daemon_log(services)}")


def sensor_ticks(services: DagsterServices, sensor: str) -> list[dict]:
    """The sensor's latest ticks, newest first; a failed tick fails the test with its error."""
    selector = {**REPOSITORY, "sensorName": sensor}
    data = services.graphql(TICKS, {"selector": selector})["sensorOrError"]
    assert data["__typename"] == "Sensor", data
    ticks = data["sensorState"]["ticks"]
    for tick in ticks:
        assert tick["status"] != "FAILURE", f"{sensor} tick failed: {tick['error']}"
    return ticks


def done_ticks_after(services: DagsterServices, sensor: str, moment: float) -> int:
    """Finished ticks of ``sensor`` that started after ``moment``."""
    return sum(1 for t in sensor_ticks(services, sensor)
               if t["status"] != "STARTED" and t["timestamp"] > moment)


def materialization_count(services: DagsterServices, key, since: float) -> int:
    data = services.graphql(MATERIALIZATIONS, {"key": {"path": key.path}})["assetOrError"]
    return sum(1 for m in data["assetMaterializations"] if int(m["timestamp"]) / 1000 > since)


def daemon_log(services: DagsterServices) -> str:
    return (services.home / "daemon.log").read_text(errors="replace")[-4000:]


def wait_settled(services: DagsterServices, phase: Phase, *, reports: int,
                 timeout_s: float = 900) -> None:
    """Wait until the phase's work is done and the automation ticks after it found nothing more.

    Done: at least ``reports`` report materializations since the phase began, no backfill in
    progress (automation requests several partitions as one), no run queued or running. Then two
    automation ticks that started after the last partition run ended must pass without a new run
    or backfill (an upstream update is acted on at the second tick that sees it where a run of
    its asset ended after the first one's snapshot), and one that
    started after the last leaderboard / report run ended: only then can the counts be final.
    One tick is enough after the board's run: the leaderboard and the report have no downstream
    asset, so their materializations trigger nothing, and their own conditions act at the first
    look (a cell that ended while they ran makes them stale at once, no second look). The
    partition runs had ended before the board was requested, so their updates were seen by the
    tick that requested it and by the ones during its run: two more ticks after the board cost
    every phase ~5 s and could not see anything new.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for proc in services.processes:
            assert proc.poll() is None, f"{proc.args[0]} exited:\n{daemon_log(services)}"
        # While a run is active, only the runs are read (one query a second; five a look cost
        # the webserver twice the CPU). Then ticks first, runs second: a tick read as finished
        # has its runs already created.
        if _active_runs(services, phase):
            time.sleep(1)
            continue
        automation = sensor_ticks(services, AUTOMATION_SENSOR)
        sensor_ticks(services, RECORDINGS_SENSOR)
        runs = [r for r in services.graphql(RUNS_BRIEF)["runsOrError"]["results"]
                if r["creationTime"] >= phase.began]
        failed = [r for r in runs if r["status"] in ("FAILURE", "CANCELED")]
        assert not failed, f"runs ended badly: {failed}\n{daemon_log(services)}"
        active = [r for r in runs if r["status"] in ACTIVE]
        backfills = services.graphql(BACKFILLS)["partitionBackfillsOrError"]["results"]
        backfill_active = any(b["status"] in BACKFILL_ACTIVE for b in backfills)
        if (not active and not backfill_active
                and materialization_count(services, keys.REPORT, phase.began) >= reports):
            # Every run automation, a backfill or the schedule launches for a partition carries
            # its dagster/partition tag; the board's runs (unpartitioned) carry none.
            partitioned = [r for r in runs
                           if any(t["key"] == "dagster/partition" for t in r["tags"])]
            cells_end = max([phase.began, *(r["endTime"] or 0 for r in partitioned)])
            last_end = max([cells_end, *(r["endTime"] or 0 for r in runs)])
            finished = [t["timestamp"] for t in automation if t["status"] != "STARTED"]
            if (sum(1 for t in finished if t > cells_end) >= 2
                    and any(t > last_end for t in finished)):
                phase.settled = time.time()
                return
        # Each look is a few GraphQL queries (the webserver's CPU, a few ms): a 3 s pause
        # between looks cost the scenario ~1.5 s a phase.
        time.sleep(1)
    raise TimeoutError(f"phase {phase.name!r} did not settle in {timeout_s}s\n"
                       f"{daemon_log(services)}")


def _active_runs(services: DagsterServices, phase: Phase) -> bool:
    """Whether a run created since the phase began is queued or running; a run that ended badly
    fails the test."""
    runs = [r for r in services.graphql(RUNS_BRIEF)["runsOrError"]["results"]
            if r["creationTime"] >= phase.began]
    failed = [r for r in runs if r["status"] in ("FAILURE", "CANCELED")]
    assert not failed, f"runs ended badly: {failed}\n{daemon_log(services)}"
    return any(r["status"] in ACTIVE for r in runs)


def collect(services: DagsterServices, phases: list[Phase]) -> list[Run]:
    """Every run, each assigned to the phase during which it was created."""
    runs = [Run.parse(r) for r in services.graphql(RUNS_FULL)["runsOrError"]["results"]]
    for run in sorted(runs, key=lambda r: r.created):
        phase = max((p for p in phases if p.began <= run.created), key=lambda p: p.began)
        phase.runs.append(run)
    return runs


def table(phases: Iterable[Phase]) -> str:
    """Runs, step executions and materializations per phase and partition."""
    lines = [f"{'phase':<18} {'partition':<14} {'runs':>4} {'steps':>5} {'mats':>4}  "
             f"{'run ids (first 8)'}"]
    for phase in phases:
        partitions = sorted({p for run in phase.runs for p in run.partitions},
                            key=lambda p: (p == UNPARTITIONED, p))
        if phase.settled is not None:
            took = phase.settled - phase.began
            lines.append(f"{phase.name}: settled {took:.0f} s after it began")
        if not partitions:
            lines.append(f"{phase.name:<18} {'(nothing)':<14} {0:>4} {0:>5} {0:>4}")
        for partition in partitions:
            runs = phase.runs_of(partition)
            mats = sum(1 for run in runs for _, p in run.materialized if p == partition)
            steps = sum(len(run.steps) for run in runs)
            ids = ", ".join(run.run_id[:8] + (" (backfill)" if run.backfill else "")
                            for run in runs)
            lines.append(f"{phase.name:<18} {partition:<14} {len(runs):>4} {steps:>5} "
                         f"{mats:>4}  {ids}")
    return "\n".join(lines)


def timeline(phase: Phase) -> str:
    """The phase's runs in creation order, times relative to the phase's start (for failures)."""
    def at(moment: float | None) -> str:
        return "-" if moment is None else f"+{moment - phase.began:.1f}s"
    return "\n".join(
        f"  {run.run_id[:8]} {'/'.join(sorted(run.partitions))} "
        f"{','.join(sorted({a for a, _ in run.materialized}))} created {at(run.created)} "
        f"start {at(run.started)} end {at(run.ended)}{' backfill' if run.backfill else ''}"
        for run in phase.runs)


def built_too_early(phase: Phase) -> list[str]:
    """Leaderboard or report runs that started before what they summarize had finished.

    Once per settled batch means: the leaderboard after every partition run of the phase, the
    report after those and after the leaderboard.
    """
    partitioned = [run for run in phase.runs if UNPARTITIONED not in run.partitions]
    cells_done = max((run.ended or float("inf") for run in partitioned), default=0.0)
    board = {name: [run for run in phase.runs
                    if any(asset == name for asset, _ in run.materialized)]
             for name in (keys.LEADERBOARD.path[-1], keys.REPORT.path[-1])}
    board_done = max((run.ended or float("inf") for run in board["leaderboard"]), default=0.0)
    early = []
    for name, runs in board.items():
        for run in runs:
            if (run.started or 0) < cells_done:
                early.append(f"{name} run {run.run_id[:8]} started before the partition runs "
                             "of its batch had ended")
            # In the leaderboard's own run the report's step comes after the leaderboard's.
            if (name == "report" and (run.started or 0) < board_done
                    and run not in board["leaderboard"]):
                early.append(f"report run {run.run_id[:8]} started before the leaderboard run "
                             "had ended")
    return early


def overlapping(runs: list[Run]) -> list[tuple[str, str, str]]:
    """Pairs of runs with the same ``dagster/partition`` tag whose start→end intervals overlap."""
    clashes = []
    by_tag: dict[str, list[Run]] = {}
    for run in runs:
        if run.partition_tag is not None and run.started is not None:
            by_tag.setdefault(run.partition_tag, []).append(run)
    for tag, group in by_tag.items():
        group.sort(key=lambda r: r.started or 0)
        for before, after in pairwise(group):
            if before.ended is None or (after.started or 0) < before.ended:
                clashes.append((tag, before.run_id, after.run_id))
    return clashes
