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
from eval_assets.objects.lidar import cloud_top_z
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
# a lower bound (object_size_cm does not ask then, unless the footprint's L was seen whole).
COVERED_DEG = 180.0
# A footprint side counts as seen when the points within SIDE_BAND_M of it span at least
# SIDE_SEEN_SHARE of its length. A box seen obliquely shows LiDAR two adjacent faces, an L whose
# arms run the box's whole length and width: both are measured, from however narrow a spread of
# bearings. A round object (duck, ball, mug) shows an arc that touches the fitted rectangle's
# sides at a point or two: its depth is not measured. Simulated seeds 911-942 (truth evidence):
# boxes (tray, table, jenga block) cover 0.9-1.0 of an end and of a side, round objects 0.7 at
# most on one of them.
SIDE_BAND_M = 0.02
SIDE_SEEN_SHARE = 0.85
# ... and only when the fitted box explains the camera's outlines: no whole sighting's mask
# sticks out of the box's projection by more than this share of its width or height. LiDAR's
# rings can stop short of a low object's ends (a jenga block's L fitted 36 cm long of 45, its
# masks 21 % beyond the box); 5 % is the finest tolerance of the MRA score.
MAX_OUTLINE_OVERHANG = 0.05
# Rays cast per sighting through its outline to find the fused box's visible surface (a grid
# of pixel centres, strided to at most this many): the median moves by under 1 mm beyond it.
MAX_SURFACE_RAYS = 4096
# The floor band LiDAR objects are cut above (eval_assets.objects.lidar.FLOOR_BAND_M): an object
# whose cloud starts within twice this of the floor stands on it.
FLOOR_CONTACT_M = 0.03
CLOUD_TRIM_POINTS = 2
"""A LiDAR object's whole cloud spans its footprint from its 3rd to its 3rd-last point along each
side's axis (:func:`cloud_box`), not from the 1st to the 99th percentile: a percentile of a cloud
of thousands of returns cuts off tens of points, and a mug's handle, a duck's tail or a teddy
bear's arm is that few. Simulated seeds 9311-9315 (120 frames, loop and figure8): the boxes'
(table, tray, jenga block, lego brick) longest sides came from -0.6..-3.6 % of the truth to
-1.1..+2.7 %, a mug's from -9..-14 % to -4..-7 %; two returns either side still keep a stray
(the third-highest return bounds the top alike)."""
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


def _footprint(pts: np.ndarray, foot_band: float = FOOT_BAND_M
               ) -> tuple[float, float, float, np.ndarray]:
    """``(length, width, yaw, centre_xy)`` of the rectangle (yaw searched in 1° steps) whose
    sides the points hug most closely, the points at the object's foot left out (mostly floor
    seen through the mask's rim). LiDAR sees a box's near faces only: the points form an L, and
    an L fits as small a rectangle along its diagonal as along its faces, so the smallest area
    cannot choose; the sides the points lie on can (the closeness criterion of L-shape
    fitting). Each side spans the 1st to 99th percentile, so a stray point does not stretch it.
    ``centre_xy`` is the rectangle's centre in the points' frame. ``foot_band``: 0 for a LiDAR
    object's cloud, whose floor is already gone (its foot is the object's: a teddy bear's legs
    lie in the lowest 5 cm)."""
    low = float(pts[:, 2].min())
    body = pts[pts[:, 2] >= low + foot_band]
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


def sides_seen(pts: np.ndarray, length: float, width: float, yaw: float,
               centre_xy: np.ndarray, foot_band: float = FOOT_BAND_M) -> float:
    """How completely the points show an L of the footprint rectangle (``length`` along ``yaw``,
    ``width`` across, centred on ``centre_xy``): the share of the width the better-seen end
    spans, or of the length the better-seen side spans, whichever is smaller (0 to 1).

    A point is on an end or side when within :data:`SIDE_BAND_M` of it; the floor band at the
    object's foot is left out as in :func:`_footprint`.
    """
    low = float(pts[:, 2].min())
    body = pts[pts[:, 2] >= low + foot_band]
    if len(body) < 3 or length <= 0.0 or width <= 0.0:
        return 0.0
    xy = body[:, :2] - np.asarray(centre_xy, dtype=np.float64)
    along = xy @ np.array([math.cos(yaw), math.sin(yaw)])
    across = xy @ np.array([-math.sin(yaw), math.cos(yaw)])

    def best(coord: np.ndarray, other: np.ndarray, half: float, span: float) -> float:
        shares = []
        for edge in (-half, half):
            near = other[np.abs(coord - edge) < SIDE_BAND_M]
            shares.append(float(np.ptp(near)) / span if len(near) >= 2 else 0.0)
        return min(max(shares), 1.0)

    ends = best(along, across, length / 2, width)
    sides = best(across, along, width / 2, length)
    return min(ends, sides)


def outline_overhang(sightings: Sequence[Sighting], length: float, width: float, yaw: float,
                     centre_xy: np.ndarray, low: float, top: float) -> float | None:
    """How far the object's masks stick out of the fitted box's image: over the whole sightings
    with a camera, the largest overhang of the mask's outline beyond the box's projected
    outline, as a share of the mask's width (columns) or height (rows). None without such a
    sighting.

    The box (``length`` along ``yaw``, ``width`` across, centred on ``centre_xy``, from ``low``
    to ``top``) holds the whole object when its extent is right, so its projection holds every
    mask. LiDAR rings are centimetres to a decimetre apart at a few metres: a low object's points
    can stop short of its ends (a jenga block 36 cm long of 45) and a round one's of its widest
    girth (a duck 20 cm of 25). The camera's mask still shows the whole outline, and sticks out.
    """
    a = np.array([math.cos(yaw), math.sin(yaw)])
    n = np.array([-a[1], a[0]])
    corners = np.array([[*(np.asarray(centre_xy) + sa * length / 2 * a + sn * width / 2 * n), z]
                        for sa in (-1, 1) for sn in (-1, 1) for z in (low, top)])
    worst: float | None = None
    for s in sightings:
        if not s.whole or s.outline_px is None or s.world_from_camera is None or s.K is None:
            continue
        rot, shift = s.world_from_camera[:3, :3], s.world_from_camera[:3, 3]
        cam = (corners - shift) @ rot
        if np.any(cam[:, 2] <= 0.05):
            continue  # a corner behind the camera: its projection says nothing
        uv = cam @ s.K.T
        u, v = uv[:, 0] / uv[:, 2], uv[:, 1] / uv[:, 2]
        x0, y0, x1, y1 = s.outline_px
        over_u = max(float(u.min()) - x0, x1 - float(u.max()), 0.0) / max(x1 - x0, 1.0)
        over_v = max(float(v.min()) - y0, y1 - float(v.max()), 0.0) / max(y1 - y0, 1.0)
        worst = max(worst or 0.0, over_u, over_v)
    return worst


def view_spread_deg(sightings: Sequence[Sighting], center: np.ndarray) -> float:
    """Degrees of bearing about world z that the sightings' cameras span round ``center``
    (:func:`bearing_spread_deg`; 0 with fewer than two cameras)."""
    cameras = [s.camera_world for s in sightings if s.camera_world is not None]
    return bearing_spread_deg(np.array(cameras).reshape(-1, 3), center)


def _extent(track: _Growing
            ) -> tuple[list[float], float, np.ndarray, float, float, float | None]:
    """Oriented (length, width, height), the length axis's yaw about world z, the centre, the
    view spread (:func:`view_spread_deg`), how completely the footprint's L was seen
    (:func:`sides_seen`) and how far the masks stick out of the box
    (:func:`outline_overhang`); the last two 0 and None for a single sighting, whose footprint
    is not fused.

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
                _round(view_spread_deg(track.sightings, centre)),
                _round(sides_seen(pts, along, across, a, mid)),
                _maybe_round(outline_overhang(track.sightings, along, across, a, mid, low, top)))
    own = [_footprint(s.points_world) for s in track.sightings
           if s.whole and len(s.points_world) >= MIN_FOOTPRINT_POINTS]
    if own:
        best = max(own, key=lambda f: (f[0], f[1]))
        along, across, a = best[0], max(f[1] for f in own), best[2]
    else:
        along, across, a, _ = _footprint(pts)
    return ([_round(along), _round(across), _round(top - low)], _round(a), track.center,
            _round(view_spread_deg(track.sightings, track.center)), 0.0, None)


def box_ranges(origin: np.ndarray, directions: np.ndarray, center: Sequence[float] | np.ndarray,
               extent: Sequence[float], yaw: float) -> np.ndarray:
    """Distance along each unit ``directions`` row from ``origin`` (world) to where it enters
    the box (``center``, oriented ``extent`` turned ``yaw`` about world z); NaN where it misses
    the box or the box lies behind the origin (slab method)."""
    c, s = math.cos(yaw), math.sin(yaw)
    rot = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    o = rot.T @ (np.asarray(origin, dtype=np.float64) - np.asarray(center, dtype=np.float64))
    d = directions @ rot  # each row rotated into the box's frame (rot.T @ row)
    half = np.asarray(extent, dtype=np.float64) / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        t1, t2 = (-half - o) / d, (half - o) / d
    enter = np.nanmax(np.minimum(t1, t2), axis=1)
    leave = np.nanmin(np.maximum(t1, t2), axis=1)
    return np.where((enter <= leave) & (enter > 0), enter, np.nan)


def visible_surface_range(s: Sighting, center: Sequence[float] | np.ndarray,
                          extent: Sequence[float], yaw: float) -> float:
    """The sighting's median range to the object's visible surface: the LiDAR's median
    (``surface_range_m``) moved by how far the fused box's visible surface, over the mask's
    outline, lies from the box where the LiDAR's points crossed it.

    The LiDAR's rings cross an object in a few rows of its image, and a ring meets a horizontal
    surface (a tray, a table's or a jenga block's top) at one range whatever the azimuth, so the
    median of its points is the range of the rows the rings happened to cross, not the median
    over the surface the camera sees: simulated seeds 901-903 (truth evidence), a tray 2.25 m
    against 2.01 m over its pixels, a table 3.32 m against 2.68 m, a duck 2.06 m against
    1.92 m. The box the track fuses from every frame knows how the range runs across the
    object; the difference of its two medians carries that over, and the box's own position
    error cancels in it. Unchanged without a camera, an outline or points the box's rays meet.
    """
    pts, outline = s.range_points_cam, s.outline_px
    if pts is None or outline is None or s.world_from_camera is None or s.K is None or not len(pts):
        return s.surface_range_m
    x0, y0, x1, y1 = outline
    width, height = x1 - x0, y1 - y0
    step = max(1.0, math.sqrt(width * height / MAX_SURFACE_RAYS))
    us, vs = np.meshgrid(np.arange(x0 + step / 2, x1, step), np.arange(y0 + step / 2, y1, step))
    pixels = np.column_stack([us.ravel(), vs.ravel(), np.ones(us.size)])
    rays = np.vstack([pixels @ np.linalg.inv(s.K).T, pts])
    rays = rays / np.linalg.norm(rays, axis=1, keepdims=True)
    rot, origin = s.world_from_camera[:3, :3], s.world_from_camera[:3, 3]
    hits = box_ranges(origin, rays @ rot.T, center, extent, yaw)
    over_outline, at_points = hits[:us.size], hits[us.size:]
    if np.all(np.isnan(over_outline)) or np.all(np.isnan(at_points)):
        return s.surface_range_m
    return s.surface_range_m + float(np.nanmedian(over_outline) - np.nanmedian(at_points))


def _maybe_round(value: float | None) -> float | None:
    return None if value is None else _round(value)


@dataclass(frozen=True)
class ObjectCloud:
    """Everything the LiDAR's sweeps saw of one object over the recording: its points and the
    sensor's position at each sweep that hit it (world frame), and the floor under it."""

    points_world: np.ndarray
    sensors_world: np.ndarray
    floor_z: float
    top_ceiling_z: float | None = None


def bearing_spread_deg(viewpoints: np.ndarray, center: np.ndarray) -> float:
    """Degrees of bearing about world z that ``viewpoints`` span round ``center``: 360 less
    the widest gap between neighbouring bearings (0 with fewer than two)."""
    bearings = sorted({round(math.degrees(math.atan2(float(p[1] - center[1]),
                                                      float(p[0] - center[0]))), 3) % 360.0
                       for p in viewpoints})
    if len(bearings) < 2:
        return 0.0
    gaps = [b - a for a, b in itertools.pairwise(bearings)]
    gaps.append(bearings[0] + 360.0 - bearings[-1])
    return 360.0 - max(gaps)


def cloud_box(pts: np.ndarray, floor_z: float
              ) -> tuple[float, float, float, np.ndarray, float, float]:
    """``(length, width, yaw, centre_xy, low, top)`` of a LiDAR object's whole cloud: the
    footprint's sides chosen from every point (its floor is already cut, so its foot is kept)
    and spanning all but :data:`CLOUD_TRIM_POINTS` points either side of each, the top
    where the highest rings crossed it (:func:`~eval_assets.objects.lidar.cloud_top_z`), and the
    floor as its bottom when its lowest point lies within twice the floor band of it."""
    top = cloud_top_z(pts)
    low = float(pts[:, 2].min())
    if low - floor_z <= 2 * FLOOR_CONTACT_M:
        low = floor_z
    _, _, yaw, _ = _footprint(pts, foot_band=0.0)
    along, across, yaw, centre_xy = _trimmed_span(pts[:, :2], yaw, CLOUD_TRIM_POINTS)
    return along, across, yaw, centre_xy, low, top


def _trimmed_span(xy: np.ndarray, yaw: float, trim: int
                  ) -> tuple[float, float, float, np.ndarray]:
    """``(length, width, yaw, centre_xy)`` of the rectangle turned ``yaw`` (or a quarter turn
    more, when the other side came out longer) that spans ``xy`` along ``yaw`` and across it,
    the ``trim`` outermost points on each side left out (none when that would leave fewer than
    three points between them)."""
    a = np.array([math.cos(yaw), math.sin(yaw)])
    n = np.array([-a[1], a[0]])
    k = trim if len(xy) >= 2 * trim + 3 else 0
    along, across = np.sort(xy @ a), np.sort(xy @ n)
    lo_a, hi_a = float(along[k]), float(along[len(along) - 1 - k])
    lo_n, hi_n = float(across[k]), float(across[len(across) - 1 - k])
    centre = (lo_a + hi_a) / 2 * a + (lo_n + hi_n) / 2 * n
    if hi_n - lo_n > hi_a - lo_a:  # the length axis is the longer side
        return hi_n - lo_n, hi_a - lo_a, yaw + math.pi / 2, centre
    return hi_a - lo_a, hi_n - lo_n, yaw, centre


def _cloud_extent(cloud: ObjectCloud, track: _Growing
                  ) -> tuple[list[float], float, np.ndarray, float, float, float | None]:
    """:func:`_extent` from the object's whole LiDAR cloud: the sweeps see every side the robot
    drove past (the camera only what it faced), so the footprint is fitted to all of them and
    the view spread is the sensors' bearings round it. The floor band is not in the cloud
    (:data:`eval_assets.objects.lidar.FLOOR_BAND_M`): an object whose lowest point lies within
    twice that band of the floor stands on it, and its height is measured from the floor. The
    outline check (:func:`outline_overhang`) is the track's own sightings' against that box."""
    pts = cloud.points_world
    box = cloud_box(pts, cloud.floor_z)
    along, across, yaw, centre_xy, low, top = box
    seen = sides_seen(pts, along, across, yaw, centre_xy, foot_band=0.0)
    centre = np.array([centre_xy[0], centre_xy[1], (low + top) / 2])
    spread = bearing_spread_deg(cloud.sensors_world, centre)
    overhang = outline_overhang(track.sightings, along, across, yaw, centre_xy, low, top)
    return ([_round(along), _round(across), _round(top - low)], _round(yaw), centre,
            _round(spread), _round(seen), _maybe_round(overhang))


def fuse_sightings(sightings: Iterable[Sighting],
                   clouds: Mapping[str, ObjectCloud] | None = None) -> list[ObjectTrack]:
    """Tracks from sightings, in order of first sighting; ids ``'<name>#<n>'`` per name.

    ``clouds`` (the LiDAR's objects, by the name their sightings carry) give those tracks their
    extent, centre and view spread from the object's whole cloud (:func:`_cloud_extent`).
    """
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
        cloud = (clouds or {}).get(t.name)
        extent, yaw, centre, spread, seen, overhang = (
            _cloud_extent(cloud, t) if cloud is not None else _extent(t))
        top_margin = None
        if cloud is not None and cloud.top_ceiling_z is not None:
            top = float(centre[2]) + extent[2] / 2
            top_margin = _round(max(cloud.top_ceiling_z - top, 0.0))
        out.append(ObjectTrack(
            track_id=f"{t.name}#{n}", name=t.name,
            center_world=[_round(c) for c in centre], extent_m=extent, yaw_rad=yaw,
            view_spread_deg=spread, footprint_seen=seen, outline_overhang=overhang,
            source="lidar" if cloud is not None else "detections", top_margin_m=top_margin,
            frames=sorted(s.frame_index for s in t.sightings),
            pixels={s.frame_index: s.pixels for s in t.sightings},
            points=sum(len(s.points_world) for s in t.sightings),
            ranges_m={s.frame_index: _round(
                s.visible_range_m if s.visible_range_m is not None
                else visible_surface_range(s, centre, extent, yaw)) for s in t.sightings},
            whole_frames=sorted(s.frame_index for s in t.sightings if s.whole)))
    return out


def build_object_tracks(world_frame: str, sightings: Sequence[Sighting],
                        skipped: Sequence[Skipped],
                        cameras: Mapping[int, FrameCamera] | None = None,
                        trajectory: Sequence[CameraSample] = (),
                        clouds: Mapping[str, ObjectCloud] | None = None) -> ObjectTracks:
    """The tracks file's record: fused tracks, every detection left out (with its reason),
    each frame's camera (pose and intrinsics), which the spatial families project with, and the
    camera's trajectory at every TF sample, which the motion families measure."""
    return ObjectTracks(
        world_frame=world_frame, tracks=fuse_sightings(sightings, clouds),
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
