"""The new-recordings sensor, evaluated against a real (ephemeral) instance."""

from __future__ import annotations

import shutil
from pathlib import Path

from dagster import DagsterInstance, SensorResult, SkipReason, build_sensor_context

from eval_assets.defs.resources import ProjectStorage
from eval_assets.defs.sensors import new_recordings_sensor


def _evaluate(instance: DagsterInstance, recordings: Path, tmp_path: Path):
    storage = ProjectStorage(recordings_dir=str(recordings), storage_root=str(tmp_path / "out"))
    context = build_sensor_context(instance=instance, resources={"storage": storage})
    return new_recordings_sensor(context)


def test_sensor_adds_only_the_new_valid_recording(tmp_path: Path, sample_db: Path) -> None:
    recordings = tmp_path / "recordings"
    recordings.mkdir()
    shutil.copy(sample_db, recordings / "sample.db")
    shutil.copy(sample_db, recordings / "hallway.db")
    (recordings / "corrupt.db").write_bytes(b"not a sqlite file at all")
    (recordings / "notes.txt").write_text("ignored: not a recording")
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("recordings", ["sample"])

    result = _evaluate(instance, recordings, tmp_path)

    assert isinstance(result, SensorResult)
    assert [r.partition_key for r in result.run_requests] == ["hallway"]
    assert [r.run_key for r in result.run_requests] == ["hallway"]
    (add,) = result.dynamic_partitions_requests
    assert add.partitions_def_name == "recordings"
    assert list(add.partition_keys) == ["hallway"]


def test_sensor_skips_when_nothing_is_new(tmp_path: Path, sample_db: Path) -> None:
    recordings = tmp_path / "recordings"
    recordings.mkdir()
    shutil.copy(sample_db, recordings / "sample.db")
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("recordings", ["sample"])
    assert isinstance(_evaluate(instance, recordings, tmp_path), SkipReason)
