"""The recordings sensor: finished valid files become partitions, changes become data versions,
and it launches nothing (the automation conditions decide what runs)."""

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

JUDGE = "serve: random\nmax_workers: 1\n"


@pytest.fixture(autouse=True)
def _no_quiet_period(monkeypatch: pytest.MonkeyPatch) -> None:
    """Register a settled file at its first look, unless a test sets a quiet period itself
    (the quiet period and the two looks are tested in recording/test_being_written.py)."""
    monkeypatch.setenv("EVAL_ASSETS_QUIET_S", "0")


def _age(path: Path, seconds: float = 3600) -> None:
    old = time.time() - seconds
    os.utime(path, (old, old))


def _tick(instance: DagsterInstance, recordings: Path, tmp_path: Path,
          cursor: str | None = None) -> SensorResult:
    (tmp_path / "judge.yaml").write_text(JUDGE)
    resources = {"storage": ProjectStorage(recordings_dir=str(recordings),
                                           storage_root=str(tmp_path / "out")),
                 "judge": JudgeResource(config_file=str(tmp_path / "judge.yaml"))}
    context = build_sensor_context(instance=instance, resources=resources, cursor=cursor)
    return recordings_sensor(context)


def _observed(result: SensorResult, key) -> dict[str | None, str]:
    return {e.partition: e.tags[DATA_VERSION_TAG] for e in result.asset_events
            if e.asset_key == key}


def test_new_valid_recordings_become_partitions_with_their_content_hash(
    tmp_path: Path, sample_db: Path
) -> None:
    recordings = tmp_path / "recordings"
    recordings.mkdir()
    for name in ("sample.db", "hallway.db"):
        shutil.copy(sample_db, recordings / name)
        _age(recordings / name)
    (recordings / "corrupt.db").write_bytes(b"not a sqlite file at all")
    _age(recordings / "corrupt.db")
    (recordings / "notes.txt").write_text("ignored: not a recording")
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("recordings", ["sample"])

    result = _tick(instance, recordings, tmp_path)

    assert result.run_requests == []  # the graph decides what runs, not the sensor
    (add,) = result.dynamic_partitions_requests
    assert list(add.partition_keys) == ["hallway"]  # sample is known, corrupt is refused
    digest = file_sha256(sample_db)
    assert _observed(result, keys.RECORDING_FILE) == {"hallway": digest, "sample": digest}
    assert set(_observed(result, keys.MODEL_CONFIG)) >= {"random"}
    assert list(_observed(result, keys.JUDGE_CONFIG)) == [None]

    # Nothing changed: nothing is reported again, and the corrupt file is not re-validated.
    again = _tick(instance, recordings, tmp_path, cursor=result.cursor)
    assert again.asset_events == [] and again.dynamic_partitions_requests == []


def test_a_file_being_written_waits_and_a_replaced_file_gets_a_new_version(
    tmp_path: Path, sample_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVAL_ASSETS_QUIET_S", "0.5")
    recordings = tmp_path / "recordings"
    recordings.mkdir()
    shutil.copy(sample_db, recordings / "live.db")  # just written: not settled yet
    instance = DagsterInstance.ephemeral()
    first = _tick(instance, recordings, tmp_path)
    assert first.dynamic_partitions_requests == []
    assert _observed(first, keys.RECORDING_FILE) == {}

    _age(recordings / "live.db")
    # Its time changed since the last look: one more look, at least the quiet period later.
    looked = _tick(instance, recordings, tmp_path, cursor=first.cursor)
    assert looked.dynamic_partitions_requests == []
    time.sleep(0.6)
    settled = _tick(instance, recordings, tmp_path, cursor=looked.cursor)
    assert list(settled.dynamic_partitions_requests[0].partition_keys) == ["live"]
    instance.add_dynamic_partitions("recordings", ["live"])

    # Replaced by different content under the same name: a new data version, no new partition.
    from eval_assets.synth import synthesize_sample

    synthesize_sample(tmp_path / "seed1.db", seed=1, frames=3)
    shutil.copy(tmp_path / "seed1.db", recordings / "live.db")
    _age(recordings / "live.db")
    looked = _tick(instance, recordings, tmp_path, cursor=settled.cursor)
    assert _observed(looked, keys.RECORDING_FILE) == {}
    time.sleep(0.6)
    replaced = _tick(instance, recordings, tmp_path, cursor=looked.cursor)
    assert replaced.dynamic_partitions_requests == []
    assert _observed(replaced, keys.RECORDING_FILE) == {"live": file_sha256(recordings / "live.db")}


def test_the_tick_that_registers_a_recording_says_so(tmp_path: Path, sample_db: Path) -> None:
    """The daemon shows a run-less tick's skip message: it must say what was registered, not
    "Sensor function returned an empty result"."""
    recordings = tmp_path / "recordings"
    recordings.mkdir()
    shutil.copy(sample_db, recordings / "alpha.db")
    _age(recordings / "alpha.db")
    (recordings / "broken.db").write_bytes(b"not a sqlite file at all")
    _age(recordings / "broken.db")
    (tmp_path / "judge.yaml").write_text(JUDGE)
    resources = {"storage": ProjectStorage(recordings_dir=str(recordings),
                                           storage_root=str(tmp_path / "out")),
                 "judge": JudgeResource(config_file=str(tmp_path / "judge.yaml"))}
    with DagsterInstance.ephemeral() as instance:
        data = recordings_sensor.evaluate_tick(
            build_sensor_context(instance=instance, resources=resources))
        assert data.run_requests == []
        assert [list(r.partition_keys) for r in data.dynamic_partitions_requests] == [["alpha"]]
        message = data.skip_message or ""
        assert "empty result" not in message
        assert "registered 1 recording(s) as partitions: alpha" in message, message
        assert "refused 1 recording(s): broken.db:" in message
        assert "not a readable SQLite" in message

        # The next tick, with nothing new, says that too.
        instance.add_dynamic_partitions("recordings", ["alpha"])
        again = recordings_sensor.evaluate_tick(build_sensor_context(
            instance=instance, resources=resources, cursor=data.cursor))
        assert again.dynamic_partitions_requests == []
        assert (again.skip_message or "").startswith("nothing new: 2 recording file(s) watched")


def test_an_edited_model_entry_is_a_new_version_of_that_model_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Read at each tick, not once per process: the daemon's code server evaluates the sensor
    for days, and the runs an edit causes read the file afresh."""
    from eval_assets.defs.partitions import model_partitions

    recordings = tmp_path / "recordings"
    recordings.mkdir()
    models = tmp_path / "models.yaml"
    names = model_partitions.get_partition_keys()
    monkeypatch.setenv("EVAL_ASSETS_MODELS", str(models))

    def write(seed: int) -> None:
        entries = [f"  - name: {name}\n    serve: random\n    seed: {seed if i == 0 else 0}\n"
                   for i, name in enumerate(names)]
        models.write_text("models:\n" + "".join(entries))

    def model_versions(result: SensorResult) -> dict[str | None, str]:
        return {e.partition: e.tags[DATA_VERSION_TAG] for e in result.asset_events
                if e.asset_key == keys.MODEL_CONFIG}

    instance = DagsterInstance.ephemeral()
    write(seed=0)
    first = _tick(instance, recordings, tmp_path)
    assert set(model_versions(first)) == set(names)
    write(seed=7)
    edited = _tick(instance, recordings, tmp_path, first.cursor)
    assert set(model_versions(edited)) == {names[0]}
    assert model_versions(edited)[names[0]] != model_versions(first)[names[0]]

    models.write_text("models: [\n")  # unreadable: said in the reason, versions kept
    broken = _tick(instance, recordings, tmp_path, edited.cursor)
    assert model_versions(broken) == {}
    assert "the models file" in (broken.skip_reason.skip_message or "")
    assert str(models) in (broken.skip_reason.skip_message or "")
    write(seed=7)
    assert model_versions(_tick(instance, recordings, tmp_path, broken.cursor)) == {}
