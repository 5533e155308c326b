"""Images against TF (issue 42): a frozen camera or a TF that stands still while the images move
is refused frame by frame, with the reason, at the door, by the recordings sensor and in the
frame stage of ``vqa generate``; no motion or same_place case spans such a frame; a normal
recording loses no frame.

The crafted recordings are the bundled sample with its own rows rewritten
(:mod:`eval_assets_tests.frames.damage`): images copied byte for byte over later frames (TF
untouched), or TF samples repeating one pose (images untouched).
"""

from __future__ import annotations

import math
import os
import shutil
import time
from pathlib import Path

import cv2
import numpy as np
import pytest
from dagster import DagsterInstance, build_sensor_context
from typer.testing import CliRunner

from eval_assets.cli import app
from eval_assets.defs.automation import recordings_sensor
from eval_assets.defs.resources import JudgeResource, ProjectStorage
from eval_assets.frames import (
    FrameSelectionConfig,
    plan_selection,
    prepare_rectified_frames,
    read_skipped_frames,
)
from eval_assets.frames.admission import TooManyBadSelectedFramesError, admit_recording
from eval_assets.frames.image_motion import (
    NEAR_IDENTICAL_SHARE,
    FrameLook,
    ImageMotionCheck,
    changed_share,
    correlation,
    thumbnail,
)
from eval_assets.frames.selection import image_tf_skips
from eval_assets.recording import Recording
from eval_assets.schemas.spatial import FrameCamera, ObjectTracks
from eval_assets.tracks.lift import camera_poses_and_trajectory
from eval_assets.vqa.generate import image_tf_breaks
from eval_assets.vqa.spatial import build_spatial
from eval_assets.vqa.spatial.motion import CROSSES_BREAK, MOTION_GENERATORS
from eval_assets_tests.factories import make_recording
from eval_assets_tests.frames import damage

FROZEN_FROM, FROZEN = 10, range(11, 14)  # frames 11-13 repeat frame 10's image


def _copy(sample_db: Path, folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy2(sample_db, folder / name))


def _texture(width: int = 640, height: int = 480) -> np.ndarray:
    """A deterministic textured BGR picture (smoothed random blocks)."""
    rng = np.random.default_rng(7)
    blocks = rng.integers(0, 256, (height // 20, width // 20, 3), dtype=np.uint8)
    big = cv2.resize(blocks, (width, height), interpolation=cv2.INTER_NEAREST)
    return cv2.GaussianBlur(big, (0, 0), 3)


def _pose(x: float = 0.0, yaw_deg: float = 0.0) -> np.ndarray:
    c, s = math.cos(math.radians(yaw_deg)), math.sin(math.radians(yaw_deg))
    m = np.eye(4)
    m[:2, :2] = [[c, -s], [s, c]]
    m[0, 3] = x
    return m


def test_sensor_noise_is_near_identical_and_a_small_view_change_is_not() -> None:
    image = _texture()
    rng = np.random.default_rng(0)
    for sigma in (3.0, 8.0):  # typical and low-light sensor noise, in grey levels
        noisy = np.clip(image + rng.normal(0.0, sigma, image.shape), 0, 255).astype(np.uint8)
        assert changed_share(thumbnail(image), thumbnail(noisy)) <= NEAR_IDENTICAL_SHARE
        assert (correlation(thumbnail(image), thumbnail(noisy)) or 0.0) > 0.99
    # 20 px at 640 px wide: what a 3° turn does to a 400 px focal length.
    shifted = np.roll(image, 20, axis=1)
    assert changed_share(thumbnail(image), thumbnail(shifted)) > 10 * NEAR_IDENTICAL_SHARE
    # A featureless image is not judged: it looks the same wherever the camera is.
    check = ImageMotionCheck(lambda look: _pose(x=look.t))
    black = np.zeros((48, 64, 3), np.uint8)
    assert [check.add(FrameLook(i, float(i), black)) for i in range(3)] == [None] * 3


def test_the_check_refuses_a_repeated_image_while_tf_moves_and_a_new_view_while_tf_stands(
        ) -> None:
    views = [thumbnail(np.roll(_texture(), 40 * i, axis=1)) for i in range(6)]
    poses = {0: _pose(0.0), 1: _pose(0.3), 2: _pose(0.6), 3: _pose(0.32), 4: _pose(0.9),
             5: _pose(0.9, yaw_deg=1.0)}
    check = ImageMotionCheck(lambda look: poses[look.index])
    # Frame 2 repeats frame 1's image while TF moves on; frame 3 is a new view 2 cm from frame
    # 1's pose; frame 5 a new view 1° from frame 4's.
    shown = [0, 1, 1, 3, 4, 5]
    found = [check.add(FrameLook(i, float(i), views[v])) for i, v in enumerate(shown)]
    assert [(d.index, d.reason, d.since_t) if d else None for d in found] == [
        None, None, (2, "frozen_image", 1.0), (3, "image_moved_tf_still", 1.0), None,
        (5, "image_moved_tf_still", 4.0)]
    assert found[2] is not None and "shows the same image as frame 1" in found[2].detail
    assert "TF moved the camera 0.300 m" in found[2].detail
    assert found[3] is not None and "TF moved the camera only 0.020 m" in found[3].detail


def test_a_normal_recording_loses_no_frame(sample_db: Path, tmp_path: Path) -> None:
    with Recording.open(sample_db) as rec:
        assert plan_selection(rec, FrameSelectionConfig()).skipped == ()
        assert plan_selection(rec, FrameSelectionConfig(quality_window=1.0)).skipped == ()
    # The test factory's picture changes least of all (a 3-pixel shift of a small square):
    factory = make_recording(tmp_path / "factory.db", n_frames=8, width=320, height=240)
    with Recording.open(factory) as rec:
        assert image_tf_skips(rec, list(range(8))) == []


def test_a_frozen_camera_is_refused_at_the_door_and_by_vqa_generate(sample_db: Path,
                                                                     tmp_path: Path) -> None:
    frozen = _copy(sample_db, tmp_path, "frozen.db")
    damage.freeze_images(frozen, range(1, 24), 0)  # 24 byte-identical images, TF moving
    with pytest.raises(TooManyBadSelectedFramesError) as refused:
        admit_recording(frozen)
    message = str(refused.value)
    assert str(frozen) in message and "23 of 24 examined frames are bad" in message
    assert "23 frozen_image" in message and "shows the same image as frame 0" in message
    assert "Fix: check the camera driver" in message
    out = tmp_path / "dataset"
    result = CliRunner().invoke(app, ["vqa", "generate", str(frozen), "--output", str(out)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "23 frozen_image" in result.output
    assert not (out / "spatial_cases.jsonl").exists()


def _motion_cases(rec: Recording, frames_dir: Path, breaks: list[tuple[float, float]]
                  ) -> tuple[list[tuple[float, float]], list[str]]:
    """The motion cases' first and last image stamps and the rejection reasons, from the
    prepared frames' camera poses and TF trajectory (no objects needed)."""
    plan = plan_selection(rec, FrameSelectionConfig())
    prepared = prepare_rectified_frames(rec, frames_dir, plan)
    world, poses, _, trajectory = camera_poses_and_trajectory(rec, prepared.frames)
    tracks = ObjectTracks(world_frame=world, tracks=[], trajectory=trajectory, cameras={
        f.frame_index: FrameCamera(world_from_camera=poses[f.frame_index].reshape(-1).tolist(),
                                   K=list(f.K_rect), width=f.width, height=f.height,
                                   image_ts=f.image_ts) for f in prepared.frames})
    spatial = build_spatial(tracks, [f.frame_index for f in prepared.frames], breaks=breaks)
    spans = [(lab.evidence["image_ts"][0], lab.evidence["image_ts"][-1])
             for lab in spatial.labels if lab.family in MOTION_GENERATORS]
    return spans, [r.reason for r in spatial.rejections]


def test_frozen_frames_are_skipped_with_the_reason_and_no_motion_case_spans_them(
        sample_db: Path, tmp_path: Path) -> None:
    db = _copy(sample_db, tmp_path, "stalled.db")
    damage.freeze_images(db, FROZEN, FROZEN_FROM)
    assert admit_recording(db).inventory.image_count == 24  # 3 of 24 bad: within the limit
    with Recording.open(db) as rec:
        ts = rec.timestamps("color_image")
        plan = plan_selection(rec, FrameSelectionConfig())
        prepared = prepare_rectified_frames(rec, tmp_path / "frames", plan)
        skipped = read_skipped_frames(tmp_path / "frames")
        assert [(s.frame_index, s.reason, s.since_ts) for s in skipped] == [
            (i, "frozen_image", float(ts[FROZEN_FROM])) for i in FROZEN]
        assert skipped == prepared.skipped and all(s.fix and s.counts_as_bad for s in skipped)
        assert sorted(f.frame_index for f in prepared.frames) == [
            i for i in range(24) if i not in FROZEN]
        breaks = image_tf_breaks([s.model_dump(mode="json") for s in skipped])
        assert breaks == [(float(ts[FROZEN_FROM]), float(ts[i])) for i in FROZEN]
        spans, reasons = _motion_cases(rec, tmp_path / "again", breaks)
        unguarded, _ = _motion_cases(rec, tmp_path / "unguarded", [])
    lo, hi = float(ts[FROZEN_FROM]), float(ts[FROZEN[-1]])
    assert spans and CROSSES_BREAK in reasons
    assert not [s for s in spans if s[0] < hi and s[1] > lo]  # none spans or touches 10-13
    assert [s for s in unguarded if s[0] < hi and s[1] > lo]  # ... which they would otherwise


def test_a_tf_standing_still_while_the_images_move_is_refused(sample_db: Path,
                                                               tmp_path: Path) -> None:
    db = _copy(sample_db, tmp_path, "stuck_tf.db")
    with Recording.open(db) as rec:
        ts = rec.timestamps("color_image")
    damage.freeze_tf(db, "base_link", float(ts[8]) - 0.05, float(ts[20]))
    with Recording.open(db) as rec:
        skipped = plan_selection(rec, FrameSelectionConfig()).skipped
    assert skipped and {s.reason for s in skipped} == {"image_moved_tf_still"}
    assert all(8 < s.frame_index <= 20 and s.since_ts is not None for s in skipped)
    assert "TF moved the camera only 0.000 m" in skipped[0].detail


def _age(path: Path) -> None:
    old = time.time() - 3600
    os.utime(path, (old, old))


def test_the_sensor_refuses_a_frozen_camera_and_a_changing_calibration(
        sample_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVAL_ASSETS_QUIET_S", "0")  # settled files are taken at the first look
    recordings = tmp_path / "recordings"
    damage.freeze_images(_copy(sample_db, recordings, "frozen.db"), range(1, 24), 0)
    damage.scale_intrinsics(_copy(sample_db, recordings, "zoomed.db"), 12, 1.5)
    _copy(sample_db, recordings, "fine.db")
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
    assert "frozen.db: " in message and "23 frozen_image" in message
    assert "zoomed.db: " in message and "K[0] (fx)" in message and "from frame 12" in message
