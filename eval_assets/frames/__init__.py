"""Per-frame preparation: frame selection, rectified images and synchronised LiDAR clouds, stored
per recording."""

from eval_assets.frames.pointclouds import build_pointcloud_frames, load_points
from eval_assets.frames.rectified import (
    FramePreparationError,
    PreparedFrames,
    build_rectified_frames,
    load_rectified_image,
    prepare_rectified_frames,
)
from eval_assets.frames.selection import (
    FramePlan,
    FrameSelectionError,
    TooManyBadFramesError,
    load_selection_config,
    plan_indices,
    plan_selection,
)
from eval_assets.schemas.frames import (
    FrameSelectionConfig,
    FrameSelectionRecord,
    PointCloudFrame,
    RectifiedFrame,
    SkippedFrame,
    read_pointcloud_frames,
    read_rectified_frames,
    read_selection_record,
    read_skipped_frames,
)

__all__ = [
    "FramePlan",
    "FramePreparationError",
    "FrameSelectionConfig",
    "FrameSelectionError",
    "FrameSelectionRecord",
    "PointCloudFrame",
    "PreparedFrames",
    "RectifiedFrame",
    "SkippedFrame",
    "TooManyBadFramesError",
    "build_pointcloud_frames",
    "build_rectified_frames",
    "load_points",
    "load_rectified_image",
    "load_selection_config",
    "plan_indices",
    "plan_selection",
    "prepare_rectified_frames",
    "read_pointcloud_frames",
    "read_rectified_frames",
    "read_selection_record",
    "read_skipped_frames",
]
