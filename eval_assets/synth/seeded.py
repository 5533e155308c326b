"""Seeded scenes: a new room, object layout, colours, shapes, distractors and path per seed.

Everything is drawn from one ``numpy`` generator seeded by the scene seed, so a seed names a scene
on every machine. The benchmark objects use only the colour/shape vocabulary the offline detector
knows (:data:`~eval_assets.synth.scene.PALETTE` × :data:`~eval_assets.synth.scene.SHAPES`) with
the palette's exact albedos, one shape per colour in a scene (as in the sample, so a colour alone
names an object), and every name count from 1 to 3 present for the counting questions. Most names
are unique (5–6 names, one of them twice and one three times, the rest once: the spatial families
need names that pick one object), and objects sharing a name stand at least
:data:`SAME_NAME_APART_M` apart, so their detections cannot be fused into one object. Room
surfaces and most distractors are desaturated (HSV saturation ≤ 0.15, where the detector needs
0.45); the saturated distractors have hues ≥ 40° from every vocabulary hue (the detector accepts
22°), so none of them can be taken for a vocabulary object.
"""

from __future__ import annotations

import colorsys
import math

import numpy as np

from eval_assets.synth.scene import (
    BASE_FROM_CAMERA,
    BASE_FROM_LIDAR,
    BASE_HEIGHT_M,
    PALETTE,
    RING_AZIMUTH_STEP_DEG,
    RING_ELEVATIONS_DEG,
    SHAPES,
    CameraModel,
    Distractor,
    LoopPath,
    Scene,
    SceneObject,
    Slab,
    TourPath,
)

_WALL = 0.1
_ROBOT_HALF_WIDTH_M = 0.16
# Free space between the robot's body and anything standing on the floor.
_CLEARANCE_M = 0.30
_WALL_MARGIN_M = 0.25
# Saturated off-vocabulary albedos: cyan (hue 178°) and magenta (320°) sit ≥ 40° from the nearest
# palette hue (green 126°, blue 229°, purple 278°, red 0°).
_OFF_VOCABULARY = {"cyan": (25, 185, 180), "magenta": (205, 40, 150)}
_MAX_TRIES = 400
# The tour (TourPath): waypoints per lap (an ellipse's corners then turn 60° on average, a
# figure of eight's lobes about 90°), turns on the spot at 45°/s (a Go2 turns up to ~60°/s),
# a 60° look the other way at every other corner, and one 4 s stop (8 sample frames).
TOUR_CORNERS = {1: 6, 2: 8}
TOUR_TURN_RATE = math.radians(45.0)
TOUR_LOOK = math.radians(60.0)
TOUR_STOP_AT = 2
TOUR_STOP_S = 4.0
# Centre-to-centre floor distance between two objects of one name: several object sizes, so the
# tracks' fusion (centres within about one extent) keeps them apart.
SAME_NAME_APART_M = 1.5


def _grey(rng: np.random.Generator, value: tuple[float, float],
          saturation: tuple[float, float] = (0.02, 0.12)) -> tuple[int, int, int]:
    """A desaturated albedo: random hue, low saturation, value in ``value``."""
    r, g, b = colorsys.hsv_to_rgb(float(rng.uniform(0.0, 1.0)), float(rng.uniform(*saturation)),
                                  float(rng.uniform(*value)))
    return (round(r * 255), round(g * 255), round(b * 255))


_Corner = tuple[float, float, float]


def _room(rng: np.random.Generator) -> tuple[tuple[Slab, ...], _Corner, _Corner]:
    length, width = float(rng.uniform(7.0, 10.0)), float(rng.uniform(5.5, 8.0))
    height = float(rng.uniform(2.4, 3.2))
    x0, y0 = -1.0, -width / 2
    lo, hi = (x0, y0, 0.0), (x0 + length, y0 + width, height)
    (x0, y0, z0), (x1, y1, z1) = lo, hi
    w = _WALL
    wall_value = float(rng.uniform(0.6, 0.85))
    slabs = (
        Slab("floor", _grey(rng, (0.4, 0.65)), (x0 - w, y0 - w, z0 - w), (x1 + w, y1 + w, z0)),
        Slab("ceiling", _grey(rng, (0.82, 0.92)), (x0 - w, y0 - w, z1), (x1 + w, y1 + w, z1 + w)),
        Slab("wall_front", _grey(rng, (wall_value - 0.05, wall_value + 0.05)),
             (x1, y0 - w, z0), (x1 + w, y1 + w, z1)),
        Slab("wall_back", _grey(rng, (wall_value - 0.05, wall_value + 0.05)),
             (x0 - w, y0 - w, z0), (x0, y1 + w, z1)),
        Slab("wall_left", _grey(rng, (wall_value - 0.05, wall_value + 0.05)),
             (x0, y1, z0), (x1, y1 + w, z1)),
        Slab("wall_right", _grey(rng, (wall_value - 0.05, wall_value + 0.05)),
             (x0, y0 - w, z0), (x1, y0, z1)),
    )
    return slabs, lo, hi


def _tour(loop: LoopPath) -> TourPath:
    return TourPath(loop, TOUR_CORNERS[loop.lobes], TOUR_TURN_RATE, TOUR_LOOK, TOUR_STOP_AT,
                    TOUR_STOP_S)


def _path(rng: np.random.Generator, lo: _Corner, hi: _Corner,
          t0: float) -> LoopPath:
    cx, cy = (lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2
    figure_eight = bool(rng.integers(0, 2))
    # The robot's track keeps 1.2–1.7 m from the walls: room for objects between it and them.
    ax = (hi[0] - lo[0]) / 2 - float(rng.uniform(1.2, 1.7))
    ay = (hi[1] - lo[1]) / 2 - float(rng.uniform(1.2, 1.7))
    return LoopPath(
        center_xy=(cx + float(rng.uniform(-0.2, 0.2)), cy + float(rng.uniform(-0.2, 0.2))),
        radii_xy=(ax, ay),
        lobes=2 if figure_eight else 1,
        lobe_phase=0.0 if figure_eight else math.pi / 2,
        phase0=float(rng.uniform(0.0, 2.0 * math.pi)),
        direction=1 if rng.integers(0, 2) else -1,
        speed=float(rng.uniform(0.3, 0.45)),
        t_start=t0,
        base_height=BASE_HEIGHT_M,
    )


def _footprint_radius(size: tuple[float, float, float]) -> float:
    return math.hypot(size[0], size[1]) / 2


class _Placer:
    """Rejection sampling of floor positions clear of the walls, the path and each other."""

    def __init__(self, rng: np.random.Generator, lo: _Corner, hi: _Corner,
                 path: TourPath) -> None:
        self.rng, self.lo, self.hi = rng, lo, hi
        self.track = path.samples()
        self.taken: list[tuple[float, float, float]] = []  # x, y, footprint radius

    def place(self, radius: float, gap: float = 0.25,
              apart_from: tuple[tuple[float, float], ...] = ()) -> tuple[float, float] | None:
        """A free (x, y) for a footprint of ``radius``, at least :data:`SAME_NAME_APART_M` from
        every point of ``apart_from``, or None when the room is too full."""
        for _ in range(_MAX_TRIES):
            x = float(self.rng.uniform(self.lo[0] + _WALL_MARGIN_M + radius,
                                       self.hi[0] - _WALL_MARGIN_M - radius))
            y = float(self.rng.uniform(self.lo[1] + _WALL_MARGIN_M + radius,
                                       self.hi[1] - _WALL_MARGIN_M - radius))
            to_track = float(np.min(np.hypot(self.track[:, 0] - x, self.track[:, 1] - y)))
            if to_track < radius + _ROBOT_HALF_WIDTH_M + _CLEARANCE_M:
                continue
            if any(math.hypot(x - ox, y - oy) < radius + r + gap for ox, oy, r in self.taken):
                continue
            if any(math.hypot(x - ax, y - ay) < SAME_NAME_APART_M for ax, ay in apart_from):
                continue
            self.taken.append((x, y, radius))
            return x, y
        return None


def _object_size(rng: np.random.Generator, shape: str) -> tuple[float, float, float]:
    if shape == "ball":
        d = float(rng.uniform(0.26, 0.42))
        return (d, d, d)
    if shape == "cylinder":
        d = float(rng.uniform(0.22, 0.34))
        return (d, d, float(rng.uniform(0.42, 0.72)))
    return (float(rng.uniform(0.28, 0.46)), float(rng.uniform(0.28, 0.46)),
            float(rng.uniform(0.28, 0.52)))


def _objects(rng: np.random.Generator, placer: _Placer) -> tuple[SceneObject, ...]:
    colours = list(PALETTE)
    chosen = [colours[i] for i in rng.permutation(len(colours))[: int(rng.integers(5, 7))]]
    # Shapes cycle through a permutation, so every scene has all three shapes.
    shapes = [SHAPES[i] for i in rng.permutation(len(SHAPES))]
    # Counts 1, 2 and 3 are always present (the counting family needs each answer); every other
    # name is unique, so most names pick one object.
    counts = [1, 2, 3] + [1] * (len(chosen) - 3)
    counts = [counts[i] for i in rng.permutation(len(counts))]
    objects: list[SceneObject] = []
    for k, (colour, count) in enumerate(zip(chosen, counts, strict=True)):
        shape = shapes[k % len(shapes)]
        same_name: list[tuple[float, float]] = []
        for _ in range(count):
            size = _object_size(rng, shape)
            yaw = float(rng.uniform(0.0, math.pi / 2)) if shape == "box" else 0.0
            xy = placer.place(_footprint_radius(size), apart_from=tuple(same_name))
            if xy is None:
                raise RuntimeError("the seeded room has no free floor left for the objects; "
                                   "this seed cannot make a scene (report it)")
            same_name.append(xy)
            objects.append(SceneObject(len(objects), colour, shape, PALETTE[colour],
                                       (xy[0], xy[1], size[2] / 2), size, yaw))
    return tuple(objects)


def _panel(rng: np.random.Generator, lo: _Corner, hi: _Corner,
           wall: int) -> Distractor:
    """A thin textured panel (poster, board) hung on ``wall`` (0 front, 1 back, 2 left, 3 right).

    One panel per wall: two overlapping panels would have coplanar faces.
    """
    width, tall = float(rng.uniform(0.6, 1.6)), float(rng.uniform(0.5, 1.2))
    z = float(rng.uniform(0.35, hi[2] - tall - 0.3)) + tall / 2
    depth = 0.03
    if wall < 2:  # front / back walls: the panel spans y
        y = float(rng.uniform(lo[1] + width / 2 + 0.2, hi[1] - width / 2 - 0.2))
        x = hi[0] - depth / 2 if wall == 0 else lo[0] + depth / 2
        center, size = (x, y, z), (depth, width, tall)
    else:  # left / right walls: the panel spans x
        x = float(rng.uniform(lo[0] + width / 2 + 0.2, hi[0] - width / 2 - 0.2))
        y = hi[1] - depth / 2 if wall == 2 else lo[1] + depth / 2
        center, size = (x, y, z), (width, depth, tall)
    texture = "checker" if rng.integers(0, 2) else "stripes"
    light, dark = _grey(rng, (0.75, 0.95)), _grey(rng, (0.2, 0.45))
    return Distractor("panel", "box", light, center, size, 0.0, texture, dark,
                      float(rng.uniform(0.08, 0.2)))


def _floor_distractor(rng: np.random.Generator, placer: _Placer) -> Distractor | None:
    kind = ("crate", "bin", "crate", "bin", "off_vocabulary")[int(rng.integers(0, 5))]
    if kind == "crate":
        size = (float(rng.uniform(0.35, 0.7)), float(rng.uniform(0.35, 0.7)),
                float(rng.uniform(0.3, 0.8)))
        shape, rgb, yaw = "box", _grey(rng, (0.35, 0.8)), float(rng.uniform(0.0, math.pi / 2))
    elif kind == "bin":
        d = float(rng.uniform(0.3, 0.5))
        size, shape, rgb, yaw = (d, d, float(rng.uniform(0.5, 0.9))), "cylinder", \
            _grey(rng, (0.3, 0.8)), 0.0
    else:
        colour = ("cyan", "magenta")[int(rng.integers(0, 2))]
        shape = SHAPES[int(rng.integers(0, 3))]
        size = _object_size(rng, shape)
        rgb, yaw, kind = _OFF_VOCABULARY[colour], 0.0, f"{colour} {shape}"
    xy = placer.place(_footprint_radius(size))
    if xy is None:
        return None
    return Distractor(kind, shape, rgb, (xy[0], xy[1], size[2] / 2), size, yaw)


def seeded_scene(scene_seed: int, camera: CameraModel, t0: float = 1_700_000_000.0) -> Scene:
    """A new scene for ``scene_seed``, seen through ``camera``, the robot driving from ``t0``.

    The room (7–10 m × 5.5–8 m, 2.4–3.2 m high, desaturated surfaces), the robot's loop (an
    ellipse or a figure of eight, 0.3–0.45 m/s) driven as a tour (straight runs, turns on the
    spot both ways, a stop, back to the start: :class:`~eval_assets.synth.scene.TourPath`),
    5–6 vocabulary colours with 1–3 objects each,
    and 3–7 distractors (grey crates and bins, textured wall panels, cyan or magenta objects) all
    change with the seed; the rig mounts and LiDAR rings are the sample's.
    """
    if scene_seed < 0:
        raise ValueError(f"scene seed must be ≥ 0, got {scene_seed}")
    rng = np.random.default_rng(np.random.SeedSequence([scene_seed, 0x5CE4E]))
    room, lo, hi = _room(rng)
    path = _tour(_path(rng, lo, hi, t0))
    placer = _Placer(rng, lo, hi, path)
    objects = _objects(rng, placer)
    walls = rng.permutation(4)[: int(rng.integers(1, 3))]
    distractors: list[Distractor] = [_panel(rng, lo, hi, int(w)) for w in walls]
    for _ in range(int(rng.integers(2, 6))):
        floor_item = _floor_distractor(rng, placer)
        if floor_item is not None:
            distractors.append(floor_item)
    return Scene(
        objects=objects,
        room=room,
        camera=camera,
        base_from_camera=BASE_FROM_CAMERA.copy(),
        base_from_lidar=BASE_FROM_LIDAR.copy(),
        path=path,
        lidar_elevations_deg=RING_ELEVATIONS_DEG.copy(),
        lidar_azimuth_step_deg=RING_AZIMUTH_STEP_DEG,
        distractors=tuple(distractors),
    )
