"""Point-cloud frames: the LiDAR sweep nearest each rectified image and its camera transform.

A frame without a LiDAR sweep close enough in time, or whose transform the TF tree cannot give, is
kept as ``image_only`` with a readable reason: it still serves the image-based question families.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from eval_assets import progress
from eval_assets.atomic import write_bytes_atomic
from eval_assets.geometry.ranging import camera_points
from eval_assets.geometry.transforms import TransformGraph, TransformUnavailable
from eval_assets.recording import Recording, RecordingError
from eval_assets.recording.messages import PointCloud2
from eval_assets.recording.names import TF_STREAM
from eval_assets.schemas.frames import (
    POINTS_DIR,
    PointCloudFrame,
    RectifiedFrame,
    points_relpath,
    write_pointcloud_frames,
)

MAX_LIDAR_DT = 0.1  # seconds between image and LiDAR sweep (vqa.md)
TF_TOLERANCE = 0.1  # seconds between the image and each TF edge sample (recording.md)
POINTS_KEY = "xyz"


def nearest_index(stamps: np.ndarray, t: float) -> int | None:
    """Index of the stamp nearest ``t`` in sorted ``stamps`` (ties: the earlier); None if empty."""
    if stamps.size == 0:
        return None
    i = int(np.searchsorted(stamps, t))
    if i == 0:
        return 0
    if i == stamps.size:
        return i - 1
    return i - 1 if t - stamps[i - 1] <= stamps[i] - t else i


def encode_points(xyz: np.ndarray) -> bytes:
    """``savez_compressed`` bytes of an ``(N, 3)`` float32 array (zip entries have a fixed date)."""
    buf = io.BytesIO()
    points = np.ascontiguousarray(xyz, dtype=np.float32)
    np.savez_compressed(buf, allow_pickle=False, **{POINTS_KEY: points})
    return buf.getvalue()


def load_points(out_dir: Path, frame: PointCloudFrame) -> np.ndarray:
    """The stored cloud-frame points ``(N, 3)`` float32 of an ``ok`` frame."""
    if frame.points_path is None:
        raise ValueError(
            f"frame {frame.frame_index} is {frame.status} ({frame.reason}); it has no points"
        )
    with np.load(Path(out_dir) / frame.points_path) as data:
        return data[POINTS_KEY]


def _image_only(frame: RectifiedFrame, lidar_stream: str, reason: str,
                lidar_ts: float | None = None, lidar_dt: float | None = None,
                cloud_frame_id: str | None = None, n_points: int = 0) -> PointCloudFrame:
    return PointCloudFrame(
        frame_index=frame.frame_index, image_ts=frame.image_ts, status="image_only", reason=reason,
        lidar_stream=lidar_stream, lidar_ts=lidar_ts, lidar_dt=lidar_dt,
        cloud_frame_id=cloud_frame_id, camera_from_cloud=None, points_path=None,
        n_points=n_points, n_points_in_front=0,
    )


def build_pointcloud_frames(
    recording: Recording,
    frames: Sequence[RectifiedFrame],
    out_dir: Path,
    max_dt: float = MAX_LIDAR_DT,
    tf_tolerance: float = TF_TOLERANCE,
) -> list[PointCloudFrame]:
    """Match each rectified frame with its nearest LiDAR sweep and resolve the camera transform.

    Writes ``points/frame-NNNNNN.npz`` (raw cloud-frame xyz, float32) for each ``ok`` frame and
    ``pointcloud_frames.parquet`` for all frames. The transform maps the cloud's header frame into
    the image's frame, looked up at the image timestamp.
    """
    out_dir = Path(out_dir)
    lidar = recording.lidar_stream
    lidar_ts = np.asarray(recording.timestamps(lidar), dtype=np.float64)
    graph: TransformGraph | None = None  # built on first need: most of a long recording's cost
    tf_errors: list[RecordingError] = []
    results: list[PointCloudFrame] = []
    for frame in progress.track(sorted(frames, key=lambda f: f.frame_index),
                                "point clouds per frame"):
        j = nearest_index(lidar_ts, frame.image_ts)
        if j is None:
            results.append(_image_only(frame, lidar, f"stream {lidar!r} has no LiDAR messages"))
            continue
        dt = float(lidar_ts[j] - frame.image_ts)
        t_lidar = float(lidar_ts[j])
        if abs(dt) > max_dt:
            results.append(_image_only(
                frame, lidar, f"nearest LiDAR is {abs(dt):.3f} s away (limit {max_dt:g} s)",
                t_lidar, dt,
            ))
            continue
        try:
            cloud: PointCloud2 = recording.message(lidar, j)
            xyz = cloud.xyz()
        except (RecordingError, ValueError) as exc:
            # A damaged sweep costs this frame its LiDAR evidence, not the run.
            results.append(_image_only(
                frame, lidar, f"the nearest LiDAR message does not decode: "
                f"{str(exc).removeprefix(f'{recording.path}: ')}", t_lidar, dt))
            continue
        cloud_frame = cloud.header.frame_id
        if not cloud_frame or not frame.camera_frame_id:
            which = "LiDAR message" if not cloud_frame else "image"
            results.append(_image_only(
                frame, lidar, f"the {which} has no frame_id, so no transform can be resolved",
                t_lidar, dt, cloud_frame or None, len(xyz),
            ))
            continue
        if graph is None:
            # Rows that do not decode are left out; a lookup that needed them fails below.
            graph = TransformGraph.from_messages(
                m for _, m in recording.iter_messages(TF_STREAM, tf_errors))
        try:
            camera_from_cloud = graph.lookup(frame.camera_frame_id, cloud_frame, frame.image_ts,
                                             tolerance=tf_tolerance)
        except TransformUnavailable as exc:
            results.append(_image_only(
                frame, lidar, f"no transform {cloud_frame!r} -> {frame.camera_frame_id!r}: {exc}",
                t_lidar, dt, cloud_frame, len(xyz),
            ))
            continue
        # Into the rectified camera frame: the image was turned by R, so are the points.
        rectification = np.eye(4)
        rectification[:3, :3] = np.asarray(frame.R_rect, dtype=np.float64).reshape(3, 3)
        camera_from_cloud = rectification @ camera_from_cloud
        cam = camera_points(xyz, camera_from_cloud)
        in_front = int(np.count_nonzero(np.all(np.isfinite(cam), axis=1) & (cam[:, 2] > 0)))
        relpath = points_relpath(frame.frame_index)
        write_bytes_atomic(out_dir / relpath, encode_points(xyz))
        results.append(PointCloudFrame(
            frame_index=frame.frame_index,
            image_ts=frame.image_ts,
            status="ok",
            reason=None,
            lidar_stream=lidar,
            lidar_ts=t_lidar,
            lidar_dt=dt,
            cloud_frame_id=cloud_frame,
            camera_from_cloud=[float(x) for x in camera_from_cloud.reshape(-1)],
            points_path=relpath,
            n_points=len(xyz),
            n_points_in_front=in_front,
        ))
    if tf_errors:
        note = (f" ({len(tf_errors)} unreadable {TF_STREAM!r} rows left out, first row id "
                f"{tf_errors[0].row_id})")
        results = [r if not (r.reason or "").startswith("no transform")
                   else r.model_copy(update={"reason": (r.reason or "") + note}) for r in results]
    write_pointcloud_frames(out_dir, results)
    _remove_stale_points(out_dir, results)
    return results


def _remove_stale_points(out_dir: Path, frames: Sequence[PointCloudFrame]) -> None:
    """Delete point files of frames no longer prepared (an earlier, wider selection)."""
    keep = {f.points_path for f in frames if f.points_path}
    folder = out_dir / POINTS_DIR
    if folder.is_dir():
        for npz in folder.glob("frame-*.npz"):
            if f"{POINTS_DIR}/{npz.name}" not in keep:
                npz.unlink(missing_ok=True)
