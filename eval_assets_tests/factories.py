"""Small valid recordings for tests, written with the real ``RecordingWriter``.

``make_recording`` builds a file with every required stream, deterministic content and a rig that
resembles the reference one (scaled intrinsics, LiDAR a little above and behind the camera):

    world --(moves +x 0.1 m per frame)--> base_link --(static)--> mid360_link   (LiDAR)
                                          base_link --(static)--> camera_optical (camera)

The LiDAR sees a wall of points ``WALL_DISTANCE`` metres ahead of ``mid360_link``; the camera looks
along base_link +x, so the wall fills the middle of the image.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from eval_assets.recording import RecordingWriter, jpeg_image
from eval_assets.recording.messages import (
    FLOAT32,
    CameraInfo,
    Header,
    PointCloud2,
    PointField,
    TFMessage,
    Transform,
    TransformStamped,
)

T0 = 1_700_000_000.0
CAMERA_FRAME = "camera_optical"
LIDAR_FRAME = "mid360_link"
BASE_FRAME = "base_link"
WORLD_FRAME = "world"
WALL_DISTANCE = 2.0
LIDAR_IN_BASE = ((0.2, 0.0, 0.3), (0.0, 0.0, 0.0, 1.0))
# Optical axes (x right, y down, z forward) in base_link (x forward, y left, z up).
CAMERA_IN_BASE = ((0.3, 0.0, 0.25), (-0.5, 0.5, -0.5, 0.5))

DISTORTION = {
    "equidistant": (-0.02, 0.003, -0.001, 0.0002),
    "plumb_bob": (-0.1, 0.02, 0.001, -0.001, 0.0),
    "rational_polynomial": (-0.1, 0.02, 0.001, -0.001, 0.0, 0.01, 0.0, 0.0),
}

_DEFAULTS: dict[str, Any] = {
    "lidar_stream": "pointlio_lidar",
    "t0": T0,
    "dt": 0.1,
    "distortion_model": "equidistant",
    "n_points": 240,
    "camera_info_size": None,  # (width, height) to make camera_info disagree with the images
    "omit": (),  # stream names not to register at all
    "empty": (),  # stream names registered without rows
    "quality": 90,
    "overwrite": False,
}


def camera_info(width: int, height: int, ts: float, model: str = "equidistant") -> CameraInfo:
    """Intrinsics of the reference rig scaled to ``width`` x ``height``."""
    fx, fy = 797.48 * width / 1280, 796.49 * height / 720
    cx, cy = 643.54 * width / 1280, 349.28 * height / 720
    return CameraInfo(
        header=Header.at(ts, CAMERA_FRAME),
        height=height,
        width=width,
        distortion_model=model,
        D=DISTORTION[model],
        K=(fx, 0.0, cx, 0.0, fy, cy, 0.0, 0.0, 1.0),
        R=(1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0),
        P=(fx, 0.0, cx, 0.0, 0.0, fy, cy, 0.0, 0.0, 0.0, 1.0, 0.0),
    )


def frame_rgb(index: int, width: int, height: int) -> np.ndarray:
    """A deterministic test picture: a gradient with a red square that moves with ``index``."""
    ys, xs = np.mgrid[0:height, 0:width]
    rgb = np.stack(
        [(xs * 255 // max(width - 1, 1)), (ys * 255 // max(height - 1, 1)), np.full_like(xs, 96)],
        axis=2,
    ).astype(np.uint8)
    side = max(min(width, height) // 4, 1)
    x0 = (index * 3) % max(width - side, 1)
    y0 = (height - side) // 2
    rgb[y0 : y0 + side, x0 : x0 + side] = (220, 30, 30)
    return rgb


def wall_points(n_points: int) -> np.ndarray:
    """``(n, 3)`` float32 points on a wall ``WALL_DISTANCE`` m ahead in the LiDAR frame."""
    cols = max(int(np.sqrt(n_points * 2)), 1)
    rows = max(-(-n_points // cols), 1)
    ys, zs = np.meshgrid(np.linspace(-1.0, 1.0, cols), np.linspace(-0.5, 0.5, rows))
    pts = np.stack([np.full(ys.size, WALL_DISTANCE), ys.ravel(), zs.ravel()], axis=1)
    return pts[:n_points].astype(np.float32)


def point_cloud(points: np.ndarray, ts: float, frame_id: str) -> PointCloud2:
    """A PointCloud2 of x, y, z, intensity little-endian float32 (point_step 16)."""
    n = len(points)
    buf = np.zeros((n, 4), dtype="<f4")
    buf[:, :3] = points
    buf[:, 3] = np.arange(n, dtype=np.float32) % 100
    fields = tuple(PointField(name, 4 * i, FLOAT32, 1) for i, name in enumerate("xyz"))
    fields += (PointField("intensity", 12, FLOAT32, 1),)
    return PointCloud2(
        header=Header.at(ts, frame_id),
        height=1,
        width=n,
        fields=fields,
        is_bigendian=False,
        point_step=16,
        row_step=16 * n,
        data=buf.tobytes(),
        is_dense=True,
    )


def tf_message(ts: float, parent: str, child: str, translation: Any, rotation: Any) -> TFMessage:
    """A TFMessage with one transform ``parent`` -> ``child`` stamped ``ts``."""
    edge = TransformStamped(Header.at(ts, parent), child, Transform(translation, rotation))
    return TFMessage((edge,))


def _base_in_world(index: int) -> tuple[tuple[float, float, float], tuple[float, ...]]:
    return (0.1 * index, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)


def make_recording(
    path: str | Path, n_frames: int = 3, width: int = 64, height: int = 48, **overrides: Any
) -> Path:
    """Write a small valid recording with every required stream to ``path`` and return it.

    Overrides: ``lidar_stream`` ("pointlio_lidar" in ``mid360_link`` or "lidar" in ``world``),
    ``t0``, ``dt``, ``distortion_model``, ``n_points``, ``camera_info_size`` ((w, h) for a
    deliberate mismatch), ``omit`` / ``empty`` (stream names to leave out / leave empty),
    ``quality`` (JPEG), ``overwrite``.
    """
    unknown = set(overrides) - set(_DEFAULTS)
    if unknown:
        raise TypeError(f"make_recording got unknown overrides {sorted(unknown)}")
    opt = {**_DEFAULTS, **overrides}
    omit: Iterable[str] = opt["omit"]
    empty: Iterable[str] = opt["empty"]
    lidar = opt["lidar_stream"]
    info_w, info_h = opt["camera_info_size"] or (width, height)
    path = Path(path)

    streams = {
        "color_image": ("dimos.msgs.sensor_msgs.Image.Image", "jpeg"),
        "camera_info": ("dimos.msgs.sensor_msgs.CameraInfo.CameraInfo", "lcm"),
        "tf": ("dimos.msgs.tf2_msgs.TFMessage.TFMessage", "lcm"),
        lidar: ("dimos.msgs.sensor_msgs.PointCloud2.PointCloud2", "lcm"),
    }
    wall = wall_points(opt["n_points"])
    with RecordingWriter(path, overwrite=opt["overwrite"]) as w:
        for name, (module, codec) in streams.items():
            if name not in omit:
                w.add_stream(name, module, codec)
        live = {name for name in streams if name not in omit and name not in empty}
        for i in range(n_frames):
            t = opt["t0"] + i * opt["dt"]
            pos, rot = _base_in_world(i)
            pose = (*pos, *rot)
            if "tf" in live:
                w.write("tf", t, tf_message(t, WORLD_FRAME, BASE_FRAME, pos, rot), pose)
                w.write("tf", t, tf_message(t, BASE_FRAME, LIDAR_FRAME, *LIDAR_IN_BASE), pose)
                w.write("tf", t, tf_message(t, BASE_FRAME, CAMERA_FRAME, *CAMERA_IN_BASE), pose)
            if "camera_info" in live:
                w.write("camera_info", t, camera_info(info_w, info_h, t, opt["distortion_model"]))
            if "color_image" in live:
                image = jpeg_image(
                    frame_rgb(i, width, height), Header.at(t, CAMERA_FRAME), opt["quality"]
                )
                w.write("color_image", t, image, pose)
            if lidar in live:
                t_lidar = t + 0.01
                if lidar == "lidar":
                    # Go2 publishes its cloud in world: base_link(world) @ mid360(base) @ points.
                    to_world = Transform(pos, rot).matrix() @ Transform(*LIDAR_IN_BASE).matrix()
                    pts = (wall @ to_world[:3, :3].T + to_world[:3, 3]).astype(np.float32)
                    cloud = point_cloud(pts, t_lidar, WORLD_FRAME)
                else:
                    cloud = point_cloud(wall, t_lidar, LIDAR_FRAME)
                w.write(lidar, t_lidar, cloud, pose)
    return path
