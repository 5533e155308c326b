"""Validation of a recording at the door: structure fatal, damaged rows reported.

``Recording.open`` checks what makes a file unusable as a whole (SQLite integrity, the required
streams and their codecs, a decodable first message of each, calibration of the images' size).
A file that fails it never becomes a Dagster partition. One damaged row is not such a problem: a
row without payload, a corrupt payload or an undecodable image is a bad *frame*, which the frame
stage skips and records with its reason (``skipped_frames.json``); only when more than the
configured share of the selected frames is bad does that stage fail.

So the door no longer decodes every row (which cost minutes on a long recording and decided
nothing). It lists what it can see without decoding: rows whose payload is missing, and images
that repeat a timestamp (see :func:`find_duplicate_images`), so registration can report them.

One calibration per recording: the door refuses a recording whose frames use camera_info
messages that disagree (intrinsics, distortion, rectification, projection or size: fx and fy
x1.5 from frame 12 flipped gold answers without a word), as it refuses one whose images and
calibration differ in size (:func:`check_one_calibration`, which the frame stage applies to the
frames it prepares as well). It decodes only the camera_info messages some image uses.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from eval_assets.recording.errors import RecordingError
from eval_assets.recording.inventory import inventory_of
from eval_assets.recording.messages import CameraInfo
from eval_assets.recording.names import CAMERA_INFO_STREAM, IMAGE_STREAM
from eval_assets.recording.reader import Recording
from eval_assets.schemas.recording import RecordingInventory

RowProblemKind = Literal["missing_blob", "duplicate_row", "duplicate_timestamp"]


@dataclass(frozen=True)
class RowProblem:
    """A damaged or repeated row found without decoding payloads."""

    stream: str
    row_id: int
    position: int  # index in the stream ordered by (ts, id): the frame index for color_image
    ts: float
    kind: RowProblemKind
    detail: str


@dataclass(frozen=True)
class ValidatedRecording:
    """A recording that passed the structural checks, its inventory and the rows it reports."""

    path: Path
    inventory: RecordingInventory
    problems: tuple[RowProblem, ...] = ()

    def summary(self) -> str:
        """The problems counted by stream and kind ("" when there are none)."""
        counts: dict[str, int] = {}
        for p in self.problems:
            label = f"{p.stream} {p.kind}"
            counts[label] = counts.get(label, 0) + 1
        return ", ".join(f"{n} {label}" for label, n in sorted(counts.items()))


def _equal_ts_groups(ts: np.ndarray) -> list[list[int]]:
    """Runs of positions sharing one ts in a sorted ts array (only runs of two or more)."""
    if ts.size < 2:
        return []
    same = np.flatnonzero(np.diff(ts) == 0)
    groups: list[list[int]] = []
    for i in same.tolist():
        if groups and groups[-1][-1] == i:
            groups[-1].append(i + 1)
        else:
            groups.append([i, i + 1])
    return groups


def _content(payload: object) -> bytes:
    return payload if isinstance(payload, bytes) else repr(payload).encode()


def find_duplicate_images(rec: Recording, positions: Iterable[int] | None = None
                          ) -> dict[int, RowProblem]:
    """Images that share their timestamp with another, by position (frame index).

    Policy: identical payloads at one ts are one frame written twice: the first row is kept and
    each later copy is a ``duplicate_row``. Different images at one ts cannot both be right, and
    the ts is all that links an image to its calibration, pose and LiDAR: every one of them is a
    ``duplicate_timestamp``. Rows without a payload are left to the missing-blob check.
    ``positions`` restricts the answer to groups touching those frames (default: all).
    """
    ts = rec.timestamps(IMAGE_STREAM)
    groups = _equal_ts_groups(ts)
    if positions is not None:
        wanted = set(positions)
        groups = [g for g in groups if wanted.intersection(g)]
    found: dict[int, RowProblem] = {}
    for group in groups:
        payloads = {p: rec.payload(IMAGE_STREAM, p) for p in group}
        present = [p for p in group if payloads[p] is not None]
        distinct = {_content(payloads[p]) for p in present}
        t = float(ts[group[0]])
        if len(distinct) > 1:
            for p in present:
                others = [q for q in present if q != p]
                found[p] = RowProblem(
                    IMAGE_STREAM, rec.row_id(IMAGE_STREAM, p), p, t, "duplicate_timestamp",
                    f"frame {p} shares ts={t:.6f} with frames {others}, which hold different "
                    "images; none of them can be matched to its own calibration, pose and LiDAR")
        elif present:
            first = present[0]
            for p in present[1:]:
                found[p] = RowProblem(
                    IMAGE_STREAM, rec.row_id(IMAGE_STREAM, p), p, t, "duplicate_row",
                    f"frame {p} repeats frame {first} (row id "
                    f"{rec.row_id(IMAGE_STREAM, first)}): same ts={t:.6f}, identical payload; "
                    f"frame {first} is kept")
    return found


def find_missing_payloads(rec: Recording, streams: Iterable[str]) -> list[RowProblem]:
    """Rows of ``streams`` without a row in ``<stream>_blob`` (one SQL query per stream)."""
    problems = []
    for stream in streams:
        ids, ts = rec.row_ids(stream), rec.timestamps(stream)
        for p in rec.positions_without_payload(stream):
            problems.append(RowProblem(
                stream, int(ids[p]), p, float(ts[p]), "missing_blob",
                f"stream {stream!r} row id {int(ids[p])} has no payload in "
                f"{stream + '_blob'!r}"))
    return problems


CALIBRATION_RTOL = 1e-3
"""Two calibrations are one when every number agrees within this share of its size (0.8 px of
the reference rig's fx of 797, a pixel's ray within 0.06°) ..."""
CALIBRATION_ATOL = 1e-6
"""... or within this much (entries that are 0: skew, the zeros of K, R and P)."""
_FIELD_NAMES = {("K", 0): "fx", ("K", 1): "skew", ("K", 2): "cx", ("K", 4): "fy", ("K", 5): "cy",
                ("P", 0): "fx", ("P", 2): "cx", ("P", 5): "fy", ("P", 6): "cy"}
_SHOWN_DIFFERENCES = 6
_STAMP_BYTES = slice(8 + 4, 8 + 4 + 12)
"""Where an LCM CameraInfo holds its header's seq and stamp (after the fingerprint and D's
length): but for them, a camera_info republished unchanged is the same bytes, which need no
decoding to be compared."""


class CalibrationChangeError(RecordingError):
    """The frames of a recording use different camera calibrations."""


def _same(x: float, y: float) -> bool:
    if not (math.isfinite(x) and math.isfinite(y)):
        return repr(x) == repr(y)  # an invalid value is the frame stage's bad_calibration
    return math.isclose(x, y, rel_tol=CALIBRATION_RTOL, abs_tol=CALIBRATION_ATOL)


def _rotation(r: Sequence[float]) -> tuple[float, ...]:
    """camera_info R, an all-zero R read as the identity (as the rectifier reads it)."""
    return (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0) if not any(r) else tuple(r)


def calibration_differences(a: CameraInfo, b: CameraInfo) -> list[str]:
    """What differs between two calibrations, in words (empty: the same calibration).

    Compared: the size, the distortion model, D, K, R (all zero = identity) and P; numbers within
    :data:`CALIBRATION_RTOL` of each other (or :data:`CALIBRATION_ATOL`) agree.
    """
    out = []
    if (a.width, a.height) != (b.width, b.height):
        out.append(f"size {a.width}x{a.height} -> {b.width}x{b.height}")
    if a.distortion_model != b.distortion_model:
        out.append(f"distortion_model {a.distortion_model!r} -> {b.distortion_model!r}")
    for field, xs, ys in (("K", a.K, b.K), ("D", a.D, b.D), ("R", _rotation(a.R), _rotation(b.R)),
                          ("P", a.P, b.P)):
        if len(xs) != len(ys):
            out.append(f"{field} {len(xs)} -> {len(ys)} values")
            continue
        for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
            if not _same(float(x), float(y)):
                named = _FIELD_NAMES.get((field, i))
                ratio = f" (x{y / x:.4g})" if x and math.isfinite(x) and math.isfinite(y) else ""
                out.append(f"{field}[{i}]{f' ({named})' if named else ''} {x:.6g} -> {y:.6g}"
                           f"{ratio}")
    return out


@dataclass(frozen=True)
class CalibrationChange:
    """The first frame whose calibration differs from the first frame's, and how."""

    first_frame: int
    first_message: int
    first_message_ts: float
    frame: int
    frame_ts: float
    message: int
    message_ts: float
    differences: tuple[str, ...]


def find_calibration_change(rec: Recording, frames: Iterable[int] | None = None
                            ) -> CalibrationChange | None:
    """The first of ``frames`` (default: every image) whose camera_info (the latest at or before
    it) differs from the one the first of them uses; None when they all use one calibration.

    Reads only the camera_info messages these frames use, and decodes only those whose bytes
    (but for the stamp) differ from one already compared. A message that does not decode is
    left out (its frames are the frame stage's ``bad_calibration``), as are frames before the
    first camera_info (``no_calibration``).
    """
    image_ts = rec.timestamps(IMAGE_STREAM)
    info_ts = rec.timestamps(CAMERA_INFO_STREAM)
    chosen = sorted(set(range(len(image_ts)) if frames is None else frames))
    if not chosen or not len(info_ts):
        return None
    used = np.searchsorted(info_ts, image_ts[chosen], side="right") - 1
    first_user: dict[int, int] = {}
    for frame, j in zip(chosen, used.tolist(), strict=True):
        if j >= 0:
            first_user.setdefault(int(j), frame)
    lcm = rec.streams[CAMERA_INFO_STREAM].codec_id == "lcm"
    reference: tuple[int, CameraInfo] | None = None
    same: set[bytes] = set()  # payloads (less their stamp) that hold the reference calibration
    for j in sorted(first_user):
        data = rec.payload(CAMERA_INFO_STREAM, j)
        key = (data[:_STAMP_BYTES.start] + data[_STAMP_BYTES.stop:]
               if lcm and isinstance(data, bytes) else None)
        if key is not None and key in same:
            continue
        try:
            info = rec.decode(CAMERA_INFO_STREAM, j, data)
        except RecordingError:
            continue
        if reference is None:
            reference = (j, info)
            differences = []
        else:
            differences = calibration_differences(reference[1], info)
        if differences:
            frame = first_user[j]
            return CalibrationChange(
                first_frame=first_user[reference[0]], first_message=reference[0],
                first_message_ts=float(info_ts[reference[0]]), frame=frame,
                frame_ts=float(image_ts[frame]), message=j, message_ts=float(info_ts[j]),
                differences=tuple(differences))
        if key is not None:
            same.add(key)
    return None


def check_one_calibration(rec: Recording, frames: Iterable[int] | None = None) -> None:
    """Raise :class:`CalibrationChangeError` when ``frames`` (default: every image) use camera
    calibrations that differ (:func:`find_calibration_change`). With ``frames`` the fix offers
    to select the frames on one side of the change."""
    change = find_calibration_change(rec, frames)
    if change is None:
        return
    select = ("" if frames is None else
              f"select frames on one side of the change (stop: {change.frame} or start: "
              f"{change.frame} in the recording's selection file, --stop/--start with vqa "
              "generate); or ")
    shown = list(change.differences[:_SHOWN_DIFFERENCES])
    if len(change.differences) > _SHOWN_DIFFERENCES:
        shown.append(f"and {len(change.differences) - _SHOWN_DIFFERENCES} more")
    raise CalibrationChangeError(
        f"{rec.path}: the camera calibration changes within the recording: from frame "
        f"{change.frame} ({IMAGE_STREAM} ts={change.frame_ts:.6f}) on, frames use "
        f"{CAMERA_INFO_STREAM} message {change.message} (ts={change.message_ts:.6f}), which "
        f"differs from message {change.first_message} (ts={change.first_message_ts:.6f}, used "
        f"from frame {change.first_frame}) in {', '.join(shown)}. One recording must keep one "
        "calibration, as it keeps one image size: rectified images, LiDAR projections and every "
        f"answer would otherwise mix two cameras. Fix: {select}split the recording at "
        f"ts={change.message_ts:.6f} into one file per calibration (frames before "
        f"{change.frame}, and from {change.frame} on), "
        f"or re-record {CAMERA_INFO_STREAM} with the camera's one calibration",
        path=rec.path, stream=CAMERA_INFO_STREAM, row_id=rec.row_id(CAMERA_INFO_STREAM,
                                                                     change.message))


def validate_recording(path: Path, *, allow_pickle: bool = False, name: str | None = None,
                       also: Callable[[Recording], object] | None = None
                       ) -> ValidatedRecording:
    """Open ``path`` (structural checks, fatal) and list its missing payloads and repeated images.

    Raises :class:`RecordingError` naming the file, the stream and the fix when the recording
    cannot be used at all (a :class:`CalibrationChangeError` when its frames use different
    calibrations). Damaged rows are returned in ``problems``, not raised: the frame stage
    skips them and fails only past its ``max_bad_fraction``. ``also`` runs a further check on the
    open recording (the frame admission of :mod:`eval_assets.frames.admission`), so the file is
    opened and integrity-checked once.
    """
    path = Path(path)
    with Recording.open(path, allow_pickle=allow_pickle) as rec:
        check_one_calibration(rec)
        problems = find_missing_payloads(rec, rec.required_streams)
        problems += find_duplicate_images(rec).values()
        inventory = inventory_of(rec, name or path.stem)
        if also is not None:
            also(rec)
    problems.sort(key=lambda p: (p.stream, p.position, p.kind))
    return ValidatedRecording(path=path, inventory=inventory, problems=tuple(problems))
