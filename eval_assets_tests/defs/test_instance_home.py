"""Many processes, one instance folder: the run lock of ``eval-assets run``, the schema created
one process at a time, and webserver, daemon and Celery workers started together on a fresh
home (``eval_assets.defs.instance_storage``, ``eval_assets.defs.local.instance``)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eval_assets.cli import app
from eval_assets.defs.local.instance import (
    DAGSTER_YAML,
    EVENT_LOG_STORAGE_YAML,
    RUN_LOCK_FILE,
    RUN_STORAGE_YAML,
    SCHEDULE_STORAGE_YAML,
    SCHEMA_DATABASES,
    ensure_dagster_home,
    schema_heads,
)
from eval_assets.layout import StorageLayout
from eval_assets_tests.conftest import REPO

BIN = Path(sys.executable).parent
# Holds ``eval-assets run``'s lock on the instance argv[1] until the file argv[2] appears, as a
# running ``eval-assets run`` does (the lock is the file; see eval_assets.file_lock).
RUN_HOLDER = f"""
import sys, time
from pathlib import Path
from eval_assets.file_lock import exclusive_lock
with exclusive_lock(Path(sys.argv[1]) / {RUN_LOCK_FILE!r}):
    print("held", flush=True)
    while not Path(sys.argv[2]).exists():
        time.sleep(0.01)
"""


def _env(**extra: str) -> dict[str, str]:
    # The venv's bin first: dagster-celery starts the worker as plain `celery`.
    return {**os.environ, "PYTHONPATH": str(REPO), "DAGSTER_DISABLE_TELEMETRY": "1",
            "COLUMNS": "400", "PATH": os.pathsep.join((str(BIN), os.environ.get("PATH", ""))),
            **extra}


@contextmanager
def run_in_progress(home: Path, release: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding ``home``'s run lock until ``release`` exists."""
    proc = subprocess.Popen([sys.executable, "-c", RUN_HOLDER, str(home), str(release)],
                            stdout=subprocess.PIPE, text=True, env=_env())
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        release.touch()
        proc.kill()
        proc.wait(timeout=10)


def test_a_second_eval_assets_run_waits_saying_for_whom(tmp_path: Path, sample_db: Path) -> None:
    root = tmp_path / "store"
    home = StorageLayout(root).dagster_home()
    with run_in_progress(home, tmp_path / "release") as first:
        second = subprocess.Popen(
            [str(BIN / "eval-assets"), "run", str(sample_db), "--storage-root", str(root)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_env(),
            start_new_session=True)
        try:
            assert second.stdout is not None
            seen: list[str] = []
            deadline = time.monotonic() + 180
            for line in second.stdout:
                seen.append(line)
                if "waiting for" in line or time.monotonic() > deadline:
                    break
            assert seen and seen[-1].strip() == (
                f"waiting for eval-assets run (pid {first.pid}) on {home} to finish ..."), seen
            # It waits: nothing of its own run has started, and it is still there.
            time.sleep(1)
            assert second.poll() is None
            assert not (root / "logs").exists()
        finally:
            os.killpg(second.pid, signal.SIGKILL)
            second.wait(timeout=10)


def test_a_second_eval_assets_run_told_not_to_wait_exits_2_naming_the_first_and_the_fix(
        tmp_path: Path, sample_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "store"
    home = StorageLayout(root).dagster_home()
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "unused"))
    with run_in_progress(home, tmp_path / "release") as first:
        for how in (["--no-wait"], []):
            env = {} if how else {"EVAL_ASSETS_NO_WAIT": "1"}
            result = CliRunner().invoke(
                app, ["run", str(sample_db), "--storage-root", str(root), *how], env=env)
            said = " ".join(result.output.split())
            assert result.exit_code == 2, result.output
            assert f"another eval-assets run (pid {first.pid}) is working on the instance" in said
            assert str(home) in said and "Fix: wait for it to finish" in said
            assert "--storage-root" in said
    assert not (root / "logs").exists()


def test_an_existing_dagster_yaml_gets_each_storage_it_does_not_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "unused"))
    layout = StorageLayout(tmp_path / "store")
    config = layout.dagster_home() / "dagster.yaml"
    config.parent.mkdir(parents=True)
    # A home made before the run and schedule storages were the project's: it gains those two.
    config.write_text("telemetry:\n  enabled: false\n" + EVENT_LOG_STORAGE_YAML)
    ensure_dagster_home(layout)
    assert config.read_text() == ("telemetry:\n  enabled: false\n" + EVENT_LOG_STORAGE_YAML
                                  + RUN_STORAGE_YAML + SCHEDULE_STORAGE_YAML)
    # A user's own run storage is kept; the two others are added.
    own = "run_storage:\n  module: somewhere\n  class: Theirs\n"
    config.write_text(own)
    ensure_dagster_home(layout)
    assert config.read_text() == own + EVENT_LOG_STORAGE_YAML + SCHEDULE_STORAGE_YAML
    assert all(stanza in DAGSTER_YAML for stanza in
               (RUN_STORAGE_YAML, EVENT_LOG_STORAGE_YAML, SCHEDULE_STORAGE_YAML))


def test_a_home_made_with_dagsters_run_storage_keeps_its_runs_after_the_switch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dagster import DagsterInstance, DagsterRunStatus
    from dagster._core.test_utils import create_run_for_test

    from eval_assets.defs.instance_storage import (
        SqliteRunStorageInHome,
        SqliteScheduleStorageInHome,
    )
    from eval_assets.defs.local import prepare_dagster_home

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "unused"))
    layout = StorageLayout(tmp_path / "store")
    home = layout.dagster_home()
    home.mkdir(parents=True)
    # What ensure_dagster_home wrote before the run and schedule storages were the project's.
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n" + EVENT_LOG_STORAGE_YAML)
    with DagsterInstance.from_config(str(home)) as before:
        assert not isinstance(before.run_storage, SqliteRunStorageInHome)
        run = create_run_for_test(before, job_name="earlier", status=DagsterRunStatus.SUCCESS)
    prepare_dagster_home(layout)
    with DagsterInstance.from_config(str(home)) as after:
        assert isinstance(after.run_storage, SqliteRunStorageInHome)
        assert isinstance(after.schedule_storage, SqliteScheduleStorageInHome)
        assert [r.run_id for r in after.get_runs()] == [run.run_id]
    assert all(len(revisions) == 1 for revisions in schema_heads(home).values())


def test_a_home_left_with_two_schema_heads_is_named_with_the_fix(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlite3

    from eval_assets.defs.local import prepare_dagster_home
    from eval_assets.errors import InputError

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "unused"))
    layout = StorageLayout(tmp_path / "store")
    home = prepare_dagster_home(layout)
    # What two processes creating the schema at once left behind before the lock.
    with sqlite3.connect(home / "history" / "runs.db") as conn:
        conn.execute("INSERT INTO alembic_version VALUES ('16e3655b4d9b')")
    with pytest.raises(InputError) as doubled:
        prepare_dagster_home(layout)
    said = str(doubled.value)
    assert f"{home / 'history' / 'runs.db'} has 2 schema heads" in said
    assert "Fix: stop every Dagster process on it" in said
    fix = "DELETE FROM alembic_version WHERE version_num = '16e3655b4d9b'"
    assert fix in said
    # The fix as printed repairs it.
    with sqlite3.connect(home / "history" / "runs.db") as conn:
        conn.execute(fix)
    prepare_dagster_home(layout)


# Opens the instance argv[1] the moment the file argv[2] appears, so every contender starts its
# schema work at once (imports done, "ready" said).
OPEN_INSTANCE = """
import sys, time
from pathlib import Path
from dagster import DagsterInstance
print("ready", flush=True)
while not Path(sys.argv[2]).exists():
    time.sleep(0.005)
with DagsterInstance.from_config(sys.argv[1]):
    pass
"""


@pytest.mark.slow
def test_four_processes_opening_a_fresh_home_at_once_leave_one_schema_head(
        tmp_path: Path) -> None:
    # With Dagster's default storages this left runs.db with two heads in 3 of 3 trials, and one
    # or two of the processes crashed on "table runs already exists".
    home = ensure_dagster_home(StorageLayout(tmp_path / "store"))
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", OPEN_INSTANCE, str(home), str(go)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=_env(DAGSTER_HOME=str(home)))
             for _ in range(4)]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    go.touch()
    outputs = [proc.communicate(timeout=300)[0] for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0, 0, 0], outputs
    heads = schema_heads(home)
    assert sorted(heads) == sorted(SCHEMA_DATABASES)
    assert all(len(revisions) == 1 for revisions in heads.values()), heads


def _get_json(url: str, query: str | None = None) -> dict:
    body = json.dumps({"query": query}).encode() if query else None
    request = urllib.request.Request(url, data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


HEALTH = """query { workspaceOrError { ... on Workspace { locationEntries { loadStatus
  locationOrLoadError { __typename } } } }
  instance { daemonHealth { allDaemonStatuses { daemonType required healthy } } } }"""


def _ui_is_up(port: int) -> bool:
    """The webserver answers, its code location is loaded, and every required daemon beats."""
    try:
        data = _get_json(f"http://127.0.0.1:{port}/graphql", HEALTH)["data"]
    except OSError:
        return False
    entries = data["workspaceOrError"]["locationEntries"]
    assert all(e["locationOrLoadError"]["__typename"] != "PythonError" for e in entries), entries
    loaded = bool(entries) and all(e["loadStatus"] == "LOADED" for e in entries)
    daemons = data["instance"]["daemonHealth"]["allDaemonStatuses"]
    return loaded and all(d["healthy"] for d in daemons if d["required"])


def _start(stack: ExitStack, command: list[str], log: Path, env: dict[str, str]
           ) -> subprocess.Popen[bytes]:
    from eval_assets_tests.e2e.dagster_services import stop_process_group

    # No stdin: under pytest-xdist the worker's stdin is its channel to the controller. Ctrl-C
    # as a terminal delivers it: a test suite started in the background by a non-interactive
    # shell (`make test &`, nohup, CI wrappers) inherits SIGINT ignored, and Python keeps an
    # ignored SIGINT ignored, so `dagster dev` never heard it (and maps SIGTERM to the same).
    proc = subprocess.Popen(command, cwd=REPO, env=env, stdin=subprocess.DEVNULL,
                            stdout=log.open("wb"), stderr=subprocess.STDOUT,
                            start_new_session=True, preexec_fn=_default_interrupts)
    stack.callback(stop_process_group, proc)
    return proc


def _default_interrupts() -> None:
    """In the child before exec: SIGINT and SIGQUIT back to their default dispositions."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def _signal_states(pids: list[int]) -> list[str]:
    """Each process's command, state, blocked, ignored and caught signals and kernel wait."""
    states = []
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")[:120]
            wchan = Path(f"/proc/{pid}/wchan").read_text()
        except OSError:
            continue
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        states.append(f"{pid} {command.decode(errors='replace')} State={fields.get('State')} "
                      f"SigBlk={fields.get('SigBlk')} SigIgn={fields.get('SigIgn')} "
                      f"SigCgt={fields.get('SigCgt')} wchan={wchan}")
    return states


def _wait_for(condition: object, procs: list[subprocess.Popen[bytes]], logs: list[Path],
              timeout_s: float) -> None:
    assert callable(condition)
    deadline = time.monotonic() + timeout_s
    while not condition():
        for proc, log in zip(procs, logs, strict=True):
            assert proc.poll() is None, f"{proc.args} exited:\n{log.read_text()[-4000:]}"
        assert time.monotonic() < deadline, "\n".join(log.read_text()[-2000:] for log in logs)
        time.sleep(1)


@pytest.mark.slow
def test_webserver_daemon_and_two_celery_workers_started_at_once_on_a_fresh_home(
        tmp_path: Path) -> None:
    pytest.importorskip("dagster_celery", reason="the Celery engine (extra `celery`)")
    from celery import Celery

    from eval_assets_tests.e2e.celery_cluster import _redis_answers
    from eval_assets_tests.e2e.dagster_services import free_port

    redis_server = shutil.which("redis-server")
    assert redis_server, "redis-server is missing: apt-get install redis-server"
    # The project's setup writes dagster.yaml; nothing has opened the instance yet.
    home = ensure_dagster_home(StorageLayout(tmp_path / "store"))
    env = _env(DAGSTER_HOME=str(home), EVAL_ASSETS_HOME=str(tmp_path / "store"))
    redis_port, port = free_port(), free_port()
    broker = f"redis://127.0.0.1:{redis_port}/0"
    (tmp_path / "celery.yaml").write_text(
        f"execution:\n  config:\n    broker: {broker}\n    backend: redis://127.0.0.1:{redis_port}/1\n")
    workspace = str(REPO / "workspace.yaml")
    commands = {
        "webserver": [str(BIN / "dagster-webserver"), "-w", workspace, "-h", "127.0.0.1",
                      "-p", str(port)],
        "daemon": [str(BIN / "dagster-daemon"), "run", "-w", workspace],
        **{f"worker-{i}": [str(BIN / "dagster-celery"), "worker", "start", "-A",
                           "dagster_celery.app", "-y", str(tmp_path / "celery.yaml"),
                           "-n", f"home-worker-{i}@%h", "--", "--pool", "solo",
                           "--without-gossip", "--without-mingle"]
           for i in range(2)},
    }
    with ExitStack() as stack:
        _start(stack, [redis_server, "--bind", "127.0.0.1", "--port", str(redis_port), "--dir",
                       str(tmp_path), "--save", "", "--appendonly", "no"],
               tmp_path / "redis.log", env)
        _wait_for(lambda: _redis_answers(redis_port), [], [], 60)
        logs = [tmp_path / f"{name}.log" for name in commands]
        procs = [_start(stack, command, log, env)
                 for command, log in zip(commands.values(), logs, strict=True)]
        _wait_for(lambda: _ui_is_up(port), procs, logs, 420)
        celery = Celery("home-test", broker=broker)
        stack.callback(celery.close)

        def workers_answer() -> bool:
            answered = {name.split("@")[0] for reply in celery.control.ping(timeout=1)
                        for name in reply}
            return answered >= {"home-worker-0", "home-worker-1"}

        _wait_for(workers_answer, procs, logs, 180)
        for proc, log in zip(procs, logs, strict=True):
            assert proc.poll() is None, log.read_text()[-4000:]
            assert "already exists" not in log.read_text(), log.read_text()[-4000:]
        heads = schema_heads(home)
        assert sorted(heads) == sorted(SCHEMA_DATABASES)
        assert all(len(revisions) == 1 for revisions in heads.values()), heads


@pytest.mark.slow
def test_eval_assets_ui_prepares_a_fresh_home_and_serves_webserver_and_daemon(
        tmp_path: Path) -> None:
    from eval_assets_tests.e2e.celery_cluster import group_members
    from eval_assets_tests.e2e.dagster_services import free_port

    root, port = tmp_path / "store", free_port()
    log = tmp_path / "ui.log"
    with ExitStack() as stack:
        ui = _start(stack, [str(BIN / "eval-assets"), "ui", "--storage-root", str(root),
                            "--port", str(port)], log, _env())
        _wait_for(lambda: _ui_is_up(port), [ui], [log], 420)
        home = StorageLayout(root).dagster_home()
        heads = schema_heads(home)
        assert sorted(heads) == sorted(SCHEMA_DATABASES)
        assert all(len(revisions) == 1 for revisions in heads.values()), heads
        assert f"DAGSTER_HOME={home}" in log.read_text()
        # Ctrl-C stops both, and their code servers.
        os.killpg(ui.pid, signal.SIGINT)
        try:
            ui.wait(timeout=60)
        except subprocess.TimeoutExpired:
            raise AssertionError("Ctrl-C did not stop `eval-assets ui` in 60 s; still running: "
                                 f"{_signal_states(group_members(ui.pid))}\n"
                                 f"{log.read_text()[-4000:]}") from None
        deadline = time.monotonic() + 30
        while group_members(ui.pid) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not group_members(ui.pid), log.read_text()[-4000:]


def _ignore_interrupts() -> None:
    """In the child before exec: SIGINT ignored, as a script's background job (`cmd &`) has it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.slow
def test_eval_assets_ui_stops_on_sigterm_when_started_from_a_script(tmp_path: Path) -> None:
    """SIGTERM to the pid alone (as a supervisor or `kill PID` sends it) stops `eval-assets ui`
    and every process it started, even when it was started with SIGINT ignored: `dagster dev`
    handles SIGTERM as SIGINT, so it used to inherit the ignoring and ignore SIGTERM too."""
    from eval_assets_tests.e2e.celery_cluster import group_members
    from eval_assets_tests.e2e.dagster_services import free_port, stop_process_group

    root, port = tmp_path / "store", free_port()
    log = tmp_path / "ui.log"
    ui = subprocess.Popen([str(BIN / "eval-assets"), "ui", "--storage-root", str(root), "--port",
                           str(port)], cwd=REPO, env=_env(), stdin=subprocess.DEVNULL,
                          stdout=log.open("wb"), stderr=subprocess.STDOUT,
                          start_new_session=True, preexec_fn=_ignore_interrupts)
    try:
        _wait_for(lambda: _ui_is_up(port), [ui], [log], 420)
        started = group_members(ui.pid)
        assert len(started) >= 3, started  # dagster dev, the webserver, the daemon, code servers
        os.kill(ui.pid, signal.SIGTERM)
        try:
            ui.wait(timeout=60)
        except subprocess.TimeoutExpired:
            raise AssertionError("SIGTERM did not stop `eval-assets ui` in 60 s; still running: "
                                 f"{_signal_states(group_members(ui.pid))}\n"
                                 f"{log.read_text()[-4000:]}") from None
        deadline = time.monotonic() + 30
        while group_members(ui.pid) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not group_members(ui.pid), _signal_states(group_members(ui.pid))
    finally:
        stop_process_group(ui)
