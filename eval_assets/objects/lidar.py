"""Objects found in the LiDAR without weights: floor removed, the rest grouped on the floor plan.

``shared/specs/evidence.md`` ("Objects from the LiDAR"). Each frame's sweep is placed in the world
frame with TF; its floor (the densest height band of the points near the robot) and everything
above :data:`MAX_HEIGHT_M` are removed; what is left is binned on a floor-plan grid of
:data:`CELL_M` cells. A cell hit in at least :data:`MIN_CELL_FRAMES` frames is occupied (one
sweep's stray return is not an object); occupied cells closer than the join gap form one object.

Why the floor plan, not 3-D DBSCAN: a 16-ring LiDAR's rings are a decimetre apart at 3 m, while
its columns are 2 cm apart. In 3-D a low object's rings fall apart into several clusters unless
eps spans the ring gap at its range, and then neighbours 25 cm apart merge. On the floor plan the
ring gap does not exist: what separates objects is the column spacing
(:func:`join_gap_m`, from the sweep's own angular resolution at the range objects are seen).
Objects stacked on one another (a mug on a table) are one object here; that is recorded as the
object's footprint and height, and a question about "the object marked 3" then means both.

A component longer than :data:`MAX_OBJECT_M` or taller than :data:`MAX_OBJECT_HEIGHT_M` is
structure (a wall, a shelf run): it occludes, but it is not asked about. Every object keeps why it
is or is not askable.

An askable object's top is bounded from above by the rays that passed over it (:func:`top_ceiling`:
every top return needs a ray that went by just above it and came back from beyond), so a top seen
only from below is still known to within that bound.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import cv2
import numpy as np

CELL_M = 0.02
"""Floor-plan cell: finer than any object the families measure (centimetres matter for size)."""
FLOOR_BIN_M = 0.01
"""Height bins of the floor search: the floor is the fullest bin near the robot."""
FLOOR_SEARCH_M = 4.0
"""Only points this near the robot (horizontally) vote for the floor: far floor is sparse and a
large flat table top could outvote it at range."""
FLOOR_BAND_M = 0.03
"""Points this close above the floor are floor (LiDAR noise is about a centimetre)."""
MAX_HEIGHT_M = 2.0
"""Points higher than this above the floor are ceiling or upper structure, not an object."""
MAX_RANGE_M = 10.0
"""Returns further than this from the sensor are too sparse to shape an object."""
MIN_CELL_FRAMES = 2
"""A cell is occupied when hit in this many frames (one sweep's stray return is not an object)."""
MIN_JOIN_M = 0.04
"""Occupied cells closer than max(this, :func:`join_gap_m`) belong to one object."""
MAX_JOIN_M = 0.10
"""... and never further apart than this: the simulator places objects 25 cm apart at least, a
room's furniture rarely closer; joining across 10 cm would merge them."""
JOIN_SPACINGS = 3.0
"""The join gap is this many column spacings at :data:`TYPICAL_RANGE_M` (a gap that wide is the
sweep missing a column or two, not empty floor)."""
TYPICAL_RANGE_M = 4.0
"""Range at which objects are seen for the join gap (the families ask about objects within it)."""
STRUCTURE_REASON = "structure"
"""The first word of a structure's ``reason`` (:attr:`LidarObject.structure`)."""
MAX_OBJECT_M = 2.5
"""A component whose footprint is longer than this is structure (a wall), not an object."""
MAX_OBJECT_HEIGHT_M = 1.8
"""... or taller than this (a door frame, a shelf): it occludes, but it is not asked about."""
MIN_OBJECT_POINTS = 30
"""An object needs this many returns over the recording to be shaped at all."""
MIN_OBJECT_FRAMES = 2
"""... seen in this many frames (a single frame's blob may be a person walking past)."""
TOP_BAND_M = 0.01
"""An object's top returns: those within this of its top (:func:`cloud_top_z`)."""
TOP_PASS_M = 0.01
"""A ray passed over a top return when it went by within this of it sideways, at the
return's range, and came back from beyond it: the object there is lower than the ray
(:func:`lowest_pass`)."""
TOP_SLACK_M = 0.005
"""Beyond a top return means at least this much further away; a ray that went more than this
below the return without hitting the object went beside it, not over it, and bounds nothing."""


@dataclass(frozen=True)
class FrameSweep:
    """One frame's LiDAR sweep in the world frame and where the sensor stood."""

    frame_index: int
    points_world: np.ndarray
    sensor_world: np.ndarray


@dataclass
class LidarObject:
    """One object the LiDAR found: its floor-plan cells, points, frames, and whether it is asked
    about (``reason`` says why not)."""

    number: int
    cells: np.ndarray
    points_world: np.ndarray
    frames: tuple[int, ...]
    footprint_m: tuple[float, float]
    height_m: float
    askable: bool
    reason: str = ""
    sensors_world: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    top_ceiling_z: float | None = None

    @property
    def structure(self) -> bool:
        """Too long or too tall to be an object (a wall, a shelf run): it hides what stands
        behind it but is never asked about."""
        return self.reason.startswith(STRUCTURE_REASON)

    @property
    def center_world(self) -> np.ndarray:
        """Centre of the points' bounding box (world frame, metres)."""
        lo, hi = self.points_world.min(axis=0), self.points_world.max(axis=0)
        return np.asarray((lo + hi) / 2)


@dataclass
class LidarObjects:
    """Everything discovery found in one recording: the floor, the grid, the objects."""

    floor_z: float | None
    floor_z_per_frame: dict[int, float]
    origin_cell: tuple[int, int]
    labels: np.ndarray
    objects: list[LidarObject]

    def object_index(self, points_world: np.ndarray, floor_z: float) -> np.ndarray:
        """Per point: 1 + the index in :attr:`objects` of the object it falls on, 0 for none
        (floor, out of the grid, above :data:`MAX_HEIGHT_M`)."""
        pts = np.asarray(points_world, dtype=np.float64)
        out = np.zeros(len(pts), dtype=np.int32)
        if not len(pts) or self.labels.size == 0:
            return out
        height = pts[:, 2] - floor_z
        cells = np.floor(pts[:, :2] / CELL_M).astype(np.int64) - np.asarray(self.origin_cell)
        inside = ((cells[:, 0] >= 0) & (cells[:, 0] < self.labels.shape[0]) & (cells[:, 1] >= 0)
                  & (cells[:, 1] < self.labels.shape[1]) & (height > FLOOR_BAND_M)
                  & (height < MAX_HEIGHT_M))
        out[inside] = self.labels[cells[inside, 0], cells[inside, 1]]
        return out


def floor_height(points_world: np.ndarray, sensor_world: np.ndarray) -> float | None:
    """The floor's height under the sensor: the median of the fullest :data:`FLOOR_BIN_M` height
    band among the points within :data:`FLOOR_SEARCH_M` of it (None without such points).

    The robot stands on the floor and its LiDAR sees more floor near it than anything else
    horizontal; the band's median is finer than a bin.
    """
    pts = np.asarray(points_world, dtype=np.float64)
    near = np.hypot(pts[:, 0] - sensor_world[0], pts[:, 1] - sensor_world[1]) < FLOOR_SEARCH_M
    z = pts[near & (pts[:, 2] < sensor_world[2]), 2]
    if len(z) < MIN_OBJECT_POINTS:
        return None
    bins = np.floor(z / FLOOR_BIN_M).astype(np.int64)
    values, counts = np.unique(bins, return_counts=True)
    mode = int(values[int(np.argmax(counts))])
    band = z[np.abs(z - (mode + 0.5) * FLOOR_BIN_M) <= FLOOR_BIN_M]
    return float(np.median(band))


def cloud_top_z(points: np.ndarray) -> float:
    """An object's top from its whole cloud: its third-highest return (two strays do not lift
    it; a percentile would cut off a top of a few returns, such as a teddy bear's ears)."""
    return float(np.sort(points[:, 2])[-min(3, len(points))])


@dataclass(frozen=True)
class SweepRays:
    """One sweep's returns seen from its sensor, in order of azimuth and repeated over three
    turns (a window across +-pi is one slice): azimuth, horizontal range and elevation slope
    (rise over horizontal range) of each, and the object number it was counted to (0: none)."""

    sensor: np.ndarray
    azimuth: np.ndarray
    horizontal: np.ndarray
    slope: np.ndarray
    label: np.ndarray

    @classmethod
    def of(cls, points: np.ndarray, sensor: np.ndarray, label: np.ndarray) -> SweepRays:
        """The rays of ``points`` (world) from ``sensor``, ``label`` the object number of each."""
        sensor = np.asarray(sensor, dtype=np.float64)
        d = np.asarray(points, dtype=np.float64) - sensor
        horizontal = np.hypot(d[:, 0], d[:, 1])
        ok = horizontal > 1e-6  # straight up or down: no azimuth
        az = np.arctan2(d[ok, 1], d[ok, 0])
        order = np.argsort(az, kind="stable")
        horizontal, label = horizontal[ok][order], np.asarray(label)[ok][order]
        slope, az = d[ok, 2][order] / horizontal, az[order]
        return cls(sensor, np.concatenate([az - 2 * math.pi, az, az + 2 * math.pi]),
                   np.tile(horizontal, 3), np.tile(slope, 3), np.tile(label, 3))


def lowest_pass(top_points: np.ndarray, number: int, rays: SweepRays) -> np.ndarray:
    """Per point of ``top_points``, the lowest height at which one of ``rays`` passed over it
    (inf where none did).

    A ray passed over a point when its azimuth from the sensor lies within :data:`TOP_PASS_M`
    of the point's sideways (at the point's range) and it came back from at least
    :data:`TOP_SLACK_M` beyond the point, not from this object (``number``): the object there is
    lower than the ray was. A ray more than :data:`TOP_SLACK_M` lower than the point went
    beside the object, not over it, and is left out."""
    n = len(top_points)
    d = np.asarray(top_points, dtype=np.float64) - rays.sensor
    az = np.arctan2(d[:, 1], d[:, 0])
    horizontal = np.maximum(np.hypot(d[:, 0], d[:, 1]), 1e-6)
    window = TOP_PASS_M / horizontal
    lo = np.searchsorted(rays.azimuth, az - window, side="left")
    counts = np.searchsorted(rays.azimuth, az + window, side="right") - lo
    out = np.full(n, np.inf)
    total = int(counts.sum())
    if not total:
        return out
    point = np.repeat(np.arange(n), counts)
    ray = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts) + np.repeat(lo, counts)
    height = rays.sensor[2] + horizontal[point] * rays.slope[ray]
    passed = ((rays.horizontal[ray] >= horizontal[point] + TOP_SLACK_M)
              & (rays.label[ray] != number)
              & (height >= d[point, 2] + rays.sensor[2] - TOP_SLACK_M))
    np.minimum.at(out, point[passed], height[passed])
    return out


def top_ceiling(top_points: np.ndarray, number: int, sweeps: Iterable[SweepRays]
                ) -> float | None:
    """How high object ``number``'s top may be: over its ``top_points`` (its returns within
    :data:`TOP_BAND_M` of :func:`cloud_top_z`), the highest of the lowest heights at which a
    ray of ``sweeps`` passed over each (:func:`lowest_pass`). None when some top point no ray
    passed over: nothing bounds the top there.

    Rays, not rings: a tilted LiDAR's rings are not level in the world (the synthesizer's
    Mid-360 is pitched 28 degrees), so "the ring above the highest return" is no one
    elevation, and a bound from the ring above the highest return holds only along that
    return's column; each ray is its own, and every top point needs one."""
    if not len(top_points):
        return None
    bound = np.full(len(top_points), np.inf)
    for rays in sweeps:
        bound = np.minimum(bound, lowest_pass(top_points, number, rays))
    return float(bound.max()) if np.isfinite(bound).all() else None


def join_gap_m(columns: int = 1024) -> float:
    """How close two occupied cells must be to belong to one object: :data:`JOIN_SPACINGS`
    column spacings of a ``columns``-column sweep at :data:`TYPICAL_RANGE_M`, within
    [:data:`MIN_JOIN_M`, :data:`MAX_JOIN_M`]."""
    spacing = TYPICAL_RANGE_M * 2.0 * math.pi / max(int(columns), 1)
    return min(max(JOIN_SPACINGS * spacing, MIN_JOIN_M), MAX_JOIN_M)


def object_points(sweep: FrameSweep, floor_z: float) -> np.ndarray:
    """The sweep's points that may belong to an object: above the floor band, below
    :data:`MAX_HEIGHT_M`, within :data:`MAX_RANGE_M` of the sensor."""
    return np.asarray(sweep.points_world[_object_mask(sweep, floor_z)])


def _object_mask(sweep: FrameSweep, floor_z: float) -> np.ndarray:
    """Which of the sweep's points :func:`object_points` keeps."""
    pts = sweep.points_world
    height = pts[:, 2] - floor_z
    reach = np.linalg.norm(pts - sweep.sensor_world, axis=1)
    return np.asarray((height > FLOOR_BAND_M) & (height < MAX_HEIGHT_M) & (reach < MAX_RANGE_M))


def discover_objects(sweeps: Iterable[FrameSweep], columns: int = 1024) -> LidarObjects:
    """Find the objects of a recording from its frames' sweeps (see the module docstring).

    Objects are numbered from 1 in the order they were first seen, then by position, so the
    same recording gives the same numbers on every run.
    """
    kept: list[np.ndarray] = []
    kept_frames: list[np.ndarray] = []
    floors: dict[int, float] = {}
    sensors: dict[int, np.ndarray] = {}
    whole: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # every return, and which were kept
    for sweep in sweeps:
        sensors[sweep.frame_index] = np.asarray(sweep.sensor_world, dtype=np.float64)
        floor = floor_height(sweep.points_world, sweep.sensor_world)
        if floor is None:
            continue
        floors[sweep.frame_index] = floor
        mask = _object_mask(sweep, floor)
        whole[sweep.frame_index] = (sweep.points_world, mask)
        pts = np.asarray(sweep.points_world[mask])
        kept.append(pts)
        kept_frames.append(np.full(len(pts), sweep.frame_index, dtype=np.int64))
    floor_z = float(np.median(list(floors.values()))) if floors else None
    if not kept or not sum(len(k) for k in kept):
        return LidarObjects(floor_z, floors, (0, 0), np.zeros((0, 0), np.int32), [])
    points = np.concatenate(kept)
    point_frames = np.concatenate(kept_frames)
    cells = np.floor(points[:, :2] / CELL_M).astype(np.int64)
    origin = cells.min(axis=0)
    local = cells - origin
    shape = (int(local[:, 0].max()) + 1, int(local[:, 1].max()) + 1)
    occupied = _occupied(local, point_frames, shape)
    labels = _components(occupied, join_gap_m(columns))
    point_label = labels[local[:, 0], local[:, 1]]
    objects = _objects(labels, point_label, points, point_frames, floor_z or 0.0)
    _bound_tops(objects, whole, sensors, point_label)
    # Renumber the grid so that label k is objects[k - 1].
    remap = np.zeros(int(labels.max()) + 1, dtype=np.int32)
    for i, obj in enumerate(objects, start=1):
        remap[obj.number] = i
    grid = remap[labels]
    for i, obj in enumerate(objects, start=1):
        obj.number = i
        obj.sensors_world = np.array([sensors[f] for f in obj.frames]).reshape(-1, 3)
    return LidarObjects(floor_z, floors, (int(origin[0]), int(origin[1])), grid, objects)


def _bound_tops(objects: list[LidarObject], whole: dict[int, tuple[np.ndarray, np.ndarray]],
                sensors: dict[int, np.ndarray], point_label: np.ndarray) -> None:
    """Each askable object's ``top_ceiling_z``: :func:`top_ceiling` over the sweeps that hit
    it, one sweep's rays at a time. ``whole`` holds each sweep's returns and which were kept
    (in the order ``point_label`` counts the kept ones)."""
    askable = [o for o in objects if o.askable]
    tops = {o.number: o.points_world[o.points_world[:, 2] >= cloud_top_z(o.points_world)
                                     - TOP_BAND_M] for o in askable}
    bounds = {o.number: np.full(len(tops[o.number]), np.inf) for o in askable}
    hit = {o.number: set(o.frames) for o in askable}
    offset = 0
    for frame, (pts, mask) in whole.items():
        label = np.zeros(len(pts), dtype=np.int32)
        label[mask] = point_label[offset:offset + int(mask.sum())]
        offset += int(mask.sum())
        numbers = [n for n in bounds if frame in hit[n]]
        if not numbers:
            continue
        rays = SweepRays.of(pts, sensors[frame], label)
        for n in numbers:
            bounds[n] = np.minimum(bounds[n], lowest_pass(tops[n], n, rays))
    for o in askable:
        b = bounds[o.number]
        o.top_ceiling_z = float(b.max()) if len(b) and np.isfinite(b).all() else None


def _occupied(local: np.ndarray, frames: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Cells hit in at least :data:`MIN_CELL_FRAMES` distinct frames."""
    flat = local[:, 0] * shape[1] + local[:, 1]
    pairs = np.unique(np.stack([flat, frames], axis=1), axis=0)
    cell_ids, counts = np.unique(pairs[:, 0], return_counts=True)
    grid = np.zeros(shape[0] * shape[1], dtype=np.uint8)
    grid[cell_ids[counts >= MIN_CELL_FRAMES]] = 1
    return grid.reshape(shape)


def _components(occupied: np.ndarray, gap_m: float) -> np.ndarray:
    """Connected components of the occupied cells, cells within ``gap_m`` joined; each
    component's label on its own occupied cells only (the joining ring is not the object)."""
    radius = max(round(gap_m / CELL_M / 2), 1)
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * radius + 1, 2 * radius + 1))
    joined = cv2.dilate(occupied, kernel)
    _, labels = cv2.connectedComponents(joined, connectivity=8, ltype=cv2.CV_32S)
    return np.where(occupied > 0, labels, 0).astype(np.int32)


def _objects(labels: np.ndarray, point_label: np.ndarray, points: np.ndarray,
             point_frames: np.ndarray, floor_z: float) -> list[LidarObject]:
    """One :class:`LidarObject` per component with points, in first-seen then position order."""
    found: list[LidarObject] = []
    order = np.argsort(point_label, kind="stable")
    sorted_labels = point_label[order]
    starts = np.searchsorted(sorted_labels, np.arange(1, int(labels.max()) + 2))
    for label in range(1, int(labels.max()) + 1):
        idx = order[starts[label - 1]:starts[label]]
        if not len(idx):
            continue
        pts, frames = points[idx], point_frames[idx]
        cells = np.argwhere(labels == label)
        found.append(_judged(label, cells, pts, frames, floor_z))
    found.sort(key=lambda o: (o.frames[0] if o.frames else 0,
                              round(float(o.center_world[0]), 3),
                              round(float(o.center_world[1]), 3)))
    return found


def _judged(label: int, cells: np.ndarray, pts: np.ndarray, frames: np.ndarray,
            floor_z: float) -> LidarObject:
    """The object of one component, with whether it is askable and why not."""
    seen = tuple(int(f) for f in np.unique(frames))
    span = (cells.max(axis=0) - cells.min(axis=0) + 1) * CELL_M
    footprint = (float(max(span)), float(min(span)))
    height = float(pts[:, 2].max() - floor_z)
    reason = ""
    if footprint[0] > MAX_OBJECT_M:
        reason = (f"{STRUCTURE_REASON}: its footprint is {footprint[0]:.1f} m long "
                  f"(> {MAX_OBJECT_M} m)")
    elif height > MAX_OBJECT_HEIGHT_M:
        reason = f"{STRUCTURE_REASON}: it stands {height:.1f} m high (> {MAX_OBJECT_HEIGHT_M} m)"
    elif len(pts) < MIN_OBJECT_POINTS:
        reason = f"too few points: {len(pts)} returns (at least {MIN_OBJECT_POINTS} needed)"
    elif len(seen) < MIN_OBJECT_FRAMES:
        reason = f"seen in {len(seen)} frame (at least {MIN_OBJECT_FRAMES} needed)"
    return LidarObject(number=label, cells=cells, points_world=pts, frames=seen,
                       footprint_m=footprint, height_m=height, askable=not reason,
                       reason=reason)

