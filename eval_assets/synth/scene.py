"""The bundled sample scene: a small room, coloured objects, a Go2-like rig and its path.

Everything here is plain data and closed-form geometry (numpy only), so the renderer, the
recording packer and the tests share one definition of the world.

Frames: ``world`` is z-up with the robot starting near the origin facing +x; ``base_link`` is
x forward, y left, z up; ``camera_optical`` is z forward, x right, y down; ``mid360_link`` is
the LiDAR mount (x forward, z up), pitched down so that its −7°…+52° field reaches the floor
in front of the robot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

import numpy as np

SHAPES = ("box", "ball", "cylinder")


@dataclass(frozen=True)
class SceneObject:
    """One object of the scene. ``size`` is the axis-aligned extent (dx, dy, dz) in metres."""

    id: int
    color: str
    shape: str
    rgb: tuple[int, int, int]
    center: tuple[float, float, float]
    size: tuple[float, float, float]
    yaw: float = 0.0  # radians about +z; boxes only (balls and upright cylinders look the same)

    @property
    def name(self) -> str:
        """The benchmark's name for it: ``"<colour> <shape>"``."""
        return f"{self.color} {self.shape}"


@dataclass(frozen=True)
class Distractor:
    """Something in the room that is not a benchmark object: no vocabulary name, no id-map id.

    ``shape`` is ``"box"`` or ``"cylinder"`` (a panel is a thin box). ``texture`` is ``"plain"``,
    ``"checker"`` or ``"stripes"``: the albedo alternates between ``rgb`` and ``rgb2`` in squares
    (or horizontal bands) of ``period_m``, in world coordinates.
    """

    kind: str
    shape: str
    rgb: tuple[int, int, int]
    center: tuple[float, float, float]
    size: tuple[float, float, float]
    yaw: float = 0.0
    texture: str = "plain"
    rgb2: tuple[int, int, int] = (0, 0, 0)
    period_m: float = 0.0


@dataclass(frozen=True)
class Slab:
    """A room surface (floor, wall, ceiling) as an axis-aligned box between two corners."""

    name: str
    rgb: tuple[int, int, int]
    lo: tuple[float, float, float]
    hi: tuple[float, float, float]


@dataclass(frozen=True)
class CameraModel:
    """A 4-coefficient ``equidistant`` (OpenCV fisheye) camera and its rectified intrinsics."""

    width: int
    height: int
    K: np.ndarray  # 3x3
    D: np.ndarray  # (4,) k1..k4
    K_rect: np.ndarray  # 3x3; rectified images are ideal pinhole images with these intrinsics

    @property
    def P(self) -> np.ndarray:
        """The 3×4 projection ``[K_rect | 0]`` recorded in ``camera_info``."""
        return np.hstack([self.K_rect, np.zeros((3, 1))])


@dataclass(frozen=True)
class Path2D:
    """A constant-speed, constant-turn-rate arc traversed between ``t_start`` and ``t_end``.

    The robot stands still at the arc's ends outside that interval, so poses exist for any time.
    """

    start_xy: tuple[float, float]
    start_yaw: float
    length: float
    yaw_change: float
    t_start: float
    t_end: float
    base_height: float

    def world_from_base(self, t: float) -> np.ndarray:
        """The 4×4 pose of ``base_link`` in ``world`` at epoch time ``t``."""
        s = min(max((t - self.t_start) / (self.t_end - self.t_start), 0.0), 1.0)
        yaw0 = self.start_yaw
        yaw = yaw0 + self.yaw_change * s
        # Closed-form integral of (cos yaw, sin yaw) along an arc of constant curvature.
        radius = self.length / self.yaw_change
        x = self.start_xy[0] + radius * (math.sin(yaw) - math.sin(yaw0))
        y = self.start_xy[1] - radius * (math.cos(yaw) - math.cos(yaw0))
        m = np.eye(4)
        m[:3, :3] = rot_z(yaw)
        m[:3, 3] = (x, y, self.base_height)
        return m


class RobotPath(Protocol):
    """Anything that gives the robot's pose at any time."""

    def world_from_base(self, t: float) -> np.ndarray:
        """The 4×4 pose of ``base_link`` in ``world`` at epoch time ``t``."""
        ...


@dataclass(frozen=True)
class LoopPath:
    """A closed Lissajous loop driven at constant ``speed`` from ``t_start`` on, lap after lap.

    The curve is ``centre + (ax sin φ, ay sin(k φ + ψ))``: ``k = 1, ψ = π/2`` is an ellipse,
    ``k = 2, ψ = 0`` a figure of eight. The robot faces along the curve (``direction`` −1 drives
    it the other way round), so its yaw turns smoothly and it sees the room from every side.
    """

    center_xy: tuple[float, float]
    radii_xy: tuple[float, float]
    lobes: int
    lobe_phase: float
    phase0: float
    direction: int
    speed: float
    t_start: float
    base_height: float

    def point(self, phi: np.ndarray | float) -> np.ndarray:
        """(…, 2) world xy of the curve at parameter ``phi``."""
        phi = np.asarray(phi, dtype=np.float64)
        x = self.center_xy[0] + self.radii_xy[0] * np.sin(phi)
        y = self.center_xy[1] + self.radii_xy[1] * np.sin(self.lobes * phi + self.lobe_phase)
        return np.stack([x, y], axis=-1)

    def _tangent(self, phi: float) -> tuple[float, float]:
        dx = self.radii_xy[0] * math.cos(phi)
        dy = self.radii_xy[1] * self.lobes * math.cos(self.lobes * phi + self.lobe_phase)
        return dx * self.direction, dy * self.direction

    @cached_property
    def _arc(self) -> tuple[np.ndarray, np.ndarray]:
        # Arc length along one lap sampled finely enough that the speed error is < 0.1 %.
        phi = np.linspace(0.0, 2.0 * math.pi, 8193)
        xy = self.point(phi)
        length = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(xy, axis=0).T))])
        return phi, length

    @property
    def lap_length(self) -> float:
        """Length of one lap in metres."""
        return float(self._arc[1][-1])

    def samples(self, n: int = 2048) -> np.ndarray:
        """(n, 2) xy points spread along one lap (for clearance checks)."""
        return self.point(np.linspace(0.0, 2.0 * math.pi, n, endpoint=False))

    def world_from_base(self, t: float) -> np.ndarray:
        """The 4×4 pose of ``base_link`` in ``world`` at epoch time ``t`` (still before start)."""
        phi_grid, length = self._arc
        # Arc length from φ = 0 to the start, then driven forwards (or backwards) from there.
        s0 = float(np.interp(self.phase0 % (2.0 * math.pi), phi_grid, length))
        s = (s0 + self.direction * max(t - self.t_start, 0.0) * self.speed) % length[-1]
        phi = float(np.interp(s, length, phi_grid))
        x, y = self.point(phi)
        dx, dy = self._tangent(phi)
        m = np.eye(4)
        m[:3, :3] = rot_z(math.atan2(dy, dx))
        m[:3, 3] = (float(x), float(y), self.base_height)
        return m


@dataclass(frozen=True)
class _Leg:
    """One stretch of a :class:`TourPath`: from ``xy0``/``yaw0`` to ``xy1``/``yaw1`` in
    ``duration`` seconds (a straight drive, a turn on the spot or a stop)."""

    t0: float
    duration: float
    xy0: tuple[float, float]
    xy1: tuple[float, float]
    yaw0: float
    yaw1: float


@dataclass(frozen=True)
class TourPath:
    """One lap of ``loop`` driven as a route, lap after lap: what the motion families ask about.

    The robot drives straight between ``corners`` waypoints spread evenly along the loop (at the
    loop's speed) and turns on the spot at each one (at ``turn_rate`` rad/s). At every other
    waypoint it first looks the other way (turns ``look`` rad against the corner, then back past
    it), so every lap has left AND right turns whichever way the loop goes round; at waypoint
    ``stop_at`` it stands still for ``stop_s`` seconds. A lap ends where and facing the way it
    began: the next lap revisits every place.
    """

    loop: LoopPath
    corners: int
    turn_rate: float
    look: float
    stop_at: int
    stop_s: float

    @property
    def t_start(self) -> float:
        """When the first lap starts (the robot stands at the first waypoint before)."""
        return self.loop.t_start

    @property
    def speed(self) -> float:
        """Driving speed on the straight runs (m/s)."""
        return self.loop.speed

    @cached_property
    def waypoints(self) -> np.ndarray:
        """(corners, 2) xy of the waypoints, in driving order from the loop's start."""
        phi_grid, length = self.loop._arc
        s0 = float(np.interp(self.loop.phase0 % (2.0 * math.pi), phi_grid, length))
        s = (s0 + self.loop.direction * np.arange(self.corners) * length[-1] / self.corners
             ) % length[-1]
        return self.loop.point(np.interp(s, length, phi_grid))

    @cached_property
    def legs(self) -> tuple[_Leg, ...]:
        """Every drive, turn and stop of one lap, in time order."""
        pts = [(float(p[0]), float(p[1])) for p in self.waypoints]
        n = len(pts)
        heading = [math.atan2(pts[(k + 1) % n][1] - pts[k][1], pts[(k + 1) % n][0] - pts[k][0])
                   for k in range(n)]
        legs: list[_Leg] = []
        t = self.loop.t_start

        def add(xy0: tuple[float, float], xy1: tuple[float, float], yaw0: float, yaw1: float,
                duration: float) -> None:
            nonlocal t
            legs.append(_Leg(t, duration, xy0, xy1, yaw0, yaw1))
            t += duration

        for k in range(n):
            a, b = pts[k], pts[(k + 1) % n]
            add(a, b, heading[k], heading[k], math.dist(a, b) / self.speed)
            yaw = heading[k]
            corner = math.remainder(heading[(k + 1) % n] - yaw, 2.0 * math.pi)
            if (k + 1) % n == self.stop_at:
                add(b, b, yaw, yaw, self.stop_s)
            if k % 2 == 1:  # look the other way first
                away = -math.copysign(self.look, corner)
                add(b, b, yaw, yaw + away, abs(away) / self.turn_rate)
                yaw += away
            end = heading[k] + corner
            add(b, b, yaw, end, abs(end - yaw) / self.turn_rate)
        return tuple(legs)

    @property
    def lap_duration_s(self) -> float:
        """Seconds one lap takes."""
        last = self.legs[-1]
        return last.t0 + last.duration - self.loop.t_start

    @property
    def lap_length(self) -> float:
        """Metres driven in one lap (the base's path; turns on the spot add none)."""
        return sum(math.dist(leg.xy0, leg.xy1) for leg in self.legs)

    def samples(self, n: int = 2048) -> np.ndarray:
        """(n, 2) xy points spread along the lap's straight runs (for clearance checks)."""
        drives = [leg for leg in self.legs if leg.xy0 != leg.xy1]
        lengths = np.array([math.dist(leg.xy0, leg.xy1) for leg in drives])
        s = np.linspace(0.0, float(lengths.sum()), n, endpoint=False)
        ends = np.cumsum(lengths)
        out = np.empty((n, 2))
        for i, si in enumerate(s):
            k = min(int(np.searchsorted(ends, si, side="right")), len(drives) - 1)
            f = (si - (ends[k] - lengths[k])) / lengths[k]
            out[i] = np.add(drives[k].xy0, f * np.subtract(drives[k].xy1, drives[k].xy0))
        return out

    def world_from_base(self, t: float) -> np.ndarray:
        """The 4×4 pose of ``base_link`` in ``world`` at epoch time ``t`` (still before start)."""
        lap = self.lap_duration_s
        dt = max(t - self.loop.t_start, 0.0) % lap
        starts = [leg.t0 - self.loop.t_start for leg in self.legs]
        leg = self.legs[max(int(np.searchsorted(starts, dt, side="right")) - 1, 0)]
        f = min(max((dt - (leg.t0 - self.loop.t_start)) / leg.duration, 0.0), 1.0) \
            if leg.duration > 0 else 1.0
        m = np.eye(4)
        m[:3, :3] = rot_z(leg.yaw0 + f * (leg.yaw1 - leg.yaw0))
        m[:3, 3] = (leg.xy0[0] + f * (leg.xy1[0] - leg.xy0[0]),
                    leg.xy0[1] + f * (leg.xy1[1] - leg.xy0[1]), self.loop.base_height)
        return m


@dataclass(frozen=True)
class Scene:
    """The whole synthetic world: room, objects, camera, rig mounts and robot path."""

    objects: tuple[SceneObject, ...]
    room: tuple[Slab, ...]
    camera: CameraModel
    base_from_camera: np.ndarray  # 4x4, camera_optical -> base_link
    base_from_lidar: np.ndarray  # 4x4, mid360_link -> base_link
    path: RobotPath
    lidar_elevations_deg: np.ndarray
    lidar_azimuth_step_deg: float
    distractors: tuple[Distractor, ...] = ()


def rot_x(a: float) -> np.ndarray:
    """Rotation by ``a`` radians about +x."""
    c, s = math.cos(a), math.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def rot_y(a: float) -> np.ndarray:
    """Rotation by ``a`` radians about +y (positive pitches +x towards −z, i.e. nose down)."""
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rot_z(a: float) -> np.ndarray:
    """Rotation by ``a`` radians about +z."""
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def homogeneous(rotation: np.ndarray, translation: tuple[float, float, float]) -> np.ndarray:
    """A 4×4 transform from a 3×3 rotation and a translation."""
    m = np.eye(4)
    m[:3, :3] = rotation
    m[:3, 3] = translation
    return m


def quaternion_xyzw(rotation: np.ndarray) -> tuple[float, float, float, float]:
    """The unit quaternion (x, y, z, w) of a rotation matrix, with w ≥ 0 for a unique answer."""
    r = rotation
    trace = r[0, 0] + r[1, 1] + r[2, 2]
    # Shepperd's method: branch on the largest diagonal term to stay numerically stable.
    if trace > 0.0:
        s = 2.0 * math.sqrt(1.0 + trace)
        q = ((r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s, s / 4)
    elif r[0, 0] > r[1, 1] and r[0, 0] > r[2, 2]:
        s = 2.0 * math.sqrt(1.0 + r[0, 0] - r[1, 1] - r[2, 2])
        q = (s / 4, (r[0, 1] + r[1, 0]) / s, (r[0, 2] + r[2, 0]) / s, (r[2, 1] - r[1, 2]) / s)
    elif r[1, 1] > r[2, 2]:
        s = 2.0 * math.sqrt(1.0 + r[1, 1] - r[0, 0] - r[2, 2])
        q = ((r[0, 1] + r[1, 0]) / s, s / 4, (r[1, 2] + r[2, 1]) / s, (r[0, 2] - r[2, 0]) / s)
    else:
        s = 2.0 * math.sqrt(1.0 + r[2, 2] - r[0, 0] - r[1, 1])
        q = ((r[0, 2] + r[2, 0]) / s, (r[1, 2] + r[2, 1]) / s, s / 4, (r[1, 0] - r[0, 1]) / s)
    norm = math.sqrt(sum(c * c for c in q))
    sign = -1.0 if q[3] < 0.0 else 1.0
    x, y, z, w = (sign * c / norm for c in q)
    return (x, y, z, w)


# Saturated albedos, one colour per shape so a colour detector alone can name each object.
PALETTE: dict[str, tuple[int, int, int]] = {
    "red": (215, 25, 25),
    "blue": (25, 60, 215),
    "green": (30, 185, 45),
    "yellow": (230, 205, 20),
    "orange": (240, 120, 10),
    "purple": (140, 40, 200),
}

# (colour, shape, centre xy, size): boxes give (dx, dy, dz); balls and cylinders (diameter, height).
_LAYOUT: tuple[tuple[str, str, tuple[float, float], tuple[float, ...]], ...] = (
    ("red", "ball", (3.20, 0.42), (0.30,)),
    ("red", "ball", (5.40, -0.75), (0.32,)),
    ("blue", "box", (4.60, 1.80), (0.36, 0.36, 0.36)),
    ("blue", "box", (2.15, -0.85), (0.30, 0.30, 0.34)),
    ("blue", "box", (5.70, 0.40), (0.40, 0.30, 0.50)),
    ("green", "cylinder", (3.05, -0.75), (0.24, 0.55)),
    ("green", "cylinder", (4.20, 2.30), (0.22, 0.45)),
    ("yellow", "box", (1.90, 0.55), (0.30, 0.30, 0.30)),
    ("orange", "ball", (4.60, -0.10), (0.36,)),
    ("purple", "cylinder", (5.90, -0.62), (0.30, 0.65)),
)

# Room interior bounds (metres, world frame) and its desaturated surface colours.
ROOM_LO = (-1.0, -2.5, 0.0)
ROOM_HI = (7.2, 2.6, 2.6)
_WALL = 0.1


def _objects() -> tuple[SceneObject, ...]:
    objects = []
    for i, (color, shape, (x, y), dims) in enumerate(_LAYOUT):
        if shape == "box":
            size = (dims[0], dims[1], dims[2])
        elif shape == "ball":
            size = (dims[0], dims[0], dims[0])
        else:
            size = (dims[0], dims[0], dims[1])
        # Every object rests on the floor (z = 0).
        objects.append(SceneObject(i, color, shape, PALETTE[color], (x, y, size[2] / 2), size))
    return tuple(objects)


def _room() -> tuple[Slab, ...]:
    (x0, y0, z0), (x1, y1, z1) = ROOM_LO, ROOM_HI
    w = _WALL
    return (
        Slab("floor", (150, 146, 140), (x0 - w, y0 - w, z0 - w), (x1 + w, y1 + w, z0)),
        Slab("ceiling", (222, 220, 214), (x0 - w, y0 - w, z1), (x1 + w, y1 + w, z1 + w)),
        Slab("wall_front", (200, 190, 172), (x1, y0 - w, z0), (x1 + w, y1 + w, z1)),
        Slab("wall_back", (196, 192, 184), (x0 - w, y0 - w, z0), (x0, y1 + w, z1)),
        Slab("wall_left", (188, 182, 170), (x0, y1, z0), (x1, y1 + w, z1)),
        Slab("wall_right", (204, 198, 186), (x0, y0 - w, z0), (x1, y0, z1)),
    )


def rig_camera() -> CameraModel:
    """The reference rig's front camera: 1280×720 equidistant fisheye (Go2 + Mid-360 recordings).

    ``K`` is the rig's recorded calibration; its ``D`` is not published, so these are moderate
    equidistant coefficients of the same order as the sample's (corner rays ≈ 55° off axis).
    """
    K = np.array([[797.48, 0.0, 643.54], [0.0, 796.49, 349.28], [0.0, 0.0, 1.0]])
    D = np.array([0.042, -0.011, 0.0031, -0.0006])
    return CameraModel(width=1280, height=720, K=K, D=D, K_rect=K.copy())


def sample_camera() -> CameraModel:
    """The sample's 640×480 equidistant fisheye camera."""
    K = np.array([[402.0, 0.0, 321.5], [0.0, 399.5, 238.75], [0.0, 0.0, 1.0]])
    D = np.array([0.065, -0.018, 0.0052, -0.0011])
    # K_rect = K: rectified images keep the focal length and principal point, so a reader that
    # ignores P still rectifies correctly; the crop this costs is only the fisheye's outer rim.
    return CameraModel(width=640, height=480, K=K, D=D, K_rect=K.copy())


# The optical frame in base_link axes: optical z = base x, optical x = −base y, optical y = −base z.
_BASE_FROM_OPTICAL_LEVEL = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])


# The rig's mounts, shared by the sample and seeded scenes: camera 5° nose down in the Go2's head,
# Mid-360 pitched 28° down so its −7°…+52° field reaches the floor ahead.
CAMERA_PITCH_RAD = math.radians(5.0)
LIDAR_PITCH_RAD = math.radians(28.0)
BASE_FROM_CAMERA = homogeneous(rot_y(CAMERA_PITCH_RAD) @ _BASE_FROM_OPTICAL_LEVEL,
                               (0.28, 0.0, 0.10))
BASE_FROM_LIDAR = homogeneous(rot_y(LIDAR_PITCH_RAD), (0.14, 0.0, 0.12))
BASE_HEIGHT_M = 0.30
# The sample's LiDAR rings: even 1.25° rings from −7° to +33°: with the 28° pitch that is 35° below
# to 5° above the horizon ahead, from the floor 0.6 m away to the far objects' tops. Three sparse
# rings above see the ceiling. Uneven spacing across one object would bias its median range.
RING_ELEVATIONS_DEG = np.concatenate([np.linspace(-7.0, 33.0, 33), [40.0, 46.0, 52.0]])
RING_AZIMUTH_STEP_DEG = 1.2


def sample_scene(frames: int = 24, t0: float = 1_700_000_000.0) -> Scene:
    """The bundled sample scene for a recording of ``frames`` images at 2 Hz starting near ``t0``.

    The path is fixed geometry (a 2.4 m gentle left arc) traversed in ``0.5 * frames + 0.5`` s, so
    the default 24 frames move the robot at ≈0.19 m/s and never into an object.
    """
    if frames < 1:
        raise ValueError(f"frames must be at least 1, got {frames}; pass --frames N with N ≥ 1")
    return Scene(
        objects=_objects(),
        room=_room(),
        camera=sample_camera(),
        base_from_camera=BASE_FROM_CAMERA.copy(),
        base_from_lidar=BASE_FROM_LIDAR.copy(),
        path=Path2D(
            start_xy=(0.0, 0.05),
            start_yaw=math.radians(-6.0),
            length=2.4,
            yaw_change=math.radians(16.0),
            t_start=t0,
            t_end=t0 + 0.5 * frames + 0.5,
            base_height=BASE_HEIGHT_M,
        ),
        lidar_elevations_deg=RING_ELEVATIONS_DEG.copy(),
        lidar_azimuth_step_deg=RING_AZIMUTH_STEP_DEG,
    )
