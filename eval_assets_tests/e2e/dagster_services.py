"""Start the real dagster-webserver and dagster-daemon for a test, and stop them by PID.

As the server recipe of ``docs/deployment.md`` does: one code server (``dagster code-server
start``) loads the code location once; the webserver and the daemon reach it through a workspace
file naming it (``grpc_server``), with Dagster's gRPC deadlines raised to
:data:`GRPC_TIMEOUT_ENV` so a busy machine does not fail a sensor tick.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from eval_assets.defs.local import DAGSTER_YAML

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
CODE_MODULE = "eval_assets.defs.definitions"
LOCATION = "eval_assets"
GRPC_TIMEOUT_ENV = {"DAGSTER_SENSOR_GRPC_TIMEOUT_SECONDS": "300",
                    "DAGSTER_SCHEDULE_GRPC_TIMEOUT_SECONDS": "300"}
"""What the recipe gives a sensor or schedule evaluation in the code server (Dagster: 60 s)."""


def code_server_workspace(port: int) -> str:
    """The workspace file of the recipe: the code server on 127.0.0.1:``port``."""
    return (f"load_from:\n  - grpc_server:\n      host: 127.0.0.1\n      port: {port}\n"
            f"      location_name: {LOCATION}\n")


def code_server_command(port: int) -> list[str]:
    """The recipe's code server: the code location loaded once, runs launched from it."""
    return [str(BIN / "dagster"), "code-server", "start", "-m", CODE_MODULE,
            "--location-name", LOCATION, "-h", "127.0.0.1", "-p", str(port)]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class DagsterServices:
    """Handles on the running webserver: its GraphQL URL and the processes to stop."""

    port: int
    home: Path
    processes: list[subprocess.Popen]

    @property
    def graphql_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/graphql"

    def graphql(self, query: str, variables: dict | None = None) -> dict:
        """POST a GraphQL document; raise on transport or GraphQL errors."""
        body = json.dumps({"query": query, "variables": variables or {}}).encode()
        request = urllib.request.Request(
            self.graphql_url, data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            payload = json.loads(response.read())
        if payload.get("errors"):
            raise AssertionError(f"GraphQL errors: {payload['errors']}")
        return payload["data"]


WORKSPACE = """
query { workspaceOrError { ... on Workspace { locationEntries {
  loadStatus locationOrLoadError { __typename ... on PythonError { message } } } } } }"""


def _wait_until_up(services: DagsterServices, logs: list[Path], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for proc, log in zip(services.processes, logs, strict=True):
            if proc.poll() is not None:
                raise RuntimeError(f"{proc.args[0]} exited early:\n{log.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{services.port}/server_info", timeout=5):
                pass
        except OSError:
            time.sleep(1)
            continue
        # The webserver answers while it is still loading the code location; sensors and
        # assets exist only once the location is LOADED.
        entries = services.graphql(WORKSPACE)["workspaceOrError"]["locationEntries"]
        if entries and all(e["loadStatus"] == "LOADED" for e in entries):
            errors = [e["locationOrLoadError"].get("message") for e in entries
                      if e["locationOrLoadError"]["__typename"] == "PythonError"]
            if errors:
                raise RuntimeError(f"the code location failed to load: {errors[0]}")
            return
        time.sleep(1)
    tail = logs[0].read_text()[-4000:]
    raise TimeoutError(f"dagster-webserver or its code location not up after {timeout_s}s:\n"
                       f"{tail}")


@contextmanager
def dagster_services(
    home: Path, env: dict[str, str], timeout_s: float = 180, dagster_yaml: str = DAGSTER_YAML,
    code_server: bool = True,
) -> Iterator[DagsterServices]:
    """Run webserver + daemon with ``DAGSTER_HOME=home``; stop them after.

    With ``code_server`` (the default) as the deployment recipe runs them: one code server
    shared by both (see the module). Without, each loads the repo's ``workspace.yaml`` itself
    (``python_module``: a code server of its own, the daemon's re-created every minute).

    The instance has the project's ``dagster.yaml`` by default (telemetry off, the run queue
    limited to one run per partition), so a test sees the queueing a deployment has; a benchmark
    may pass another (e.g. a shorter dequeue interval) to measure its effect.
    """
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(dagster_yaml)
    full_env = {**os.environ, **env, "DAGSTER_HOME": str(home), "DAGSTER_DISABLE_TELEMETRY": "1"}
    # Create the instance's storage first: the webserver's and the daemon's code servers would
    # otherwise both create the fresh SQLite schema at once, and one of them can fail with
    # "alembic_version has more than one head", so its code location never loads.
    subprocess.run([str(BIN / "dagster"), "instance", "migrate"], env=full_env, cwd=REPO,
                   check=True, capture_output=True, timeout=120)
    port = free_port()
    if code_server:
        grpc_port = free_port()
        (home / "workspace.yaml").write_text(code_server_workspace(grpc_port))
        workspace = str(home / "workspace.yaml")
        full_env = {**GRPC_TIMEOUT_ENV, **full_env}
    else:
        workspace = str(REPO / "workspace.yaml")
    commands = [
        [str(BIN / "dagster-webserver"), "-w", workspace, "-h", "127.0.0.1", "-p", str(port)],
        [str(BIN / "dagster-daemon"), "run", "-w", workspace],
    ]
    logs = [home / "webserver.log", home / "daemon.log"]
    processes: list[subprocess.Popen] = []
    started: list[subprocess.Popen] = []
    try:
        if code_server:  # first, so webserver and daemon find it; last in the list (stopped last)
            started.append(_start(code_server_command(grpc_port), home / "code_server.log",
                                  full_env))
            _wait_for_port(grpc_port, started[0], home / "code_server.log", timeout_s)
        for command, log in zip(commands, logs, strict=True):
            processes.append(_start(command, log, full_env))
        processes += started
        logs += [home / "code_server.log"] * len(started)
        services = DagsterServices(port=port, home=home, processes=processes)
        _wait_until_up(services, logs, timeout_s)
        yield services
    finally:
        for proc in [*processes, *(p for p in started if p not in processes)]:
            stop_process_group(proc)


def _start(command: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
    # A new session per process lets us signal its whole group (gRPC children too).
    return subprocess.Popen(command, cwd=REPO, env=env, stdout=log.open("wb"),
                            stderr=subprocess.STDOUT, start_new_session=True)


def _wait_for_port(port: int, proc: subprocess.Popen, log: Path, timeout_s: float) -> None:
    """Until something listens on 127.0.0.1:``port`` (``proc`` exiting first raises)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{log.stem} exited early:\n{log.read_text()[-4000:]}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise TimeoutError(f"nothing listens on port {port} after {timeout_s}s:\n"
                       f"{log.read_text()[-4000:]}")


def stop_process_group(proc: subprocess.Popen) -> None:
    """SIGTERM the process group of ``proc`` (SIGKILL after 20 s) and reap its leader."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    except ProcessLookupError:
        pass
