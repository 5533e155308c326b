"""Stored perception evidence: one table, one JSON per frame, one PNG per mask.

Layout of a detections folder (decided here and nowhere else)::

    detections.parquet              one row per frame: queried names and nested detections
    frames/frame-000000.json        the same record per frame, for people and audits
    masks/frame-000000-00.png       mask of detection 0 of frame 0 (1-bit grey; reads as 0 / 255)

Every file is written atomically with fixed encoder settings, so the same evidence gives
byte-identical files. ``detections.parquet`` is written last: it is the index readers trust, and
files it does not reference (left by an earlier run with more detections) are removed.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from eval_assets import progress
from eval_assets.atomic import in_flight, write_bytes_atomic, write_text_atomic
from eval_assets.frames import RectifiedFrame, load_rectified_image
from eval_assets.layout import DETECTIONS_TABLE, FRAMES_DIR, MASKS_DIR
from eval_assets.perception.protocols import (
    Abstaining,
    Detector,
    FrameBound,
    Segmenter,
    detect_and_segment,
)
from eval_assets.schemas.perception import Detection, FrameDetections

# Fixed encoder settings: the PNG bytes depend on them, and outputs must be byte-identical.
# One bit per pixel: a fifth of the time of an 8-bit mask (most of the evidence stage's cost at
# 1280x720) and a fifth of the bytes; OpenCV and PIL read it back as 0 / 255.
_PNG_PARAMS = [cv2.IMWRITE_PNG_COMPRESSION, 3, cv2.IMWRITE_PNG_BILEVEL, 1]

_DETECTION_TYPE = pa.struct([
    ("name", pa.string()),
    ("label_index", pa.int64()),
    ("box_xyxy", pa.list_(pa.float64())),
    ("score", pa.float64()),
    ("mask_area", pa.int64()),
    ("mask_path", pa.string()),
    ("detector", pa.string()),
    ("detector_version", pa.string()),
    ("segmenter", pa.string()),
    ("segmenter_version", pa.string()),
])
DETECTIONS_SCHEMA = pa.schema([
    ("frame_index", pa.int64()),
    ("width", pa.int64()),
    ("height", pa.int64()),
    ("queried_names", pa.list_(pa.string())),
    ("detections", pa.list_(_DETECTION_TYPE)),
    ("unsure_names", pa.list_(pa.string())),
])


def mask_relpath(frame_index: int, detection_index: int) -> str:
    """Where a detection's mask PNG lives, relative to the detections folder."""
    return f"{MASKS_DIR}/frame-{frame_index:06d}-{detection_index:02d}.png"


def frame_json_relpath(frame_index: int) -> str:
    """Where a frame's detections JSON lives, relative to the detections folder."""
    return f"{FRAMES_DIR}/frame-{frame_index:06d}.json"


def encode_mask_png(mask: np.ndarray) -> bytes:
    """Deterministic 1-bit greyscale PNG bytes of a boolean mask (True → white)."""
    ok, buf = cv2.imencode(".png", np.asarray(mask, dtype=bool).astype(np.uint8) * 255,
                           _PNG_PARAMS)
    if not ok:
        raise ValueError(f"PNG encoding failed for a mask of shape {mask.shape}")
    return buf.tobytes()


def write_frame_detections(
    out_dir: Path, frame: FrameDetections, masks: Sequence[np.ndarray]
) -> FrameDetections:
    """Write a frame's masks and JSON; return the record with each ``mask_path`` filled in.

    ``masks[i]`` is the (height, width) boolean mask of ``frame.detections[i]``; its pixel count
    must equal that detection's ``mask_area``.
    """
    out_dir = Path(out_dir)
    if len(masks) != len(frame.detections):
        raise ValueError(
            f"frame {frame.frame_index}: {len(frame.detections)} detections but {len(masks)} "
            "masks; pass exactly one mask per detection"
        )
    stored: list[Detection] = []
    for i, (det, mask) in enumerate(zip(frame.detections, masks, strict=True)):
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != (frame.height, frame.width):
            raise ValueError(
                f"frame {frame.frame_index}: mask {i} ({det.name!r}) has shape {mask.shape}, "
                f"expected {(frame.height, frame.width)}"
            )
        if int(mask.sum()) != det.mask_area:
            raise ValueError(
                f"frame {frame.frame_index}: mask {i} ({det.name!r}) has {int(mask.sum())} pixels "
                f"but mask_area is {det.mask_area}; build detections with detect_and_segment"
            )
        rel = mask_relpath(frame.frame_index, i)
        write_bytes_atomic(out_dir / rel, encode_mask_png(mask))
        stored.append(det.model_copy(update={"mask_path": rel}))
    result = frame.model_copy(update={"detections": stored})
    write_text_atomic(out_dir / frame_json_relpath(frame.frame_index),
                      result.model_dump_json(indent=2) + "\n")
    return result


def write_detections_table(out_dir: Path, frames: Sequence[FrameDetections]) -> Path:
    """Write ``detections.parquet`` (one row per frame, in order) and prune unreferenced files."""
    out_dir = Path(out_dir)
    rows = [f.model_dump(mode="json") for f in frames]
    table = pa.Table.from_pylist(rows, schema=DETECTIONS_SCHEMA)
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd", compression_level=3)
    path = write_bytes_atomic(out_dir / DETECTIONS_TABLE, buf.getvalue())
    keep = {frame_json_relpath(f.frame_index) for f in frames}
    keep |= {d.mask_path for f in frames for d in f.detections if d.mask_path}
    for sub in (FRAMES_DIR, MASKS_DIR):
        folder = out_dir / sub
        if folder.is_dir():
            for p in folder.iterdir():
                # Another process's atomic write in flight is left alone: removing its
                # temporary file made that write fail (a raw "No such file" on its name).
                if p.is_file() and f"{sub}/{p.name}" not in keep and not in_flight(p):
                    p.unlink(missing_ok=True)
    return path


def read_detections(out_dir: Path) -> list[FrameDetections]:
    """The per-frame detections stored in ``out_dir/detections.parquet``, in frame order."""
    path = Path(out_dir) / DETECTIONS_TABLE
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} does not exist; materialize the detections_masks asset for this recording"
        )
    table = pq.read_table(path)
    if table.schema.names != DETECTIONS_SCHEMA.names:
        raise ValueError(
            f"{path} has columns {table.schema.names}, expected {DETECTIONS_SCHEMA.names}; it was "
            "written by another version: rematerialize detections_masks"
        )
    return [FrameDetections.model_validate(r) for r in table.to_pylist()]


def load_mask(out_dir: Path, detection: Detection) -> np.ndarray:
    """The stored boolean mask of a detection."""
    if detection.mask_path is None:
        raise ValueError(f"detection {detection.name!r} has no stored mask (mask_path is None)")
    path = Path(out_dir) / detection.mask_path
    mask = cv2.imread(str(path), cv2.IMREAD_UNCHANGED) if path.is_file() else None
    if mask is None:
        raise FileNotFoundError(
            f"{path} is missing or unreadable; rematerialize detections_masks"
        )
    return mask > 0


def build_detections(
    frames_dir: Path,
    frames: Sequence[RectifiedFrame],
    out_dir: Path,
    names: Sequence[str],
    detector: Detector,
    segmenter: Segmenter,
) -> list[FrameDetections]:
    """Query every name in every rectified frame and store the evidence under ``out_dir``.

    ``frames_dir`` is the rectified-frames folder the ``frames`` records point into.
    """
    if not names:
        raise ValueError("no object names to query; configure a non-empty vocabulary")
    stored: list[FrameDetections] = []
    for frame in progress.track(frames, "detecting and segmenting frames"):
        image = load_rectified_image(Path(frames_dir), frame)
        for model in (detector, segmenter):
            if isinstance(model, FrameBound):
                model.bind_frame(frame)
        found = detect_and_segment(image, names, detector, segmenter)
        # A detector that can abstain says which names it could not rule out on this frame.
        unsure = ([n for n in names if detector.unsure(image, n)]
                  if isinstance(detector, Abstaining) else [])
        record = FrameDetections(
            frame_index=frame.frame_index,
            width=frame.width,
            height=frame.height,
            queried_names=list(names),
            detections=[d for d, _ in found],
            unsure_names=unsure,
        )
        stored.append(write_frame_detections(out_dir, record, [m for _, m in found]))
    write_detections_table(out_dir, stored)
    return stored
