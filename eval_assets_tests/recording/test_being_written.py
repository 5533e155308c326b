"""A recording still being written is never registered as complete and never called corrupt.

Real SQLite writers in every journal mode, mid-transaction (pages spilled into the file), in WAL
with the connection open, and a writer that closes its file during a pause and then resumes.
"""

from __future__ import annotations

import os
import re
import sqlite3
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from dagster import DagsterInstance, build_sensor_context
from typer.testing import CliRunner

from eval_assets.cli import app
from eval_assets.defs import keys
from eval_assets.defs.automation import recordings_sensor
from eval_assets.defs.resources import JudgeResource, ProjectStorage
from eval_assets.hashing import file_sha256
from eval_assets.recording import Recording
from eval_assets.recording.errors import RecordingBeingWrittenError
from eval_assets.recording.sqlite_state import write_in_progress
from eval_assets.recording.watch import sidecars
from eval_assets_tests.factories import make_recording

ROLLBACK_MODES = ["DELETE", "TRUNCATE", "PERSIST", "MEMORY"]


def _recording(path: Path, mode: str) -> Path:
    make_recording(path, n_frames=6, width=160, height=120)
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA journal_mode={mode}")
    conn.close()
    return path


def _age(path: Path) -> None:
    """The recording and any journal or WAL beside it last written an hour ago (the file's state
    takes the latest of them: a journal left from a writer's commit kept it "4 s ago")."""
    old = time.time() - 3600
    for file in (path, *sidecars(path)):
        if file.exists():
            os.utime(file, (old, old))


@contextmanager
def _mid_transaction(path: Path) -> Iterator[None]:
    """A writer inside an uncommitted transaction whose pages spilled into the file."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA cache_size=1")  # a tiny cache spills changed pages to the db file
    conn.execute("BEGIN")
    conn.execute("UPDATE color_image_blob SET data = randomblob(length(data))")
    conn.execute("CREATE TABLE scratch (x BLOB)")
    conn.execute("INSERT INTO scratch VALUES (randomblob(200000))")
    try:
        yield
    finally:
        conn.execute("ROLLBACK")
        conn.close()


def _tick(recordings: Path, tmp_path: Path, instance: DagsterInstance, cursor: str | None):
    (tmp_path / "judge.yaml").write_text("serve: random\nmax_workers: 1\n")
    resources = {"storage": ProjectStorage(recordings_dir=str(recordings),
                                           storage_root=str(tmp_path / "out")),
                 "judge": JudgeResource(config_file=str(tmp_path / "judge.yaml"))}
    return recordings_sensor.evaluate_tick(
        build_sensor_context(instance=instance, resources=resources, cursor=cursor))


@pytest.mark.parametrize("mode", [*ROLLBACK_MODES, "WAL"])
def test_mid_transaction_is_being_written_for_the_sensor(
    tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVAL_ASSETS_QUIET_S", "0")
    recordings = tmp_path / "recordings"
    recordings.mkdir()
    db = _recording(recordings / "live.db", mode)
    with _mid_transaction(db), DagsterInstance.ephemeral() as instance:
        _age(db)  # even an old mtime: SQLite's view says it is not finished
        assert write_in_progress(db) is not None
        first = _tick(recordings, tmp_path, instance, None)
        second = _tick(recordings, tmp_path, instance, first.cursor)
        for data in (first, second):
            assert data.dynamic_partitions_requests == []
            message = data.skip_message or ""
            assert "still being written" in message and "live.db" in message, message
            assert "refused" not in message and "corrupt" not in message
    # Rolled back and closed: nothing pending, and the file is registered at the next looks.
    assert write_in_progress(db) is None


@pytest.mark.parametrize("mode", ROLLBACK_MODES)
def test_run_says_being_written_not_corrupt(tmp_path: Path, mode: str) -> None:
    db = _recording(tmp_path / "live.db", mode)
    with _mid_transaction(db):
        with pytest.raises(RecordingBeingWrittenError, match="still being written"):
            Recording.open(db)
        result = CliRunner().invoke(app, ["run", str(db), "--storage-root",
                                          str(tmp_path / "out"), "--model", "random"])
        assert result.exit_code == 2, result.output
        assert "still being written" in result.output and "corrupt" not in result.output
        generated = CliRunner().invoke(app, ["vqa", "generate", str(db), "--output",
                                             str(tmp_path / "ds")])
        assert generated.exit_code != 0
        assert "still being written" in generated.output, generated.output
    with Recording.open(db) as rec:  # rolled back: the recording reads as before
        assert rec.streams["color_image"].count == 6


def test_a_writer_that_pauses_with_its_file_closed_is_not_taken_half(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVAL_ASSETS_QUIET_S", "2")
    recordings = tmp_path / "recordings"
    recordings.mkdir()
    db = recordings / "paused.db"
    make_recording(db, n_frames=3, width=160, height=120)  # the first half, file closed
    _age(db)  # as a copy that keeps an old mtime would look
    with DagsterInstance.ephemeral() as instance:
        first = _tick(recordings, tmp_path, instance, None)
        assert first.dynamic_partitions_requests == []
        assert "must stay the same between two looks" in (first.skip_message or "")
        time.sleep(1)
        make_recording(db, n_frames=6, width=160, height=120, overwrite=True)  # resumes
        resumed = _tick(recordings, tmp_path, instance, first.cursor)
        assert resumed.dynamic_partitions_requests == []
        assert "written to" in (resumed.skip_message or "")
        time.sleep(2.2)
        done = _tick(recordings, tmp_path, instance, resumed.cursor)
    assert [list(r.partition_keys) for r in done.dynamic_partitions_requests] == [["paused"]]
    (event,) = [e for e in done.asset_events
                if e.partition == "paused" and e.asset_key == keys.RECORDING_FILE]
    assert event.tags["dagster/data_version"] == file_sha256(db)  # the whole file, not half


def test_a_file_dated_in_the_future_is_reported_so_and_taken_after_two_looks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A writer whose clock is an hour ahead: its time cannot say how long ago it was written
    # (before: "written to -3573 s ago", and a wait until the clock caught up).
    monkeypatch.setenv("EVAL_ASSETS_QUIET_S", "0.5")
    recordings = tmp_path / "recordings"
    recordings.mkdir()
    db = recordings / "ahead.db"
    make_recording(db, n_frames=3, width=160, height=120)
    ahead = time.time() + 3573
    os.utime(db, (ahead, ahead))
    with DagsterInstance.ephemeral() as instance:
        first = _tick(recordings, tmp_path, instance, None)
        assert first.dynamic_partitions_requests == []
        message = first.skip_message or ""
        assert re.search(r"ahead\.db \(its modification time is 357\d s in the future", message), (
            message)
        assert " -" not in message and "touch the file" in message
        time.sleep(0.6)  # unchanged between two looks the quiet period apart: finished
        second = _tick(recordings, tmp_path, instance, first.cursor)
    assert [list(r.partition_keys) for r in second.dynamic_partitions_requests] == [["ahead"]]


def test_generate_warns_of_a_fresh_recording_and_fails_when_it_changes_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A recorder that commits frame by frame leaves nothing pending between frames: only the
    # file's time and its change during the generation tell (before: 13 of 24 frames, no word).
    monkeypatch.setenv("EVAL_ASSETS_QUIET_S", "30")
    work = tmp_path / "tmp"
    work.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(work))  # where the generation's work dir goes
    db = make_recording(tmp_path / "live.db", n_frames=6, width=160, height=120)
    stop = threading.Event()

    def recorder_commits_once_reading_began() -> None:
        while not stop.is_set() and not any(work.glob("eval_assets-vqa-*")):
            time.sleep(0.005)
        if stop.is_set():
            return
        conn = sqlite3.connect(db, timeout=10)
        with conn:
            conn.execute("CREATE TABLE next_frame (x BLOB)")
            conn.execute("INSERT INTO next_frame VALUES (randomblob(100000))")
        conn.close()

    writer = threading.Thread(target=recorder_commits_once_reading_began)
    writer.start()
    try:
        result = CliRunner().invoke(app, ["vqa", "generate", str(db), "--output",
                                          str(tmp_path / "ds")])
    finally:
        stop.set()
        writer.join()
    text = " ".join(result.output.split())
    assert re.search(r"live\.db: it was last written \d+ s ago, less than the 30 s", text), text
    assert result.exit_code == 1, text
    # Its size, or (when the commit lands while the size is read, seen on a loaded machine) only
    # its modification time: either way the change is named and the run fails.
    assert re.search(r"changed while the dataset was generated \((its size went from|its "
                     r"modification time changed)", text), text
    assert "it is still being written" in text and "Fix: wait until the recorder" in text

    # Settled (old enough, unchanged meanwhile): no warning, and the generation succeeds.
    _age(db)
    again = CliRunner().invoke(app, ["vqa", "generate", str(db), "--output",
                                     str(tmp_path / "ds2")])
    assert again.exit_code == 0, again.output
    assert "warning" not in again.output and "still being written" not in again.output
