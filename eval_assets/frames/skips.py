"""Skipped frames: the record of a frame left out, with its reason and the standard fix, and
the checks that find bad frames without decoding them (repeated timestamps, no calibration yet).

Shared by the selection (:mod:`eval_assets.frames.selection`, which re-exports them), the
rectifier and the image/TF check (:mod:`eval_assets.frames.image_motion`).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from eval_assets.recording import Recording, RecordingError
from eval_assets.recording.image_size import ImageTooLargeError
from eval_assets.recording.messages import Image
from eval_assets.recording.names import CAMERA_INFO_STREAM, IMAGE_STREAM
from eval_assets.recording.validate import find_duplicate_images
from eval_assets.schemas.frames import SkippedFrame, SkipReason

FIXES: dict[str, str] = {
    "missing_blob": "the recording is incomplete at this row; copy or re-record it, or leave "
                    "the frame skipped",
    "corrupt_blob": "the row's payload is truncated or corrupt; copy or re-record the "
                    "recording, or leave the frame skipped",
    "undecodable_image": "the image data is truncated or corrupt; copy or re-record the "
                         "recording, or leave the frame skipped",
    "image_too_large": "record images at the camera's resolution (or raise "
                       "$EVAL_ASSETS_MAX_IMAGE_PIXELS if such a size is meant), or leave the "
                       "frame skipped",
    "no_calibration": "record camera_info before the first image, or start the selection "
                      "after the first camera_info",
    "bad_calibration": "the camera_info used by this frame is unreadable or invalid; re-record "
                       "camera_info, or leave the frame skipped",
    "size_mismatch": "record camera_info from the same camera and resolution as color_image",
    "duplicate_row": "nothing to do: the recorder wrote this row twice and the first copy is "
                     "used; fix the recorder to avoid the duplicate",
    "duplicate_timestamp": "fix the recorder's time stamping: different images must not share "
                           "a ts; these frames stay skipped",
    "frozen_image": "check the camera driver (it repeated an old image while TF moved the "
                    "camera) and the TF source; the frame stays skipped and no motion or "
                    "same_place case spans it",
    "image_moved_tf_still": "check the TF source (it kept one pose while the images show the "
                            "camera moving) and the camera; the frame stays skipped and no "
                            "motion or same_place case spans it",
}


def skipped_frame(rec: Recording, frame_index: int, reason: SkipReason, detail: str, *,
                  stream: str = IMAGE_STREAM, row_id: int | None = None,
                  since_ts: float | None = None) -> SkippedFrame:
    """A :class:`SkippedFrame` of ``rec`` with the standard fix for ``reason``.

    ``row_id`` defaults to the image's own row (for an image ``stream``); ``since_ts``: see
    :attr:`SkippedFrame.since_ts`.
    """
    if row_id is None and stream == IMAGE_STREAM:
        row_id = rec.row_id(IMAGE_STREAM, frame_index)
    return SkippedFrame(
        recording=str(rec.path), stream=stream, row_id=row_id, frame_index=frame_index,
        image_ts=rec.timestamp(IMAGE_STREAM, frame_index), reason=reason,
        detail=detail, fix=FIXES[reason], counts_as_bad=reason != "duplicate_row",
        since_ts=since_ts)


def decode_failure(rec: Recording, index: int, exc: ValueError) -> SkippedFrame:
    """The skip record of frame ``index`` whose image did not decode (``exc`` says why):
    ``image_too_large`` when its header declares more pixels than may be decoded, else
    ``undecodable_image``."""
    reason: SkipReason = ("image_too_large" if isinstance(exc, ImageTooLargeError)
                          else "undecodable_image")
    return skipped_frame(rec, index, reason, f"frame {index}: {exc}")


def read_image(rec: Recording, index: int) -> Image | SkippedFrame:
    """The decoded ``Image`` message of frame ``index``, or why it cannot be read."""
    data = rec.payload(IMAGE_STREAM, index)
    try:
        return rec.decode(IMAGE_STREAM, index, data)
    except RecordingError as exc:
        reason: SkipReason = "missing_blob" if data is None else "corrupt_blob"
        return skipped_frame(rec, index, reason, str(exc).removeprefix(f"{rec.path}: "))


def _no_calibration(rec: Recording, index: int, t: float, info_ts: np.ndarray,
                    image_ts: np.ndarray) -> SkippedFrame:
    first_ok = int(np.searchsorted(image_ts, info_ts[0], side="left"))
    return skipped_frame(
        rec, index, "no_calibration",
        f"frame {index} ({IMAGE_STREAM} ts={t:.6f}) has no {CAMERA_INFO_STREAM} at or before "
        f"it (the first is at ts={info_ts[0]:.6f}); select frames from index {first_ok} on",
        stream=CAMERA_INFO_STREAM)


def pre_skips(rec: Recording, indices: Iterable[int]) -> dict[int, SkippedFrame]:
    """Frames of ``indices`` that are unusable without decoding them: repeated timestamps
    (see :func:`~eval_assets.recording.validate.find_duplicate_images`) and frames before the
    first camera_info."""
    indices = list(indices)
    found: dict[int, SkippedFrame] = {}
    for p, problem in find_duplicate_images(rec, indices).items():
        found[p] = skipped_frame(rec, p, problem.kind, problem.detail)
    image_ts = rec.timestamps(IMAGE_STREAM)
    info_ts = rec.timestamps(CAMERA_INFO_STREAM)
    for i in indices:
        if i not in found and (info_ts.size == 0 or image_ts[i] < info_ts[0]):
            found[i] = _no_calibration(rec, i, float(image_ts[i]), info_ts, image_ts)
    wanted = set(indices)
    return {i: s for i, s in found.items() if i in wanted}
