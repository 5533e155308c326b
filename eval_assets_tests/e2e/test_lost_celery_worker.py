"""A Celery worker that dies mid-step: the step is retried on another worker or fails, in bounded
time, and the run ends (eval_assets/defs/celery_watch.py).

A real Redis broker and two prefork dagster-celery workers run on 127.0.0.1. A one-step job
(``celery_sleepy_job``) is launched with ``dagster job execute``; its first attempt hangs, and the
test SIGKILLs the whole process group of the worker running it, as when its machine dies. Without
the watch the run stayed STARTED until the launcher was stopped (measured: 60 s and counting).
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from dagster import DagsterEventType, DagsterInstance, DagsterRunStatus

from eval_assets.defs.executors import CELERY_BACKEND_ENV, CELERY_BROKER_ENV, executor_from_env
from eval_assets_tests.e2e.celery_cluster import CeleryCluster, celery_cluster, group_members
from eval_assets_tests.e2e.celery_sleepy_job import ATTEMPTS_DIR_ENV

DAGSTER = str(Path(sys.executable).parent / "dagster")
TIMEOUT_S = 8.0  # lost_worker_timeout_s of these runs
# Detection takes the timeout plus one poll and one reply wait (celery_watch.POLL_S, REPLY_S); the
# run then ends, and the launching process exits, within a few seconds more on a busy machine.
BOUND_S = TIMEOUT_S + 20


def _launch(tmp_path: Path, name: str, executor: dict) -> subprocess.Popen:
    config = tmp_path / f"{name}.yaml"
    config.write_text(yaml.safe_dump({"execution": {"config": executor}}))
    return subprocess.Popen(
        [DAGSTER, "job", "execute", "-m", "eval_assets_tests.e2e.celery_sleepy_job", "-a", "defs",
         "-j", "sleepy", "-c", str(config)],
        stdout=(tmp_path / f"{name}.log").open("wb"), stderr=subprocess.STDOUT,
        start_new_session=True, env={**os.environ})


def _first_attempt(attempts: Path, launcher: subprocess.Popen, log: Path) -> tuple[str, int]:
    """The run id and the PID of the step's first attempt, once it runs."""
    deadline = time.monotonic() + 120
    while not (files := list(attempts.iterdir())):
        assert launcher.poll() is None, log.read_text()[-4000:]
        assert time.monotonic() < deadline, "the step never started"
        time.sleep(0.2)
    return files[0].name, int(files[0].read_text().split()[0])


def _kill_worker_of(pid: int, cluster: CeleryCluster) -> str:
    """SIGKILL the process group of the worker whose child runs ``pid``; its Celery name."""
    pgid = os.getpgid(pid)
    index = [worker.pid for worker in cluster.workers].index(pgid)
    os.killpg(pgid, signal.SIGKILL)
    cluster.workers[index].wait(timeout=10)
    return cluster.worker_names[index]


def _end(launcher: subprocess.Popen, killed_at: float) -> float:
    """Seconds from the kill until the launching process exits (it must, within BOUND_S)."""
    try:
        launcher.wait(timeout=BOUND_S + 30)
    except subprocess.TimeoutExpired:
        os.killpg(launcher.pid, signal.SIGKILL)
        launcher.wait()
        raise AssertionError("the run still hangs after the worker was killed") from None
    return time.monotonic() - killed_at


def _messages(instance: DagsterInstance, run_id: str, kind: DagsterEventType) -> list[str]:
    return [entry.dagster_event.message or "" for entry in instance.all_logs(run_id, of_type=kind)
            if entry.dagster_event is not None]


def test_the_watch_is_configured_by_the_executor_config(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("dagster_celery", reason="the engine is the optional extra")
    from dagster._core.execution.retries import RetryMode

    from eval_assets.defs import celery_watch

    monkeypatch.setenv("EVAL_ASSETS_EXECUTOR", "celery")
    defaults = executor_from_env().config_schema.as_field().default_value
    assert defaults["lost_worker_timeout_s"] == celery_watch.DEFAULT_LOST_WORKER_TIMEOUT_S == 60
    assert defaults["lost_worker_retries"] == celery_watch.DEFAULT_LOST_WORKER_RETRIES == 1
    retries = RetryMode(RetryMode.DISABLED)
    with pytest.raises(ValueError, match="lost_worker_timeout_s must be > 0"):
        celery_watch.WatchedCeleryExecutor(0, 1, retries=retries)
    with pytest.raises(ValueError, match="lost_worker_retries must be >= 0"):
        celery_watch.WatchedCeleryExecutor(None, -1, retries=retries)
    # Only a worker known to answer while it runs a step is ever counted lost.
    assert celery_watch.unwatched_reason("celery.concurrency.prefork:TaskPool") is None
    assert "solo" in (celery_watch.unwatched_reason("celery.concurrency.solo:TaskPool") or "")
    assert "never answered" in (celery_watch.unwatched_reason(None) or "")


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_lost_worker_is_retried_elsewhere_then_fails_the_step_in_bounded_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("dagster_celery", reason="the engine is the optional extra")
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    attempts = tmp_path / "attempts"
    attempts.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("DAGSTER_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv(ATTEMPTS_DIR_ENV, str(attempts))
    monkeypatch.setenv("EVAL_ASSETS_EXECUTOR", "celery")
    launchers: list[subprocess.Popen] = []
    with celery_cluster(tmp_path / "celery", {**os.environ}, n_workers=2,
                        pool="prefork") as cluster:
        monkeypatch.setenv(CELERY_BROKER_ENV, cluster.broker)
        monkeypatch.setenv(CELERY_BACKEND_ENV, cluster.backend)
        # 1. One retry allowed: the step runs again on the other worker and the run succeeds.
        launchers.append(_launch(tmp_path, "retried", {"lost_worker_timeout_s": TIMEOUT_S}))
        retried_id, pid = _first_attempt(attempts, launchers[-1], tmp_path / "retried.log")
        # A live worker busy longer than the timeout is not counted lost.
        time.sleep(TIMEOUT_S + 4)
        assert launchers[-1].poll() is None
        assert len((attempts / retried_id).read_text().split()) == 1
        first_lost = _kill_worker_of(pid, cluster)
        retried_s = _end(launchers[-1], time.monotonic())
        # 2. No retry: the step fails, naming the worker, and the run ends.
        (attempts / retried_id).rename(tmp_path / retried_id)
        launchers.append(_launch(tmp_path, "failed", {"lost_worker_timeout_s": TIMEOUT_S,
                                                      "lost_worker_retries": 0}))
        failed_id, pid = _first_attempt(attempts, launchers[-1], tmp_path / "failed.log")
        second_lost = _kill_worker_of(pid, cluster)
        failed_s = _end(launchers[-1], time.monotonic())
        started = [*cluster.processes, *launchers]
    for proc in started:
        assert proc.returncode is not None, f"{proc.args} still running"
        assert not group_members(proc.pid), f"{proc.args} left processes behind"

    print(f"run ended {retried_s:.1f} s after the kill (retried), {failed_s:.1f} s (failed)")
    assert retried_s < BOUND_S and failed_s < BOUND_S
    assert first_lost != second_lost
    with DagsterInstance.get() as instance:
        retried = instance.get_run_by_id(retried_id)
        assert retried is not None and retried.status == DagsterRunStatus.SUCCESS
        pids = [int(p) for p in (tmp_path / retried_id).read_text().split()]
        assert len(pids) == 2 and pids[0] != pids[1]
        engine = _messages(instance, retried_id, DagsterEventType.ENGINE_EVENT)
        assert any(f"Celery worker {first_lost} running step" in m
                   and "submitting the step again" in m for m in engine), engine

        failed = instance.get_run_by_id(failed_id)
        assert failed is not None and failed.status == DagsterRunStatus.FAILURE
        assert _messages(instance, failed_id, DagsterEventType.STEP_SUCCESS) == []
        failures = instance.all_logs(failed_id, of_type=DagsterEventType.STEP_FAILURE)
        assert len(failures) == 1
        error = failures[0].dagster_event.step_failure_data.error  # type: ignore[union-attr]
        assert error is not None and error.cls_name == "LostCeleryWorker"
        assert f"lost workers: {second_lost}" in error.message
        assert "lost_worker_timeout_s=8" in error.message
