"""Images against TF: a frozen camera, or TF standing still while the images move.

A camera driver that stops delivering new images but keeps stamping the last one, or a TF source
that keeps one pose while the robot drives, gives images and poses that disagree, and every answer
whose truth comes from TF (the motion families, ``same_place``) or ties an image to its pose is
silently wrong over that stretch: 24 identical images with a moving TF made 48 motion cases, gold
0.57-2.2 m over the same picture. The frame stage therefore compares consecutive frames, in time
order, with what TF says the camera did between them (:class:`ImageMotionCheck`), and a frame
whose image and pose disagree is skipped with its reason like any other bad frame.

The measures, on a *thumbnail*: the image as the quality scan decodes it (reduced size), shrunk
by area averaging to :data:`THUMB_WIDTH` pixels wide, in colour.

- **Near-identical images**: at most :data:`NEAR_IDENTICAL_SHARE` of the thumbnail's pixels differ
  by more than :data:`CHANGE_LEVEL` grey levels (of 255, in any channel). Area averaging divides
  sensor noise by the block size (a 640-px-wide image: 10x10 pixels per thumbnail pixel, so
  noise of 3 grey levels becomes 0.3, and a difference of two such images ~0.4: the level is 20
  of those), while a real view change moves edges, and an edge moving by a fraction of a
  thumbnail pixel changes it by far more than the level. Measured: consecutive frames of the
  bundled sample (640x480, 9 cm apart) differ in at least 5.8 % of the pixels; the reference rig
  (1280x720, 15 Hz) in 0.48 % when 5.3 cm apart straight ahead, the least of any pair that far
  apart; the test factory's picture (a 3-pixel shift of a small square in a 320x240 gradient)
  in 0.78 %. A frozen camera repeats its image: 0 %.
- **Different images**: the correlation (Pearson) of the two grey thumbnails is below
  :data:`DIFFERENT_CORRELATION`. Correlation ignores exposure and gain; thumbnails with almost no
  contrast (under :data:`MIN_CONTRAST` grey levels of standard deviation: lens cap, darkness)
  tell nothing and are not judged. Measured: any two frames of the rig recording within 5 cm and
  3° of each other correlate at 0.79 or more (a 45°/s turn at 15 Hz included). So a stuck TF is
  seen only once the view has changed that much (in the sample, after 0.4-0.8 m of travel or a
  turn of tens of degrees): a smaller change cannot be told from people or doors moving in front
  of a robot that stands, and refusing those would cost a standing robot its frames.
- **TF moved**: the camera's pose (TF, interpolated at each image's stamp, as the tracks and the
  motion families take it) moved more than :data:`MOVED_M` or turned more than
  :data:`MOVED_DEG`. 5 cm is the motion families' own zero (a displacement under it is "did not
  move"); 3° moves the reference camera's image by ~42 pixels (2 thumbnail pixels), which no
  textured view survives unchanged.

The rules, each frame against the first frame of the run it belongs to (not against its
predecessor, so that slow motion cannot creep through a chain of small steps):

- ``frozen_image``: the image is near-identical to that of the frame where the image last
  changed, but TF moved the camera since.
- ``image_moved_tf_still``: the image is a different view from that of the frame where the view
  last changed, but TF kept the camera within 5 cm and 3° of the pose it had there.

A refused frame changes neither run: the frames after it are still compared with the last frame
that agreed. Its record names that frame's stamp (``since_ts``): somewhere between the two,
images and TF parted, so no motion or ``same_place`` case may span or touch that stretch
(:mod:`eval_assets.vqa.spatial.motion`). Frames without a decodable image or a TF pose are not
judged (their own skip reasons or the families' say what is missing), nor are featureless ones
(under :data:`MIN_CONTRAST`: a dark or blank image looks the same wherever the camera is).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import cv2
import numpy as np

from eval_assets.frames.camera_poses import CameraPoses
from eval_assets.frames.skips import skipped_frame
from eval_assets.geometry.transforms import TransformUnavailable
from eval_assets.recording import Recording, RecordingError
from eval_assets.recording.names import CAMERA_INFO_STREAM, IMAGE_STREAM
from eval_assets.schemas.frames import SkippedFrame

THUMB_WIDTH = 64
"""Pixels across a thumbnail (area-averaged)."""
CHANGE_LEVEL = 8.0
"""Grey levels (0-255) by which a thumbnail pixel must change to count as changed."""
NEAR_IDENTICAL_SHARE = 0.002
"""At most this share of a thumbnail's pixels changed: the two images are near-identical."""
DIFFERENT_CORRELATION = 0.5
"""Below this correlation of the grey thumbnails, two images show different views."""
MIN_CONTRAST = 2.0
"""Grey-level standard deviation under which a thumbnail's correlation means nothing."""
MOVED_M = 0.05
"""TF moved the camera more than this many metres ..."""
MOVED_DEG = 3.0
"""... or turned it more than this many degrees: it moved."""

ImageMotionReason = Literal["frozen_image", "image_moved_tf_still"]
IMAGE_MOTION_REASONS: frozenset[str] = frozenset({"frozen_image", "image_moved_tf_still"})
"""Skip reasons of frames whose image and TF disagree: no motion case may span such a frame."""


def thumbnail(bgr: np.ndarray) -> np.ndarray:
    """The ``uint8`` colour thumbnail of a decoded image (:data:`THUMB_WIDTH` wide, area
    averaged; a narrower image is kept as it is)."""
    h, w = bgr.shape[:2]
    if w <= THUMB_WIDTH:
        return np.ascontiguousarray(bgr)
    size = (THUMB_WIDTH, max(1, round(h * THUMB_WIDTH / w)))
    return cv2.resize(np.ascontiguousarray(bgr), size, interpolation=cv2.INTER_AREA)


def changed_share(a: np.ndarray, b: np.ndarray) -> float:
    """Share of thumbnail pixels that changed by more than :data:`CHANGE_LEVEL` in any channel
    (1.0 for thumbnails of different shapes: a size change is a change)."""
    if a.shape != b.shape:
        return 1.0
    diff = np.abs(a.astype(np.int16) - b.astype(np.int16))
    if diff.ndim == 3:
        diff = diff.max(axis=2)
    return float((diff > CHANGE_LEVEL).mean())


def _grey(thumb: np.ndarray) -> np.ndarray:
    grey = cv2.cvtColor(thumb, cv2.COLOR_BGR2GRAY) if thumb.ndim == 3 else thumb
    return grey.astype(np.float64).ravel()


def correlation(a: np.ndarray, b: np.ndarray) -> float | None:
    """Pearson correlation of the grey thumbnails; None when either has too little contrast to
    tell (or their shapes differ)."""
    if a.shape != b.shape:
        return None
    ga, gb = _grey(a), _grey(b)
    sa, sb = float(ga.std()), float(gb.std())
    if sa < MIN_CONTRAST or sb < MIN_CONTRAST:
        return None
    return float(np.mean((ga - ga.mean()) * (gb - gb.mean())) / (sa * sb))


def pose_change(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """``(metres, degrees)`` between two 4x4 camera poses: the distance between their origins and
    the angle of the rotation from one to the other."""
    metres = float(np.linalg.norm(b[:3, 3] - a[:3, 3]))
    cos = (float(np.trace(a[:3, :3].T @ b[:3, :3])) - 1.0) / 2.0
    return metres, math.degrees(math.acos(min(1.0, max(-1.0, cos))))


def moved(metres: float, degrees: float) -> bool:
    """Whether TF moved the camera: more than :data:`MOVED_M` or :data:`MOVED_DEG`."""
    return metres > MOVED_M or degrees > MOVED_DEG


@dataclass(frozen=True)
class FrameLook:
    """One frame as the check sees it: its index, stamp, thumbnail and camera frame (TF)."""

    index: int
    t: float
    thumb: np.ndarray
    frame_id: str = ""


@dataclass(frozen=True)
class Disagreement:
    """A frame whose image and TF disagree, with the reason and what was measured."""

    index: int
    reason: ImageMotionReason
    detail: str
    since_t: float  # the stamp of the frame it disagrees with: the stretch between is in doubt


PoseAt = Callable[[FrameLook], "np.ndarray | None"]
"""A frame's camera pose (4x4, TF world from camera), None when TF cannot give it."""


class _Seen:
    """A frame the check compares others with, and its pose once asked for."""

    def __init__(self, frame: FrameLook, pose_at: PoseAt) -> None:
        self.frame = frame
        self._pose_at = pose_at
        self._pose: np.ndarray | None = None
        self._asked = False

    def pose(self) -> np.ndarray | None:
        if not self._asked:
            self._pose, self._asked = self._pose_at(self.frame), True
        return self._pose


class ImageMotionCheck:
    """Feed frames in time order (:meth:`add`); each answer is the frame's disagreement or None.

    TF is asked for a pose only where the images decide nothing alone: for a frame near-identical
    to the run's first (a stop, or a frozen camera) and for one whose view changed (has TF moved
    since?), not for every frame of a drive.
    """

    def __init__(self, pose_at: PoseAt) -> None:
        self._pose_at = pose_at
        self._look: _Seen | None = None  # where the image last changed
        self._still: _Seen | None = None  # where the view last changed with TF moving

    def add(self, frame: FrameLook) -> Disagreement | None:
        """Judge ``frame`` against the two runs; an agreeing frame updates them."""
        if _grey(frame.thumb).std() < MIN_CONTRAST:
            return None  # featureless: it can neither show a view change nor its absence
        seen = _Seen(frame, self._pose_at)
        look, still = self._look, self._still
        share = 1.0 if look is None else changed_share(look.frame.thumb, frame.thumb)
        if look is not None and share <= NEAR_IDENTICAL_SHARE:
            change = _change(look, seen)
            if change is not None and moved(*change):
                metres, degrees = change
                return Disagreement(frame.index, "frozen_image", (
                    f"frame {frame.index} (ts={frame.t:.6f}) shows the same image as frame "
                    f"{look.frame.index} (ts={look.frame.t:.6f}): {share:.2%} of its "
                    f"{_size(frame.thumb)} thumbnail changed by more than {CHANGE_LEVEL:g} grey "
                    f"levels (near-identical: at most {NEAR_IDENTICAL_SHARE:.1%}), while TF moved "
                    f"the camera {metres:.3f} m and turned it {degrees:.1f}° between them (moved: "
                    f"over {MOVED_M:g} m or {MOVED_DEG:g}°)"), look.frame.t)
        view_changed = still is None
        if still is not None:
            corr = correlation(still.frame.thumb, frame.thumb)
            view_changed = corr is None or corr < DIFFERENT_CORRELATION
            change = _change(still, seen) if corr is not None and view_changed else None
            if corr is not None and change is not None and not moved(*change):
                metres, degrees = change
                return Disagreement(frame.index, "image_moved_tf_still", (
                    f"frame {frame.index} (ts={frame.t:.6f}) shows another view than frame "
                    f"{still.frame.index} (ts={still.frame.t:.6f}): their grey thumbnails "
                    f"correlate at {corr:.2f} (different: under {DIFFERENT_CORRELATION:g}), while "
                    f"TF moved the camera only {metres:.3f} m and {degrees:.1f}° between them (at "
                    f"most {MOVED_M:g} m and {MOVED_DEG:g}°)"), still.frame.t)
        if share > NEAR_IDENTICAL_SHARE:
            self._look = seen
        if view_changed:
            self._still = seen
        return None


def _change(a: _Seen, b: _Seen) -> tuple[float, float] | None:
    """:func:`pose_change` between two frames; None when TF cannot give either pose."""
    pa, pb = a.pose(), b.pose()
    return None if pa is None or pb is None else pose_change(pa, pb)


def _size(thumb: np.ndarray) -> str:
    return f"{thumb.shape[1]}x{thumb.shape[0]}"


class RecordingCheck:
    """:class:`ImageMotionCheck` over frames of a recording: each frame's TF pose (the camera
    poses the tracks and the motion families use), and the skip record of a frame whose image
    and TF disagree."""

    def __init__(self, rec: Recording) -> None:
        self.rec = rec
        self.check = ImageMotionCheck(self._pose)
        self._poses: CameraPoses | None = None  # read from TF at the first frame
        self._world: str | None = None
        self._info_frame: str | None = None

    def _frame_id(self, frame_id: str) -> str:
        if frame_id:
            return frame_id
        if self._info_frame is None:  # as the rectifier does: the calibration's frame instead
            try:
                self._info_frame = self.rec.message(CAMERA_INFO_STREAM, 0).header.frame_id or ""
            except RecordingError:
                self._info_frame = ""
        return self._info_frame

    def _pose(self, look: FrameLook) -> np.ndarray | None:
        if self._poses is None:
            self._poses = CameraPoses.of(self.rec)
        frame_id = self._frame_id(look.frame_id)
        if not self._poses.ok or not frame_id:
            return None
        try:
            if self._world is None:
                self._world = str(self._poses.world_of(frame_id))
            return np.asarray(self._poses.at(self._world, frame_id, look.t))
        except TransformUnavailable:
            return None

    def add(self, index: int, frame_id: str, thumb: np.ndarray) -> SkippedFrame | None:
        """Judge frame ``index`` (frames in time order); its skip record when refused."""
        t = self.rec.timestamp(IMAGE_STREAM, index)
        found = self.check.add(FrameLook(index, t, thumb, frame_id))
        return None if found is None else skipped_frame(self.rec, index, found.reason,
                                                        found.detail, since_ts=found.since_t)
