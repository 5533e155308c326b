"""LiDAR object discovery's cost per frame, on one core, at 16 × 1024 rays.

    python benchmarks/lidar_objects.py [--frames 120] [--seed 5151] [--repeats 3]
    python benchmarks/lidar_objects.py --smoke   # tiny sizes: does it still run?

A simulated recording (``eval-assets recording simulate``, 640×480, a 16 × 1024 LiDAR) is
rectified and its point clouds stored; then, with BLAS and OpenCV held to one thread, the three
steps the tracks stage adds are timed over every frame (best of ``--repeats``):

1. discovery: each sweep into the world, its floor found, its object points binned, and the
   components of the recording's floor plan (:func:`eval_assets.objects.lidar.discover_objects`);
2. masks: each frame's visible points labelled and the objects' silhouettes painted far to near
   (:func:`eval_assets.objects.masks.frame_objects`);
3. both, per frame. Target (issue 40): ≤ 50 ms per frame for discovery.
"""

from __future__ import annotations

import os

# One core: set before numpy and OpenCV load their thread pools.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=120)
    parser.add_argument("--seed", type=int, default=5151)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.smoke:
        args.frames, args.repeats = 8, 1
    cv2.setNumThreads(1)

    from eval_assets.frames import (
        build_pointcloud_frames,
        plan_indices,
        prepare_rectified_frames,
    )
    from eval_assets.objects.lidar import FrameSweep, discover_objects
    from eval_assets.objects.masks import frame_objects
    from eval_assets.recording import Recording
    from eval_assets.sim.simulate import SimConfig, simulate_recording
    from eval_assets.tracks.build import _motion_corrected
    from eval_assets.tracks.lidar_objects import frame_views
    from eval_assets.tracks.lift import CameraPoses, camera_poses_and_trajectory, visible_points

    with tempfile.TemporaryDirectory(prefix="lidar-objects-bench-") as tmp:
        root = Path(tmp)
        db = simulate_recording(root / "sim.db", SimConfig(seed=args.seed,
                                                           frames=args.frames)).db
        with Recording.open(db) as rec:
            prepared = prepare_rectified_frames(rec, root / "frames",
                                                plan_indices(rec, range(args.frames)))
            clouds = {c.frame_index: c for c in build_pointcloud_frames(
                rec, prepared.frames, root / "clouds")}
            poses_at = CameraPoses.of(rec)
            world, poses, _, _ = camera_poses_and_trajectory(rec, prepared.frames, poses_at)

        def correct(pts: np.ndarray, frame: object, cloud: object) -> np.ndarray:
            return _motion_corrected(pts, poses_at, world, frame,  # type: ignore[arg-type]
                                     poses[frame.frame_index], cloud.lidar_ts)  # type: ignore[attr-defined]

        views = list(frame_views(prepared.frames, clouds, root / "clouds", poses, correct))
        sweeps = [FrameSweep(v.frame.frame_index,
                             v.points_cam @ v.world_from_camera[:3, :3].T
                             + v.world_from_camera[:3, 3],
                             (v.world_from_camera @ np.append(v.sensor_cam, 1.0))[:3])
                  for v in views]
        rays = np.mean([len(s.points_world) for s in sweeps])
        best_discovery, best_masks = float("inf"), float("inf")
        for _ in range(args.repeats):
            started = time.process_time()
            found = discover_objects(sweeps)
            best_discovery = min(best_discovery, time.process_time() - started)
            started = time.process_time()
            for v in views:
                _, _, xyz = visible_points(v.points_cam, v.K, v.frame.width, v.frame.height)
                world_xyz = xyz @ v.world_from_camera[:3, :3].T + v.world_from_camera[:3, 3]
                frame_objects(found, world_xyz, v.world_from_camera, v.K, v.frame.width,
                              v.frame.height, found.floor_z or 0.0)
            best_masks = min(best_masks, time.process_time() - started)
        n = len(views)
        print(f"{n} frames, {rays:.0f} returns per sweep (16 x 1024 rays), "
              f"{len(found.objects)} objects ({sum(o.askable for o in found.objects)} askable)")
        print(f"discovery: {1000 * best_discovery / n:.2f} ms CPU per frame "
              f"({best_discovery:.2f} s for the recording; target <= 50 ms per frame)")
        print(f"masks:     {1000 * best_masks / n:.2f} ms CPU per frame")
        print(f"both:      {1000 * (best_discovery + best_masks) / n:.2f} ms CPU per frame")


if __name__ == "__main__":
    main()
