"""The recordings sensor and the selection file: an edited selection is a new data version, an
invalid one keeps the recording out, damaged rows are only logged."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from dagster import DagsterInstance, SensorResult, build_sensor_context
from dagster._core.definitions.data_version import DATA_VERSION_TAG

from eval_assets.defs import keys
from eval_assets.defs.automation import recordings_sensor
from eval_assets.defs.resources import JudgeResource, ProjectStorage
from eval_assets.hashing import file_sha256
from eval_assets_tests.frames import damage


@pytest.fixture(autouse=True)
def _no_quiet_period(monkeypatch: pytest.MonkeyPatch) -> None:
    """A settled file is taken at its first look (the two looks: recording/test_being_written)."""
    monkeypatch.setenv("EVAL_ASSETS_QUIET_S", "0")


def _age(path: Path) -> None:
    old = time.time() - 3600
    os.utime(path, (old, old))


def _tick(instance: DagsterInstance, recordings: Path, tmp_path: Path,
          cursor: str | None = None) -> SensorResult:
    (tmp_path / "judge.yaml").write_text("serve: random\nmax_workers: 1\n")
    resources = {"storage": ProjectStorage(recordings_dir=str(recordings),
                                           storage_root=str(tmp_path / "out")),
                 "judge": JudgeResource(config_file=str(tmp_path / "judge.yaml"))}
    return recordings_sensor(build_sensor_context(instance=instance, resources=resources,
                                                  cursor=cursor))


def _recording_versions(result: SensorResult) -> dict[str | None, str]:
    return {e.partition: e.tags[DATA_VERSION_TAG] for e in result.asset_events
            if e.asset_key == keys.RECORDING_FILE}


def test_selection_edits_are_new_versions_and_invalid_files_keep_it_out(
        tmp_path: Path, sample_db: Path) -> None:
    recordings = tmp_path / "recordings"
    recordings.mkdir()
    db = recordings / "hall.db"
    shutil.copy(sample_db, db)
    damage.missing_blob(db, "color_image", 5)  # a damaged row does not keep it out
    _age(db)
    selection = recordings / "hall.selection.yaml"
    selection.write_text("stride: [\n")  # invalid YAML: not a partition yet
    instance = DagsterInstance.ephemeral()

    refused = _tick(instance, recordings, tmp_path)
    assert refused.dynamic_partitions_requests == [] and _recording_versions(refused) == {}

    selection.write_text("stride: 2\n")
    added = _tick(instance, recordings, tmp_path, refused.cursor)
    assert list(added.dynamic_partitions_requests[0].partition_keys) == ["hall"]
    first = _recording_versions(added)["hall"]
    assert first != file_sha256(db)  # the selection is part of the version
    instance.add_dynamic_partitions("recordings", ["hall"])

    assert _recording_versions(_tick(instance, recordings, tmp_path, added.cursor)) == {}
    selection.write_text("stride: 3\n")
    edited = _tick(instance, recordings, tmp_path, added.cursor)
    assert edited.dynamic_partitions_requests == []
    assert _recording_versions(edited)["hall"] not in (first, file_sha256(db))

    selection.unlink()  # back to the default policy: the file's own hash
    assert _recording_versions(_tick(instance, recordings, tmp_path, edited.cursor)) == {
        "hall": file_sha256(db)}
