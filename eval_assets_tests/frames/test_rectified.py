"""Rectified frames built from small real recordings written with the project's writer."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import cv2
import numpy as np
import pytest

from eval_assets.frames import (
    FramePreparationError,
    build_rectified_frames,
    load_rectified_image,
    read_rectified_frames,
)
from eval_assets.geometry.camera import CameraModel
from eval_assets.recording import Recording, RecordingWriter, image_to_rgb, jpeg_image
from eval_assets.recording.messages import Header
from eval_assets_tests.factories import (
    CAMERA_FRAME,
    camera_info,
    frame_rgb,
    make_recording,
    point_cloud,
    tf_message,
    wall_points,
)

W, H = 160, 120
T0 = 1_700_000_000.0


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


@pytest.fixture(scope="module")
def small_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_recording(tmp_path_factory.mktemp("rec") / "small.db", n_frames=4, width=W,
                          height=H, distortion_model="equidistant")


def test_frames_hold_rectified_images_and_intrinsics(small_db: Path, tmp_path: Path) -> None:
    with Recording.open(small_db) as rec:
        frames = build_rectified_frames(rec, tmp_path)
        assert [f.frame_index for f in frames] == [0, 1, 2, 3]
        assert read_rectified_frames(tmp_path) == frames
        for f in frames:
            assert f.image_path == f"images/frame-{f.frame_index:06d}.png"
            info = rec.message("camera_info", f.frame_index)
            raw = image_to_rgb(rec.message("color_image", f.frame_index))
            expected = CameraModel.from_camera_info(info).rectify(raw)
            stored = load_rectified_image(tmp_path, f)
            np.testing.assert_array_equal(stored, expected)  # PNG is lossless
            assert not np.array_equal(stored, raw)  # and rectification changed the picture
            assert f.image_ts == pytest.approx(T0 + 0.1 * f.frame_index)
            assert f.camera_info_ts == f.image_ts
            assert (f.width, f.height, f.camera_frame_id) == (W, H, CAMERA_FRAME)
            assert f.distortion_model == "equidistant"
            assert f.K_rect == [info.P[0], 0.0, info.P[2], 0.0, info.P[5], info.P[6], 0, 0, 1]
            assert f.P_rect == list(info.P)


def test_outputs_are_byte_identical_across_runs(small_db: Path, tmp_path: Path) -> None:
    with Recording.open(small_db) as rec:
        build_rectified_frames(rec, tmp_path / "a")
        build_rectified_frames(rec, tmp_path / "b")
    a, b = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert sorted(a) == ["frames.parquet"] + [f"images/frame-{i:06d}.png" for i in range(4)]
    assert a == b


def test_frame_selection(small_db: Path, tmp_path: Path) -> None:
    with Recording.open(small_db) as rec:
        frames = build_rectified_frames(rec, tmp_path, frame_indices=[3, 1, 3])
        assert [f.frame_index for f in frames] == [1, 3]
        assert sorted(p.name for p in (tmp_path / "images").iterdir()) == [
            "frame-000001.png", "frame-000003.png"]
        with pytest.raises(FramePreparationError,
                           match=r"small.db: frame indices \[4\] are outside the 4 images of "
                                 r"stream 'color_image'; choose indices from 0 to 3"):
            build_rectified_frames(rec, tmp_path / "bad", frame_indices=[0, 4])


def _write_recording(path: Path, info_times: list[float], info_sizes: list[tuple[int, int]],
                     fx_scale: list[float]) -> Path:
    """Four images 0.1 s apart; camera_info at the given times, sizes and focal scales."""
    with RecordingWriter(path) as w:
        w.add_stream("color_image", "dimos.msgs.sensor_msgs.Image.Image", "jpeg")
        w.add_stream("camera_info", "dimos.msgs.sensor_msgs.CameraInfo.CameraInfo", "lcm")
        w.add_stream("tf", "dimos.msgs.tf2_msgs.TFMessage.TFMessage", "lcm")
        w.add_stream("pointlio_lidar", "dimos.msgs.sensor_msgs.PointCloud2.PointCloud2", "lcm")
        for t, (w_, h_), s in zip(info_times, info_sizes, fx_scale, strict=True):
            info = camera_info(w_, h_, T0 + t, "plumb_bob")
            k, p = list(info.K), list(info.P)
            k[0] *= s
            p[0] *= s
            w.write("camera_info", T0 + t, dataclasses.replace(info, K=tuple(k), P=tuple(p)))
        for i in range(4):
            t = T0 + 0.1 * i
            w.write("color_image", t, jpeg_image(frame_rgb(i, W, H), Header.at(t, CAMERA_FRAME)))
            w.write("tf", t, tf_message(t, "base_link", CAMERA_FRAME, (0, 0, 0), (0, 0, 0, 1)))
            w.write("pointlio_lidar", t, point_cloud(wall_points(10), t, "base_link"))
    return path


def test_latest_camera_info_at_or_before_the_image(tmp_path: Path) -> None:
    db = _write_recording(tmp_path / "late.db", [0.05, 0.2, 0.25], [(W, H)] * 3, [1.0, 1.1, 1.2])
    with Recording.open(db) as rec:
        frames = build_rectified_frames(rec, tmp_path / "out", frame_indices=[1, 2, 3])
        fx = camera_info(W, H, 0.0, "plumb_bob").P[0]
        # Frame 2 is at exactly the second camera_info's ts: "at or before" includes it.
        assert [f.camera_info_ts - T0 for f in frames] == pytest.approx([0.05, 0.2, 0.25], abs=1e-6)
        assert [f.K_rect[0] / fx for f in frames] == pytest.approx([1.0, 1.1, 1.2])
        with pytest.raises(FramePreparationError,
                           match=r"late.db: frame 0 \(color_image ts=1700000000.000000\) has no "
                                 r"camera_info at or before it .*select frames from index 1 on"):
            build_rectified_frames(rec, tmp_path / "out2")


def test_size_mismatch_names_both_sizes(tmp_path: Path) -> None:
    db = _write_recording(tmp_path / "resized.db", [0.0, 0.15], [(W, H), (2 * W, 2 * H)],
                          [1.0, 1.0])
    with Recording.open(db) as rec:
        assert len(build_rectified_frames(rec, tmp_path / "ok", frame_indices=[0, 1])) == 2
        with pytest.raises(FramePreparationError,
                           match=r"frame 2 \(color_image ts=1700000000.200000\) is 160x120 but "
                                 r"its camera_info \(ts=1700000000.150000\) is 320x240") as err:
            build_rectified_frames(rec, tmp_path / "bad")
    assert err.value.frame_index == 2 and err.value.stream == "color_image"
    assert isinstance(err.value, ValueError)


def test_png_matches_opencv_reading(small_db: Path, tmp_path: Path) -> None:
    with Recording.open(small_db) as rec:
        (frame,) = build_rectified_frames(rec, tmp_path, frame_indices=[2])
    bgr = cv2.imread(str(tmp_path / frame.image_path), cv2.IMREAD_UNCHANGED)
    assert bgr.shape == (H, W, 3) and bgr.dtype == np.uint8
