"""Admission of a recording: valid, and passing the frame stage's bad-frame rule with its selection.

A recording whose every image is garbage, whose ``<name>.selection.yaml`` selects frames it
does not have, or whose selected frames are bad beyond ``max_bad_fraction`` passes the structural
checks of :func:`validate_recording` and then fails at every run of the frame stage. This is the
door that refuses it first, with the reason: the recordings sensor, the ``recording_ingest``
asset and ``eval-assets run`` all call :func:`admit_recording`.

The frame check is the frame stage's own plan (:func:`plan_selection`) and rule
(:func:`check_bad_share`), over a reduced-size decode of every selected frame (a few percent of
a full decode each; the quality-window mode has decoded them already while choosing). The plan
includes the frames whose image and TF disagree (a frozen camera:
:mod:`eval_assets.frames.image_motion`), so a recording mostly frozen is refused here. A
calibration that changes within the recording is refused by :func:`validate_recording`. Bad
calibrations and size mismatches are found by the frame stage only: they need the full decode.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from eval_assets.frames.selection import (
    FrameSelectionError,
    TooManyBadFramesError,
    check_bad_share,
    decode_failure,
    load_selection_config,
    measure_quality,
    plan_selection,
    pre_skips,
    read_image,
    resolve_selection,
    scan_quality,
    throttle_indices,
)
from eval_assets.layout import selection_file_for
from eval_assets.recording import Recording
from eval_assets.recording.names import IMAGE_STREAM
from eval_assets.recording.validate import ValidatedRecording, validate_recording
from eval_assets.schemas.frames import FrameSelectionConfig, SkippedFrame


class NoUsableFrameError(FrameSelectionError):
    """The recording's selection holds no frame that can be prepared."""


class TooManyBadSelectedFramesError(FrameSelectionError, TooManyBadFramesError):
    """More of the selected frames are bad than the selection's ``max_bad_fraction`` allows.

    A :class:`FrameSelectionError` (what the doors catch) and the frame stage's own error.
    """


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
            skipped = decode_failure(rec, index, exc)
            reasons[skipped.reason] += 1
            first_detail = first_detail or skipped.detail
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


def check_selected_frames(rec: Recording, config: FrameSelectionConfig,
                          config_file: Path | None) -> None:
    """Refuse ``rec`` when its selection would fail the frame stage's bad-frame rule.

    Raises :class:`NoUsableFrameError` when no selected frame decodes and
    :class:`TooManyBadSelectedFramesError` (the frame stage's message: counts, the first bad
    frame, the fix) when more than ``max_bad_fraction`` of the examined frames are bad.
    """
    source = str(config_file) if config_file is not None else "the default selection"
    # The first usable frame first: the cheap refusal of a recording with none keeps its words.
    first_usable_frame(rec, config, source)
    plan = plan_selection(rec, config, config_file)
    # quality_window decoded every candidate to choose among them: its selection is decoded.
    _, bad = (({}, []) if plan.record.mode == "quality_window"
              else scan_quality(rec, plan.to_prepare))
    try:
        check_bad_share(plan, [*plan.skipped, *bad])
    except TooManyBadFramesError as exc:
        raise TooManyBadSelectedFramesError(
            f"not admitted, since the frame stage would fail on it at every run: {exc}") from None


def admit_recording(path: Path, *, allow_pickle: bool = False,
                    name: str | None = None) -> ValidatedRecording:
    """Validate ``path`` and its selection file, and check its selected frames.

    The selected frames must include a usable one and be bad no more than ``max_bad_fraction``
    (:func:`check_selected_frames`). Raises :class:`~eval_assets.recording.RecordingError` or
    :class:`FrameSelectionError` with the file, the reason and the fix.
    """
    path = Path(path)
    selection_file = selection_file_for(path)
    config = load_selection_config(selection_file)
    config_file = selection_file if selection_file.is_file() else None
    return validate_recording(path, allow_pickle=allow_pickle, name=name,
                              also=lambda rec: check_selected_frames(rec, config, config_file))
