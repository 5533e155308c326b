"""The automation graph at scale with real runs: webserver + daemon, N recordings x M fake models.

    python benchmarks/graph_scale_daemon.py [--recordings 50] [--models 5] [--frames 4]
                                            [--max-runs 2] [--timeout-min 60] [--keep DIR]
                                            [--run-niceness 10] [--tick-s 5]
                                            [--launcher warm|default] [--no-code-server]
    python benchmarks/graph_scale_daemon.py --smoke    # no daemon: the inputs it builds still fit

Synthesizes ``--recordings`` tiny recordings (``eval_assets.synth.synthesize_sample``, seed i,
``--frames`` frames each) and serves ``--models`` models with fake OpenAI-compatible HTTP servers
on 127.0.0.1 (every question answered "A", schema-shaped when asked: the models cost nothing, so
what is measured is the graph and the pipeline). Starts the deployment recipe of
``docs/deployment.md`` (``dagster code-server start`` shared by the real ``dagster-webserver`` and
``dagster-daemon``, gRPC deadlines at 300 s) on a fresh instance (the project's ``dagster.yaml``
with its warm run launcher, the run queue's ``max_concurrent_runs`` set to ``--max-runs``, and
the event log of ``eval_assets.defs.run_cpu``, which records each run worker's CPU), lets the
automation sensor take its first look, then drops every recording into the watched folder at
once (one batch), and waits until the batch has settled: no run queued or running, a report
built, and two automation ticks after the last run that launched nothing. Then it reads
everything back over GraphQL and prints:

- runs launched against cells: runs per partition (every recording's chain and every
  (recording, model) cell should run exactly once; any partition run twice is listed);
- the automation sensor's ticks from its tick records: count, median and max duration, and the
  daemon process's CPU seconds per tick (an upper bound: the daemon's other threads count too);
- how many times the leaderboard and the report were built, each build's step time, and whether
  they started after the batch's cell runs had ended;
- the report's size: the HTML and the files beside it (frames), separately;
- CPU per run: the run worker's CPU, its steps' own, and the rest (process start, imports, run
  start, storage: the cost a cell pays outside its work, target <= 2 s), and the CPU of every
  process of the services (code server and automation ticks included) per run;
- the total wall time from the drop to settled, and the load average (at the drop, the end and
  the highest seen while waiting).

Targets (issue 19, item 6, at 50 x 5): every cell once, every automation tick < 10 s, the
leaderboard and the report once per settled batch and each build < 60 s, the report page
(``report.html``) < 10 MB (the frames beside it, loaded only for the cards on screen, are printed
as a separate figure); issue 43, item 6: the CPU a run pays outside its steps <= 2 s (settled in
<= 12 minutes at 50 x 5 on two quiet cores: the wall time printed).
Exits non-zero and prints MISSED lines when one is missed (at any size).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # eval_assets and the test helpers, when run as a script

from eval_assets.defs.local import DAGSTER_YAML  # noqa: E402 (after the path insert above)
from eval_assets.defs.local.instance import (  # noqa: E402
    EVENT_LOG_STORAGE_YAML,
    WARM_RUN_LAUNCHER_YAML,
)
from eval_assets.defs.run_cpu import RUN_CPU_EVENT_LOG_YAML, RUN_CPU_FILE  # noqa: E402

AUTOMATION_SENSOR = "eval_assets_automation"
REPOSITORY = {"repositoryLocationName": "eval_assets", "repositoryName": "__repository__"}
JUDGE = "serve: random\nmodel: random\nmax_workers: 1\nbackoff_base_s: 0\n"
ACTIVE = {"QUEUED", "NOT_STARTED", "STARTING", "STARTED", "MANAGED", "CANCELING"}
TARGET_TICK_S = 10.0
TARGET_BUILD_S = 60.0
TARGET_REPORT_MB = 10.0
TARGET_RUN_OVERHEAD_S = 2.0
BOARD = ("leaderboard", "report")

RUNS = """
query {
  runsOrError {
    ... on Runs {
      results {
        runId status creationTime startTime endTime
        tags { key value }
        stepStats { stepKey status startTime endTime }
        assetMaterializations { assetKey { path } partition }
      }
    }
  }
}"""

# What the wait loop polls: statuses only. The full RUNS query (steps, materializations of every
# run) cost the webserver seconds of CPU per call at 300 runs, on the cores the daemon needs.
RUN_STATUSES = """
query {
  runsOrError {
    ... on Runs { results { runId status creationTime endTime } }
  }
}"""

TICKS = """
query Ticks($selector: SensorSelector!, $limit: Int!) {
  sensorOrError(sensorSelector: $selector) {
    __typename
    ... on Sensor { sensorState { ticks(limit: $limit) {
      status timestamp endTimestamp runIds error { message } } } }
    ... on PythonError { message }
  }
}"""


@dataclass
class Run:
    """One run, reduced to what the figures need."""

    run_id: str
    status: str
    created: float
    started: float | None
    ended: float | None
    partition: str  # the dagster/partition tag, "—" for the unpartitioned board runs
    backfill: bool  # launched by a backfill (0 since automation launches its own runs)
    steps: dict[str, float]  # step key -> seconds
    materialized: list[tuple[str, str]]  # (asset, partition or "—")

    @classmethod
    def parse(cls, raw: dict) -> Run:
        tags = {t["key"]: t["value"] for t in raw["tags"]}
        return cls(
            run_id=raw["runId"], status=raw["status"], created=raw["creationTime"],
            started=raw["startTime"], ended=raw["endTime"],
            partition=tags.get("dagster/partition", "—"), backfill="dagster/backfill" in tags,
            steps={s["stepKey"]: (s["endTime"] or 0) - (s["startTime"] or 0)
                   for s in raw["stepStats"] if s["status"] == "SUCCESS"},
            materialized=[(m["assetKey"]["path"][-1], m["partition"] or "—")
                          for m in raw["assetMaterializations"]])


@dataclass
class Figures:
    """What one size measured."""

    recordings: int
    models: int
    runs: list[Run]
    ticks: list[dict]
    daemon_cpu_s: float
    services_cpu_s: float  # every process of the services (code servers, run workers included)
    run_cpu: list[dict]  # one line of run_cpu.jsonl per run worker (eval_assets.defs.run_cpu)
    wall_s: float
    load: dict[str, float]
    report_html_bytes: int
    report_files_bytes: int
    report_files: int
    missed: list[str] = field(default_factory=list)


def synthesize(folder: Path, recordings: int, frames: int) -> list[Path]:
    """``recordings`` distinct tiny recordings (seed i), only their ``.db`` kept."""
    from eval_assets.synth import synthesize_sample

    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(recordings):
        db = folder / f"rec{i:03d}.db"
        outputs = synthesize_sample(db, seed=i, frames=frames)
        # The sidecars (truth) are the synthesizer's; a watched folder holds recordings only.
        outputs.scene_json.unlink()
        outputs.truth_npz.unlink()
        out.append(db)
    return out


@contextmanager
def fake_models(models: int) -> Iterator[list]:
    """``models`` fake OpenAI-compatible servers, each answering every question "A"."""
    from eval_assets_tests.fakes.openai_server import OpenAICompatibleServer, Reply

    with ExitStack() as stack:
        yield [stack.enter_context(OpenAICompatibleServer(
            default=Reply("A"), models=(f"fake{i}",), enforce_schema=True))
            for i in range(models)]


def write_inputs(work: Path, servers: list) -> dict[str, str]:
    """models.yaml (one entry per fake), judge.yaml, the watched folder; the services' env."""
    lines = ["models:"]
    for i, server in enumerate(servers):
        lines += [f"  - name: fake{i}", f"    base_url: {server.base_url}",
                  f"    model: fake{i}", "    max_retries: 0"]
    (work / "models.yaml").write_text("\n".join(lines) + "\n")
    (work / "judge.yaml").write_text(JUDGE)
    (work / "watched").mkdir(exist_ok=True)
    return {"EVAL_ASSETS_RECORDINGS": str(work / "watched"),
            "EVAL_ASSETS_HOME": str(work / "storage"),
            "EVAL_ASSETS_MODELS": str(work / "models.yaml"),
            "EVAL_ASSETS_JUDGE": str(work / "judge.yaml"),
            "EVAL_ASSETS_EXECUTOR": "in_process",
            "EVAL_ASSETS_AUTOMATION_INTERVAL_S": "5", "EVAL_ASSETS_RECORDINGS_INTERVAL_S": "5",
            "EVAL_ASSETS_QUIET_S": "3",
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def drop(recordings: list[Path], watched: Path) -> None:
    """Each recording into the watched folder in one rename, its mtime an hour back (settled)."""
    an_hour_ago = time.time() - 3600
    for db in recordings:
        staging = watched.parent / f"{db.name}.staging"
        shutil.copy(db, staging)
        os.utime(staging, (an_hour_ago, an_hour_ago))
        os.replace(staging, watched / db.name)


def automation_ticks(services, limit: int = 10_000) -> list[dict]:
    """The automation sensor's tick records, newest first; a failed tick stops the benchmark."""
    data = services.graphql(TICKS, {"selector": {**REPOSITORY, "sensorName": AUTOMATION_SENSOR},
                                    "limit": limit})["sensorOrError"]
    if data["__typename"] != "Sensor":
        raise RuntimeError(f"no automation sensor: {data}")
    ticks = data["sensorState"]["ticks"]
    failed = [t for t in ticks if t["status"] == "FAILURE"]
    if failed:
        raise RuntimeError(f"an automation tick failed: {failed[0]['error']}")
    return ticks


def _daemon_log(services) -> str:
    return (services.home / "daemon.log").read_text(errors="replace")[-4000:]


def wait_settled(services, began: float, timeout_s: float, load: dict[str, float],
                 report_html: Path) -> None:
    """Until no run is active, a report exists and two ticks after the last run launched nothing."""
    deadline = time.monotonic() + timeout_s
    last_print = 0.0
    while time.monotonic() < deadline:
        load["max"] = max(load["max"], os.getloadavg()[0])
        for proc in services.processes:
            if proc.poll() is not None:
                raise RuntimeError(f"{proc.args[0]} exited:\n{_daemon_log(services)}")
        ticks = automation_ticks(services, limit=20)
        runs = [r for r in services.graphql(RUN_STATUSES)["runsOrError"]["results"]
                if r["creationTime"] >= began]
        bad = [r["runId"] for r in runs if r["status"] in ("FAILURE", "CANCELED")]
        if bad:
            raise RuntimeError(f"runs ended badly: {bad[:5]}\n{_daemon_log(services)}")
        active = sum(1 for r in runs if r["status"] in ACTIVE)
        reports = report_html.is_file()  # the instance and the storage start empty
        if time.monotonic() - last_print > 60:
            last_print = time.monotonic()
            print(f"  +{time.time() - began:5.0f} s: {len(runs)} runs, {active} active, "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
        if not active and reports:
            last_end = max([began, *(r["endTime"] or 0 for r in runs)])
            quiet = [t for t in ticks if t["status"] != "STARTED" and t["timestamp"] > last_end]
            if len(quiet) >= 2:
                return
        time.sleep(5)
    raise TimeoutError(f"the batch did not settle in {timeout_s:.0f} s\n{_daemon_log(services)}")


def daemon_cpu_seconds(services) -> float:
    """CPU seconds of the dagster-daemon process itself (its threads; not its children)."""
    import psutil

    times = psutil.Process(services.processes[1].pid).cpu_times()
    return times.user + times.system


def services_cpu_seconds(services) -> float:
    """CPU seconds of every process the services started: webserver, daemon, code servers and
    their live children, plus every child they reaped (the run workers)."""
    import psutil

    total = 0.0
    for leader in services.processes:
        try:
            tree = [psutil.Process(leader.pid)]
            tree += tree[0].children(recursive=True)
        except psutil.NoSuchProcess:
            continue
        for proc in tree:
            try:
                times = proc.cpu_times()
            except psutil.NoSuchProcess:
                continue
            total += times.user + times.system + times.children_user + times.children_system
    return total


def folder_bytes(folder: Path) -> tuple[int, int]:
    """Total bytes and number of files under ``folder`` (0, 0 when it does not exist)."""
    files = [p for p in folder.rglob("*") if p.is_file()] if folder.is_dir() else []
    return sum(p.stat().st_size for p in files), len(files)


def measure(work: Path, recordings: int, models: int, frames: int, max_runs: int,
            timeout_s: float, run_niceness: int, warm: bool = True, code_server: bool = True,
            tick_s: int = 5) -> Figures:
    """One size, end to end: inputs, services, the batch, the figures."""
    from eval_assets.layout import REPORT_FILE
    from eval_assets.report.frame_files import FRAMES_DIR
    from eval_assets_tests.e2e.dagster_services import dagster_services

    started = time.perf_counter()
    dbs = synthesize(work / "synth", recordings, frames)
    print(f"synthesized {recordings} recordings of {frames} frames in "
          f"{time.perf_counter() - started:.0f} s", flush=True)
    dagster_yaml = DAGSTER_YAML.replace("max_concurrent_runs: 4",
                                        f"max_concurrent_runs: {max_runs}")
    # The same event log, plus one line per run worker: its CPU outside its steps.
    dagster_yaml = dagster_yaml.replace(EVENT_LOG_STORAGE_YAML, RUN_CPU_EVENT_LOG_YAML)
    dagster_yaml = dagster_yaml.replace(WARM_RUN_LAUNCHER_YAML, "")
    if warm:
        dagster_yaml += WARM_RUN_LAUNCHER_YAML
    shared = ("one code server shared by webserver and daemon" if code_server
              else "webserver and daemon each load workspace.yaml")
    print(f"runs launched by {'the warm run worker' if warm else 'Dagster (a process each)'}; "
          f"{shared}", flush=True)
    with fake_models(models) as servers:
        env = {**write_inputs(work, servers), "EVAL_ASSETS_RUN_NICENESS": str(run_niceness),
               "EVAL_ASSETS_AUTOMATION_INTERVAL_S": str(tick_s)}
        print(f"automation ticks every {tick_s} s at least", flush=True)
        print(f"runs at niceness {run_niceness} (EVAL_ASSETS_RUN_NICENESS)", flush=True)
        with dagster_services(work / "dagster_home", env, dagster_yaml=dagster_yaml,
                              code_server=code_server) as services:
            deadline = time.monotonic() + 300
            # The automation sensor's first look at the empty instance comes before the batch.
            while not [t for t in automation_ticks(services, 5) if t["status"] != "STARTED"]:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no automation tick\n{_daemon_log(services)}")
                time.sleep(2)
            cpu_before = daemon_cpu_seconds(services)
            services_before = services_cpu_seconds(services)
            began = time.time()
            load = {"drop": os.getloadavg()[0], "max": os.getloadavg()[0]}
            drop(dbs, Path(env["EVAL_ASSETS_RECORDINGS"]))
            wait_settled(services, began, timeout_s, load, Path(env["EVAL_ASSETS_HOME"])
                         / "assets" / "report" / REPORT_FILE)
            wall = time.time() - began
            load["end"] = os.getloadavg()[0]
            cpu = daemon_cpu_seconds(services) - cpu_before
            services_cpu = services_cpu_seconds(services) - services_before
            runs = [Run.parse(r) for r in services.graphql(RUNS)["runsOrError"]["results"]
                    if r["creationTime"] >= began]
            ticks = [t for t in automation_ticks(services) if t["timestamp"] >= began
                     and t["endTimestamp"] is not None]
    ids = {run.run_id for run in runs}
    cpu_file = work / "dagster_home" / RUN_CPU_FILE
    run_cpu = [line for line in map(json.loads, cpu_file.read_text().splitlines())
               if line["run_id"] in ids] if cpu_file.is_file() else []
    report = Path(env["EVAL_ASSETS_HOME"]) / "assets" / "report"
    html = report / REPORT_FILE
    files_bytes, files = folder_bytes(report / FRAMES_DIR)
    return Figures(recordings, models, runs, ticks, cpu, services_cpu, run_cpu, wall, load,
                   html.stat().st_size if html.is_file() else 0, files_bytes, files)


def _per_partition(figures: Figures) -> tuple[Counter[str], set[str]]:
    """Runs per partition tag, and the partitions expected to run exactly once."""
    recordings = [f"rec{i:03d}" for i in range(figures.recordings)]
    models = [f"fake{i}" for i in range(figures.models)]  # as write_inputs declares them
    # A multi-partition key joins its dimensions in name order: model, then recording.
    expected = set(recordings) | {f"{m}|{r}" for m in models for r in recordings}
    return Counter(run.partition for run in figures.runs if run.partition != "—"), expected


def _board_lines(figures: Figures) -> list[str]:
    cells_done = max((r.ended or float("inf") for r in figures.runs if r.partition != "—"),
                     default=0.0)
    lines = []
    for asset in BOARD:
        builds = [r for r in figures.runs if any(a == asset for a, _ in r.materialized)]
        seconds = [next((s for k, s in r.steps.items() if k.startswith(asset)), 0.0)
                   for r in builds]
        early = sum(1 for r in builds if (r.started or 0) < cells_done)
        lines.append(f"  {asset}: built {len(builds)} time(s), step seconds "
                     f"{', '.join(f'{s:.1f}' for s in seconds) or '-'}"
                     f"{f', {early} before the last cell run ended' if early else ''}")
        if len(builds) != 1:
            figures.missed.append(f"{asset} built {len(builds)} times for one batch (want 1)")
        if seconds and max(seconds) > TARGET_BUILD_S:
            figures.missed.append(f"{asset} build {max(seconds):.1f} s > {TARGET_BUILD_S:g} s")
    return lines


def _cpu_lines(figures: Figures) -> list[str]:
    """Per run: the worker's CPU, its steps' own, the rest (launch, imports, storage)."""
    if not figures.run_cpu:
        figures.missed.append("no run worker recorded its CPU (run_cpu.jsonl)")
        return ["  run workers: no CPU recorded"]
    total = [line["cpu_s"] for line in figures.run_cpu]
    steps = [line["step_cpu_s"] for line in figures.run_cpu]
    outside = [t - s for t, s in zip(total, steps, strict=True)]
    mean_outside = statistics.mean(outside)
    if mean_outside > TARGET_RUN_OVERHEAD_S:
        figures.missed.append(f"run CPU outside the steps {mean_outside:.2f} s per run > "
                              f"{TARGET_RUN_OVERHEAD_S:g} s")
    runs = len(figures.runs)
    return [
        f"  run workers ({len(total)} of {runs} runs recorded): CPU per run mean "
        f"{statistics.mean(total):.2f} s, the steps' own work {statistics.mean(steps):.2f} s, "
        f"outside it (process start, imports, run start, storage) mean {mean_outside:.2f} s, "
        f"median {statistics.median(outside):.2f} s, max {max(outside):.2f} s "
        f"(target <= {TARGET_RUN_OVERHEAD_S:g} s)",
        f"  all the services' processes (webserver, daemon, code servers, run workers): "
        f"{figures.services_cpu_s:.0f} s of CPU, {figures.services_cpu_s / max(runs, 1):.2f} s "
        f"per run; steps' own work {sum(steps):.0f} s in all"]


def report(figures: Figures) -> None:
    """Print one size's figures; record what missed its target in ``figures.missed``."""
    runs, expected = _per_partition(figures)
    twice = sorted(p for p, n in runs.items() if n > 1)
    never = sorted(expected - set(runs))
    cells = figures.recordings * figures.models
    print(f"\n{figures.recordings} recordings x {figures.models} models = {cells} cells: "
          f"{len(figures.runs)} runs in {figures.wall_s:.0f} s from the drop to settled")
    print(f"  partition runs: {sum(runs.values())} for {len(expected)} partitions "
          f"({figures.recordings} recording chains + {cells} cells); ran once: "
          f"{sum(1 for p in expected if runs[p] == 1)}, twice or more: {len(twice)} {twice[:5]}, "
          f"never: {len(never)} {never[:5]}")
    for partition in twice[:5]:
        first, *again = sorted((r for r in figures.runs if r.partition == partition),
                               key=lambda r: r.created)
        for run in again:
            print(f"    {partition}: run {run.run_id[:8]} ({len(run.materialized)} assets) created "
                  f"{run.created - (first.ended or run.created):+.1f} s after run "
                  f"{first.run_id[:8]} ({len(first.materialized)} assets) ended")
    if twice or never:
        figures.missed.append(f"{len(twice)} partitions ran more than once, {len(never)} never")
    durations = [t["endTimestamp"] - t["timestamp"] for t in figures.ticks]
    if durations:
        print(f"  automation ticks: {len(durations)}, median {statistics.median(durations):.2f} s,"
              f" max {max(durations):.2f} s; daemon CPU {figures.daemon_cpu_s:.1f} s "
              f"({figures.daemon_cpu_s / len(durations):.2f} s per tick, an upper bound); "
              f"runs launched by ticks: {sum(len(t['runIds']) for t in figures.ticks)}, "
              f"by backfills (none expected: emit_backfills=False): "
              f"{sum(r.backfill for r in figures.runs)}")
        if max(durations) > TARGET_TICK_S:
            figures.missed.append(f"slowest automation tick {max(durations):.1f} s > "
                                  f"{TARGET_TICK_S:g} s")
    for line in _board_lines(figures):
        print(line)
    for line in _cpu_lines(figures):
        print(line)
    total = figures.report_html_bytes + figures.report_files_bytes
    print(f"  report: {figures.report_html_bytes / 1e6:.2f} MB HTML + "
          f"{figures.report_files_bytes / 1e6:.2f} MB in {figures.report_files} files beside it "
          f"= {total / 1e6:.2f} MB; per recording {total / figures.recordings / 1e3:.0f} kB")
    if not figures.report_html_bytes:
        figures.missed.append("no report.html")
    # The target is the page a browser loads; the frames beside it are fetched only for the
    # cards on screen (20 a page), so their total on disk is printed, not held to it.
    if figures.report_html_bytes / 1e6 > TARGET_REPORT_MB:
        figures.missed.append(f"report page {figures.report_html_bytes / 1e6:.1f} MB > "
                              f"{TARGET_REPORT_MB:g} MB")
    print(f"  load average: {figures.load['drop']:.1f} at the drop, max {figures.load['max']:.1f}"
          f", {figures.load['end']:.1f} at the end (2 cores)")


def smoke() -> int:
    """No daemon (a run of it takes minutes): the inputs this benchmark builds still fit."""
    from eval_assets.openai_chat import chat_client
    from eval_assets.schemas.predictions import load_model_specs
    from eval_assets_tests.e2e.dagster_services import dagster_services

    with tempfile.TemporaryDirectory(prefix="graph-scale-daemon-smoke-") as tmp:
        work = Path(tmp)
        dbs = synthesize(work / "synth", 1, 2)
        with fake_models(2) as servers:
            env = write_inputs(work, servers)
            specs = load_model_specs(Path(env["EVAL_ASSETS_MODELS"]))
            assert [s.name for s in specs] == ["fake0", "fake1"], specs
            reply = chat_client(specs[1].endpoint, "").complete(
                {"model": "fake1", "max_tokens": 8,
                 "messages": [{"role": "user", "content": "Which? A or B"}]})
            assert reply.content == "A", reply
        drop(dbs, work / "watched")
        assert [p.name for p in (work / "watched").iterdir()] == ["rec000.db"]
    assert callable(dagster_services) and "max_concurrent_runs: 4" in DAGSTER_YAML
    print("smoke: a recording synthesized and dropped, two fake models declared and served")
    return 0


def main() -> int:
    """Measure one size, print its figures, exit 1 when a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recordings", type=int, default=50)
    parser.add_argument("--models", type=int, default=5)
    parser.add_argument("--frames", type=int, default=4, help="frames per recording")
    parser.add_argument("--max-runs", type=int, default=2,
                        help="the run queue's max_concurrent_runs (2 cores: 2)")
    parser.add_argument("--timeout-min", type=float, default=60)
    parser.add_argument("--run-niceness", type=int, default=10,
                        help="EVAL_ASSETS_RUN_NICENESS of the runs (the project's default: 10)")
    parser.add_argument("--keep", type=Path, default=None,
                        help="work in this (new) folder and keep it: instance, storage, report")
    parser.add_argument("--launcher", choices=("warm", "default"), default="warm",
                        help="warm: runs fork from a warm worker (eval_assets.defs.warm_runs); "
                        "default: Dagster's launcher, a fresh process per run")
    parser.add_argument("--no-code-server", action="store_true",
                        help="webserver and daemon each load workspace.yaml (the old recipe) "
                        "instead of sharing one code server")
    parser.add_argument("--tick-s", type=int, default=5,
                        help="EVAL_ASSETS_AUTOMATION_INTERVAL_S: the least seconds between two "
                        "automation ticks (the project's default: 15). At 50 x 5 a tick takes "
                        "5-7 s of CPU, so at 5 s they run back to back, a core of their own")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.smoke:
        return smoke()
    with ExitStack() as stack:
        if args.keep is None:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="graph-scale-")))
        else:
            work = args.keep
            work.mkdir(parents=True)
        figures = measure(work, args.recordings, args.models, args.frames, args.max_runs,
                          args.timeout_min * 60, args.run_niceness,
                          warm=args.launcher == "warm", code_server=not args.no_code_server,
                          tick_s=args.tick_s)
    report(figures)
    for line in figures.missed:
        print(f"MISSED: {line}")
    return 1 if figures.missed else 0


if __name__ == "__main__":
    sys.exit(main())
