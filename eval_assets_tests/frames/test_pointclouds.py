"""Point-cloud frames: LiDAR matching, TF resolution at the image time, and image-only fallbacks."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from eval_assets.frames import (
    build_pointcloud_frames,
    build_rectified_frames,
    load_points,
    read_pointcloud_frames,
)
from eval_assets.geometry.ranging import camera_points, range_statistics
from eval_assets.recording import Recording, RecordingWriter, jpeg_image
from eval_assets.recording.messages import Header, Transform
from eval_assets_tests.factories import (
    CAMERA_FRAME,
    CAMERA_IN_BASE,
    LIDAR_FRAME,
    LIDAR_IN_BASE,
    WALL_DISTANCE,
    camera_info,
    frame_rgb,
    make_recording,
    point_cloud,
    tf_message,
    wall_points,
)

W, H = 160, 120
T0 = 1_700_000_000.0
IMAGE_DT = 0.5
# LiDAR offset from each image: frame 1's sweep is too late, frame 2's is early but in range.
LIDAR_OFFSETS = [0.01, 0.153, -0.08, 0.02, 0.0, 0.03]
CAMERA_TF_UNTIL = 1.7  # the camera mount stops being published here: frames 4 and 5 lack TF


def _m(pose: tuple) -> np.ndarray:
    return Transform(*pose).matrix()


def _write(path: Path, rotation: np.ndarray | None = None) -> Path:
    with RecordingWriter(path) as w:
        w.add_stream("color_image", "dimos.msgs.sensor_msgs.Image.Image", "jpeg")
        w.add_stream("camera_info", "dimos.msgs.sensor_msgs.CameraInfo.CameraInfo", "lcm")
        w.add_stream("tf", "dimos.msgs.tf2_msgs.TFMessage.TFMessage", "lcm")
        w.add_stream("pointlio_lidar", "dimos.msgs.sensor_msgs.PointCloud2.PointCloud2", "lcm")
        info = camera_info(W, H, T0 - 1.0)
        if rotation is not None:
            info = dataclasses.replace(info, R=tuple(rotation.reshape(-1).tolist()))
        w.write("camera_info", T0 - 1.0, info)
        for k in range(int(3.0 / 0.2) + 1):  # mounts republished at 5 Hz
            t = T0 + 0.2 * k
            w.write("tf", t, tf_message(t, "base_link", LIDAR_FRAME, *LIDAR_IN_BASE))
            if 0.2 * k <= CAMERA_TF_UNTIL:
                w.write("tf", t, tf_message(t, "base_link", CAMERA_FRAME, *CAMERA_IN_BASE))
        for i, off in enumerate(LIDAR_OFFSETS):
            t = T0 + IMAGE_DT * i
            w.write("color_image", t, jpeg_image(frame_rgb(i, W, H), Header.at(t, CAMERA_FRAME)))
            w.write("pointlio_lidar", t + off, point_cloud(wall_points(300), t + off, LIDAR_FRAME))
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list, list]:
    root = tmp_path_factory.mktemp("pc")
    db = _write(root / "sync.db")
    with Recording.open(db) as rec:
        frames = build_rectified_frames(rec, root / "rect")
        clouds = build_pointcloud_frames(rec, frames, root / "pc")
    return root, frames, clouds


def test_status_per_frame(built: tuple[Path, list, list]) -> None:
    root, _, clouds = built
    assert [c.status for c in clouds] == ["ok", "image_only", "ok", "ok", "image_only",
                                          "image_only"]
    assert read_pointcloud_frames(root / "pc") == clouds
    assert [c.lidar_dt for c in clouds] == pytest.approx(LIDAR_OFFSETS, abs=1e-6)
    late = clouds[1]
    assert late.reason == "nearest LiDAR is 0.153 s away (limit 0.1 s)"
    assert (late.points_path, late.camera_from_cloud, late.n_points) == (None, None, 0)
    for c in clouds[4:]:
        assert c.reason is not None
        assert c.reason.startswith(f"no transform '{LIDAR_FRAME}' -> '{CAMERA_FRAME}'")
        assert f"edge 'base_link' <- '{CAMERA_FRAME}' has no sample within 0.1 s" in c.reason
        assert c.points_path is None and c.n_points == 300 and c.cloud_frame_id == LIDAR_FRAME
    assert sorted(p.name for p in (root / "pc" / "points").iterdir()) == [
        "frame-000000.npz", "frame-000002.npz", "frame-000003.npz"]


def test_ok_frames_carry_points_and_the_mount_transform(built: tuple[Path, list, list]) -> None:
    root, frames, clouds = built
    expected = np.linalg.inv(_m(CAMERA_IN_BASE)) @ _m(LIDAR_IN_BASE)
    for frame, c in zip(frames, clouds, strict=True):
        if c.status != "ok":
            continue
        assert c.points_path == f"points/frame-{c.frame_index:06d}.npz"
        pts = load_points(root / "pc", c)
        np.testing.assert_array_equal(pts, wall_points(300))
        assert pts.dtype == np.float32
        cam_from_lidar = np.array(c.camera_from_cloud).reshape(4, 4)
        np.testing.assert_allclose(cam_from_lidar, expected, atol=1e-12)
        assert c.n_points == 300 and c.n_points_in_front == 300
        # The wall is WALL_DISTANCE ahead of the LiDAR, which sits 0.1 m behind the camera.
        (stats,) = range_statistics(pts, cam_from_lidar, np.array(frame.K_rect).reshape(3, 3),
                                    frame.width, frame.height, np.ones((1, H, W), dtype=bool))
        assert stats is not None and stats.count > 100
        assert stats.min == pytest.approx(WALL_DISTANCE - 0.1, abs=2e-3)


def test_outputs_are_byte_identical_across_runs(built: tuple[Path, list, list],
                                                tmp_path: Path) -> None:
    root, frames, _ = built
    with Recording.open(root / "sync.db") as rec:
        build_pointcloud_frames(rec, frames, tmp_path)
    for name in ["pointcloud_frames.parquet", "points/frame-000000.npz"]:
        assert (tmp_path / name).read_bytes() == (root / "pc" / name).read_bytes()


def test_world_frame_cloud_uses_the_pose_at_the_image_time(tmp_path: Path) -> None:
    # Go2 style: the cloud is in world while the robot drives 0.1 m per frame, so a transform
    # looked up at the wrong time would misplace the wall by 0.1 m or more.
    db = make_recording(tmp_path / "go2.db", n_frames=5, width=W, height=H, lidar_stream="lidar")
    with Recording.open(db) as rec:
        frames = build_rectified_frames(rec, tmp_path / "rect")
        clouds = build_pointcloud_frames(rec, frames, tmp_path / "pc")
    assert all(c.status == "ok" and c.cloud_frame_id == "world" for c in clouds)
    depth = WALL_DISTANCE + LIDAR_IN_BASE[0][0] - CAMERA_IN_BASE[0][0]
    for c in clouds:
        cam = camera_points(load_points(tmp_path / "pc", c),
                            np.array(c.camera_from_cloud).reshape(4, 4))
        np.testing.assert_allclose(cam[:, 2], depth, atol=1e-5)


def test_lidar_time_limit_is_configurable(tmp_path: Path) -> None:
    db = make_recording(tmp_path / "r.db", n_frames=2, width=W, height=H)
    with Recording.open(db) as rec:
        frames = build_rectified_frames(rec, tmp_path / "rect")
        clouds = build_pointcloud_frames(rec, frames, tmp_path / "pc", max_dt=0.005)
    assert [c.reason for c in clouds] == ["nearest LiDAR is 0.010 s away (limit 0.005 s)"] * 2


def test_points_are_turned_by_the_rectification_rotation(tmp_path: Path) -> None:
    # A stereo-rectified camera_info has R != I: the image is turned by R, so the LiDAR points
    # must be too (dimOS: rectification @ pointcloud_to_camera), else masks and points disagree.
    angle = np.deg2rad(4.0)
    rot = np.array([[np.cos(angle), 0.0, np.sin(angle)], [0.0, 1.0, 0.0],
                    [-np.sin(angle), 0.0, np.cos(angle)]])
    turned = _write(tmp_path / "turned.db", rot)
    with Recording.open(turned) as rec:
        frames = build_rectified_frames(rec, tmp_path / "rect")
        clouds = build_pointcloud_frames(rec, frames, tmp_path / "pc")
    np.testing.assert_allclose(np.array(frames[0].R_rect).reshape(3, 3), rot, atol=1e-12)
    expected = np.linalg.inv(_m(CAMERA_IN_BASE)) @ _m(LIDAR_IN_BASE)
    rect = np.eye(4)
    rect[:3, :3] = rot
    got = np.array(clouds[0].camera_from_cloud).reshape(4, 4)
    np.testing.assert_allclose(got, rect @ expected, atol=1e-12)
