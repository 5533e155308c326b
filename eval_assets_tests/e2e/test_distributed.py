"""The sample's benchmark on a real Celery cluster, chosen by configuration only.

A Redis broker and two dagster-celery workers run on 127.0.0.1 as separate processes. The three
jobs are launched with ``dagster job execute`` — the unchanged code location,
``EVAL_ASSETS_EXECUTOR=celery`` and the broker's URL (from the environment, then from the run
config as the launchpad would set it). Every step must have run in a worker process, and the
outputs must be byte-identical to the in-process run of the same chain. Every process started here
is stopped by PID.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
import yaml
from dagster import DagsterEventType, DagsterInstance, DagsterRunStatus, MultiPartitionKey

from eval_assets.atomic import write_text_atomic
from eval_assets.defs.executors import (
    CELERY_BACKEND_ENV,
    CELERY_BROKER_ENV,
    MissingEngineError,
    executor_from_env,
)
from eval_assets.defs.local import run_locally
from eval_assets.layout import StorageLayout, partition_key_for, selection_file_for
from eval_assets_tests.e2e.celery_cluster import celery_cluster, group_members

MODELS = "models:\n  - name: random\n    serve: random\n    seed: 0\n"
JUDGE = "serve: random\nmodel: random\nmax_workers: 1\nbackoff_base_s: 0\n"
# The files that defs/local/test_run.py requires to be identical between two runs.
DETERMINISTIC = ("datasets/**/*", "assets/vqa_accuracy/**/*.json", "assets/pope_presence/**/*",
                 "assets/mcq_avlm/**/*", "assets/chair_hallucination/**/*",
                 "assets/vision_similarity/**/*", "assets/benchmark_results/**/*")
DAGSTER = str(Path(sys.executable).parent / "dagster")
NEEDS_CELERY = "the engine is the optional extra: pip install -e '.[celery]'"


def test_a_missing_engine_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "dagster_celery", None)  # makes its import fail
    monkeypatch.setenv("EVAL_ASSETS_EXECUTOR", "celery")
    with pytest.raises(MissingEngineError, match=r"pip install 'eval_assets\[celery\]'"):
        executor_from_env()
    monkeypatch.setenv("EVAL_ASSETS_EXECUTOR", "spark")
    with pytest.raises(ValueError, match="celery"):
        executor_from_env()


def test_k8s_selects_the_k8s_job_executor(monkeypatch: pytest.MonkeyPatch) -> None:
    engine = types.ModuleType("dagster_k8s")
    engine.k8s_job_executor = object()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "dagster_k8s", engine)
    monkeypatch.setenv("EVAL_ASSETS_EXECUTOR", "k8s")
    assert executor_from_env() is engine.k8s_job_executor  # type: ignore[attr-defined]


def test_celery_broker_and_backend_default_to_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("dagster_celery", reason=NEEDS_CELERY)
    monkeypatch.setenv("EVAL_ASSETS_EXECUTOR", "celery")
    monkeypatch.delenv(CELERY_BROKER_ENV, raising=False)
    monkeypatch.delenv(CELERY_BACKEND_ENV, raising=False)
    assert executor_from_env().name == "celery"  # dagster-celery's own defaults
    monkeypatch.setenv(CELERY_BROKER_ENV, "redis://127.0.0.1:6379/0")
    defaults = executor_from_env().config_schema.as_field().default_value
    assert defaults["broker"] == defaults["backend"] == {"env": CELERY_BROKER_ENV}
    monkeypatch.setenv(CELERY_BACKEND_ENV, "redis://127.0.0.1:6379/1")
    defaults = executor_from_env().config_schema.as_field().default_value
    assert defaults["backend"] == {"env": CELERY_BACKEND_ENV}


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for pattern in DETERMINISTIC for p in sorted(folder.glob(pattern)) if p.is_file()}


def _execute(job: str, tags: dict[str, str], run_config: dict, folder: Path) -> None:
    """``dagster job execute`` on the code location, as a user runs it (a fresh process, so the
    definitions are loaded with this test's environment)."""
    config = folder / f"{job}.yaml"
    config.write_text(yaml.safe_dump(run_config))
    done = subprocess.run(
        [DAGSTER, "job", "execute", "-m", "eval_assets.defs.definitions", "-a", "defs", "-j", job,
         "-c", str(config), "--tags", json.dumps(tags)],
        capture_output=True, text=True, timeout=420, env={**os.environ})
    assert done.returncode == 0, f"{job} failed:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_benchmark_on_a_celery_cluster_is_identical_to_the_in_process_run(
    tmp_path: Path, sample_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("dagster_celery", reason=NEEDS_CELERY)
    # The sample (with its truth files) in a folder of this test's, with a selection file that
    # keeps every fourth frame: every step still has work (186 cases), and the two runs take a
    # third of the whole sample's CPU (97 s of this test's, in CI).
    recordings = tmp_path / "recordings"
    recordings.mkdir()
    for sidecar in sample_db.parent.glob(f"{sample_db.stem}.*"):
        shutil.copy(sidecar, recordings / sidecar.name)
    sample_db = recordings / sample_db.name
    write_text_atomic(selection_file_for(sample_db), "stride: 4\n")
    (tmp_path / "models.yaml").write_text(MODELS)
    (tmp_path / "judge.yaml").write_text(JUDGE)
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    monkeypatch.setenv("EVAL_ASSETS_MODELS", str(tmp_path / "models.yaml"))
    monkeypatch.setenv("EVAL_ASSETS_JUDGE", str(tmp_path / "judge.yaml"))
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("DAGSTER_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("EVAL_ASSETS_EXECUTOR", "celery")
    monkeypatch.delenv(CELERY_BROKER_ENV, raising=False)
    monkeypatch.delenv(CELERY_BACKEND_ENV, raising=False)
    distributed = tmp_path / "celery_run"
    resources = {"storage": {"config": {"recordings_dir": str(sample_db.parent),
                                        "storage_root": str(distributed)}}}
    quiet = {"console": {"config": {"log_level": "ERROR"}}}
    run_config = {"resources": resources, "loggers": quiet}
    key = partition_key_for(sample_db)
    multi_key = MultiPartitionKey({"recording": key, "model": "random"})
    multi_tags = {"dagster/partition": str(multi_key), "dagster/partition/recording": key,
                  "dagster/partition/model": "random"}

    with DagsterInstance.get() as instance:
        instance.add_dynamic_partitions("recordings", [key])
    # The workers get the test's environment, as a deployment gives them the code location's.
    with celery_cluster(tmp_path / "celery", {**os.environ}, n_workers=2) as cluster:
        # Selected by the environment alone...
        monkeypatch.setenv(CELERY_BROKER_ENV, cluster.broker)
        monkeypatch.setenv(CELERY_BACKEND_ENV, cluster.backend)
        _execute("recording_pipeline", {"dagster/partition": key}, run_config, tmp_path)
        _execute("model_benchmark", multi_tags, run_config, tmp_path)
        # ...or with broker and backend in the run config (the launchpad's executor config).
        monkeypatch.delenv(CELERY_BROKER_ENV)
        monkeypatch.delenv(CELERY_BACKEND_ENV)
        executor = {"config": {"broker": cluster.broker, "backend": cluster.backend}}
        _execute("leaderboard_report", {}, {**run_config, "execution": executor}, tmp_path)
        worker_pids, worker_names = cluster.worker_pids, set(cluster.worker_names)
        started = cluster.processes
    for proc in started:
        assert proc.returncode is not None, f"{proc.args} still running"
        assert not group_members(proc.pid), f"{proc.args} left processes behind"

    with DagsterInstance.get() as instance:
        runs = instance.get_runs()
        assert sorted(run.job_name for run in runs) == [
            "leaderboard_report", "model_benchmark", "recording_pipeline"]
        for run in runs:
            assert run.status == DagsterRunStatus.SUCCESS, run.job_name
            starts = instance.all_logs(run.run_id, of_type=DagsterEventType.STEP_START)
            successes = instance.all_logs(run.run_id, of_type=DagsterEventType.STEP_SUCCESS)
            assert starts and len(successes) == len(starts), run.job_name
            # Each step ran in a Celery worker process, not in the launching one, and the worker
            # said so in the event log.
            pids = {entry.dagster_event.pid for entry in starts}
            assert pids <= worker_pids, (run.job_name, pids, worker_pids)
            engine = instance.all_logs(run.run_id, of_type=DagsterEventType.ENGINE_EVENT)
            in_worker = {
                entry.step_key: entry.dagster_event.engine_event_data.metadata["Celery worker"].text
                for entry in engine if "in celery worker" in (entry.dagster_event.message or "")}
            assert set(in_worker) == {entry.step_key for entry in starts}, run.job_name
            assert set(in_worker.values()) <= worker_names, in_worker

    monkeypatch.setenv("EVAL_ASSETS_EXECUTOR", "in_process")
    reference = run_locally(sample_db, tmp_path / "in_process", models=["random"])
    a, b = _digest(distributed), _digest(reference.layout.root)
    assert a == b and len(a) > 50
    assert StorageLayout(distributed).report_file().is_file()
