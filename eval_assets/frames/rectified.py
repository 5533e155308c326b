"""Rectified frames: each selected colour image undistorted with the calibration recorded for it.

A selected frame that cannot be used (its row is missing or corrupt, its image does not decode,
it has no usable calibration) is skipped and recorded with its reason, not raised; see
:mod:`eval_assets.frames.selection` for the selection and the bad-frame policy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from eval_assets import progress
from eval_assets.atomic import write_bytes_atomic
from eval_assets.frames.selection import (
    BadShare,
    FramePlan,
    TooManyBadFramesError,
    check_bad_share,
    decode_failure,
    read_image,
    skipped_frame,
)
from eval_assets.geometry.camera import CameraModel
from eval_assets.recording import Recording, RecordingError, image_to_rgb
from eval_assets.recording.messages import CameraInfo
from eval_assets.recording.names import CAMERA_INFO_STREAM, IMAGE_STREAM
from eval_assets.recording.validate import check_one_calibration
from eval_assets.schemas.frames import (
    IMAGES_DIR,
    RECTIFIED_TABLE,
    SELECTION_FILE,
    SKIPPED_FRAMES_FILE,
    FrameSelectionRecord,
    RectifiedFrame,
    SkippedFrame,
    rectified_image_relpath,
    write_rectified_frames,
    write_selection_record,
    write_skipped_frames,
)

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


class _Rectifier:
    """Rectifies frames of one recording, caching camera models and calibration lookups."""

    def __init__(self, recording: Recording, out_dir: Path) -> None:
        self.rec = recording
        self.out_dir = Path(out_dir)
        self.path = getattr(recording, "path", None)
        self.image_ts = np.asarray(recording.timestamps(IMAGE_STREAM), dtype=np.float64)
        self.info_ts = np.asarray(recording.timestamps(CAMERA_INFO_STREAM), dtype=np.float64)
        self.models: dict[tuple[object, ...], CameraModel] = {}
        self.infos: dict[int, CameraInfo | RecordingError] = {}

    def _calibration(self, index: int, j: int) -> tuple[CameraInfo, CameraModel] | SkippedFrame:
        t = float(self.image_ts[index])
        if j not in self.infos:
            try:
                self.infos[j] = self.rec.message(CAMERA_INFO_STREAM, j)
            except RecordingError as exc:
                self.infos[j] = exc
        info = self.infos[j]
        if isinstance(info, RecordingError):
            return skipped_frame(
                self.rec, index, "bad_calibration",
                f"frame {index} ({IMAGE_STREAM} ts={t:.6f}) uses {CAMERA_INFO_STREAM} message "
                f"{j}, which does not decode: {str(info).removeprefix(f'{self.path}: ')}",
                stream=CAMERA_INFO_STREAM, row_id=self.rec.row_id(CAMERA_INFO_STREAM, j))
        key = _calibration_key(info)
        if key not in self.models:
            try:
                self.models[key] = CameraModel.from_camera_info(info)
            except ValueError as exc:
                return skipped_frame(
                    self.rec, index, "bad_calibration",
                    f"stream {CAMERA_INFO_STREAM!r} message {j} (ts={self.info_ts[j]:.6f}, "
                    f"used by frame {index}): {exc}",
                    stream=CAMERA_INFO_STREAM,
                    row_id=self.rec.row_id(CAMERA_INFO_STREAM, j))
        return info, self.models[key]

    def frame(self, index: int) -> RectifiedFrame | SkippedFrame:
        """Rectify frame ``index`` and write its PNG, or say why it cannot be used."""
        t = float(self.image_ts[index])
        j = int(np.searchsorted(self.info_ts, t, side="right")) - 1
        if j < 0:
            first_ok = int(np.searchsorted(self.image_ts, self.info_ts[0], side="left"))
            return skipped_frame(
                self.rec, index, "no_calibration",
                f"frame {index} ({IMAGE_STREAM} ts={t:.6f}) has no {CAMERA_INFO_STREAM} at or "
                f"before it (the first is at ts={self.info_ts[0]:.6f}); select frames from "
                f"index {first_ok} on", stream=CAMERA_INFO_STREAM)
        calibration = self._calibration(index, j)
        if isinstance(calibration, SkippedFrame):
            return calibration
        info, model = calibration
        msg = read_image(self.rec, index)
        if isinstance(msg, SkippedFrame):
            return msg
        try:
            rgb = image_to_rgb(msg)
        except ValueError as exc:
            return decode_failure(self.rec, index, exc)
        if rgb.shape[:2] != (model.height, model.width):
            return skipped_frame(
                self.rec, index, "size_mismatch",
                f"frame {index} ({IMAGE_STREAM} ts={t:.6f}) is {rgb.shape[1]}x"
                f"{rgb.shape[0]} but its {CAMERA_INFO_STREAM} (ts={self.info_ts[j]:.6f}) is "
                f"{model.width}x{model.height}; the calibration must be for this image size")
        relpath = rectified_image_relpath(index)
        write_bytes_atomic(self.out_dir / relpath, encode_png(model.rectify(rgb)))
        return RectifiedFrame(
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
            R_rect=[float(x) for x in model.R.reshape(-1)],
            camera_info_ts=float(self.info_ts[j]),
        )


def _require_calibration(recording: Recording, path: Path | None) -> None:
    if len(recording.timestamps(CAMERA_INFO_STREAM)) == 0:
        raise FramePreparationError(
            f"{path}: stream {CAMERA_INFO_STREAM!r} is empty; record the camera calibration",
            path=path, stream=CAMERA_INFO_STREAM,
        )


def build_rectified_frames(
    recording: Recording, out_dir: Path, frame_indices: Sequence[int] | None = None
) -> list[RectifiedFrame]:
    """Rectify the given frames into ``out_dir``, strictly; all frames when ``frame_indices`` is
    None.

    Writes ``images/frame-NNNNNN.png`` (rectified RGB) per frame and ``frames.parquet`` (one row
    per frame, ordered by index). A frame uses the latest ``camera_info`` at or before its ts.
    Raises :class:`FramePreparationError` at the first frame that cannot be used (no earlier
    calibration, a size different from its calibration's, an unreadable row). The pipeline uses
    :func:`prepare_rectified_frames`, which skips such frames instead.
    """
    out_dir = Path(out_dir)
    path = getattr(recording, "path", None)
    _require_calibration(recording, path)
    rectifier = _Rectifier(recording, out_dir)
    frames: list[RectifiedFrame] = []
    for index in progress.track(select_frames(frame_indices, len(rectifier.image_ts), path),
                                "rectifying frames"):
        result = rectifier.frame(index)
        if isinstance(result, SkippedFrame):
            raise FramePreparationError(f"{path}: {result.detail}", path=path,
                                        stream=result.stream, frame_index=index)
        frames.append(result)
    write_rectified_frames(out_dir, frames)
    return frames


@dataclass(frozen=True)
class PreparedFrames:
    """The outcome of the frame stage: what was selected, rectified and skipped, and the share."""

    frames: list[RectifiedFrame]
    plan: FramePlan
    skipped: list[SkippedFrame]
    share: BadShare

    @property
    def selection(self) -> FrameSelectionRecord:
        """The selection record (``selection.json``)."""
        return self.plan.record


def _clear_outputs(out_dir: Path) -> None:
    """Remove the stage's tables first: a failed run leaves no ``frames.parquet`` to read."""
    for name in (RECTIFIED_TABLE, SELECTION_FILE, SKIPPED_FRAMES_FILE):
        (out_dir / name).unlink(missing_ok=True)


def _remove_stale_images(out_dir: Path, frames: Sequence[RectifiedFrame]) -> int:
    """Delete PNGs of frames no longer prepared (an earlier, wider selection); returns how many."""
    keep = {f.image_path for f in frames}
    folder = out_dir / IMAGES_DIR
    removed = 0
    if folder.is_dir():
        for png in folder.glob("frame-*.png"):
            if f"{IMAGES_DIR}/{png.name}" not in keep:
                png.unlink(missing_ok=True)
                removed += 1
    return removed


def prepare_rectified_frames(recording: Recording, out_dir: Path,
                             plan: FramePlan) -> PreparedFrames:
    """Rectify the frames of ``plan`` into ``out_dir``, skipping bad ones with their reason.

    Writes ``images/frame-NNNNNN.png``, ``frames.parquet``, ``selection.json`` (the selection and
    why) and ``skipped_frames.json`` (every frame left out, with file, stream, row, reason and
    fix); PNGs of frames no longer selected are removed. Raises
    :class:`~eval_assets.frames.selection.TooManyBadFramesError` when more than the plan's
    ``max_bad_fraction`` of the examined frames is bad (``frames.parquet`` is then not written,
    the two JSON files are, for diagnosis), :class:`FramePreparationError` when no frame is
    left, and :class:`~eval_assets.recording.validate.CalibrationChangeError` when the frames to
    prepare use different calibrations (one recording, one camera: a change is refused as a size
    change is, not skipped frame by frame).
    """
    out_dir = Path(out_dir)
    path = getattr(recording, "path", None)
    _clear_outputs(out_dir)
    _require_calibration(recording, path)
    check_one_calibration(recording, plan.to_prepare)
    skipped = list(plan.skipped)
    listed_in = out_dir / SKIPPED_FRAMES_FILE
    try:
        check_bad_share(plan, skipped, listed_in)  # fail before rectifying when already clear
    except TooManyBadFramesError:
        write_selection_record(out_dir, plan.record)
        write_skipped_frames(out_dir, skipped)
        raise
    rectifier = _Rectifier(recording, out_dir)
    frames: list[RectifiedFrame] = []
    for index in progress.track(plan.to_prepare, "rectifying frames"):
        result = rectifier.frame(index)
        if isinstance(result, SkippedFrame):
            skipped.append(result)
        else:
            frames.append(result)
    skipped.sort(key=lambda s: (s.frame_index, s.stream, s.reason))
    write_selection_record(out_dir, plan.record)
    write_skipped_frames(out_dir, skipped)
    share = check_bad_share(plan, skipped, listed_in)
    if not frames:
        raise FramePreparationError(
            f"{path}: none of the {len(plan.record.selected)} selected frames could be "
            f"prepared; every one is listed with its reason in {listed_in}. Fix: select other "
            "frames or repair the recording",
            path=path, stream=IMAGE_STREAM)
    write_rectified_frames(out_dir, frames)
    _remove_stale_images(out_dir, frames)
    return PreparedFrames(frames=frames, plan=plan, skipped=skipped, share=share)


def load_rectified_image(out_dir: Path, frame: RectifiedFrame) -> np.ndarray:
    """The stored rectified RGB image of a frame."""
    path = Path(out_dir) / frame.image_path
    bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if bgr is None:
        raise FileNotFoundError(f"{path} is missing or unreadable; rebuild the rectified frames")
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
