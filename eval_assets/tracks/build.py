"""Object tracks of one recording from its stored stage folders (frames, point clouds, detections).

One pass over the selected frames, one frame's masks in memory at a time: linear in the number of
frames. The Dagster asset ``object_tracks`` and ``eval-assets vqa generate`` both call
:func:`build_tracks`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from eval_assets.frames import load_points, read_pointcloud_frames, read_rectified_frames
from eval_assets.frames.camera_poses import CameraPoses
from eval_assets.geometry.ranging import camera_points
from eval_assets.geometry.transforms import TransformUnavailable
from eval_assets.perception.evidence_io import load_mask, read_detections
from eval_assets.recording import Recording
from eval_assets.schemas.frames import PointCloudFrame, RectifiedFrame
from eval_assets.schemas.perception import FrameDetections
from eval_assets.schemas.spatial import FrameCamera, ObjectTracks
from eval_assets.tracks.fuse import build_object_tracks
from eval_assets.tracks.lidar_objects import Namer, frame_views, lidar_sightings
from eval_assets.tracks.lift import (
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


OBJECT_SOURCES = ("lidar", "detections")
"""Where the tracks' objects come from: ``lidar`` (found in the LiDAR, named only when certain,
:mod:`eval_assets.tracks.lidar_objects`) or ``detections`` (each detector mask lifted, one track
per name: the exact evidence of the ``truth`` detector)."""


def build_tracks(recording: Recording, frames_dir: Path, clouds_dir: Path,
                 detections_dir: Path, objects: str = "lidar", tracks_dir: Path | None = None,
                 namer: Namer | None = None) -> ObjectTracks:
    """Object tracks of the recording from its stored frames, point clouds and detections.

    ``objects`` chooses the source (:data:`OBJECT_SOURCES`). With ``lidar`` each frame's
    object-number image is written under ``tracks_dir`` and the objects' record is returned in
    the tracks' ``objects`` field; ``namer`` adds taught names to the detector's. A detection or
    object without enough LiDAR points, or of a frame without a point cloud or a camera pose, is
    listed in ``skipped`` with the reason.
    """
    if objects not in OBJECT_SOURCES:
        raise ValueError(f"objects source {objects!r}: choose one of {OBJECT_SOURCES}")
    frames = read_rectified_frames(frames_dir)
    clouds = {c.frame_index: c for c in read_pointcloud_frames(clouds_dir)}
    detections = {d.frame_index: d for d in read_detections(detections_dir)}
    poses_at = CameraPoses.of(recording)
    world, poses, no_pose, trajectory = camera_poses_and_trajectory(recording, frames, poses_at)
    cameras = {f.frame_index: FrameCamera(
        world_from_camera=[round(float(x), 9) + 0.0 for x in poses[f.frame_index].reshape(-1)],
        K=list(f.K_rect), width=f.width, height=f.height, image_ts=f.image_ts)
        for f in frames if f.frame_index in poses}
    if objects == "lidar":
        def correct(pts: np.ndarray, frame: RectifiedFrame, cloud: PointCloudFrame
                    ) -> np.ndarray:
            return _motion_corrected(pts, poses_at, world, frame, poses[frame.frame_index],
                                     cloud.lidar_ts)

        found = lidar_sightings(
            lambda: frame_views(frames, clouds, clouds_dir, poses, correct), detections_dir,
            detections, frames_dir, tracks_dir, namer, frames)
        tracks = build_object_tracks(world, found.sightings, found.skipped, cameras, trajectory,
                                     found.clouds)
        return tracks.model_copy(update={"floor_z": found.record.floor_z,
                                         "objects": found.record})
    sightings, skipped = _detection_sightings(frames, clouds, clouds_dir, detections,
                                              detections_dir, poses, no_pose, poses_at, world)
    return build_object_tracks(world, sightings, skipped, cameras, trajectory)


def _detection_sightings(frames: list[RectifiedFrame], clouds: dict[int, PointCloudFrame],
                         clouds_dir: Path, detections: dict[int, FrameDetections],
                         detections_dir: Path, poses: dict[int, np.ndarray],
                         no_pose: dict[int, str], poses_at: CameraPoses, world: str
                         ) -> tuple[list[Sighting], list[Skipped]]:
    """Each stored detection lifted with its frame's LiDAR (or skipped with the reason)."""
    sightings: list[Sighting] = []
    skipped: list[Skipped] = []
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
    return sightings, skipped
