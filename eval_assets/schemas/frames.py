"""Per-frame preparation records: rectified frames and their synchronised point clouds.

Both tables are Parquet files with a fixed column order and no run-dependent metadata, so the same
recording gives byte-identical files. File names inside a stage folder are decided here.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Literal, Self

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict, Field, model_validator

from eval_assets.atomic import write_bytes_atomic

RECTIFIED_TABLE = "frames.parquet"
POINTCLOUD_TABLE = "pointcloud_frames.parquet"
IMAGES_DIR = "images"
POINTS_DIR = "points"


def rectified_image_relpath(frame_index: int) -> str:
    """Where a rectified frame's PNG lives, relative to the stage folder."""
    return f"{IMAGES_DIR}/frame-{frame_index:06d}.png"


def points_relpath(frame_index: int) -> str:
    """Where a frame's LiDAR points (``.npz``) live, relative to the stage folder."""
    return f"{POINTS_DIR}/frame-{frame_index:06d}.npz"


class RectifiedFrame(BaseModel):
    """One undistorted colour image and the pinhole intrinsics that describe it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    frame_index: int = Field(ge=0, description="position in color_image ordered by ts")
    image_ts: float = Field(description="the image's recording ts (epoch seconds)")
    image_path: str = Field(description="PNG path relative to the stage folder")
    width: int = Field(gt=0)
    height: int = Field(gt=0)
    camera_frame_id: str = Field(description="TF frame of the camera (image header frame_id)")
    distortion_model: str = Field(description="the recorded model, canonical name")
    K_rect: list[float] = Field(min_length=9, max_length=9, description="row-major 3x3")
    P_rect: list[float] = Field(min_length=12, max_length=12, description="row-major 3x4")
    camera_info_ts: float = Field(description="ts of the camera_info used (at or before image)")


class PointCloudFrame(BaseModel):
    """The LiDAR cloud matched to one rectified frame, or why the frame has none."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    frame_index: int = Field(ge=0)
    image_ts: float
    status: Literal["ok", "image_only"]
    reason: str | None = Field(description="why the frame is image_only; None when ok")
    lidar_stream: str
    lidar_ts: float | None = Field(description="ts of the nearest LiDAR message, if any")
    lidar_dt: float | None = Field(description="lidar_ts - image_ts, seconds")
    cloud_frame_id: str | None
    camera_from_cloud: list[float] | None = Field(
        min_length=16, max_length=16, description="row-major 4x4, cloud -> camera"
    )
    points_path: str | None = Field(description="npz path relative to the stage folder")
    n_points: int = Field(ge=0, description="points in the matched cloud")
    n_points_in_front: int = Field(ge=0, description="finite points with camera z > 0")

    @model_validator(mode="after")
    def _status_is_consistent(self) -> Self:
        if self.status == "ok":
            missing = [name for name in ("camera_from_cloud", "points_path", "lidar_ts",
                                         "cloud_frame_id") if getattr(self, name) is None]
            if missing or self.reason is not None:
                raise ValueError(f"an ok point-cloud frame needs {missing} set and no reason")
        elif not self.reason:
            raise ValueError("an image_only point-cloud frame needs a reason")
        return self


_F64 = pa.float64()
RECTIFIED_SCHEMA = pa.schema([
    ("frame_index", pa.int64()),
    ("image_ts", _F64),
    ("image_path", pa.string()),
    ("width", pa.int64()),
    ("height", pa.int64()),
    ("camera_frame_id", pa.string()),
    ("distortion_model", pa.string()),
    ("K_rect", pa.list_(_F64)),
    ("P_rect", pa.list_(_F64)),
    ("camera_info_ts", _F64),
])
POINTCLOUD_SCHEMA = pa.schema([
    ("frame_index", pa.int64()),
    ("image_ts", _F64),
    ("status", pa.string()),
    ("reason", pa.string()),
    ("lidar_stream", pa.string()),
    ("lidar_ts", _F64),
    ("lidar_dt", _F64),
    ("cloud_frame_id", pa.string()),
    ("camera_from_cloud", pa.list_(_F64)),
    ("points_path", pa.string()),
    ("n_points", pa.int64()),
    ("n_points_in_front", pa.int64()),
])


def _write_table(path: Path, schema: pa.Schema, rows: list[dict[str, Any]]) -> Path:
    table = pa.Table.from_pylist(rows, schema=schema)
    buf = io.BytesIO()
    # No pandas metadata and no statistics timestamps: only the data and a fixed schema.
    pq.write_table(table, buf, compression="zstd", compression_level=3)
    return write_bytes_atomic(path, buf.getvalue())


def _read_rows(path: Path, schema: pa.Schema) -> list[dict[str, Any]]:
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist; build the frame stage first")
    table = pq.read_table(path)
    if table.schema.names != schema.names:
        raise ValueError(
            f"{path} has columns {table.schema.names}, expected {schema.names}; it was written by "
            "another version: rebuild the frame stage"
        )
    return table.to_pylist()


def write_rectified_frames(out_dir: Path, frames: list[RectifiedFrame]) -> Path:
    """Write ``out_dir/frames.parquet`` atomically, one row per frame in the given order."""
    return _write_table(out_dir / RECTIFIED_TABLE, RECTIFIED_SCHEMA,
                        [f.model_dump() for f in frames])


def read_rectified_frames(out_dir: Path) -> list[RectifiedFrame]:
    """The rectified frames stored in ``out_dir/frames.parquet``."""
    path = Path(out_dir) / RECTIFIED_TABLE
    return [RectifiedFrame.model_validate(r) for r in _read_rows(path, RECTIFIED_SCHEMA)]


def write_pointcloud_frames(out_dir: Path, frames: list[PointCloudFrame]) -> Path:
    """Write ``out_dir/pointcloud_frames.parquet`` atomically, one row per frame."""
    return _write_table(out_dir / POINTCLOUD_TABLE, POINTCLOUD_SCHEMA,
                        [f.model_dump() for f in frames])


def read_pointcloud_frames(out_dir: Path) -> list[PointCloudFrame]:
    """The point-cloud frames stored in ``out_dir/pointcloud_frames.parquet``."""
    path = Path(out_dir) / POINTCLOUD_TABLE
    return [PointCloudFrame.model_validate(r) for r in _read_rows(path, POINTCLOUD_SCHEMA)]
