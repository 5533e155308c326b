"""Rectified frames: each selected colour image undistorted with the calibration recorded for it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np

from eval_assets import progress
from eval_assets.atomic import write_bytes_atomic
from eval_assets.geometry.camera import CameraModel
from eval_assets.recording import Recording, image_to_rgb
from eval_assets.recording.messages import CameraInfo
from eval_assets.schemas.frames import (
    RectifiedFrame,
    rectified_image_relpath,
    write_rectified_frames,
)

IMAGE_STREAM = "color_image"
CAMERA_INFO_STREAM = "camera_info"
# Fixed encoder settings: PNG bytes depend on them, and outputs must be byte-identical across runs.
_PNG_PARAMS = [cv2.IMWRITE_PNG_COMPRESSION, 3]


class FramePreparationError(ValueError):
    """A selected frame cannot be prepared; the message names the file, stream, frame and fix."""

    def __init__(self, message: str, *, path: Path | None, stream: str,
                 frame_index: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.stream = stream
        self.frame_index = frame_index


def _calibration_key(info: CameraInfo) -> tuple[object, ...]:
    """Everything that changes the remap tables; the header does not, so republished info hits."""
    return (info.width, info.height, info.distortion_model, tuple(info.D), tuple(info.K),
            tuple(info.R), tuple(info.P))


def select_frames(frame_indices: Sequence[int] | None, count: int, path: Path | None) -> list[int]:
    """The requested frame indices, sorted and de-duplicated; all of them when ``None``."""
    if frame_indices is None:
        return list(range(count))
    chosen = sorted({int(i) for i in frame_indices})
    bad = [i for i in chosen if not 0 <= i < count]
    if bad:
        raise FramePreparationError(
            f"{path}: frame indices {bad[:5]} are outside the {count} images of stream "
            f"{IMAGE_STREAM!r}; choose indices from 0 to {count - 1}",
            path=path, stream=IMAGE_STREAM, frame_index=bad[0],
        )
    return chosen


def encode_png(rgb: np.ndarray) -> bytes:
    """Deterministic PNG bytes of an RGB (or grey) ``uint8`` image."""
    bgr = cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR) if rgb.ndim == 3 else rgb
    ok, buf = cv2.imencode(".png", bgr, _PNG_PARAMS)
    if not ok:
        raise ValueError(f"PNG encoding failed for an image of shape {rgb.shape}")
    return buf.tobytes()


def build_rectified_frames(
    recording: Recording, out_dir: Path, frame_indices: Sequence[int] | None = None
) -> list[RectifiedFrame]:
    """Rectify the selected frames into ``out_dir``; all frames when ``frame_indices`` is None.

    Writes ``images/frame-NNNNNN.png`` (rectified RGB) per frame and ``frames.parquet`` (one row
    per frame, ordered by index). A frame uses the latest ``camera_info`` at or before its ts.
    Raises :class:`FramePreparationError` for a frame without earlier calibration or whose size
    differs from its calibration's.
    """
    out_dir = Path(out_dir)
    path = getattr(recording, "path", None)
    image_ts = np.asarray(recording.timestamps(IMAGE_STREAM), dtype=np.float64)
    info_ts = np.asarray(recording.timestamps(CAMERA_INFO_STREAM), dtype=np.float64)
    if info_ts.size == 0:
        raise FramePreparationError(
            f"{path}: stream {CAMERA_INFO_STREAM!r} is empty; record the camera calibration",
            path=path, stream=CAMERA_INFO_STREAM,
        )
    models: dict[tuple[object, ...], CameraModel] = {}
    frames: list[RectifiedFrame] = []
    for index in progress.track(select_frames(frame_indices, len(image_ts), path),
                                "rectifying frames"):
        t = float(image_ts[index])
        j = int(np.searchsorted(info_ts, t, side="right")) - 1
        if j < 0:
            first_ok = int(np.searchsorted(image_ts, info_ts[0], side="left"))
            raise FramePreparationError(
                f"{path}: frame {index} ({IMAGE_STREAM} ts={t:.6f}) has no {CAMERA_INFO_STREAM} at "
                f"or before it (the first is at ts={info_ts[0]:.6f}); select frames from index "
                f"{first_ok} on",
                path=path, stream=CAMERA_INFO_STREAM, frame_index=index,
            )
        info: CameraInfo = recording.message(CAMERA_INFO_STREAM, j)
        key = _calibration_key(info)
        if key not in models:
            try:
                models[key] = CameraModel.from_camera_info(info)
            except ValueError as exc:
                raise FramePreparationError(
                    f"{path}: stream {CAMERA_INFO_STREAM!r} message {j} (ts={info_ts[j]:.6f}, "
                    f"used by frame {index}): {exc}",
                    path=path, stream=CAMERA_INFO_STREAM, frame_index=index,
                ) from exc
        model = models[key]
        msg = recording.message(IMAGE_STREAM, index)
        rgb = image_to_rgb(msg)
        if rgb.shape[:2] != (model.height, model.width):
            raise FramePreparationError(
                f"{path}: frame {index} ({IMAGE_STREAM} ts={t:.6f}) is {rgb.shape[1]}x"
                f"{rgb.shape[0]} but its {CAMERA_INFO_STREAM} (ts={info_ts[j]:.6f}) is "
                f"{model.width}x{model.height}; the calibration must be for this image size",
                path=path, stream=IMAGE_STREAM, frame_index=index,
            )
        relpath = rectified_image_relpath(index)
        write_bytes_atomic(out_dir / relpath, encode_png(model.rectify(rgb)))
        frames.append(RectifiedFrame(
            frame_index=index,
            image_ts=t,
            image_path=relpath,
            width=model.width,
            height=model.height,
            # The image's own frame is the TF target; fall back to the calibration's if blank.
            camera_frame_id=msg.header.frame_id or info.header.frame_id,
            distortion_model=model.distortion_model,
            K_rect=[float(x) for x in model.K_rect.reshape(-1)],
            P_rect=[float(x) for x in model.P_rect.reshape(-1)],
            camera_info_ts=float(info_ts[j]),
        ))
    write_rectified_frames(out_dir, frames)
    return frames


def load_rectified_image(out_dir: Path, frame: RectifiedFrame) -> np.ndarray:
    """The stored rectified RGB image of a frame."""
    path = Path(out_dir) / frame.image_path
    bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if bgr is None:
        raise FileNotFoundError(f"{path} is missing or unreadable; rebuild the rectified frames")
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
