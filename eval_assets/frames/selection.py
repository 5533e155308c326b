"""Frame selection: which colour frames of a recording are prepared, chosen before any heavy work.

The options are dimOS 0.0.15's (``dimos evals vqa generate``), with the same names and rules
(:class:`~eval_assets.schemas.frames.FrameSelectionConfig`):

- ``image_index``: one frame;
- ``start``/``stop`` (exclusive) with ``stride``: every n-th index of the range;
- ``time_step``: at most one frame per that many seconds, the first of each (dimOS memory's
  ``throttle``: a frame is kept when at least ``time_step`` s passed since the last kept one);
- ``quality_window``: the sharpest frame of each window of that many seconds (dimOS memory's
  ``QualityWindow``: a window opens at its first candidate and closes at the first candidate at
  least ``quality_window`` s later; ties keep the earlier frame), after an optional
  ``min_brightness`` floor (only frames brighter than it are candidates).

Sharpness and brightness are dimOS's ``Image.sharpness`` (variance of the Laplacian of a ~160 px
wide greyscale, mapped to 0-1 by ``(log10(var + 1) - 1) / 3``) and ``Image.brightness`` (mean
of the channels, 0-1). A JPEG is decoded at 1/2, 1/4 or 1/8 size (``IMREAD_REDUCED_COLOR_n``,
the largest reduction that keeps it at least 160 px wide), which costs a few percent of a full
decode: the scan of a whole recording is cheap next to rectifying the frames it keeps. Frames
that could decide a window differently (near-ties, brightness at the floor) are scored again at
full resolution exactly as dimOS does (:mod:`eval_assets.frames.near_ties`), so the frames
chosen are dimOS's.

Default policy (no selection field given, e.g. no ``<recording>.selection.yaml``): a recording
of at most :data:`DEFAULT_EVERY_FRAME_MAX_IMAGES` images keeps every frame; a longer one keeps
the sharpest frame per :data:`DEFAULT_QUALITY_WINDOW_S` seconds brighter than
:data:`DEFAULT_MIN_BRIGHTNESS`.

Bad frames found while selecting (missing or corrupt payloads, undecodable images, repeated
timestamps, no calibration yet) are returned as :class:`SkippedFrame` records, never raised;
:func:`check_bad_share` fails only past ``max_bad_fraction``. So are frames whose image and TF
disagree (a frozen camera, or TF standing still while the images move:
:mod:`eval_assets.frames.image_motion`): every mode compares its frames in time order with TF,
over every frame from the first selected one to the last (a quality window: every candidate, in
the scan that scores them, so a window chooses among the frames that agree).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from pydantic import ValidationError

from eval_assets import progress
from eval_assets.errors import InputError, validation_message, yaml_problem
from eval_assets.frames.image_motion import IMAGE_MOTION_REASONS, RecordingCheck, thumbnail
from eval_assets.frames.near_ties import refine_near_ties, window_groups
from eval_assets.frames.quality import (
    FrameQuality,
    measure_quality,
    quality_of,
    reduced_bgr,
    sharpness_score,
)
from eval_assets.frames.skips import (
    FIXES,
    decode_failure,
    pre_skips,
    read_image,
    skipped_frame,
)
from eval_assets.hashing import file_sha256
from eval_assets.recording import Recording
from eval_assets.recording.names import IMAGE_STREAM
from eval_assets.schemas.frames import (
    SKIPPED_FRAMES_FILE,
    FrameSelectionConfig,
    FrameSelectionRecord,
    QualityChoice,
    SelectionMode,
    SkippedFrame,
)

DEFAULT_EVERY_FRAME_MAX_IMAGES = 300
"""Recordings with at most this many images keep every frame by default (20 s at 15 Hz)."""
DEFAULT_QUALITY_WINDOW_S = 5.0
"""Longer recordings keep the sharpest frame per this many seconds by default."""
DEFAULT_MIN_BRIGHTNESS = 0.05
"""... among frames brighter than this (drops black frames: lens cap, lights off)."""

SCAN_WORKERS = 2

class FrameSelectionError(InputError):
    """A selection file or option is invalid, or selects nothing usable from the recording."""


# --- the selection file --------------------------------------------------------------------------


def load_selection_config(path: Path) -> FrameSelectionConfig:
    """The selection of ``path`` (``<recording>.selection.yaml``); the default when it is absent.

    The one loader of that file. Errors name the file, the field and the fix.
    """
    path = Path(path)
    if not path.is_file():
        return FrameSelectionConfig()
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise FrameSelectionError(f"{path}: {yaml_problem(exc)}; fix: correct the syntax"
                                  ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise FrameSelectionError(f"{path}: cannot be read ({exc}); fix: make it a readable "
                                  "UTF-8 YAML file") from None
    if data is None:
        return FrameSelectionConfig()  # an empty file: the defaults
    if not isinstance(data, dict):
        raise FrameSelectionError(f"{path}: expected a mapping of selection fields, got "
                                  f"{type(data).__name__}; fix: write 'field: value' lines, "
                                  f"e.g. 'quality_window: 5'")
    return selection_from(data, source=str(path))


def selection_from(values: Mapping[str, Any], source: str) -> FrameSelectionConfig:
    """A validated config from ``values`` (file content or CLI options, named by ``source``)."""
    try:
        return FrameSelectionConfig.model_validate(dict(values))
    except ValidationError as exc:
        raise FrameSelectionError(validation_message(
            exc, source, fields=FrameSelectionConfig.model_fields)) from None


def selection_digest(path: Path) -> str | None:
    """SHA-256 of the selection file's bytes; None when there is no file."""
    path = Path(path)
    if not path.is_file():
        return None
    return file_sha256(path)


# --- pure rules over timestamps ------------------------------------------------------------------


def throttle_indices(ts: np.ndarray, candidates: Sequence[int], step: float) -> list[int]:
    """dimOS ``throttle(step)``: keep a frame when ``step`` s passed since the last kept one."""
    kept: list[int] = []
    last: float | None = None
    for i in candidates:
        t = float(ts[i])
        if last is None or t - last >= step:
            kept.append(i)
            last = t
    return kept


def quality_window_choices(ts: np.ndarray, candidates: Sequence[int],
                           quality: Mapping[int, FrameQuality], window: float,
                           min_brightness: float | None) -> list[QualityChoice]:
    """dimOS ``QualityWindow(sharpness, window)`` after the ``brightness > min_brightness`` filter.

    A window opens at its first candidate; the first candidate at least ``window`` s after that
    opens the next one (:func:`~eval_assets.frames.near_ties.window_groups`). The sharpest
    candidate of each window is kept (ties: the earlier).
    """
    choices: list[QualityChoice] = []
    for group in window_groups(ts, candidates, quality, min_brightness, window):
        best = max(group, key=lambda i: (quality[i].sharpness, -i))
        q = quality[best]
        choices.append(QualityChoice(frame_index=best, window_start_ts=float(ts[group[0]]),
                                     candidates=len(group), sharpness=q.sharpness,
                                     brightness=q.brightness))
    return choices


# --- resolving a config against a recording ------------------------------------------------------


@dataclass(frozen=True)
class ResolvedSelection:
    """A config made explicit for one recording: the mode, its effective range and why."""

    mode: SelectionMode
    start: int
    stop: int
    stride: int = 1
    time_step: float | None = None
    quality_window: float | None = None
    min_brightness: float | None = None
    why: str = ""


def resolve_selection(config: FrameSelectionConfig, image_count: int,
                      source: str = "the selection") -> ResolvedSelection:
    """The effective selection of ``config`` for a recording of ``image_count`` images.

    Applies the default policy when ``config`` sets no selection field. Raises
    :class:`FrameSelectionError` (naming ``source``) when it selects outside the recording.
    """
    if config.is_default:
        if image_count <= DEFAULT_EVERY_FRAME_MAX_IMAGES:
            return ResolvedSelection(
                "every_frame", 0, image_count,
                why=f"default policy: {image_count} images <= {DEFAULT_EVERY_FRAME_MAX_IMAGES}, "
                    "every frame")
        return ResolvedSelection(
            "quality_window", 0, image_count, quality_window=DEFAULT_QUALITY_WINDOW_S,
            min_brightness=DEFAULT_MIN_BRIGHTNESS,
            why=f"default policy: {image_count} images > {DEFAULT_EVERY_FRAME_MAX_IMAGES}, the "
                f"sharpest frame per {DEFAULT_QUALITY_WINDOW_S:g} s window brighter than "
                f"{DEFAULT_MIN_BRIGHTNESS:g}")
    last = image_count - 1
    if config.image_index is not None:
        if config.image_index > last:
            raise FrameSelectionError(
                f"{source}: image_index {config.image_index} is outside the {image_count} "
                f"images of the recording; fix: choose an index from 0 to {last}")
        i = config.image_index
        return ResolvedSelection("image_index", i, i + 1, why=f"image_index {i}")
    start = config.start or 0
    stop = image_count if config.stop is None else config.stop
    if start > last or stop > image_count:
        field = "start" if start > last else "stop"
        raise FrameSelectionError(
            f"{source}: {field} {start if field == 'start' else stop} is outside the "
            f"{image_count} images of the recording; fix: choose start from 0 to {last} and "
            f"stop up to {image_count} (exclusive), or leave stop out")
    span = f"[{start}, {stop})"
    if config.quality_window is not None:
        floor = ("" if config.min_brightness is None
                 else f" brighter than {config.min_brightness:g}")
        return ResolvedSelection(
            "quality_window", start, stop, quality_window=config.quality_window,
            min_brightness=config.min_brightness,
            why=f"the sharpest frame per {config.quality_window:g} s window of {span}{floor}")
    if config.time_step is not None:
        return ResolvedSelection("time_step", start, stop, time_step=config.time_step,
                                 why=f"one frame per {config.time_step:g} s of {span}")
    if config.stride is not None:
        return ResolvedSelection("stride", start, stop, stride=config.stride,
                                 why=f"every {config.stride}. frame of {span}")
    return ResolvedSelection("every_frame", start, stop, why=f"every frame of {span}")


# --- images scanned: quality, and against TF ------------------------------------------------------


def scan_quality(rec: Recording, indices: Sequence[int], workers: int = SCAN_WORKERS,
                 against_tf: bool = False, label: str = "scoring frame quality"
                 ) -> tuple[dict[int, FrameQuality], list[SkippedFrame]]:
    """dimOS quality scores of frames ``indices``, and the frames that do not decode.

    Reduced-size decodes on ``workers`` threads (OpenCV releases the GIL while decoding). With
    ``against_tf`` the same decodes are also compared with TF in index order
    (:mod:`eval_assets.frames.image_motion`): a frame whose image and TF disagree is among the
    bad frames (``frozen_image``, ``image_moved_tf_still``), not among the scored ones.
    """
    tf_check = RecordingCheck(rec) if against_tf and len(indices) > 1 else None

    def one(index: int) -> tuple[FrameQuality, np.ndarray | None, str] | SkippedFrame:
        image = read_image(rec, index)
        if isinstance(image, SkippedFrame):
            return image
        try:
            bgr = reduced_bgr(image)
        except ValueError as exc:
            return decode_failure(rec, index, exc)
        look = thumbnail(bgr) if tf_check is not None else None
        return quality_of(image, bgr), look, image.header.frame_id

    scores: dict[int, FrameQuality] = {}
    bad: list[SkippedFrame] = []
    with progress.task(label, total=len(indices)) as advance, \
            ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for index, result in zip(indices, pool.map(one, indices, chunksize=16), strict=True):
            advance(1)
            if isinstance(result, SkippedFrame):
                bad.append(result)
                continue
            quality, look, frame_id = result
            refused = (None if tf_check is None or look is None
                       else tf_check.add(index, frame_id, look))
            if refused is not None:
                bad.append(refused)
            else:
                scores[index] = quality
    return scores, bad


def image_tf_skips(rec: Recording, frames: Sequence[int], already: Iterable[int] = (),
                   workers: int = SCAN_WORKERS) -> list[SkippedFrame]:
    """Frames of ``frames`` whose image and TF disagree.

    Judged over every frame from the one before the first of ``frames`` to the last, less the
    ``already`` skipped ones: a frozen image is found against the frame it repeats, which the
    selection may have left out. Frames that do not decode are left to the frame stage.
    """
    if not frames:
        return []
    wanted, gone = set(frames), set(already)
    span = [i for i in range(max(0, min(frames) - 1), max(frames) + 1) if i not in gone]
    _, bad = scan_quality(rec, span, workers, against_tf=True,
                          label="checking images against TF")
    return [s for s in bad if s.reason in IMAGE_MOTION_REASONS and s.frame_index in wanted]


def _exact_quality(rec: Recording, index: int) -> FrameQuality | None:
    """dimOS's scores of frame ``index`` at full resolution (None: it did not decode now)."""
    image = read_image(rec, index)
    if isinstance(image, SkippedFrame):
        return None
    try:
        return measure_quality(image, exact=True)
    except ValueError:
        return None


# --- the plan ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FramePlan:
    """What to prepare: the selection (config, frames, why) and the frames already found bad."""

    record: FrameSelectionRecord
    skipped: tuple[SkippedFrame, ...]
    max_bad_fraction: float

    @property
    def to_prepare(self) -> list[int]:
        """Selected frames not already skipped, in index order."""
        gone = {s.frame_index for s in self.skipped}
        return [i for i in self.record.selected if i not in gone]


def plan_selection(rec: Recording, config: FrameSelectionConfig,
                   config_file: Path | None = None, workers: int = SCAN_WORKERS) -> FramePlan:
    """Select frames of ``rec`` with ``config`` (read from ``config_file``, if any).

    Only ``quality_window`` decodes images to choose them (reduced size, within its range); the
    other modes choose from the timestamps, then decode the span of their frames at reduced size
    to compare them with TF (:func:`image_tf_skips`). Frames found bad on the way are in
    ``skipped``.
    """
    source = str(config_file) if config_file is not None else "the selection"
    image_ts = rec.timestamps(IMAGE_STREAM)
    count = len(image_ts)
    resolved = resolve_selection(config, count, source)
    quality: list[QualityChoice] = []
    if resolved.mode == "quality_window":
        assert resolved.quality_window is not None
        candidates = list(range(resolved.start, resolved.stop))
        early = pre_skips(rec, candidates)
        scores, bad = scan_quality(rec, [i for i in candidates if i not in early], workers,
                                   against_tf=True)
        scores = refine_near_ties(image_ts, candidates, scores, resolved.quality_window,
                                  resolved.min_brightness, lambda i: _exact_quality(rec, i))
        quality = quality_window_choices(image_ts, candidates, scores, resolved.quality_window,
                                         resolved.min_brightness)
        if not quality:
            raise FrameSelectionError(
                f"{source}: quality window selected no frames in [{resolved.start}, "
                f"{resolved.stop}) of {rec.path} (window={resolved.quality_window:g} s, "
                f"min_brightness={resolved.min_brightness}, {len(bad) + len(early)} frames "
                "unusable); fix: lower min_brightness or select another range")
        selected = [c.frame_index for c in quality]
        examined = len(candidates)
        skipped = [*early.values(), *bad]
    else:
        if resolved.mode == "time_step":
            assert resolved.time_step is not None
            selected = throttle_indices(image_ts, range(resolved.start, resolved.stop),
                                        resolved.time_step)
        else:
            selected = list(range(resolved.start, resolved.stop, resolved.stride))
        examined = len(selected)
        early = pre_skips(rec, selected)
        skipped = [*early.values(), *image_tf_skips(rec, selected, early, workers)]
    record = FrameSelectionRecord(
        recording=str(rec.path), config_file=None if config_file is None else str(config_file),
        config=config, mode=resolved.mode, start=resolved.start, stop=resolved.stop,
        why=resolved.why, image_count=count, examined=examined, selected=selected,
        quality=quality)
    return FramePlan(record=record, skipped=tuple(skipped),
                     max_bad_fraction=config.max_bad_fraction)


def plan_indices(rec: Recording, frame_indices: Iterable[int],
                 config: FrameSelectionConfig | None = None) -> FramePlan:
    """A plan for an explicit list of frames (sorted, de-duplicated); out of range is an error."""
    config = config or FrameSelectionConfig()
    count = len(rec.timestamps(IMAGE_STREAM))
    chosen = sorted({int(i) for i in frame_indices})
    bad = [i for i in chosen if not 0 <= i < count]
    if bad or not chosen:
        raise FrameSelectionError(
            f"{rec.path}: frame indices {bad[:5]} are outside the {count} images of stream "
            f"{IMAGE_STREAM!r}; choose indices from 0 to {count - 1}" if bad else
            f"{rec.path}: no frame index given; choose indices from 0 to {count - 1}")
    record = FrameSelectionRecord(
        recording=str(rec.path), config_file=None, config=config, mode="image_index",
        start=chosen[0], stop=chosen[-1] + 1, why=f"frames {compact_indices(chosen)} as given",
        image_count=count, examined=len(chosen), selected=chosen)
    early = pre_skips(rec, chosen)
    return FramePlan(record=record, skipped=(*early.values(), *image_tf_skips(rec, chosen, early)),
                     max_bad_fraction=config.max_bad_fraction)


# --- the bad-frame policy ------------------------------------------------------------------------


@dataclass(frozen=True)
class BadShare:
    """How many of the examined frames are bad."""

    bad: int
    frames: int  # examined frames, less the identical copies of kept rows (duplicate_row)

    @property
    def fraction(self) -> float:
        """``bad / frames`` (0 when nothing was examined)."""
        return self.bad / self.frames if self.frames else 0.0


def bad_share(examined: int, skipped: Sequence[SkippedFrame]) -> BadShare:
    """The bad share among ``examined`` frames given every frame skipped so far."""
    copies = len({s.frame_index for s in skipped if not s.counts_as_bad})
    bad = len({s.frame_index for s in skipped if s.counts_as_bad})
    return BadShare(bad=bad, frames=max(examined - copies, 0))


class TooManyBadFramesError(InputError):
    """More than ``max_bad_fraction`` of the examined frames are bad."""


def check_bad_share(plan: FramePlan, skipped: Sequence[SkippedFrame],
                    listed_in: Path | None = None) -> BadShare:
    """Raise :class:`TooManyBadFramesError` when the bad share exceeds the plan's limit."""
    share = bad_share(plan.record.examined, skipped)
    if share.fraction <= plan.max_bad_fraction:
        return share
    reasons = Counter(s.reason for s in skipped if s.counts_as_bad)
    first = next(s for s in sorted(skipped, key=lambda s: s.frame_index) if s.counts_as_bad)
    where = (f"{plan.record.config_file}" if plan.record.config_file
             else f"a {Path(plan.record.recording).stem}.selection.yaml beside the recording")
    listed = f"; every skipped frame is listed in {listed_in}" if listed_in else ""
    raise TooManyBadFramesError(
        f"{plan.record.recording}: {share.bad} of {share.frames} examined frames are bad "
        f"({share.fraction:.0%} > max_bad_fraction {plan.max_bad_fraction:g}): "
        f"{', '.join(f'{n} {r}' for r, n in sorted(reasons.items()))}. First: frame "
        f"{first.frame_index} ({first.stream} row id {first.row_id}): {first.detail}. Fix: "
        f"{first.fix}; or select other frames, or raise max_bad_fraction in {where}{listed}")


def compact_indices(indices: Sequence[int], limit: int = 40) -> str:
    """``0-3, 7, 9-11`` (runs of consecutive indices), cut after ``limit`` runs."""
    runs: list[str] = []
    items = sorted(indices)
    i = 0
    while i < len(items):
        j = i
        while j + 1 < len(items) and items[j + 1] == items[j] + 1:
            j += 1
        runs.append(str(items[i]) if i == j else f"{items[i]}-{items[j]}")
        i = j + 1
    if len(runs) > limit:
        return ", ".join(runs[:limit]) + f", ... ({len(runs) - limit} more runs)"
    return ", ".join(runs)


__all__ = [
    "DEFAULT_EVERY_FRAME_MAX_IMAGES",
    "DEFAULT_MIN_BRIGHTNESS",
    "DEFAULT_QUALITY_WINDOW_S",
    "FIXES",
    "SKIPPED_FRAMES_FILE",
    "BadShare",
    "FramePlan",
    "FrameQuality",
    "FrameSelectionError",
    "ResolvedSelection",
    "TooManyBadFramesError",
    "bad_share",
    "check_bad_share",
    "compact_indices",
    "decode_failure",
    "image_tf_skips",
    "load_selection_config",
    "measure_quality",
    "plan_indices",
    "plan_selection",
    "pre_skips",
    "quality_window_choices",
    "read_image",
    "reduced_bgr",
    "resolve_selection",
    "scan_quality",
    "selection_digest",
    "selection_from",
    "sharpness_score",
    "skipped_frame",
    "throttle_indices",
]
