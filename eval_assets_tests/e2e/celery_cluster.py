"""Start a real Redis broker and dagster-celery workers on 127.0.0.1, and stop them by PID."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psutil

from eval_assets_tests.e2e.dagster_services import free_port, stop_process_group


@dataclass
class CeleryCluster:
    """The broker and results backend URLs, the worker names, and every process started."""

    broker: str
    backend: str
    worker_names: list[str]
    redis: subprocess.Popen
    workers: list[subprocess.Popen]

    @property
    def processes(self) -> list[subprocess.Popen]:
        return [self.redis, *self.workers]

    @property
    def worker_pids(self) -> set[int]:
        return {proc.pid for proc in self.workers}


def _start(command: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
    # A new session per process: its whole group is signalled when it is stopped.
    return subprocess.Popen(command, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def _check_alive(procs: list[subprocess.Popen], logs: list[Path]) -> None:
    for proc, log in zip(procs, logs, strict=True):
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[:4]} exited early:\n{log.read_text()[-4000:]}")


def _redis_answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@contextmanager
def celery_cluster(
    folder: Path, env: dict[str, str], n_workers: int = 2, timeout_s: float = 120,
    pool: str = "solo",
) -> Iterator[CeleryCluster]:
    """``redis-server`` on a free port of 127.0.0.1 (no persistence, data in ``folder``) and
    ``n_workers`` Celery workers of ``dagster_celery.app``. With the solo pool each step runs in
    the worker process started here; with ``pool="prefork"`` (the default of
    ``dagster-celery worker start``) in one child of it, in its process group. The workers read
    the broker from a ``dagster_celery_config`` module, as ``dagster-celery worker start -y``
    writes it."""
    redis_server = shutil.which("redis-server")
    assert redis_server, "redis-server is missing: apt-get install redis-server"
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    broker, backend = f"redis://127.0.0.1:{port}/0", f"redis://127.0.0.1:{port}/1"
    config_dir = folder / "config"
    config_dir.mkdir(exist_ok=True)
    (config_dir / "dagster_celery_config.py").write_text(
        f"broker_url = {broker!r}\nresult_backend = {backend!r}\n")
    worker_env = {**env, "PYTHONPATH": os.pathsep.join(
        p for p in (str(config_dir), env.get("PYTHONPATH", "")) if p)}
    names = [f"eval-worker-{i}@{socket.gethostname()}" for i in range(n_workers)]
    logs = [folder / "redis.log"]
    procs: list[subprocess.Popen] = []
    try:
        procs.append(_start([redis_server, "--bind", "127.0.0.1", "--port", str(port),
                             "--dir", str(folder), "--save", "", "--appendonly", "no"],
                            logs[0], env))
        deadline = time.monotonic() + timeout_s
        while not _redis_answers(port):
            _check_alive(procs, logs)
            if time.monotonic() > deadline:
                raise TimeoutError(f"redis-server not answering after {timeout_s}s")
            time.sleep(0.1)
        for i, name in enumerate(names):
            logs.append(folder / f"worker-{i}.log")
            procs.append(_start([sys.executable, "-m", "celery", "-A", "dagster_celery.app",
                                 "worker", "--pool", pool, "--concurrency", "1",
                                 "--prefetch-multiplier=1",
                                 "--loglevel", "INFO", "-n", name,
                                 "--without-gossip", "--without-mingle"],
                                logs[-1], worker_env))
        cluster = CeleryCluster(broker=broker, backend=backend, worker_names=names,
                                redis=procs[0], workers=procs[1:])
        _wait_for_workers(cluster, logs, deadline)
        yield cluster
    finally:
        for proc in reversed(procs):
            stop(proc)


def _wait_for_workers(cluster: CeleryCluster, logs: list[Path], deadline: float) -> None:
    from celery import Celery

    app = Celery("eval-assets-test", broker=cluster.broker, backend=cluster.backend)
    try:
        while True:
            answered = {name for reply in app.control.ping(timeout=1) for name in reply}
            if answered >= set(cluster.worker_names):
                return
            _check_alive(cluster.processes, logs)
            if time.monotonic() > deadline:
                raise TimeoutError(f"workers not ready:\n{logs[-1].read_text()[-4000:]}")
    finally:
        app.close()


stop = stop_process_group


def group_members(pgid: int) -> list[int]:
    """PIDs of live (not zombie) processes in process group ``pgid``."""
    members = []
    for candidate in psutil.process_iter(["status"]):
        try:
            if (os.getpgid(candidate.pid) == pgid
                    and candidate.info["status"] != psutil.STATUS_ZOMBIE):
                members.append(candidate.pid)
        except (ProcessLookupError, psutil.Error):
            continue
    return members
