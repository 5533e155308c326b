"""Stages 2 and 3: rectified frames and their synchronised point clouds."""

from collections import Counter

from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, asset

from eval_assets.defs import keys
from eval_assets.defs.automation_conditions import OWNERS, RECOMPUTE
from eval_assets.defs.partitions import recordings_partitions
from eval_assets.defs.resources import ProjectStorage
from eval_assets.frames import (
    build_pointcloud_frames,
    build_rectified_frames,
    read_rectified_frames,
)
from eval_assets.recording import Recording


@asset(key=keys.RECTIFIED_FRAMES, partitions_def=recordings_partitions, group_name="frames",
       deps=[keys.RECORDING_INGEST], code_version="1", automation_condition=RECOMPUTE,
       kinds={"opencv", "parquet"}, owners=OWNERS)
def rectified_frames(context: AssetExecutionContext, storage: ProjectStorage) -> MaterializeResult:
    """Every colour frame undistorted with its recorded calibration: PNGs + ``frames.parquet``."""
    key = context.partition_key
    out_dir = storage.layout().rectified_frames_dir(key)
    with Recording.open(storage.recording_file(key), allow_pickle=storage.allow_pickle) as rec:
        frames = build_rectified_frames(rec, out_dir)
    first = frames[0]
    preview = out_dir / first.image_path
    return MaterializeResult(
        metadata={
            "num_frames": len(frames),
            "table": MetadataValue.path(str(out_dir / "frames.parquet")),
            "folder": MetadataValue.path(str(out_dir)),
            "distortion_model": first.distortion_model,
            "K_rect": MetadataValue.json(first.K_rect),
            "preview": MetadataValue.md(f"![frame {first.frame_index}]({preview.as_uri()})"),
        }
    )


@asset(key=keys.POINTCLOUD_FRAMES, partitions_def=recordings_partitions, group_name="frames",
       deps=[keys.RECTIFIED_FRAMES], code_version="1", automation_condition=RECOMPUTE,
       kinds={"numpy", "parquet"}, owners=OWNERS)
def pointcloud_frames(context: AssetExecutionContext, storage: ProjectStorage) -> MaterializeResult:
    """Each frame's LiDAR scan (within 0.1 s) and camera transform, or why it is image-only."""
    key = context.partition_key
    layout = storage.layout()
    frames = read_rectified_frames(layout.rectified_frames_dir(key))
    out_dir = layout.pointcloud_frames_dir(key)
    with Recording.open(storage.recording_file(key), allow_pickle=storage.allow_pickle) as rec:
        clouds = build_pointcloud_frames(rec, frames, out_dir)
    reasons = Counter(c.reason for c in clouds if c.status == "image_only")
    rows = [
        f"| {c.frame_index} | {c.status} | "
        f"{'' if c.lidar_dt is None else f'{c.lidar_dt:+.3f}'} | "
        f"{c.n_points_in_front} | {c.reason or ''} |"
        for c in clouds
    ]
    preview = "\n".join(["| frame | status | LiDAR dt (s) | points in front | reason |",
                         "|---|---|---|---|---|", *rows])
    return MaterializeResult(
        metadata={
            "num_frames": len(clouds),
            "num_with_lidar": sum(c.status == "ok" for c in clouds),
            "num_image_only": sum(c.status == "image_only" for c in clouds),
            "image_only_reasons": MetadataValue.json(dict(sorted(reasons.items(), key=str))),
            "table": MetadataValue.path(str(out_dir / "pointcloud_frames.parquet")),
            "preview": MetadataValue.md(preview),
        }
    )
