"""Fuse sightings across frames into world-frame object tracks, and read/write the tracks file.

Two sightings of one name are the same object when their centres are closer than
:data:`FUSE_FACTOR` times the larger of the two objects' sizes (at least :data:`MIN_FUSE_M`);
otherwise they are different objects. Sightings are taken in frame order and each joins the
nearest matching track, so the result is the same on every run.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from eval_assets.atomic import write_text_atomic
from eval_assets.schemas.spatial import (
    TRACKS_FILE,
    CameraSample,
    FrameCamera,
    ObjectTrack,
    ObjectTracks,
)
from eval_assets.tracks.lift import Sighting, Skipped

FUSE_FACTOR = 1.5
MIN_FUSE_M = 0.3
# Points this close above a track's lowest point are left out of its footprint (floor at its foot).
FOOT_BAND_M = 0.05
_SPAN = (1.0, 99.0)
# Distances to a footprint side below this count alike (the LiDAR's noise, about 1 cm).
_CLOSE_M = 0.01
# A sighting's own footprint needs this many points.
MIN_FOOTPRINT_POINTS = 20
# Sightings taken from bearings (about world z) spanning at least this many degrees see every
# side of a convex object: each view shows the faces whose normals point within 90 degrees of it,
# so views spread over more than 180 degrees show normals all round and the fused points reach
# the object's extremes in every direction. Narrower, one side is unseen and the extent is only
# a lower bound (object_size_cm does not ask then).
COVERED_DEG = 180.0
# Decimals kept in the tracks file: 0.1 mm, far below the LiDAR's noise, and stable text.
_DECIMALS = 4


@dataclass
class _Growing:
    name: str
    sightings: list[Sighting] = field(default_factory=list)

    @property
    def center(self) -> np.ndarray:
        weights = np.array([len(s.points_world) for s in self.sightings], dtype=np.float64)
        centers = np.stack([s.center_world for s in self.sightings])
        return np.asarray((centers * weights[:, None]).sum(axis=0) / weights.sum())

    @property
    def size(self) -> float:
        return max(_sighting_size(s) for s in self.sightings)


def _sighting_size(s: Sighting) -> float:
    if s.size_m is not None:
        return max(s.size_m)
    return float(np.max(np.ptp(s.points_world, axis=0)))


def _round(value: float) -> float:
    return round(float(value), _DECIMALS) + 0.0


def _footprint(pts: np.ndarray) -> tuple[float, float, float, np.ndarray]:
    """``(length, width, yaw, centre_xy)`` of the rectangle (yaw searched in 1° steps) whose
    sides the points hug most closely, the points at the object's foot left out (mostly floor
    seen through the mask's rim). LiDAR sees a box's near faces only: the points form an L, and
    an L fits as small a rectangle along its diagonal as along its faces, so the smallest area
    cannot choose; the sides the points lie on can (the closeness criterion of L-shape
    fitting). Each side spans the 1st to 99th percentile, so a stray point does not stretch it.
    ``centre_xy`` is the rectangle's centre in the points' frame."""
    low = float(pts[:, 2].min())
    body = pts[pts[:, 2] >= low + FOOT_BAND_M]
    if len(body) < 3:
        body = pts
    xy = body[:, :2]
    # Every candidate yaw at once: (points, angles) projections on each axis and its normal.
    angles = np.radians(np.arange(90.0))
    along_all = xy @ np.stack([np.cos(angles), np.sin(angles)])
    across_all = xy @ np.stack([-np.sin(angles), np.cos(angles)])
    lo_a, hi_a = np.percentile(along_all, _SPAN, axis=0)
    lo_n, hi_n = np.percentile(across_all, _SPAN, axis=0)
    # Each point's distance to the nearest side; a point on a side counts 1/_CLOSE_M at most.
    gap = np.minimum(np.minimum(along_all - lo_a, hi_a - along_all),
                     np.minimum(across_all - lo_n, hi_n - across_all))
    closeness = (1.0 / np.maximum(gap, _CLOSE_M)).sum(axis=0)
    k = int(np.argmax(np.round(closeness, 6)))  # first of equal scores: stable
    along, across, a = float(hi_a[k] - lo_a[k]), float(hi_n[k] - lo_n[k]), float(angles[k])
    mid_a, mid_n = (lo_a[k] + hi_a[k]) / 2, (lo_n[k] + hi_n[k]) / 2
    centre = np.array([mid_a * math.cos(a) - mid_n * math.sin(a),
                       mid_a * math.sin(a) + mid_n * math.cos(a)])
    if across > along:  # the length axis is the longer side
        along, across, a = across, along, a + math.pi / 2
    return along, across, a, centre


def view_spread_deg(sightings: Sequence[Sighting], center: np.ndarray) -> float:
    """Degrees of bearing about world z that the sightings' cameras span round ``center``:
    360 less the widest gap between neighbouring bearings (0 with fewer than two cameras)."""
    bearings = sorted({round(math.degrees(math.atan2(float(s.camera_world[1] - center[1]),
                                                      float(s.camera_world[0] - center[0]))),
                             3) % 360.0
                       for s in sightings if s.camera_world is not None})
    if len(bearings) < 2:
        return 0.0
    gaps = [b - a for a, b in itertools.pairwise(bearings)]
    gaps.append(bearings[0] + 360.0 - bearings[-1])
    return 360.0 - max(gaps)


def _extent(track: _Growing) -> tuple[list[float], float, np.ndarray, float]:
    """Oriented (length, width, height), the length axis's yaw about world z, the centre and
    the view spread (:func:`view_spread_deg`).

    Seen in at least two frames with :data:`MIN_FOOTPRINT_POINTS` points, the box is fitted to
    all the track's points fused in the world frame: every viewpoint adds the faces it sees, and
    the poses are interpolated to each image's and each sweep's time
    (:class:`~eval_assets.tracks.lift.CameraPoses`), so the frames' points line up to the
    LiDAR's noise. The centre is that box's centre. LiDAR sees surfaces only; the centre of one
    frame's points pushed back along the line of sight by half the mask's width errs by that
    guess (0.51 m for a tray seen edge-on, scene seed 911: the object was lost). A single
    sighting keeps that centre, and its own footprint (:func:`_footprint`; the fused points'
    when it is cut). The height runs from the lowest point (the floor it stands on) to the
    highest.
    """
    pts = np.concatenate([s.points_world for s in track.sightings])
    low, top = float(pts[:, 2].min()), float(pts[:, 2].max())
    if len(track.sightings) >= 2 and len(pts) >= MIN_FOOTPRINT_POINTS:
        along, across, a, mid = _footprint(pts)
        centre = np.array([mid[0], mid[1], (low + top) / 2])
        return ([_round(along), _round(across), _round(top - low)], _round(a), centre,
                _round(view_spread_deg(track.sightings, centre)))
    own = [_footprint(s.points_world) for s in track.sightings
           if s.whole and len(s.points_world) >= MIN_FOOTPRINT_POINTS]
    if own:
        best = max(own, key=lambda f: (f[0], f[1]))
        along, across, a = best[0], max(f[1] for f in own), best[2]
    else:
        along, across, a, _ = _footprint(pts)
    return ([_round(along), _round(across), _round(top - low)], _round(a), track.center,
            _round(view_spread_deg(track.sightings, track.center)))


def fuse_sightings(sightings: Iterable[Sighting]) -> list[ObjectTrack]:
    """Tracks from sightings, in order of first sighting; ids ``'<name>#<n>'`` per name."""
    tracks: list[_Growing] = []
    ordered = sorted(sightings, key=lambda s: (s.frame_index, s.name))
    for s in ordered:
        best, best_d = None, math.inf
        for t in tracks:
            if t.name != s.name or any(x.frame_index == s.frame_index for x in t.sightings):
                continue  # one object is seen once per frame
            d = float(np.linalg.norm(t.center - s.center_world))
            limit = max(MIN_FUSE_M, FUSE_FACTOR * max(t.size, _sighting_size(s)))
            if d < limit and d < best_d:
                best, best_d = t, d
        if best is None:
            best = _Growing(s.name)
            tracks.append(best)
        best.sightings.append(s)
    per_name: dict[str, int] = {}
    out: list[ObjectTrack] = []
    for t in tracks:
        n = per_name.get(t.name, 0)
        per_name[t.name] = n + 1
        extent, yaw, centre, spread = _extent(t)
        out.append(ObjectTrack(
            track_id=f"{t.name}#{n}", name=t.name,
            center_world=[_round(c) for c in centre], extent_m=extent, yaw_rad=yaw,
            view_spread_deg=spread,
            frames=sorted(s.frame_index for s in t.sightings),
            pixels={s.frame_index: s.pixels for s in t.sightings},
            points=sum(len(s.points_world) for s in t.sightings),
            ranges_m={s.frame_index: _round(s.surface_range_m) for s in t.sightings},
            whole_frames=sorted(s.frame_index for s in t.sightings if s.whole)))
    return out


def build_object_tracks(world_frame: str, sightings: Sequence[Sighting],
                        skipped: Sequence[Skipped],
                        cameras: Mapping[int, FrameCamera] | None = None,
                        trajectory: Sequence[CameraSample] = ()) -> ObjectTracks:
    """The tracks file's record: fused tracks, every detection left out (with its reason),
    each frame's camera (pose and intrinsics), which the spatial families project with, and the
    camera's trajectory at every TF sample, which the motion families measure."""
    return ObjectTracks(
        world_frame=world_frame, tracks=fuse_sightings(sightings),
        skipped=[{"frame_index": s.frame_index, "name": s.name, "reason": s.reason,
                  "detail": s.detail} for s in skipped],
        cameras=dict(sorted((cameras or {}).items())), trajectory=list(trajectory))


def write_object_tracks(out_dir: Path, tracks: ObjectTracks) -> Path:
    """Write ``tracks.json`` under ``out_dir`` atomically; returns its path."""
    path = Path(out_dir) / TRACKS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, tracks.model_dump_json(indent=2) + "\n")
    return path


def read_object_tracks(out_dir: Path) -> ObjectTracks:
    """The tracks stored under ``out_dir``; a clear error when they were never built."""
    path = Path(out_dir) / TRACKS_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist; materialize the object_tracks asset "
                                "for this recording")
    return ObjectTracks.model_validate_json(path.read_text(encoding="utf-8"))
