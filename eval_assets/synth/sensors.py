"""The sensor messages of a synthetic rig, the same for the ray caster and the PyBullet simulator.

Both :mod:`eval_assets.synth` and :mod:`eval_assets.sim` write dimOS recordings with the same four
streams (``color_image`` jpeg, ``camera_info``, ``tf``, ``pointlio_lidar``), the robot's pose on
every image and scan row and stamps rounded to the microsecond; the builders live here once.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from eval_assets.recording import RecordingWriter, jpeg_image
from eval_assets.recording.messages import (
    FLOAT32,
    CameraInfo,
    Header,
    Image,
    PointCloud2,
    PointField,
    TFMessage,
    Transform,
    TransformStamped,
)
from eval_assets.recording.names import (
    BASE_FRAME,
    CAMERA_FRAME,
    CAMERA_INFO_STREAM,
    IMAGE_STREAM,
    LIDAR_FRAME,
    LIDAR_STREAM,
    TF_STREAM,
    WORLD_FRAME,
)
from eval_assets.synth.scene import quaternion_xyzw

JPEG_QUALITY = 90
_IDENTITY_R = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)


def round_us(t: float) -> float:
    """A message stamp: epoch seconds rounded to the microsecond."""
    return round(t, 6)


def add_sensor_streams(writer: RecordingWriter) -> None:
    """Declare the rig's four streams on a fresh recording, in the order every writer uses."""
    writer.add_stream(IMAGE_STREAM, Image, "jpeg")
    writer.add_stream(CAMERA_INFO_STREAM, CameraInfo, "lcm")
    writer.add_stream(TF_STREAM, TFMessage, "lcm")
    writer.add_stream(LIDAR_STREAM, PointCloud2, "lcm")


def transform(m: np.ndarray) -> Transform:
    """The translation and (x, y, z, w) rotation of a 4×4 pose."""
    t = m[:3, 3]
    return Transform((float(t[0]), float(t[1]), float(t[2])), quaternion_xyzw(m[:3, :3]))


def pose7(m: np.ndarray) -> tuple[float, ...]:
    """A 4×4 pose as the row pose of a recording: x, y, z, qx, qy, qz, qw."""
    tr = transform(m)
    return (*tr.translation, *tr.rotation)


def tf_message(ts: float, parent: str, child: str, m: np.ndarray, seq: int) -> TFMessage:
    """One ``parent → child`` transform at ``ts``."""
    return TFMessage((TransformStamped(Header.at(ts, parent, seq), child, transform(m)),))


def world_tf(ts: float, world_from_base: np.ndarray, seq: int) -> TFMessage:
    """The moving transform ``world → base_link``."""
    return tf_message(ts, WORLD_FRAME, BASE_FRAME, world_from_base, seq)


def static_tfs(ts: float, base_from_camera: np.ndarray, base_from_lidar: np.ndarray,
               seq: int) -> tuple[TFMessage, TFMessage]:
    """The static mounts ``base_link → camera_optical`` and ``base_link → mid360_link``."""
    return (tf_message(ts, BASE_FRAME, CAMERA_FRAME, base_from_camera, seq),
            tf_message(ts, BASE_FRAME, LIDAR_FRAME, base_from_lidar, seq))


def camera_info(ts: float, seq: int, *, width: int, height: int, distortion_model: str,
                d: Sequence[float] | np.ndarray, k: np.ndarray, p: np.ndarray) -> CameraInfo:
    """The ``camera_info`` message of an unrectified camera (``R`` the identity)."""
    return CameraInfo(
        header=Header.at(ts, CAMERA_FRAME, seq),
        height=height,
        width=width,
        distortion_model=distortion_model,
        D=tuple(float(v) for v in d),
        K=tuple(float(v) for v in k.ravel()),
        R=_IDENTITY_R,
        P=tuple(float(v) for v in p.ravel()),
    )


def camera_image(rgb: np.ndarray, ts: float, seq: int) -> Image:
    """The jpeg ``color_image`` message of one render."""
    return jpeg_image(rgb, Header.at(ts, CAMERA_FRAME, seq), quality=JPEG_QUALITY)


def point_cloud(points: np.ndarray, ts: float, seq: int) -> PointCloud2:
    """A LiDAR scan (N × 4 float: x, y, z, intensity in ``mid360_link``) as a ``PointCloud2``."""
    fields = tuple(PointField(name, 4 * i, FLOAT32, 1)
                   for i, name in enumerate(("x", "y", "z", "intensity")))
    data = np.ascontiguousarray(points, dtype="<f4").tobytes()
    return PointCloud2(
        header=Header.at(ts, LIDAR_FRAME, seq),
        height=1,
        width=len(points),
        fields=fields,
        is_bigendian=False,
        point_step=16,
        row_step=16 * len(points),
        data=data,
        is_dense=True,
    )
