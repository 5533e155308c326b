"""Per-frame preparation records: frame selection, skipped frames, rectified frames and their
synchronised point clouds.

Both tables are Parquet files with a fixed column order and no run-dependent metadata, so the same
recording gives byte-identical files; the selection and the skipped frames are JSON beside
``frames.parquet``. File names inside a stage folder are the layout's (:mod:`eval_assets.layout`).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Literal, Self

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from eval_assets.atomic import write_bytes_atomic, write_text_atomic
from eval_assets.jsonio import read_model, write_json
from eval_assets.layout import (
    IMAGES_DIR,
    POINTCLOUD_TABLE,
    POINTS_DIR,
    RECTIFIED_TABLE,
    SELECTION_FILE,
    SKIPPED_FRAMES_FILE,
)

DEFAULT_MAX_BAD_FRACTION = 0.2
"""Share of the examined frames that may be bad before frame preparation fails."""


def rectified_image_relpath(frame_index: int) -> str:
    """Where a rectified frame's PNG lives, relative to the stage folder."""
    return f"{IMAGES_DIR}/frame-{frame_index:06d}.png"


def points_relpath(frame_index: int) -> str:
    """Where a frame's LiDAR points (``.npz``) live, relative to the stage folder."""
    return f"{POINTS_DIR}/frame-{frame_index:06d}.npz"


class FrameSelectionConfig(BaseModel):
    """Which colour frames of a recording are prepared, and how many bad ones are tolerated.

    The per-recording file ``<recording>.selection.yaml`` beside the ``.db`` holds these fields;
    ``eval-assets vqa generate`` takes the same ones as options. Names and rules follow dimOS
    0.0.15's ``GenerationRequest``: one ``image_index``, or the range ``start``/``stop``
    (exclusive) thinned by one of ``stride`` (every n-th index), ``time_step`` (at most one frame
    per that many seconds, dimOS memory's ``throttle``) or ``quality_window`` (the sharpest frame
    per window of that many seconds, dimOS memory's ``QualityWindow``), the last after an optional
    ``min_brightness`` floor. With no selection field at all the default policy applies
    (:func:`eval_assets.frames.selection.resolve_selection`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    image_index: int | None = Field(default=None, ge=0, description="one color_image index")
    start: int | None = Field(default=None, ge=0, description="first index of the range")
    stop: int | None = Field(default=None, gt=0, description="end of the range, exclusive")
    stride: int | None = Field(default=None, ge=1, description="every n-th index of the range")
    time_step: float | None = Field(
        default=None, gt=0, description="seconds: at most one frame per step (first of each)")
    quality_window: float | None = Field(
        default=None, gt=0, description="seconds: the sharpest frame per window")
    min_brightness: float | None = Field(
        default=None, ge=0, le=1,
        description="frames at or below this mean brightness (0-1) are not candidates")
    max_bad_fraction: float = Field(
        default=DEFAULT_MAX_BAD_FRACTION, ge=0, le=1,
        description="fail when more than this share of the examined frames is bad")

    @model_validator(mode="after")
    def _one_selection(self) -> Self:
        ranged = [n for n in ("start", "stop", "stride", "time_step", "quality_window",
                              "min_brightness") if getattr(self, n) is not None]
        if self.image_index is not None and ranged:
            raise ValueError(f"image_index cannot be combined with {', '.join(ranged)}: give "
                             "either image_index or a range (start/stop with stride, time_step "
                             "or quality_window), not both")
        thinning = [n for n in ("stride", "time_step", "quality_window")
                    if getattr(self, n) is not None]
        if len(thinning) > 1:
            raise ValueError(f"{' and '.join(thinning)} cannot be combined: choose one of "
                             "stride, time_step or quality_window")
        if self.min_brightness is not None and self.quality_window is None:
            raise ValueError("min_brightness requires quality_window (it filters the "
                             "candidates of the quality window)")
        if self.start is not None and self.stop is not None and self.stop <= self.start:
            raise ValueError(f"stop ({self.stop}) must be greater than start ({self.start})")
        return self

    @property
    def is_default(self) -> bool:
        """No selection field is set: the default policy decides."""
        return all(getattr(self, n) is None for n in (
            "image_index", "start", "stop", "stride", "time_step", "quality_window",
            "min_brightness"))


SelectionMode = Literal["every_frame", "image_index", "stride", "time_step", "quality_window"]


class QualityChoice(BaseModel):
    """The frame a quality window kept: why this one (its scores and its window)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    frame_index: int = Field(ge=0)
    window_start_ts: float = Field(description="ts of the window's first candidate")
    candidates: int = Field(ge=1, description="candidates in the window (above the floor)")
    sharpness: float = Field(description="dimOS Image.sharpness of the kept frame, 0-1")
    brightness: float = Field(description="dimOS Image.brightness of the kept frame, 0-1")


class FrameSelectionRecord(BaseModel):
    """What was selected from a recording and why (``selection.json`` beside frames.parquet)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    recording: str = Field(description="the recording file")
    config_file: str | None = Field(description="the selection file read; None: none exists")
    config: FrameSelectionConfig = Field(description="the configuration as given")
    mode: SelectionMode
    start: int = Field(ge=0, description="effective range start")
    stop: int = Field(ge=0, description="effective range end (exclusive)")
    why: str = Field(description="the rule that chose these frames, in words")
    image_count: int = Field(ge=0, description="color_image rows in the recording")
    examined: int = Field(ge=0, description="frames whose usability was checked: the selected "
                                            "ones, or every candidate a quality window scored")
    selected: list[int] = Field(description="frame indices chosen by the rule, sorted")
    quality: list[QualityChoice] = Field(default_factory=list,
                                         description="per kept frame, quality_window mode only")


SkipReason = Literal["missing_blob", "corrupt_blob", "undecodable_image", "image_too_large",
                     "no_calibration", "bad_calibration", "size_mismatch", "duplicate_row",
                     "duplicate_timestamp", "frozen_image", "image_moved_tf_still"]

NOT_BAD_REASONS: frozenset[str] = frozenset({"duplicate_row"})
"""Skip reasons that lose nothing (an identical copy of a kept row): not counted as bad."""


class SkippedFrame(BaseModel):
    """A frame left out of the dataset, with the row at fault, the reason and the fix."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    recording: str = Field(description="the recording file")
    stream: str = Field(description="the stream whose row is at fault (color_image or "
                                    "camera_info)")
    row_id: int | None = Field(description="that row's id in its stream table")
    frame_index: int = Field(ge=0, description="position in color_image ordered by ts")
    image_ts: float
    reason: SkipReason
    detail: str = Field(description="what is wrong, in words")
    fix: str = Field(description="what to do about it")
    counts_as_bad: bool = Field(description="counts towards max_bad_fraction (all reasons but "
                                            "duplicate_row)")
    since_ts: float | None = Field(
        default=None, description="frozen_image / image_moved_tf_still: the image ts of the frame "
        "this one disagrees with; images and TF parted between the two, so no motion case spans "
        "or touches that stretch (None for the other reasons)")

    @model_validator(mode="after")
    def _bad_follows_reason(self) -> Self:
        if self.counts_as_bad != (self.reason not in NOT_BAD_REASONS):
            raise ValueError(f"counts_as_bad must be {self.reason not in NOT_BAD_REASONS} for "
                             f"reason {self.reason!r}")
        return self


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
    R_rect: list[float] = Field(
        default_factory=lambda: [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
        min_length=9, max_length=9,
        description="row-major 3x3 rotation from the recorded camera frame to the rectified one "
        "(camera_info R; identity when unset): 3-D points must be turned by it, as dimOS does")
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
    ("R_rect", pa.list_(_F64)),
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


_SKIPPED = TypeAdapter(list[SkippedFrame])


def write_skipped_frames(out_dir: Path, skipped: list[SkippedFrame]) -> Path:
    """Write ``out_dir/skipped_frames.json`` (a JSON list, by frame index then stream)."""
    rows = sorted(skipped, key=lambda s: (s.frame_index, s.stream, s.reason))
    return write_json(Path(out_dir) / SKIPPED_FRAMES_FILE,
                      [s.model_dump(mode="json") for s in rows], sort_keys=True)


def read_skipped_frames(folder: Path) -> list[SkippedFrame]:
    """The frames the frame stage in ``folder`` left out, with why (empty list: none).

    ``folder`` is the rectified-frames folder (beside ``frames.parquet``). A folder written
    before skipped frames were recorded has no file and gives an empty list.
    """
    path = Path(folder) / SKIPPED_FRAMES_FILE
    if not path.is_file():
        return []
    return _SKIPPED.validate_json(path.read_bytes())


def write_selection_record(out_dir: Path, record: FrameSelectionRecord) -> Path:
    """Write ``out_dir/selection.json``."""
    return write_text_atomic(Path(out_dir) / SELECTION_FILE,
                             record.model_dump_json(indent=2) + "\n")


def read_selection_record(folder: Path) -> FrameSelectionRecord:
    """The selection stored in ``folder/selection.json``."""
    path = Path(folder) / SELECTION_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist; build the rectified frames first")
    return read_model(path, FrameSelectionRecord, fix="build the rectified frames again")
