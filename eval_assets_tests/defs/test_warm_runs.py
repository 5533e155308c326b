"""The warm run worker: runs fork from a process that imported the code once, and finish."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from dagster import DagsterInstance, DagsterRunStatus, in_process_executor, job, op, reconstructable
from dagster._serdes import serialize_value

from eval_assets.defs.local.instance import DAGSTER_YAML, WARM_RUN_LAUNCHER_YAML
from eval_assets.defs.warm_runs import WarmRunLauncher, _Worker


@op
def report_pid() -> int:
    marker = os.environ.get("WARM_RUNS_TEST_MARKER")
    if marker:
        Path(marker).write_text(str(os.getpid()))
    return os.getpid()


@op
def fail() -> None:
    raise RuntimeError("this op fails")


@job(executor_def=in_process_executor)
def pid_job() -> None:
    report_pid()


@job(executor_def=in_process_executor)
def failing_job() -> None:
    fail()


def _wait(instance: DagsterInstance, run_id: str, timeout_s: float = 120) -> DagsterRunStatus:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        run = instance.get_run_by_id(run_id)
        assert run is not None
        if run.is_finished:
            return run.status
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} not finished after {timeout_s} s")


def test_the_project_instance_names_the_warm_launcher() -> None:
    assert WARM_RUN_LAUNCHER_YAML in DAGSTER_YAML
    assert "WarmRunLauncher" in WARM_RUN_LAUNCHER_YAML and WarmRunLauncher.__name__ == \
        "WarmRunLauncher"


@pytest.mark.timeout(300)
def test_runs_fork_from_one_worker_and_report_success_or_failure(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "pid"
    monkeypatch.setenv("WARM_RUNS_TEST_MARKER", str(marker))
    (tmp_path / "home").mkdir()
    with DagsterInstance.local_temp(str(tmp_path / "home")) as instance:
        recon = reconstructable(pid_job)
        origin = recon.get_python_origin()
        worker = _Worker(origin.repository_origin)
        try:
            assert worker.ready == {"ready": True}
            ref = serialize_value(instance.get_ref())
            pids = []
            for _ in range(2):
                run = instance.create_run_for_job(pid_job, job_code_origin=origin)
                pids.append(worker.start(run.run_id, ref))
                assert _wait(instance, run.run_id) == DagsterRunStatus.SUCCESS
                assert int(marker.read_text()) == pids[-1]  # the op ran in that fork
            assert len(set(pids)) == 2 and worker.process.pid not in pids

            failing_origin = reconstructable(failing_job).get_python_origin()
            run = instance.create_run_for_job(failing_job, job_code_origin=failing_origin)
            worker.start(run.run_id, ref)
            assert _wait(instance, run.run_id) == DagsterRunStatus.FAILURE
            assert worker.process.poll() is None  # the worker outlives a failed run
        finally:
            worker.close()
            assert worker.process.wait(timeout=60) == 0  # stdin closed: it exits
