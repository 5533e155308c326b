"""Per-frame preparation: rectified images and synchronised LiDAR clouds, stored per recording."""

from eval_assets.frames.pointclouds import build_pointcloud_frames, load_points
from eval_assets.frames.rectified import (
    FramePreparationError,
    build_rectified_frames,
    load_rectified_image,
)
from eval_assets.schemas.frames import (
    PointCloudFrame,
    RectifiedFrame,
    read_pointcloud_frames,
    read_rectified_frames,
)

__all__ = [
    "FramePreparationError",
    "PointCloudFrame",
    "RectifiedFrame",
    "build_pointcloud_frames",
    "build_rectified_frames",
    "load_points",
    "load_rectified_image",
    "read_pointcloud_frames",
    "read_rectified_frames",
]
