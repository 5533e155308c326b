"""The measuring event log: one line per run with its process's CPU and its steps' own."""

from __future__ import annotations

import json
import time
from pathlib import Path

from dagster import DagsterInstance, in_process_executor, job, op

from eval_assets.defs.local.instance import DAGSTER_YAML, EVENT_LOG_STORAGE_YAML
from eval_assets.defs.run_cpu import RUN_CPU_EVENT_LOG_YAML, RUN_CPU_FILE


@op
def busy() -> None:
    started = time.process_time()
    while time.process_time() - started < 0.3:
        pass


@job(executor_def=in_process_executor)
def busy_job() -> None:
    busy()


def test_a_run_records_its_cpu_and_its_steps_cpu(tmp_path: Path) -> None:
    (tmp_path / "dagster.yaml").write_text(
        DAGSTER_YAML.replace(EVENT_LOG_STORAGE_YAML, RUN_CPU_EVENT_LOG_YAML))
    with DagsterInstance.from_config(str(tmp_path)) as instance:
        before = time.process_time()
        result = busy_job.execute_in_process(instance=instance)
        after = time.process_time()
    assert result.success
    [line] = [json.loads(raw) for raw in (tmp_path / RUN_CPU_FILE).read_text().splitlines()]
    assert line["run_id"] == result.run_id and line["steps"] == 1
    assert 0.3 <= line["step_cpu_s"] <= after - before
    assert before + line["step_cpu_s"] <= line["cpu_s"] <= after  # the process's, from its start
