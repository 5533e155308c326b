"""Object tracks of one recording from its stored stage folders (frames, point clouds, detections).

One pass over the selected frames, one frame's masks in memory at a time: linear in the number of
frames. The Dagster asset ``object_tracks`` and ``eval-assets vqa generate`` both call
:func:`build_tracks`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from eval_assets.frames import load_points, read_pointcloud_frames, read_rectified_frames
from eval_assets.geometry.ranging import camera_points
from eval_assets.geometry.transforms import TransformUnavailable
from eval_assets.perception.evidence_io import load_mask, read_detections
from eval_assets.recording import Recording
from eval_assets.schemas.frames import RectifiedFrame
from eval_assets.schemas.spatial import FrameCamera, ObjectTracks
from eval_assets.tracks.fuse import build_object_tracks
from eval_assets.tracks.lift import (
    CameraPoses,
    Sighting,
    Skipped,
    camera_poses_and_trajectory,
    floor_heights,
    lift_detection,
    visible_points,
)


def _motion_corrected(pts: np.ndarray, poses_at: CameraPoses, world: str, frame: RectifiedFrame,
                      world_from_camera: np.ndarray, lidar_ts: float | None) -> np.ndarray:
    """The sweep's points where they are relative to the camera at the image's time.

    The camera-from-LiDAR mount is fixed, but the sweep is taken at ``lidar_ts`` (up to
    ``MAX_LIDAR_DT`` from the image): a moving robot has moved in between, so each point is
    placed in the world with the pose at the sweep's time and brought back into the camera at
    the image's time. Unchanged without a pose at the sweep's time.
    """
    if lidar_ts is None or lidar_ts == frame.image_ts or not len(pts):
        return pts
    try:
        at_sweep = poses_at.rectified(world, frame, lidar_ts)
    except TransformUnavailable:
        return pts
    motion = np.linalg.inv(world_from_camera) @ at_sweep
    return np.asarray(pts @ motion[:3, :3].T + motion[:3, 3])


def build_tracks(recording: Recording, frames_dir: Path, clouds_dir: Path,
                 detections_dir: Path) -> ObjectTracks:
    """Lift every stored detection with its frame's LiDAR and TF and fuse them into tracks.

    A detection without enough LiDAR points, or of a frame without a point cloud or a camera
    pose, is listed in ``skipped`` with the reason.
    """
    frames = read_rectified_frames(frames_dir)
    clouds = {c.frame_index: c for c in read_pointcloud_frames(clouds_dir)}
    detections = {d.frame_index: d for d in read_detections(detections_dir)}
    poses_at = CameraPoses.of(recording)
    world, poses, no_pose, trajectory = camera_poses_and_trajectory(recording, frames, poses_at)
    sightings: list[Sighting] = []
    skipped: list[Skipped] = []
    cameras = {f.frame_index: FrameCamera(
        world_from_camera=[round(float(x), 9) + 0.0 for x in poses[f.frame_index].reshape(-1)],
        K=list(f.K_rect), width=f.width, height=f.height, image_ts=f.image_ts)
        for f in frames if f.frame_index in poses}
    for frame in sorted(frames, key=lambda f: f.frame_index):
        index = frame.frame_index
        dets = detections.get(index)
        if dets is None or not dets.detections:
            continue
        # Names as questions use them: lower case, single spaces (vqa.families.normalize_name).
        names = [" ".join(d.name.split()).lower() for d in dets.detections]
        cloud = clouds.get(index)
        why = (no_pose.get(index) if index not in poses else
               "no point cloud" if cloud is None else
               cloud.reason if cloud.status != "ok" else None)
        if why is not None or cloud is None:
            skipped += [Skipped(index, n, "no_lidar", why or "no point cloud") for n in names]
            continue
        K = np.asarray(frame.K_rect, dtype=np.float64).reshape(3, 3)
        pts = camera_points(load_points(clouds_dir, cloud),
                            np.asarray(cloud.camera_from_cloud, dtype=np.float64).reshape(4, 4))
        pts = _motion_corrected(pts, poses_at, world, frame, poses[index], cloud.lidar_ts)
        u, v, xyz = visible_points(pts, K, frame.width, frame.height)
        floor_z = floor_heights(xyz, poses[index])
        for name, det in zip(names, dets.detections, strict=True):
            lifted = lift_detection(index, name, load_mask(detections_dir, det), u, v, xyz, K,
                                    poses[index], floor_z)
            if isinstance(lifted, Sighting):
                sightings.append(lifted)
            else:
                skipped.append(lifted)
    return build_object_tracks(world, sightings, skipped, cameras, trajectory)
