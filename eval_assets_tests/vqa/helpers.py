"""Small real inputs for the VQA tests: rectified frames on disk and detections with masks."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from eval_assets.atomic import write_bytes_atomic
from eval_assets.frames.pointclouds import encode_points
from eval_assets.frames.rectified import encode_png
from eval_assets.perception.evidence_io import write_detections_table, write_frame_detections
from eval_assets.schemas.frames import (
    FrameSelectionConfig,
    FrameSelectionRecord,
    PointCloudFrame,
    RectifiedFrame,
    points_relpath,
    rectified_image_relpath,
    write_pointcloud_frames,
    write_rectified_frames,
    write_selection_record,
)
from eval_assets.schemas.perception import Detection, FrameDetections

WIDTH, HEIGHT = 64, 48


def frame_image(index: int) -> np.ndarray:
    """A deterministic RGB picture that differs per frame."""
    y, x = np.mgrid[0:HEIGHT, 0:WIDTH]
    img = np.stack([(x * 4 + index * 10) % 256, (y * 5) % 256, np.full_like(x, 80)], axis=-1)
    return img.astype(np.uint8)


def make_frames_dir(root: Path, indices: Sequence[int]) -> tuple[Path, list[RectifiedFrame]]:
    """A rectified-frames folder (PNGs + frames.parquet) for ``indices``."""
    out = root / "frames"
    frames = []
    for i in indices:
        rel = rectified_image_relpath(i)
        write_bytes_atomic(out / rel, encode_png(frame_image(i)))
        frames.append(RectifiedFrame(
            frame_index=i, image_ts=1_700_000_000.0 + i, image_path=rel, width=WIDTH,
            height=HEIGHT, camera_frame_id="camera_optical", distortion_model="plumb_bob",
            K_rect=[50.0, 0.0, 32.0, 0.0, 50.0, 24.0, 0.0, 0.0, 1.0],
            P_rect=[50.0, 0.0, 32.0, 0.0, 0.0, 50.0, 24.0, 0.0, 0.0, 0.0, 1.0, 0.0],
            camera_info_ts=1_700_000_000.0,
        ))
    write_rectified_frames(out, frames)
    # What the frame stage records beside its table: the selection that chose these frames.
    write_selection_record(out, FrameSelectionRecord(
        recording="tiny.db", config_file=None, config=FrameSelectionConfig(start=min(indices),
                                                                           stop=max(indices) + 1),
        mode="stride", start=min(indices), stop=max(indices) + 1, why="test frames",
        image_count=max(indices) + 1, examined=len(indices), selected=sorted(indices)))
    return out, frames


def box_mask(x0: int, y0: int, x1: int, y1: int) -> np.ndarray:
    """A boolean (HEIGHT, WIDTH) mask covering columns x0..x1-1 and rows y0..y1-1."""
    mask = np.zeros((HEIGHT, WIDTH), dtype=bool)
    mask[y0:y1, x0:x1] = True
    return mask


def patch_points(mask: np.ndarray, depth: float) -> np.ndarray:
    """Camera-frame points at ``depth`` through every pixel centre of ``mask`` (fx=fy=50)."""
    v, u = np.nonzero(mask)
    z = np.full(u.shape, depth)
    return np.stack([(u + 0.5 - 32.0) * z / 50.0, (v + 0.5 - 24.0) * z / 50.0, z], axis=1)


CANARY = "CANARY-5e1f-never-public"
QUERIED = ["red ball", "blue box", "green cylinder", "red-ball", "yellow box"]
# name -> (mask box, depth in metres); two blue boxes make "blue box" a count of two.
OBJECTS = [("red ball", (4, 8, 14, 20), 1.5), ("blue box", (40, 10, 50, 22), 2.6),
           ("blue box", (52, 30, 60, 40), 3.4), ("yellow box", (24, 30, 34, 40), 3.0)]


def _detection(name: str, mask: np.ndarray, box: tuple[int, int, int, int]) -> Detection:
    return Detection(name=name, label_index=QUERIED.index(name), box_xyxy=tuple(map(float, box)),
                     score=0.9, mask_area=int(mask.sum()), mask_path=None, detector="colour",
                     detector_version=CANARY, segmenter="region", segmenter_version="1")


def make_stages(root: Path, clouds_dir: Path | None = None,
                dets_dir: Path | None = None) -> tuple[Path, Path, Path]:
    """Frames 0-2 under ``root/frames``; frame 2 is image-only. Every frame shows the same objects.

    ``frames_dir`` is ``root/frames``; the other two folders default to ``root/clouds`` and
    ``root/detections``.
    """
    frames_dir, frames = make_frames_dir(root, [0, 1, 2])
    clouds_dir = clouds_dir or root / "clouds"
    dets_dir = dets_dir or root / "detections"
    clouds, stored = [], []
    for f in frames:
        masks = [box_mask(*box) for _, box, _ in OBJECTS]
        points = np.concatenate([patch_points(m, d) for m, (_, _, d) in
                                 zip(masks, OBJECTS, strict=True)])
        if f.frame_index < 2:
            rel = points_relpath(f.frame_index)
            write_bytes_atomic(clouds_dir / rel, encode_points(points))
            clouds.append(PointCloudFrame(
                frame_index=f.frame_index, image_ts=f.image_ts, status="ok", reason=None,
                lidar_stream="pointlio_lidar", lidar_ts=f.image_ts + 0.01, lidar_dt=0.01,
                cloud_frame_id="camera_optical", camera_from_cloud=np.eye(4).reshape(-1).tolist(),
                points_path=rel, n_points=len(points), n_points_in_front=len(points)))
        else:
            clouds.append(PointCloudFrame(
                frame_index=f.frame_index, image_ts=f.image_ts, status="image_only",
                reason="nearest LiDAR is 0.400 s away (limit 0.1 s)", lidar_stream="pointlio_lidar",
                lidar_ts=None, lidar_dt=None, cloud_frame_id=None, camera_from_cloud=None,
                points_path=None, n_points=0, n_points_in_front=0))
        record = FrameDetections(
            frame_index=f.frame_index, width=WIDTH, height=HEIGHT, queried_names=QUERIED,
            detections=[_detection(n, m, b) for (n, b, _), m in zip(OBJECTS, masks, strict=True)])
        stored.append(write_frame_detections(dets_dir, record, masks))
    write_pointcloud_frames(clouds_dir, clouds)
    write_detections_table(dets_dir, stored)
    return frames_dir, clouds_dir, dets_dir
