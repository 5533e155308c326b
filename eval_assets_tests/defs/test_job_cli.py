"""Jobs launched from the real ``dagster job execute`` CLI with only the ``dagster/partition`` tag.

The CLI hands a multi-partitioned asset its key as the plain string ``<model>|<recording>``, not
as a ``MultiPartitionKey``; every (recording, model) asset must read both.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance

from eval_assets.layout import StorageLayout
from eval_assets_tests.model_runs.helpers import make_dataset

REPO = Path(__file__).resolve().parents[2]
DAGSTER = Path(sys.executable).parent / "dagster"
MODELS = "models:\n  - name: random\n    serve: random\n    seed: 0\n"


def _execute(env: dict[str, str], job: str, partition: str,
             ops: str | None) -> subprocess.CompletedProcess:
    command = [str(DAGSTER), "job", "execute", "-m", "eval_assets.defs.definitions", "-j", job,
               "--tags", json.dumps({"dagster/partition": partition})]
    if ops:
        command += ["-o", ops]
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.slow
def test_model_benchmark_runs_from_the_cli_with_its_own_partition_key(tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    make_dataset(StorageLayout(storage).dataset_dir("rec1"))
    (tmp_path / "models.yaml").write_text(MODELS)
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    env = {**os.environ, "DAGSTER_HOME": str(home), "EVAL_ASSETS_HOME": str(storage),
           "EVAL_ASSETS_MODELS": str(tmp_path / "models.yaml"),
           "EVAL_ASSETS_EXECUTOR": "in_process"}
    with DagsterInstance.from_config(str(home)) as instance:
        instance.add_dynamic_partitions("recordings", ["rec1"])

    # The key in Dagster's own string shape: dimensions joined in name order (model, recording).
    done = _execute(env, "model_benchmark", "random|rec1", ops="predictions")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "keys_by_dimension" not in done.stdout + done.stderr
    assert (StorageLayout(storage).predictions_dir("rec1", "random") / "answers.jsonl").is_file()
    with DagsterInstance.from_config(str(home)) as instance:
        assert instance.get_materialized_partitions(AssetKey("predictions")) == {"random|rec1"}

    # A key of another job's shape is refused with the shape this job expects.
    wrong = _execute(env, "model_benchmark", "rec1", ops="predictions")
    assert wrong.returncode != 0
    assert "'<model>|<recording>'" in wrong.stdout + wrong.stderr
