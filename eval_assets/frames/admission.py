"""Admission of a recording: valid, and able to yield at least one frame with its selection.

A recording whose every image is garbage, or whose ``<name>.selection.yaml`` selects frames it
does not have, passes the structural checks of :func:`validate_recording` and then fails at every
run of the frame stage. This is the door that refuses it first, with the reason: the recordings
sensor, the ``recording_ingest`` asset and ``eval-assets run`` all call :func:`admit_recording`.

The frame check stops at the first usable frame, so a sound recording costs one reduced-size
JPEG decode here; only a recording with no usable frame is decoded through (and then refused).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from eval_assets.frames.selection import (
    IMAGE_STREAM,
    FrameSelectionError,
    load_selection_config,
    measure_quality,
    pre_skips,
    read_image,
    resolve_selection,
    throttle_indices,
)
from eval_assets.layout import selection_file_for
from eval_assets.recording import Recording
from eval_assets.recording.validate import ValidatedRecording, validate_recording
from eval_assets.schemas.frames import FrameSelectionConfig, SkippedFrame


class NoUsableFrameError(FrameSelectionError):
    """The recording's selection holds no frame that can be prepared."""


def _candidates(rec: Recording, config: FrameSelectionConfig, source: str) -> list[int]:
    """The frames the selection may choose from, in index order (raises when out of range)."""
    image_ts = rec.timestamps(IMAGE_STREAM)
    resolved = resolve_selection(config, len(image_ts), source)
    if resolved.mode == "time_step":
        assert resolved.time_step is not None
        return throttle_indices(image_ts, range(resolved.start, resolved.stop),
                                resolved.time_step)
    stride = resolved.stride if resolved.mode == "stride" else 1
    return list(range(resolved.start, resolved.stop, stride))


def first_usable_frame(rec: Recording, config: FrameSelectionConfig, source: str) -> int:
    """Index of the first frame of the selection that decodes (and passes its brightness floor).

    Raises :class:`FrameSelectionError` when the selection names frames the recording does not
    have, and :class:`NoUsableFrameError` (reasons counted, the first one spelled out) when no
    candidate is usable.
    """
    candidates = _candidates(rec, config, source)
    floor = resolve_selection(config, len(rec.timestamps(IMAGE_STREAM)), source).min_brightness
    early = pre_skips(rec, candidates)
    reasons: Counter[str] = Counter(s.reason for s in early.values())
    first_detail = next((s.detail for s in early.values()), "")
    for index in candidates:
        if index in early:
            continue
        image = read_image(rec, index)
        if isinstance(image, SkippedFrame):
            reasons[image.reason] += 1
            first_detail = first_detail or image.detail
            continue
        try:
            quality = measure_quality(image)
        except ValueError as exc:
            reasons["undecodable_image"] += 1
            first_detail = first_detail or f"frame {index}: {exc}"
            continue
        if floor is not None and quality.brightness <= floor:
            reasons["below min_brightness"] += 1
            continue
        return index
    counted = ", ".join(f"{n} {r}" for r, n in sorted(reasons.items()))
    raise NoUsableFrameError(
        f"{rec.path}: none of the {len(candidates)} frames selected by {source} can be "
        f"prepared ({counted}){'; first: ' + first_detail if first_detail else ''}. Fix: copy "
        "or re-record the recording, or select other frames in its selection file")


def admit_recording(path: Path, *, allow_pickle: bool = False,
                    name: str | None = None) -> ValidatedRecording:
    """Validate ``path`` and its selection file, and check that it yields at least one frame.

    Raises :class:`~eval_assets.recording.RecordingError` or :class:`FrameSelectionError` with
    the file, the reason and the fix.
    """
    path = Path(path)
    selection_file = selection_file_for(path)
    config = load_selection_config(selection_file)
    source = str(selection_file) if selection_file.is_file() else "the default selection"
    return validate_recording(path, allow_pickle=allow_pickle, name=name,
                              also=lambda rec: first_usable_frame(rec, config, source))
