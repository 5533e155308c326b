"""A recording that cannot yield one frame is refused at the door, with the reason: by the
recordings sensor (never a partition) and by ``eval-assets run`` (exit 2, before any run)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from dagster import DagsterInstance, build_sensor_context
from typer.testing import CliRunner

from eval_assets.cli import app
from eval_assets.defs.automation import recordings_sensor
from eval_assets.defs.resources import JudgeResource, ProjectStorage
from eval_assets.frames.admission import (
    NoUsableFrameError,
    TooManyBadSelectedFramesError,
    admit_recording,
)
from eval_assets.frames.selection import FrameSelectionError
from eval_assets_tests.factories import make_recording
from eval_assets_tests.frames import damage

W, H = 160, 120


def _all_garbage(path: Path, frames: int = 3) -> Path:
    make_recording(path, n_frames=frames, width=W, height=H)
    for i in range(frames):
        damage.undecodable_jpeg(path, i)
    return path


def _age(path: Path) -> None:
    old = time.time() - 3600
    os.utime(path, (old, old))


def test_every_image_bad_is_refused_and_one_good_image_is_enough_within_the_limit(
        tmp_path: Path) -> None:
    bad = _all_garbage(tmp_path / "garbage.db")
    with pytest.raises(NoUsableFrameError) as refused:
        admit_recording(bad)
    message = str(refused.value)
    assert str(bad) in message and "none of the 3 frames" in message
    assert "3 undecodable_image" in message and "Fix:" in message

    one_good = make_recording(tmp_path / "one_good.db", n_frames=3, width=W, height=H)
    damage.undecodable_jpeg(one_good, 0)
    damage.undecodable_jpeg(one_good, 1)
    # Two bad of three is within a limit of 0.7 (over the default 0.2: see the next test).
    (tmp_path / "one_good.selection.yaml").write_text("max_bad_fraction: 0.7\n")
    assert admit_recording(one_good).inventory.image_count == 3


def test_selected_frames_bad_beyond_max_bad_fraction_are_refused(tmp_path: Path) -> None:
    # The case: 5 of 6 frames (83 %) undecodable, registered, then failing every run.
    db = make_recording(tmp_path / "mostly_bad.db", n_frames=6, width=W, height=H)
    for i in range(5):
        damage.undecodable_jpeg(db, i)
    with pytest.raises(TooManyBadSelectedFramesError) as refused:
        admit_recording(db)
    message = str(refused.value)
    assert str(db) in message and "5 of 6 examined frames are bad" in message
    assert "83% > max_bad_fraction 0.2" in message and "5 undecodable_image" in message
    assert "mostly_bad.selection.yaml" in message and "Fix:" in message
    # The frame stage's own rule, with the selection's limit: 5/6 <= 0.9 is admitted.
    (tmp_path / "mostly_bad.selection.yaml").write_text("max_bad_fraction: 0.9\n")
    assert admit_recording(db).inventory.image_count == 6
    # Only the selected frames count: frame 5 alone is good.
    (tmp_path / "mostly_bad.selection.yaml").write_text("image_index: 5\n")
    assert admit_recording(db).inventory.image_count == 6


def test_a_selection_outside_the_images_is_refused(tmp_path: Path) -> None:
    db = make_recording(tmp_path / "short.db", n_frames=3, width=W, height=H)
    selection = tmp_path / "short.selection.yaml"
    selection.write_text("start: 50\nstop: 60\n")
    with pytest.raises(FrameSelectionError) as refused:
        admit_recording(db)
    assert str(selection) in str(refused.value) and "outside the 3 images" in str(refused.value)


def test_the_sensor_refuses_them_with_the_reason(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVAL_ASSETS_QUIET_S", "0")  # settled files are taken at the first look
    recordings = tmp_path / "recordings"
    recordings.mkdir()
    _all_garbage(recordings / "garbage.db")
    make_recording(recordings / "short.db", n_frames=3, width=W, height=H)
    (recordings / "short.selection.yaml").write_text("image_index: 7\n")
    make_recording(recordings / "fine.db", n_frames=3, width=W, height=H)
    for db in recordings.glob("*.db"):
        _age(db)
    (tmp_path / "judge.yaml").write_text("serve: random\nmax_workers: 1\n")
    resources = {"storage": ProjectStorage(recordings_dir=str(recordings),
                                           storage_root=str(tmp_path / "out")),
                 "judge": JudgeResource(config_file=str(tmp_path / "judge.yaml"))}
    with DagsterInstance.ephemeral() as instance:
        data = recordings_sensor.evaluate_tick(
            build_sensor_context(instance=instance, resources=resources))
    assert [list(r.partition_keys) for r in data.dynamic_partitions_requests or []] == [["fine"]], (
        data.skip_message)
    message = data.skip_message or ""
    assert "refused 2 recording(s)" in message, message
    assert "garbage.db: " in message and "3 undecodable_image" in message
    assert "short.db: " in message and "image_index 7 is outside the 3 images" in message


def test_run_refuses_it_before_any_run(tmp_path: Path) -> None:
    bad = _all_garbage(tmp_path / "garbage.db")
    result = CliRunner().invoke(app, ["run", str(bad), "--storage-root", str(tmp_path / "out"),
                                      "--model", "random"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert "none of the 3 frames" in result.output and "undecodable_image" in result.output
