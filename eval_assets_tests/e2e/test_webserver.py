"""End to end through the real webserver and daemon: launch from GraphQL, sensor backfills."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from eval_assets_tests.e2e.dagster_services import DagsterServices, dagster_services

REPOSITORY = {"repositoryLocationName": "eval_assets", "repositoryName": "__repository__"}

ADD_PARTITION = """
mutation Add($repo: RepositorySelector!, $key: String!) {
  addDynamicPartition(repositorySelector: $repo, partitionsDefName: "recordings",
                      partitionKey: $key) {
    __typename
    ... on PythonError { message }
  }
}"""

LAUNCH = """
mutation Launch($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
    ... on RunConfigValidationInvalid { errors { message } }
  }
}"""

RUNS = """
query Runs {
  runsOrError {
    ... on Runs { results { runId jobName status tags { key value } } }
  }
}"""

MATERIALIZATIONS = """
query Mats($key: AssetKeyInput!) {
  assetOrError(assetKey: $key) {
    ... on Asset { assetMaterializations(limit: 100) { partition runId } }
  }
}"""


def _runs(services: DagsterServices) -> list[dict]:
    results = services.graphql(RUNS)["runsOrError"]["results"]
    for run in results:
        run["partition"] = next(
            (t["value"] for t in run["tags"] if t["key"] == "dagster/partition"), None
        )
    return results


def _wait_for_run(services: DagsterServices, predicate, timeout_s: float) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for run in _runs(services):
            if predicate(run):
                if run["status"] in ("FAILURE", "CANCELED"):
                    log = (services.home / "daemon.log").read_text()[-3000:]
                    raise AssertionError(f"run {run['runId']} ended {run['status']}\n{log}")
                if run["status"] == "SUCCESS":
                    return run
        time.sleep(2)
    raise TimeoutError(f"no successful run matched within {timeout_s}s: {_runs(services)}")


MODELS = "models:\n  - name: random\n    serve: random\n    seed: 0\n"
# The random baseline as judge: its replies are not JSON, so every row is a recorded judge
# failure — the chain must still finish and report them.
JUDGE = "serve: random\nmodel: random\nmax_workers: 1\nbackoff_base_s: 0\n"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_launch_from_graphql_then_sensors_finish_the_chain_and_backfill_a_new_recording(
    tmp_path: Path, sample_db: Path
) -> None:
    # The watched folder starts empty so the sensor cannot race the GraphQL launch for "sample";
    # that run reads the bundled recording through run config instead.
    watched = tmp_path / "watched"
    watched.mkdir()
    storage = tmp_path / "storage"
    (tmp_path / "models.yaml").write_text(MODELS)
    (tmp_path / "judge.yaml").write_text(JUDGE)
    env = {"EVAL_ASSETS_RECORDINGS": str(watched), "EVAL_ASSETS_HOME": str(storage),
           "EVAL_ASSETS_MODELS": str(tmp_path / "models.yaml"),
           "EVAL_ASSETS_JUDGE": str(tmp_path / "judge.yaml"),
           "EVAL_ASSETS_EXECUTOR": "in_process"}
    with dagster_services(tmp_path / "dagster_home", env) as services:
        added = services.graphql(ADD_PARTITION, {"repo": REPOSITORY, "key": "sample"})
        assert added["addDynamicPartition"]["__typename"] == "AddDynamicPartitionSuccess", added
        storage_config = {"recordings_dir": str(sample_db.parent)}
        launched = services.graphql(LAUNCH, {"params": {
            "selector": {**REPOSITORY, "jobName": "recording_pipeline"},
            "runConfigData": {"resources": {"storage": {"config": storage_config}}},
            "executionMetadata": {"tags": [{"key": "dagster/partition", "value": "sample"}]},
        }})["launchRun"]
        assert launched["__typename"] == "LaunchRunSuccess", launched
        run_id = launched["run"]["runId"]
        _wait_for_run(services, lambda r: r["runId"] == run_id, timeout_s=300)
        outputs = storage / "assets"
        assert (outputs / "pointcloud_frames" / "sample" / "pointcloud_frames.parquet").is_file()
        # The run-status sensors take it from here: benchmark every model, then the report.
        _wait_for_run(services, lambda r: r["jobName"] == "model_benchmark", timeout_s=420)
        _wait_for_run(services, lambda r: r["jobName"] == "leaderboard_report", timeout_s=300)
        assert (outputs / "report" / "report.html").is_file()
        assert (outputs / "leaderboard" / "leaderboard.parquet").is_file()
        assert (outputs / "benchmark_results" / "sample" / "random" / "results.json").is_file()

        def sample_materializations() -> list[dict]:
            data = services.graphql(MATERIALIZATIONS, {"key": {"path": ["rectified_frames"]}})
            return [m for m in data["assetOrError"]["assetMaterializations"]
                    if m["partition"] == "sample"]

        before = sample_materializations()
        # A new recording lands in the watched folder: the sensor must run only that partition.
        shutil.copy(sample_db, watched / "hallway.db")
        _wait_for_run(services, lambda r: r["partition"] == "hallway"
                      and r["jobName"] == "recording_pipeline", timeout_s=300)
        assert (outputs / "rectified_frames" / "hallway" / "frames.parquet").is_file()
        assert sample_materializations() == before
        hallway_runs = [r for r in _runs(services)
                        if r["partition"] == "hallway" and r["jobName"] == "recording_pipeline"]
        assert len(hallway_runs) == 1
