"""Declarative automation on a real instance: webserver + daemon, recordings dropped into a folder.

No cell runs twice for one change. Five phases, each left to settle before the next, with two
models (``random`` and ``coin``, both the seeded random baseline):

1. recording ``alpha`` lands;
2. the nightly schedule is switched on with a cron that fires at the next minute, so the daemon's
   scheduler launches the night's runs, one per (recording, model) cell; it is switched off once
   that tick has ended (and seen to stay off: see ``stop_schedule``);
3. three changes together: ``coin``'s entry in the models file is edited (its seed), the judge's
   config is edited, and ``bravo`` lands: the new recording's chain and both its cells once,
   although two or three changes make each stale; all of ``alpha×coin``; of ``alpha×random``
   only the metrics that read the judge's config and the results; nothing of ``alpha``'s
   recording chain;
4. a backfill of ``alpha``'s per-recording assets is launched over GraphQL: its chain and its
   cells once, nothing of ``bravo``;
5. nothing changes for two more automation ticks.

Each recording is the sample with a selection file beside it that keeps every eighth frame (3 of
24): every metric still has cases. Timings, alone on the shared 2-core machine: seven phases on
the whole sample took 1,253 s (CI, quiet: 11.5 min); six on every fourth frame, with sensors that
tick at every daemon loop and no quiet period for a file dropped in one rename, 362 s; five (the
judge's edit joined the bravo phase) 309 s; 289 s (269 s of CPU) once the second look evaluates
its operand once (``SeenTwice``), idle ticks are skipped and one recording is backfilled. Then
281 s with the night moved after ``alpha`` (two cells to run instead of four) and one automation
tick after the board's run instead of two (``wait_settled``), and 246-254 s (194-263 s of CPU)
on every eighth frame; 200-233 s (134-192 s of CPU, three runs) once an upstream update is
acted on at the first automation tick that sees it wherever that tick's snapshot holds every run
of the asset (it had waited for the second: one tick, 5-8 s, per propagation). Of that, the
night's wait for its minute (0-60 s: 23-35 s in those runs) and the backfill daemon's first look
(0-30 s: 2-22 s) are chance. Where the rest goes: each run starts a process that loads the
code location (2.5-5 s from created to started), a file dropped is seen by the recordings sensor
and then by the automation sensor (5-10 s to its chain's run), each propagation waits for the
next automation tick (ticks every 5 s, Dagster's floor; each evaluates ~1.3-2 s in the daemon's
code server, half the test's CPU).

Every run and every materialization is read back over GraphQL (the instance's run and event
storage) and counted per phase and partition (``-s`` prints the table). For each phase:

- every (asset, partition) the change makes stale is materialized exactly once, and nothing else;
- one run per partition that changes (and one for the leaderboard and the report, in order): no run
  materializes nothing new;
- the leaderboard and the report are rebuilt once, after every partition run of the phase has
  ended (and the report after the leaderboard);
- the nightly's cells come from the schedule's runs only: automation launches no run of its own
  for them, only the leaderboard and the report after them;
- no two runs of one ``dagster/partition`` tag overlap in time (the run queue's per-value limit).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import pytest

from eval_assets import scoring
from eval_assets.defs import keys
from eval_assets.defs.automation_conditions import NIGHT_TAG
from eval_assets_tests.e2e.automation_runs import (
    AUTOMATION_SENSOR,
    BACKFILL,
    RECORDINGS_SENSOR,
    RUNS_FULL,
    UNPARTITIONED,
    Phase,
    Run,
    built_too_early,
    collect,
    daemon_log,
    done_ticks_after,
    drop_recording,
    overlapping,
    start_schedule,
    stop_schedule,
    table,
    timeline,
    wait_settled,
)
from eval_assets_tests.e2e.dagster_services import DagsterServices, dagster_services

MODELS = ("random", "coin")
EDITED = "coin"


def _models_file(coin_seed: int) -> str:
    return (f"models:\n  - name: random\n    serve: random\n    seed: 0\n"
            f"  - name: coin\n    serve: random\n    seed: {coin_seed}\n")


def _judge_file(max_workers: int) -> str:
    # The random baseline as judge: its replies are not JSON, so every row is a recorded judge
    # failure; the chain still finishes and reports them.
    return f"serve: random\nmodel: random\nmax_workers: {max_workers}\nbackoff_base_s: 0\n"


# The metrics that read the judge's config (their assets depend on it; metrics.py).
JUDGED = [keys.METRICS[spec.name] for spec in scoring.METRICS if "judge" in spec.needs]
RECORDINGS = ("alpha", "bravo")
BACKFILLED = "alpha"
# Every eighth of the sample's 24 frames (3): 90 cases instead of 749, still some for every
# metric (numeric 8, spatial 2, time flips 7, POPE 52). Every fourth (186 cases) took each cell's
# run 11 s beside the other's; every one, 13.1 s alone in process.
SELECTION = "stride: 8\n"
NIGHTLY = "nightly_benchmark"


def _cell(recording: str, model: str) -> str:
    return f"{recording}×{model}"


def _expect(per_recording: Iterable[str] = (), cells: Iterable[tuple[str, str]] = (),
            judged_cells: Iterable[tuple[str, str]] = ()) -> Counter[tuple[str, str]]:
    """Each asset of those partitions once (of ``judged_cells``, the judged metrics and the
    results), and the leaderboard and report once."""
    expected = Counter({(k.path[-1], r): 1 for r in per_recording for k in keys.RECORDING_CHAIN})
    expected.update({(k.path[-1], _cell(r, m)): 1 for r, m in cells
                     for k in keys.CELL_ASSETS})
    expected.update({(k.path[-1], _cell(r, m)): 1 for r, m in judged_cells
                     for k in [*JUDGED, keys.BENCHMARK_RESULTS]})
    expected.update({(k.path[-1], UNPARTITIONED): 1 for k in (keys.LEADERBOARD, keys.REPORT)})
    return expected


def _expected_runs(expected: Counter[tuple[str, str]]) -> tuple[int, int]:
    """The fewest and most runs the phase may launch.

    At least one run per partition, and one for the leaderboard and the report together (they are
    requested in the same evaluation; two if the report's came later). A model cell may take
    two: a tick may request its predictions and a later tick its metrics, once the predictions
    are in (the backfill daemon did so when automation still handed it the cells). Either way,
    each asset partition is materialized once (checked separately), so no run is redundant.
    """
    partitions = {p for _, p in expected if p != UNPARTITIONED}
    cells = {p for p in partitions if "×" in p}
    fewest = len(partitions) + 1
    return fewest, fewest + 1 + len(cells)


# The night's cells: every model's on the one recording registered when it comes.
NIGHT_CELLS = [("alpha", m) for m in MODELS]


def _check_phase(phase: Phase, expected: Counter[tuple[str, str]]) -> str:
    """Assert the phase did exactly ``expected``; return its line for the summary."""
    fewest, most = _expected_runs(expected) if expected else (0, 0)
    runs = f"{fewest}" if fewest == most else f"{fewest}-{most}"
    line = (f"{phase.name:<18} runs expected {runs:>5} launched {len(phase.runs):>2}, "
            f"materializations expected {sum(expected.values()):>3} done "
            f"{sum(phase.materializations().values()):>3}, redundant runs "
            f"{len(phase.redundant())}")
    print(line)
    done = phase.materializations()
    assert done == expected, (
        f"{phase.name}: twice or unexpected: "
        f"{sorted((k, n) for k, n in done.items() if n != expected.get(k))}; never: "
        f"{sorted(k for k in expected if k not in done)}\n{timeline(phase)}")
    assert not phase.redundant(), f"{phase.name}: {phase.redundant()}\n{timeline(phase)}"
    assert fewest <= len(phase.runs) <= most, f"{phase.name}\n{timeline(phase)}"
    assert not built_too_early(phase), (
        f"{phase.name}: {built_too_early(phase)}\n{timeline(phase)}")
    return line


def _nightly_only(phase: Phase) -> list[Run]:
    """Runs of the nightly phase that materialized a cell without being the night's."""
    return [run for run in phase.runs if UNPARTITIONED not in run.partitions
            and (run.tags.get("eval_assets/trigger") != "nightly" or NIGHT_TAG not in run.tags)]


def _wait_for_a_tick(services: DagsterServices, sensor: str, after: float) -> None:
    deadline = time.monotonic() + 180
    while done_ticks_after(services, sensor, after) < 1:
        assert time.monotonic() < deadline, f"no {sensor} tick\n{daemon_log(services)}"
        time.sleep(2)


def _scenario(services: DagsterServices, tmp_path: Path, sample_db: Path) -> list[Phase]:
    """Run the five phases, each settled before the next; their runs are collected after."""
    phases: list[Phase] = []

    def begin(name: str) -> Phase:
        phases.append(Phase(name, time.time()))
        return phases[-1]

    phase = begin("add alpha")
    drop_recording(sample_db, tmp_path / "watched", "alpha", selection=SELECTION)
    wait_settled(services, phase, reports=1)

    # The night comes while one recording is registered: its two cells show what four did (one
    # schedule run per cell, none of automation's), in half the runs (27 s -> ~15 s of the phase).
    phase = begin("nightly")
    state = start_schedule(services, NIGHTLY)  # its cron fires at the next minute
    _wait_for_nightly_runs(services, phase, len(NIGHT_CELLS))
    # Off before the next minute: the run keys dedupe within one night, and a daily cron has one
    # tick per night; this one fires every minute (at the next, it would launch the night's
    # runs of bravo, registered in the next phase).
    stop_schedule(services, NIGHTLY, state)
    wait_settled(services, phase, reports=1)

    # Two changes in one phase (one phase less to wait through): the models file first, then the
    # recording, both before the recordings sensor's next look can separate them by much.
    # The judge's edit joined this phase (it was a phase of its own, 46 s of the test): on
    # ``alpha×random`` it still shows that only the judged metrics are recomputed.
    phase = begin(f"add bravo, edit {EDITED} and the judge")
    (tmp_path / "models.yaml").write_text(_models_file(coin_seed=2))
    (tmp_path / "judge.yaml").write_text(_judge_file(max_workers=2))
    drop_recording(sample_db, tmp_path / "watched", "bravo", selection=SELECTION)
    wait_settled(services, phase, reports=1)

    # One recording (its chain and two cells: three runs, where both recordings' took six):
    # that the other's cells stay untouched is checked too. One run per partition for a backfill
    # of several is Dagster's default, which no asset overrides (test_definitions_snapshot).
    phase = begin(f"backfill {BACKFILLED}")
    launched = services.graphql(BACKFILL, {"params": {
        "assetSelection": [{"path": k.path} for k in keys.RECORDING_CHAIN],
        "partitionNames": [BACKFILLED]}})["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    wait_settled(services, phase, reports=1)

    # Unchanged: two automation ticks and a recordings-sensor tick see the same inputs.
    phase = begin("unchanged")
    wait_settled(services, phase, reports=0)
    _wait_for_a_tick(services, RECORDINGS_SENSOR, phase.began)
    wait_settled(services, phase, reports=0)

    return phases


def _wait_for_nightly_runs(services: DagsterServices, phase: Phase, count: int) -> None:
    """Wait until the schedule's first tick has created ``count`` runs."""
    deadline = time.monotonic() + 150
    while True:
        runs = [Run.parse(r) for r in services.graphql(RUNS_FULL)["runsOrError"]["results"]]
        nightly = [r for r in runs if r.created >= phase.began
                   and r.tags.get("eval_assets/trigger") == "nightly"]
        if len(nightly) >= count:
            return
        assert time.monotonic() < deadline, f"no nightly runs\n{daemon_log(services)}"
        time.sleep(1)


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_each_change_runs_each_stale_cell_once(tmp_path: Path, sample_db: Path) -> None:
    watched = tmp_path / "watched"
    watched.mkdir()
    storage = tmp_path / "storage"
    (tmp_path / "models.yaml").write_text(_models_file(coin_seed=1))
    (tmp_path / "judge.yaml").write_text(_judge_file(max_workers=1))
    env = {"EVAL_ASSETS_RECORDINGS": str(watched), "EVAL_ASSETS_HOME": str(storage),
           "EVAL_ASSETS_MODELS": str(tmp_path / "models.yaml"),
           "EVAL_ASSETS_JUDGE": str(tmp_path / "judge.yaml"),
           "EVAL_ASSETS_EXECUTOR": "in_process",
           # Shorter sensor intervals than a deployment needs: the test waits for ticks. The
           # daemon loops every 5 s at best (Dagster's floor for sensors and automation); a
           # minimum interval of 5 s skipped a loop that came a moment early, so 1 s: a tick at
           # every loop.
           "EVAL_ASSETS_AUTOMATION_INTERVAL_S": "1", "EVAL_ASSETS_RECORDINGS_INTERVAL_S": "1",
           # A dropped file is complete (one rename, its mtime an hour back): no quiet period to
           # wait through, it is registered at the first look (the quiet rule has its own tests,
           # recording/test_being_written.py and defs/test_sensors.py).
           "EVAL_ASSETS_QUIET_S": "0",
           # The nightly fires at the next minute once switched on (and at each minute after,
           # where the night's run keys make it launch nothing twice).
           "EVAL_ASSETS_NIGHTLY_CRON": "* * * * *",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    began = time.monotonic()
    with dagster_services(tmp_path / "dagster_home", env) as services:
        # Conditions compare each tick with the previous one: let the automation sensor take its
        # first look at an empty instance before anything arrives.
        _wait_for_a_tick(services, AUTOMATION_SENSOR, 0)
        phases = _scenario(services, tmp_path, sample_db)
        runs = collect(services, phases)

    print(f"\nautomation on a real instance: {len(runs)} runs in "
          f"{time.monotonic() - began:.0f} s\n{table(phases)}")
    for phase in phases:  # where the time went: each run's creation, start and end
        print(f"{phase.name}\n{timeline(phase)}")
    assert all(run.status == "SUCCESS" for run in runs), [(r.run_id, r.status) for r in runs]
    assert not overlapping(runs), f"runs of one partition overlapped: {overlapping(runs)}"
    for run in runs:
        # Automation, backfills and the schedule launch one partition per run: a run spanning
        # several could not be held back by the per-partition run limit.
        assert len(run.partitions) == 1, (run.run_id, run.partitions)

    add_alpha, nightly, add_bravo_edit_model_and_judge, backfill, unchanged = phases
    # Exactly the new recording's chain, once; nothing of the other recording.
    _check_phase(add_alpha, _expect(["alpha"], [("alpha", m) for m in MODELS]))
    # The night's cells from the schedule's runs, each once; automation adds only the board.
    _check_phase(nightly, _expect(cells=NIGHT_CELLS))
    assert not _nightly_only(nightly), [r.run_id for r in _nightly_only(nightly)]
    # And the edited model's cell of the recording already there, and of its other cell only
    # what reads the judge: nothing else of it.
    _check_phase(add_bravo_edit_model_and_judge, _expect(
        ["bravo"], [*(("bravo", m) for m in MODELS), ("alpha", EDITED)],
        judged_cells=[("alpha", m) for m in MODELS if m != EDITED]))
    # The backfill's new materializations are new upstream data: each of its cells once more.
    _check_phase(backfill, _expect([BACKFILLED], [(BACKFILLED, m) for m in MODELS]))
    assert backfill.runs_of(BACKFILLED) and all(
        run.backfill for run in backfill.runs_of(BACKFILLED))
    _check_phase(unchanged, Counter())
    assert (storage / "assets" / "report" / "report.html").is_file()
