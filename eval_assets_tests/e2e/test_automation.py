"""Declarative automation on a real instance: webserver + daemon, recordings dropped into a folder.

Four phases, each left to settle before the next: recording ``alpha`` lands, then ``bravo``, then
a backfill of both recordings' per-recording assets is launched over GraphQL, then nothing
changes for two more automation ticks. Every run and every materialization is read back over
GraphQL and counted per phase and partition (``-s`` prints the table):

- a new recording runs its chain exactly once (one run per partition and job) and touches no
  other partition;
- after the backfill, each (recording, model) partition is recomputed at most once;
- the leaderboard and the report are rebuilt exactly once per phase that changed something, after
  every partition run of the phase has ended (and the report after the leaderboard);
- unchanged inputs launch nothing;
- no two runs of one ``dagster/partition`` tag overlap in time (the run queue's per-value limit).
"""

from __future__ import annotations

import os
import shutil
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

import pytest

from eval_assets.defs import keys
from eval_assets_tests.e2e.dagster_services import DagsterServices, dagster_services

REPOSITORY = {"repositoryLocationName": "eval_assets", "repositoryName": "__repository__"}
AUTOMATION_SENSOR = "eval_assets_automation"
RECORDINGS_SENSOR = "recordings_sensor"
MODEL = "random"
MODELS = f"models:\n  - name: {MODEL}\n    serve: random\n    seed: 0\n"
# The random baseline as judge: its replies are not JSON, so every row is a recorded judge
# failure; the chain still finishes and reports them.
JUDGE = "serve: random\nmodel: random\nmax_workers: 1\nbackoff_base_s: 0\n"

PER_RECORDING = [keys.RECORDING_INGEST, keys.RECTIFIED_FRAMES, keys.POINTCLOUD_FRAMES,
                 keys.DETECTIONS_MASKS, keys.OBJECT_TRACKS, keys.QUESTION_PROPOSALS,
                 keys.PUBLIC_CASES, keys.PRIVATE_LABELS]
# Every metric of eval_assets.scoring.METRICS, so a new metric is expected without editing this.
PER_MODEL = [keys.PREDICTIONS, *keys.METRICS.values(), keys.BENCHMARK_RESULTS]
BOARD = [keys.LEADERBOARD, keys.REPORT]
ACTIVE = {"QUEUED", "NOT_STARTED", "STARTING", "STARTED", "MANAGED", "CANCELING"}
BACKFILL_ACTIVE = {"REQUESTED", "CANCELING", "FAILING"}
UNPARTITIONED = "—"

RUNS_BRIEF = """
query { runsOrError { ... on Runs { results { runId status creationTime endTime } } } }"""

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

BACKFILL_STATUS = """
query Status($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    ... on PartitionBackfill { status }
    ... on PythonError { message }
  }
}"""


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
    steps: list[str]
    materialized: list[tuple[str, str]]  # (asset, partition label)

    @classmethod
    def parse(cls, raw: dict) -> Run:
        tags = {t["key"]: t["value"] for t in raw["tags"]}
        return cls(
            run_id=raw["runId"], status=raw["status"], created=raw["creationTime"],
            started=raw["startTime"], ended=raw["endTime"],
            partition_tag=tags.get("dagster/partition"), backfill=tags.get("dagster/backfill"),
            steps=[s["stepKey"] for s in raw["stepStats"] if s["status"] == "SUCCESS"],
            materialized=[(m["assetKey"]["path"][-1], _label(m["partition"]))
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

    def materializations(self) -> Counter[tuple[str, str]]:
        """How often each (asset, partition) was materialized in this phase."""
        return Counter(m for run in self.runs for m in run.materialized)

    def runs_of(self, partition: str) -> list[Run]:
        return [run for run in self.runs if partition in run.partitions]


def _label(partition: str | None) -> str:
    """A partition key as the table shows it: ``alpha``, ``alpha×random`` or ``—``."""
    if partition is None:
        return UNPARTITIONED
    if "|" in partition:
        # A multi-partition key joins its dimensions in name order: model, then recording.
        model, recording = partition.split("|")
        return f"{recording}×{model}"
    return partition


def _expected_chain(recording: str) -> Counter[tuple[str, str]]:
    """Every asset of one new recording's chain once, and the leaderboard and report once."""
    chain = Counter({(k.path[-1], recording): 1 for k in PER_RECORDING})
    chain.update({(k.path[-1], f"{recording}×{MODEL}"): 1 for k in PER_MODEL})
    chain.update({(k.path[-1], UNPARTITIONED): 1 for k in BOARD})
    return chain


def _drop_recording(sample: Path, watched: Path, name: str) -> None:
    """Put a finished recording into the watched folder in one rename, its mtime an hour back."""
    staging = watched.parent / f"{name}.db.staging"
    shutil.copy(sample, staging)
    an_hour_ago = time.time() - 3600
    os.utime(staging, (an_hour_ago, an_hour_ago))  # "settled": no write for longer than quiet_s
    os.replace(staging, watched / f"{name}.db")


def _ticks(services: DagsterServices, sensor: str) -> list[dict]:
    """The sensor's latest ticks, newest first; a failed tick fails the test with its error."""
    selector = {**REPOSITORY, "sensorName": sensor}
    data = services.graphql(TICKS, {"selector": selector})["sensorOrError"]
    assert data["__typename"] == "Sensor", data
    ticks = data["sensorState"]["ticks"]
    for tick in ticks:
        assert tick["status"] != "FAILURE", f"{sensor} tick failed: {tick['error']}"
    return ticks


def _done_ticks_after(services: DagsterServices, sensor: str, moment: float) -> int:
    """Finished ticks of ``sensor`` that started after ``moment``."""
    return sum(1 for t in _ticks(services, sensor)
               if t["status"] != "STARTED" and t["timestamp"] > moment)


def _materialization_count(services: DagsterServices, key, since: float) -> int:
    data = services.graphql(MATERIALIZATIONS, {"key": {"path": key.path}})["assetOrError"]
    return sum(1 for m in data["assetMaterializations"] if int(m["timestamp"]) / 1000 > since)


def _daemon_log(services: DagsterServices) -> str:
    return (services.home / "daemon.log").read_text(errors="replace")[-4000:]


def _wait_settled(services: DagsterServices, phase: Phase, *, reports: int,
                  backfill: str | None = None, timeout_s: float = 900) -> None:
    """Wait until the phase's work is done and two automation ticks found nothing more to do.

    Done: at least ``reports`` report materializations since the phase began, the backfill (if
    any) finished, no run queued or running. Then two automation ticks that started after the
    last run ended must pass without a new run: only then can the counts be final.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for proc in services.processes:
            assert proc.poll() is None, f"{proc.args[0]} exited:\n{_daemon_log(services)}"
        # Ticks first, runs second: a tick read as finished has its runs already created.
        ticks = _ticks(services, AUTOMATION_SENSOR)
        _ticks(services, RECORDINGS_SENSOR)
        runs = [r for r in services.graphql(RUNS_BRIEF)["runsOrError"]["results"]
                if r["creationTime"] >= phase.began]
        failed = [r for r in runs if r["status"] in ("FAILURE", "CANCELED")]
        assert not failed, f"runs ended badly: {failed}\n{_daemon_log(services)}"
        active = [r for r in runs if r["status"] in ACTIVE]
        backfill_active = False
        if backfill is not None:
            status = services.graphql(BACKFILL_STATUS, {"id": backfill})
            backfill_active = status["partitionBackfillOrError"].get("status") in BACKFILL_ACTIVE
        if (not active and not backfill_active
                and _materialization_count(services, keys.REPORT, phase.began) >= reports):
            last_end = max([phase.began, *(r["endTime"] or 0 for r in runs)])
            quiet = [t for t in ticks if t["status"] != "STARTED" and t["timestamp"] > last_end]
            if len(quiet) >= 2:
                return
        time.sleep(3)
    raise TimeoutError(f"phase {phase.name!r} did not settle in {timeout_s}s\n"
                       f"{_daemon_log(services)}")


def _collect(services: DagsterServices, phases: list[Phase]) -> list[Run]:
    """Every run, each assigned to the phase during which it was created."""
    runs = [Run.parse(r) for r in services.graphql(RUNS_FULL)["runsOrError"]["results"]]
    for run in sorted(runs, key=lambda r: r.created):
        phase = max((p for p in phases if p.began <= run.created), key=lambda p: p.began)
        phase.runs.append(run)
    return runs


def _table(phases: Iterable[Phase]) -> str:
    """Runs, step executions and materializations per phase and partition."""
    lines = [f"{'phase':<18} {'partition':<14} {'runs':>4} {'steps':>5} {'mats':>4}  "
             f"{'run ids (first 8)'}"]
    for phase in phases:
        partitions = sorted({p for run in phase.runs for p in run.partitions},
                            key=lambda p: (p == UNPARTITIONED, p))
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


def _timeline(phase: Phase) -> str:
    """The phase's runs in creation order, times relative to the phase's start (for failures)."""
    def at(moment: float | None) -> str:
        return "-" if moment is None else f"+{moment - phase.began:.1f}s"
    return "\n".join(
        f"  {run.run_id[:8]} {'/'.join(sorted(run.partitions))} "
        f"{','.join(sorted({a for a, _ in run.materialized}))} created {at(run.created)} "
        f"start {at(run.started)} end {at(run.ended)}{' backfill' if run.backfill else ''}"
        for run in phase.runs)


def _built_too_early(phase: Phase) -> list[str]:
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
            if name == "report" and (run.started or 0) < board_done:
                early.append(f"report run {run.run_id[:8]} started before the leaderboard run "
                             "had ended")
    return early


def _overlapping(runs: list[Run]) -> list[tuple[str, str, str]]:
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


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_recordings_then_backfill_then_nothing_each_run_once(
    tmp_path: Path, sample_db: Path
) -> None:
    watched = tmp_path / "watched"
    watched.mkdir()
    storage = tmp_path / "storage"
    (tmp_path / "models.yaml").write_text(MODELS)
    (tmp_path / "judge.yaml").write_text(JUDGE)
    env = {"EVAL_ASSETS_RECORDINGS": str(watched), "EVAL_ASSETS_HOME": str(storage),
           "EVAL_ASSETS_MODELS": str(tmp_path / "models.yaml"),
           "EVAL_ASSETS_JUDGE": str(tmp_path / "judge.yaml"),
           "EVAL_ASSETS_EXECUTOR": "in_process",
           # Shorter sensor intervals than a deployment needs: the test waits for ticks.
           "EVAL_ASSETS_AUTOMATION_INTERVAL_S": "5", "EVAL_ASSETS_RECORDINGS_INTERVAL_S": "5",
           # A dropped file is complete (one rename): two looks 3 s apart are enough.
           "EVAL_ASSETS_QUIET_S": "3",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    began = time.monotonic()
    with dagster_services(tmp_path / "dagster_home", env) as services:
        # Conditions compare each tick with the previous one: let the automation sensor take its
        # first look at an empty instance before anything arrives.
        deadline = time.monotonic() + 180
        while _done_ticks_after(services, AUTOMATION_SENSOR, 0) < 1:
            assert time.monotonic() < deadline, f"no automation tick\n{_daemon_log(services)}"
            time.sleep(2)

        phases: list[Phase] = []
        phases.append(Phase("1 add alpha", time.time()))
        _drop_recording(sample_db, watched, "alpha")
        _wait_settled(services, phases[-1], reports=1)

        phases.append(Phase("2 add bravo", time.time()))
        _drop_recording(sample_db, watched, "bravo")
        _wait_settled(services, phases[-1], reports=1)

        phases.append(Phase("3 backfill both", time.time()))
        launched = services.graphql(BACKFILL, {"params": {
            "assetSelection": [{"path": k.path} for k in PER_RECORDING],
            "partitionNames": ["alpha", "bravo"],
        }})["launchPartitionBackfill"]
        assert launched["__typename"] == "LaunchBackfillSuccess", launched
        _wait_settled(services, phases[-1], reports=1, backfill=launched["backfillId"])

        # Unchanged: two automation ticks and a recordings-sensor tick see the same inputs.
        phases.append(Phase("4 unchanged", time.time()))
        _wait_settled(services, phases[-1], reports=0)
        deadline = time.monotonic() + 120
        while _done_ticks_after(services, RECORDINGS_SENSOR, phases[-1].began) < 1:
            assert time.monotonic() < deadline, f"no recordings tick\n{_daemon_log(services)}"
            time.sleep(3)
        _wait_settled(services, phases[-1], reports=0)

        runs = _collect(services, phases)

    print(f"\nautomation on a real instance: {len(runs)} runs in "
          f"{time.monotonic() - began:.0f} s\n{_table(phases)}")
    assert all(run.status == "SUCCESS" for run in runs), [(r.run_id, r.status) for r in runs]
    assert not _overlapping(runs), f"runs of one partition overlapped: {_overlapping(runs)}"
    for run in runs:
        # Automation and backfills launch one partition per run: a run spanning several could
        # not be held back by the per-partition run limit.
        assert len(run.partitions) == 1, (run.run_id, run.partitions)

    first, second, backfill, unchanged = phases
    for phase, recording in ((first, "alpha"), (second, "bravo")):
        # Exactly the new recording's chain, once; nothing of the other recording.
        assert phase.materializations() == _expected_chain(recording), phase.name
        assert len(phase.runs_of(recording)) == 1, phase.name
        assert len(phase.runs_of(f"{recording}×{MODEL}")) == 1, phase.name

    mats = backfill.materializations()
    for recording in ("alpha", "bravo"):
        for key in PER_RECORDING:
            assert mats[(key.path[-1], recording)] == 1, (key, recording)
        assert all(run.backfill for run in backfill.runs_of(recording)), recording
        cell = f"{recording}×{MODEL}"
        # The backfill's new materializations are new upstream data: at most one rerun each.
        assert len(backfill.runs_of(cell)) <= 1, cell
        for key in PER_MODEL:
            assert mats[(key.path[-1], cell)] <= 1, (key, cell)
    for phase in (first, second, backfill):
        for key in BOARD:
            assert phase.materializations()[(key.path[-1], UNPARTITIONED)] == 1, (
                f"{phase.name}: {key.path[-1]} not built exactly once\n{_timeline(phase)}")
        assert not _built_too_early(phase), (
            f"{phase.name}: {_built_too_early(phase)}\n{_timeline(phase)}")

    assert unchanged.runs == [], [r.run_id for r in unchanged.runs]
    assert (storage / "assets" / "report" / "report.html").is_file()
