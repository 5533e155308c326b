"""What the spatial families read: the recording's object tracks, judged for strength.

A track is *strong* when it has at least :data:`MIN_TRACK_POINTS` LiDAR points and was seen in
at least :data:`MIN_TRACK_FRAMES` frames (one sighting is too often a detector's slip); a name
is *unambiguous* when exactly one track carries it. The families ask about strong tracks of
unambiguous names only, and record every case they could not ask with its reason
(:class:`SpatialRejection`, written to ``audit/spatial_rejections.jsonl``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from eval_assets.schemas.spatial import ObjectTrack, ObjectTracks
from eval_assets.tracks.fuse import COVERED_DEG, MAX_OUTLINE_OVERHANG, SIDE_SEEN_SHARE

CLOUD_SIDE_SEEN_SHARE = 0.95
"""A LiDAR object's cloud (``source == "lidar"``) is measured from one side only when its points
show this much of an end and a side of its footprint. Simulated seeds 5151, 6262 and 7101 (120
frames): boxes (tray, table, jenga block, lego brick) 0.98-1.00, measured within 5 % of the
truth's longest side; a teddy bear reached 0.84 while its cloud measured 25 cm of its 33."""
MIN_TRACK_POINTS = 30
MIN_TRACK_FRAMES = 2
# Tracks of two names closer than this share of the larger object's size (or MIN_CONFLICT_M)
# are one object named two ways; two solid objects cannot be that close.
CONFLICT_FACTOR = 0.5
MIN_CONFLICT_M = 0.15
# Of two names at one place, one is the object's when its whole views outnumber the other's this
# many times over (and number at least MIN_TRACK_FRAMES).
NAME_VOTE_RATIO = 3
# An object this close to a quadrant's boundary (in the reference camera's x or z) is not asked
# about: a few centimetres of error would flip the answer.
QUADRANT_MARGIN_M = 0.2
# "May show in a frame" looks this much beyond the image's edges: a frame's camera pose is the
# nearest TF sample, not interpolated, so a turning robot's pose can be off by a few degrees, and
# an object just outside the computed view may be in the image (scene seed 801: a cylinder 267
# pixels into frame 100 whose centre projected 47 px left of it).
MAY_SHOW_MARGIN_DEG = 6.0
# Images shown by one case at most, and cases per family and recording at most: generation time
# and the run's cost stay bounded whatever the recording's length.
MAX_IMAGES = 8
MAX_CASES_PER_FAMILY = 12


@dataclass(frozen=True)
class SpatialRejection:
    """A spatial case that was not asked, and why (the evidence was too weak to be sure)."""

    family: str
    object_names: tuple[str, ...]
    reason: str
    detail: str
    frame_indices: tuple[int, ...] = ()

    def record(self) -> dict[str, Any]:
        """The ``audit/spatial_rejections.jsonl`` row."""
        return {"family": self.family, "object_names": list(self.object_names),
                "frame_indices": list(self.frame_indices), "reason": self.reason,
                "detail": self.detail}


def narrow_view(family: str, track: ObjectTrack) -> SpatialRejection | None:
    """A ``narrow_view`` rejection when ``track``'s extent may miss an unseen side, else None.

    The extent is measured when the track was seen from all round
    (:data:`~eval_assets.tracks.fuse.COVERED_DEG`), or when its points show two adjacent
    sides of its footprint end to end (``footprint_seen`` at least
    :data:`~eval_assets.tracks.fuse.SIDE_SEEN_SHARE`: a box seen obliquely, its length and
    width both measured) and its masks stick out of the fitted box's image by at most
    :data:`~eval_assets.tracks.fuse.MAX_OUTLINE_OVERHANG` (the LiDAR points reached the ends
    the camera sees). Otherwise the unseen depth (a mug's handle behind it, a duck's back) or
    the part the LiDAR's rings missed is left out, and object_size_cm would be gold wrong by
    it, so it does not ask (low yield is honest). Simulated seeds 911-933, 60 frames, truth
    evidence: seen from 180 degrees, 0 of 26 objects; with the L and outline rule, 8 (tables,
    trays, a jenga block) at MRA 0.99. Centres are asked about anyway: the fused box's centre
    errs by at most half the unseen depth, well inside the distances between objects.
    """
    if track.source == "lidar":
        return _cloud_narrow_view(family, track)
    if track.view_spread_deg >= COVERED_DEG:
        return None
    overhang = track.outline_overhang
    if (track.footprint_seen >= SIDE_SEEN_SHARE and overhang is not None
            and overhang <= MAX_OUTLINE_OVERHANG):
        return None
    outline = ("no whole sighting's outline to check it against" if overhang is None else
               f"its masks stick out of its fitted box's image by {overhang:.0%} (at most "
               f"{MAX_OUTLINE_OVERHANG:.0%} allowed)")
    return SpatialRejection(family, (track.name,), "narrow_view", (
        f"{track.track_id} was seen from {track.view_spread_deg:.0f} degrees of bearing round it "
        f"(at least {COVERED_DEG:.0f} needed to see every side); from one side its length and "
        f"width are measured only when its points show an end and a side of its footprint "
        f"(here {track.footprint_seen:.0%} of them, at least {SIDE_SEEN_SHARE:.0%} needed) and "
        f"{outline}"), tuple(track.frames))


def _cloud_narrow_view(family: str, track: ObjectTrack) -> SpatialRejection | None:
    """:func:`narrow_view` for a LiDAR object's cloud (``source == "lidar"``): measured only
    when its points show an end and a side of its footprint near whole
    (:data:`CLOUD_SIDE_SEEN_SHARE`), however wide the bearings it was seen from.

    The cloud holds every sweep that hit the object, from ranges metres apart, so its rings
    cross a box at many heights and reach its ends; its masks are the cloud's own outline, so
    the outline check would compare the cloud with itself. But a round or irregular object's
    thin parts lie between the rings from every side: seen from 240 degrees a mug measured
    32.6 cm of its 36.5 (the handle), a duck 22 of 24.8 (simulated seed 7103, figure8)."""
    if track.footprint_seen >= CLOUD_SIDE_SEEN_SHARE:
        return None
    return SpatialRejection(family, (track.name,), "narrow_view", (
        f"{track.track_id}'s LiDAR points show {track.footprint_seen:.0%} of an end and a side "
        f"of its footprint (at least {CLOUD_SIDE_SEEN_SHARE:.0%} needed: a box's; a round or "
        "irregular object's thin parts lie between the LiDAR's rings)"), tuple(track.frames))


def track_evidence(track: ObjectTrack) -> dict[str, Any]:
    """``evidence.tracks`` entry: name and world centre (spec), and what decided them."""
    return {"name": track.name, "center_world": list(track.center_world),
            "track_id": track.track_id, "extent_m": list(track.extent_m),
            "frames": list(track.frames), "points": track.points,
            "source": track.source, "top_margin_m": track.top_margin_m}


@dataclass(frozen=True)
class TrackIndex:
    """The tracks of one recording restricted to the published frames (time order).

    ``breaks``: stretches of time ``(from, to)`` where the frame stage found images and TF
    disagreeing (a frozen camera, a TF standing still while the images move: its
    ``frozen_image`` / ``image_moved_tf_still`` frames, each from the frame it was compared with
    to itself); the motion families ask nothing across or inside them.
    """

    tracks: ObjectTracks
    published: tuple[int, ...]
    breaks: tuple[tuple[float, float], ...] = ()

    def crosses_break(self, a: float, b: float) -> bool:
        """Whether the time from ``a`` to ``b`` overlaps a stretch where images and TF
        disagreed (its end points excluded: the frame compared with is a good one)."""
        lo, hi = min(a, b), max(a, b)
        return any(lo < end and hi > start for start, end in self.breaks)

    @cached_property
    def visible(self) -> tuple[ObjectTrack, ...]:
        """Tracks seen in a published frame, their frames limited to the published ones."""
        keep = set(self.published)
        out = []
        for t in self.tracks.tracks:
            frames = [f for f in t.frames if f in keep]
            if frames:
                out.append(t.model_copy(update={
                    "frames": frames, "pixels": {f: t.pixels[f] for f in frames},
                    "whole_frames": [f for f in t.whole_frames if f in keep],
                    "ranges_m": {f: r for f, r in t.ranges_m.items() if f in keep}}))
        return tuple(sorted(out, key=lambda t: (t.frames[0], t.track_id)))

    def by_name(self, name: str) -> list[ObjectTrack]:
        """Every visible track of ``name``."""
        return [t for t in self.visible if t.name == name]

    @staticmethod
    def weakness(track: ObjectTrack) -> tuple[str, str] | None:
        """``(reason, detail)`` when the track is too weak to ask about, else None."""
        if track.points < MIN_TRACK_POINTS:
            return "too_few_points", (f"{track.track_id} has {track.points} LiDAR points "
                                      f"(at least {MIN_TRACK_POINTS} needed)")
        if len(track.frames) < MIN_TRACK_FRAMES:
            return "too_few_frames", (f"{track.track_id} was seen in {len(track.frames)} frame "
                                      f"(at least {MIN_TRACK_FRAMES} needed)")
        if not track.whole_frames:
            return "seen_only_partly", (f"{track.track_id} was seen only cut by the image border "
                                        "or by something in front of it: its name comes from a "
                                        "partial outline")
        return None

    def name_conflict(self, track: ObjectTrack) -> tuple[str, str] | None:
        """``("name_conflict", detail)`` when a track of another name sits where this one does
        and this one's name does not win the vote.

        Two objects cannot share a place, so that is one object the detector named two ways
        (a ball near the image edge called a box in some frames). The views where the object was
        seen whole vote (a cut outline says little about the shape): a name with at least
        :data:`NAME_VOTE_RATIO` times as many whole views as every other name there is the
        object's name; otherwise neither name can be trusted for a question about it. Checked
        against every track, published frames or not.
        """
        if track.source == "lidar":
            # Each LiDAR object is its own cluster of the floor plan: two of them are two
            # objects however close (their names were decided on the object, not per mask).
            return None
        full = {t.track_id: t for t in self.tracks.tracks}
        votes = len(full.get(track.track_id, track).whole_frames)
        rivals = []
        for other in self.tracks.tracks:
            if other.name == track.name:
                continue
            reach = CONFLICT_FACTOR * max(max(track.extent_m), max(other.extent_m))
            d = math.dist(track.center_world, other.center_world)
            if d < max(MIN_CONFLICT_M, reach):
                rivals.append((other, d))
        beaten = [(o, d) for o, d in rivals if votes < NAME_VOTE_RATIO * len(o.whole_frames)
                  or votes < MIN_TRACK_FRAMES]
        if not beaten:
            return None
        other, d = beaten[0]
        return "name_conflict", (f"{other.track_id} lies {d:.2f} m from {track.track_id}: one "
                                 f"object detected under two names ({votes} whole views "
                                 f"against {len(other.whole_frames)})")

    def problem(self, track: ObjectTrack) -> tuple[str, str] | None:
        """Why the track cannot be asked about (weak or named two ways), else None."""
        return self.weakness(track) or self.name_conflict(track)

    def askable(self, family: str) -> tuple[list[ObjectTrack], list[SpatialRejection]]:
        """Strong tracks of unambiguous names, and a rejection for every other name."""
        good: list[ObjectTrack] = []
        rejected: list[SpatialRejection] = []
        names = sorted({t.name for t in self.visible})
        for name in names:
            tracks = self.by_name(name)
            if len(tracks) > 1:
                rejected.append(SpatialRejection(
                    family, (name,), "ambiguous_name",
                    f"{len(tracks)} objects are named {name!r}: "
                    f"{', '.join(t.track_id for t in tracks)}"))
                continue
            weak = self.problem(tracks[0])
            if weak is not None:
                rejected.append(SpatialRejection(family, (name,), *weak))
                continue
            good.append(tracks[0])
        return sorted(good, key=lambda t: (t.frames[0], t.track_id)), rejected

    def camera_xyz(self, frame: int, point: Sequence[float]) -> np.ndarray | None:
        """``point`` (world) in the rectified camera frame of ``frame``; None without a pose."""
        camera = self.tracks.cameras.get(frame)
        if camera is None:
            return None
        world_from_camera = np.asarray(camera.world_from_camera, dtype=np.float64).reshape(4, 4)
        rot, shift = world_from_camera[:3, :3], world_from_camera[:3, 3]
        return np.asarray(rot.T @ (np.asarray(point, dtype=np.float64) - shift))

    def may_be_visible(self, track: ObjectTrack, frame: int) -> bool:
        """Whether the track's object could show in ``frame``'s image: a ball of half its
        longest extent about its centre reaches inside each of the view's four side planes,
        opened by :data:`MAY_SHOW_MARGIN_DEG`, and in front of the camera; True without a pose.

        The planes, not the centre's projection grown by ``reach / z``: for an object near the
        camera and off its axis the projection understates how far into the image its near
        side reaches (the sample, frame 11: a blue box whose centre projects 147 px right of
        the image shows a 62-pixel sliver at its edge, and a count over that frame was 2 where
        the image shows 3)."""
        camera = self.tracks.cameras.get(frame)
        p = self.camera_xyz(frame, track.center_world)
        if camera is None or p is None:
            return True
        reach = max(track.extent_m) / 2
        x, y, z = (float(c) for c in p)
        if z <= -reach:
            return False
        K = np.asarray(camera.K, dtype=np.float64).reshape(3, 3)
        slack = math.tan(math.radians(MAY_SHOW_MARGIN_DEG))
        # (the coordinate away from the axis, the plane's x/z or y/z opened by the slack)
        sides = ((-x, K[0, 2] / K[0, 0]), (x, (camera.width - K[0, 2]) / K[0, 0]),
                 (-y, K[1, 2] / K[1, 1]), (y, (camera.height - K[1, 2]) / K[1, 1]))
        for off, tan_edge in sides:
            a = tan_edge + slack
            # Signed distance from the plane ``off = a * z`` (positive outside the view).
            if (off - a * z) / math.hypot(1.0, a) >= reach:
                return False
        return True


def best_frames(track: ObjectTrack, n: int) -> list[int]:
    """The ``n`` frames with the most mask pixels of the track, in time order."""
    ranked = sorted(track.frames, key=lambda f: (-track.pixels.get(f, 0), f))
    return sorted(ranked[:n])


def spread(frames: Sequence[int], must: Sequence[int], n: int = MAX_IMAGES) -> list[int]:
    """At most ``n`` of ``frames`` in time order: all of ``must``, the rest evenly spread."""
    chosen = set(must)
    pool = [f for f in sorted(set(frames)) if f not in chosen]
    room = n - len(chosen)
    if len(pool) <= room:
        chosen.update(pool)
    elif room > 0:
        step = len(pool) / room
        chosen.update(pool[int(i * step)] for i in range(room))
    return sorted(chosen)
