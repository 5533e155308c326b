"""The recording_pipeline job on the sample: in process vs launched through webserver + daemon.

    python benchmarks/daemon_speed.py [--repeat 1] [--target 1.5]
    python benchmarks/daemon_speed.py --smoke   # no run: do the job, its config and services fit?

Both sides run the same job, the same partition and the same executor (in_process), on the same
machine, each into a fresh storage root:

- in process: ``execute_in_process`` on a persistent (SQLite) instance, the code location already
  imported — what ``eval-assets run`` pays per job;
- daemon: ``launchRun`` over GraphQL on a real ``dagster-webserver`` + ``dagster-daemon`` sharing
  one code server (the run queue and the warm run launcher of
  :data:`eval_assets.defs.local.DAGSTER_YAML`: each run a fork of a worker that imported the code
  location once). Wall time runs from the launch to the moment GraphQL reports SUCCESS; the
  run's own start→end comes from its RUN_START/RUN_SUCCESS events.

The daemon's extra time is split into queue (created → RUN_STARTING, i.e. waiting for the run
queue's next check), process start and import of the code location (RUN_STARTING → RUN_START),
steps (sum of step durations) and the rest. For scale it also
times a bare import of the code location in a fresh interpreter. Exits non-zero when the median
daemon wall time is over ``--target`` × the median in-process time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # eval_assets_tests.e2e.dagster_services, when run as a script

from eval_assets.defs.local import DAGSTER_YAML  # noqa: E402 (after the path insert above)

SAMPLE = REPO / "data" / "recordings" / "sample.db"
MODELS = "models:\n  - name: random\n    serve: random\n    seed: 0\n"
JUDGE = "serve: random\nmodel: random\nmax_workers: 1\nbackoff_base_s: 0\n"
JOB = "recording_pipeline"
PARTITION = "sample"
REPOSITORY = {"repositoryLocationName": "eval_assets", "repositoryName": "__repository__"}

LAUNCH = """
mutation Launch($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
    ... on RunConfigValidationInvalid { errors { message } }
  }
}"""

RUN = """
query Run($runId: ID!) {
  runOrError(runId: $runId) {
    ... on Run { status creationTime startTime endTime
                 stepStats { stepKey status startTime endTime } }
  }
}"""

ADD_PARTITION = """
mutation Add($repo: RepositorySelector!, $key: String!) {
  addDynamicPartition(repositorySelector: $repo, partitionsDefName: "recordings",
                      partitionKey: $key) { __typename ... on PythonError { message } }
}"""


@dataclass(frozen=True)
class Timing:
    """One measured run: wall time as the caller sees it and the run's own figures."""

    wall_s: float
    run_s: float  # RUN_START → RUN_SUCCESS
    steps_s: float  # sum of step durations
    queue_s: float = 0.0  # created → RUN_STARTING (daemon only)
    spawn_s: float = 0.0  # RUN_STARTING → RUN_START: process start and code location import


def _env(work: Path) -> dict[str, str]:
    """The environment both sides share: one model, the random judge, an empty watched folder."""
    (work / "models.yaml").write_text(MODELS)
    (work / "judge.yaml").write_text(JUDGE)
    watched = work / "watched"  # empty: the recordings sensor must not add work of its own
    watched.mkdir(exist_ok=True)
    return {"EVAL_ASSETS_MODELS": str(work / "models.yaml"),
            "EVAL_ASSETS_JUDGE": str(work / "judge.yaml"),
            "EVAL_ASSETS_RECORDINGS": str(watched),
            "EVAL_ASSETS_EXECUTOR": "in_process",
            "DAGSTER_DISABLE_TELEMETRY": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def _run_config(storage_root: Path) -> dict:
    # The recording is read from the repository's data folder; outputs go to a fresh root. The
    # console logger is quiet on both sides: the event log is written either way.
    return {"resources": {"storage": {"config": {
        "recordings_dir": str(SAMPLE.parent), "storage_root": str(storage_root)}}},
        "loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


def import_seconds(env: dict[str, str]) -> float:
    """Seconds a fresh interpreter needs to import the code location (what every run pays)."""
    code = ("import time; t = time.perf_counter(); import eval_assets.defs.definitions; "
            "print(time.perf_counter() - t)")
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, cwd=REPO,
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def in_process(work: Path, repeat: int) -> list[Timing]:
    """``execute_in_process`` of the job on a persistent instance, ``repeat`` times."""
    from dagster import DagsterEventType, DagsterInstance

    from eval_assets.defs.definitions import defs
    from eval_assets.defs.partitions import recordings_partitions

    home = work / "inproc_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(DAGSTER_YAML)
    job = defs.resolve_job_def(JOB)
    timings = []
    with DagsterInstance.from_config(str(home)) as instance:
        instance.add_dynamic_partitions(recordings_partitions.name, [PARTITION])
        for i in range(repeat):
            begin = time.perf_counter()
            result = job.execute_in_process(run_config=_run_config(work / f"inproc_{i}"),
                                            instance=instance, partition_key=PARTITION)
            wall = time.perf_counter() - begin
            assert result.success, f"in-process run {result.run_id} failed"
            stats = instance.get_run_stats(result.run_id)
            steps = sum((s.end_time or 0) - (s.start_time or 0)
                        for s in instance.get_run_step_stats(result.run_id))
            assert any(e.event_type == DagsterEventType.RUN_SUCCESS
                       for e in result.all_events)
            timings.append(Timing(wall, (stats.end_time or 0) - (stats.start_time or 0), steps))
    return timings


def through_daemon(work: Path, env: dict[str, str], repeat: int, dagster_yaml: str,
                   events: bool) -> tuple[list[Timing], float]:
    """``launchRun`` over GraphQL, polled until SUCCESS, ``repeat`` times; and the startup time."""
    from eval_assets_tests.e2e.dagster_services import dagster_services

    started = time.perf_counter()
    timings = []
    with dagster_services(work / "daemon_home", env, dagster_yaml=dagster_yaml) as services:
        startup = time.perf_counter() - started
        added = services.graphql(ADD_PARTITION, {"repo": REPOSITORY, "key": PARTITION})
        assert added["addDynamicPartition"]["__typename"] == "AddDynamicPartitionSuccess", added
        for i in range(repeat):
            begin = time.perf_counter()
            launched = services.graphql(LAUNCH, {"params": {
                "selector": {**REPOSITORY, "jobName": JOB},
                "runConfigData": _run_config(work / f"daemon_{i}"),
                "executionMetadata": {"tags": [{"key": "dagster/partition",
                                                "value": PARTITION}]},
            }})["launchRun"]
            assert launched["__typename"] == "LaunchRunSuccess", launched
            run_id = launched["run"]["runId"]
            while True:
                run = services.graphql(RUN, {"runId": run_id})["runOrError"]
                if run["status"] in ("SUCCESS", "FAILURE", "CANCELED"):
                    break
                time.sleep(0.25)
            wall = time.perf_counter() - begin
            if run["status"] != "SUCCESS":
                log = (services.home / "daemon.log").read_text()[-3000:]
                raise RuntimeError(f"daemon run {run_id} ended {run['status']}\n{log}")
            timings.append(_daemon_timing(services.home, run_id, run, wall, events))
    return timings, startup


def _daemon_timing(home: Path, run_id: str, run: dict, wall: float, events: bool) -> Timing:
    """The run's figures; the moment it left the queue comes from its RUN_STARTING event."""
    from dagster import DagsterEventType, DagsterInstance

    with DagsterInstance.from_config(str(home)) as instance:
        records = instance.all_logs(run_id)
    starting = next((r.timestamp for r in records if r.dagster_event is not None
                     and r.dagster_event.event_type == DagsterEventType.RUN_STARTING),
                    run["creationTime"])
    if events:
        for record in records:
            kind = record.dagster_event.event_type_value if record.dagster_event else "log"
            print(f"  +{record.timestamp - run['creationTime']:6.2f} s {kind} "
                  f"{record.step_key or ''}")
    steps = sum(s["endTime"] - s["startTime"] for s in run["stepStats"])
    return Timing(wall, run["endTime"] - run["startTime"], steps,
                  queue_s=starting - run["creationTime"], spawn_s=run["startTime"] - starting)


def smoke() -> int:
    """What the benchmark relies on, without a run (a run on each side takes minutes)."""
    from dagster import DagsterInstance, validate_run_config

    from eval_assets.defs.definitions import defs
    from eval_assets_tests.e2e.dagster_services import dagster_services

    with tempfile.TemporaryDirectory(prefix="daemon-speed-smoke-") as tmp:
        work = Path(tmp)
        env = _env(work)
        os.environ.update(env)
        imported = import_seconds(env)
        validate_run_config(defs.resolve_job_def(JOB), _run_config(work / "storage"))
        home = work / "home"
        home.mkdir()
        (home / "dagster.yaml").write_text(DAGSTER_YAML)
        with DagsterInstance.from_config(str(home)):
            pass  # the instance settings both sides use still load
    assert callable(dagster_services)
    print(f"smoke: job {JOB} resolves, its run config validates; code location import "
          f"{imported:.1f} s")
    return 0


def main() -> int:
    """Measure both sides, print the table and the ratio, check the target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="runs on each side (median kept)")
    parser.add_argument("--target", type=float, default=1.5, help="allowed daemon/in-process")
    parser.add_argument("--dequeue-interval", type=int, default=None,
                        help="seconds between the daemon's run-queue checks (Dagster's default "
                             "is 5): adds a QueuedRunCoordinator block to the project's "
                             "dagster.yaml, to measure the effect")
    parser.add_argument("--events", action="store_true",
                        help="print each daemon run's event timeline")
    parser.add_argument("--smoke", action="store_true",
                        help="launch nothing: check that the job, its run config and the "
                             "services helper this benchmark uses still exist and fit")
    args = parser.parse_args()
    if args.smoke:
        return smoke()
    dagster_yaml = DAGSTER_YAML
    if args.dequeue_interval is not None:
        dagster_yaml += ("run_coordinator:\n  module: dagster._core.run_coordinator\n"
                         "  class: QueuedRunCoordinator\n  config:\n"
                         f"    dequeue_interval_seconds: {args.dequeue_interval}\n")
    with tempfile.TemporaryDirectory(prefix="daemon-speed-") as tmp:
        work = Path(tmp)
        env = _env(work)
        os.environ.update(env)  # before the code location is imported: the models file
        imported = import_seconds(env)
        # In process first, while no webserver or daemon competes for the CPUs.
        local = in_process(work, args.repeat)
        daemon, startup = through_daemon(work, env, args.repeat, dagster_yaml, args.events)

    interval = args.dequeue_interval if args.dequeue_interval is not None else "default (5)"
    print(f"sample, job {JOB}, executor in_process, {args.repeat} run(s) per side (median), "
          f"run-queue dequeue interval {interval} s")
    print(f"code location import in a fresh interpreter: {imported:.1f} s; "
          f"webserver + daemon up in {startup:.1f} s (not counted)")
    print(f"{'':>12} {'wall s':>7} {'run s':>7} {'steps s':>8} {'queue s':>8} {'spawn s':>8}")
    for name, timings in (("in process", local), ("daemon", daemon)):
        def med(attr: str, timings: list[Timing] = timings) -> float:
            return statistics.median(getattr(t, attr) for t in timings)
        print(f"{name:>12} {med('wall_s'):>7.1f} {med('run_s'):>7.1f} {med('steps_s'):>8.1f} "
              f"{med('queue_s'):>8.1f} {med('spawn_s'):>8.1f}")
    local_wall = statistics.median(t.wall_s for t in local)
    daemon_wall = statistics.median(t.wall_s for t in daemon)
    ratio = daemon_wall / local_wall
    run_ratio = statistics.median(t.run_s for t in daemon) / local_wall
    print(f"daemon / in process: wall {ratio:.2f}x, run start→end {run_ratio:.2f}x "
          f"(target ≤ {args.target:.2f}x on wall)")
    if ratio > args.target:
        gap = daemon_wall - local_wall
        spawn = statistics.median(t.spawn_s for t in daemon)
        queue = statistics.median(t.queue_s for t in daemon)
        print(f"MISS: {gap:.1f} s more; queue {queue:.1f} s, process start + import "
              f"{spawn:.1f} s, steps {statistics.median(t.steps_s for t in daemon):.1f} s "
              f"vs {statistics.median(t.steps_s for t in local):.1f} s in process")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
