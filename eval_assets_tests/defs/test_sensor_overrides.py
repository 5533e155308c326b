"""The recordings sensor reports each recording's label overrides as a data version."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from dagster import DagsterInstance, SensorResult, build_sensor_context
from dagster._core.definitions.data_version import DATA_VERSION_TAG

from eval_assets.defs import keys
from eval_assets.defs.assets.sources import NO_OVERRIDES
from eval_assets.defs.automation import recordings_sensor
from eval_assets.defs.resources import JudgeResource, ProjectStorage
from eval_assets.hashing import file_sha256


def _tick(instance: DagsterInstance, tmp_path: Path, cursor: str | None) -> SensorResult:
    resources = {"storage": ProjectStorage(recordings_dir=str(tmp_path / "recordings"),
                                           storage_root=str(tmp_path / "out"),
                                           labels_dir=str(tmp_path / "labels")),
                 "judge": JudgeResource(config_file=str(tmp_path / "judge.yaml"))}
    return recordings_sensor(build_sensor_context(instance=instance, resources=resources,
                                                  cursor=cursor))


def _overrides(result: SensorResult) -> dict[str | None, str]:
    return {e.partition: e.tags[DATA_VERSION_TAG] for e in result.asset_events
            if e.asset_key == keys.LABEL_OVERRIDES}


def test_a_new_override_is_a_new_data_version_of_its_recording_only(
        tmp_path: Path, sample_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Finished files at the first look (no second look needed): this test is about overrides.
    monkeypatch.setenv("EVAL_ASSETS_QUIET_S", "0")
    (tmp_path / "judge.yaml").write_text("serve: random\nmax_workers: 1\n")
    recordings = tmp_path / "recordings"
    recordings.mkdir()
    for name in ("sample.db", "hallway.db"):
        shutil.copy(sample_db, recordings / name)
        old = time.time() - 3600
        os.utime(recordings / name, (old, old))
    instance = DagsterInstance.ephemeral()
    first = _tick(instance, tmp_path, None)
    assert _overrides(first) == {"hallway": NO_OVERRIDES, "sample": NO_OVERRIDES}
    # What the daemon does with the tick's request: the recordings become partitions.
    instance.add_dynamic_partitions("recordings", ["hallway", "sample"])
    assert _overrides(_tick(instance, tmp_path, first.cursor)) == {}

    overrides = tmp_path / "labels" / "sample.overrides.jsonl"
    overrides.parent.mkdir()
    overrides.write_text('{"case_id": "c"}\n')  # the sensor hashes it; the metrics validate it
    changed = _tick(instance, tmp_path, first.cursor)
    assert _overrides(changed) == {"sample": file_sha256(overrides)}
