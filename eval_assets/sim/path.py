"""The husky's drive: straight runs, left and right arcs and stops, at constant speed.

Both paths come back over their first straight at the end (a revisit: objects seen at the start
are seen again from the same side), turn both ways and stop once, so the motion question
families (turns, stops, revisits from TF) have something to find.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from eval_assets.sim.catalog import SimConfigError

SPEED_M_S = 0.5


@dataclass(frozen=True)
class Segment:
    """``kind``: ``"straight"`` (``length`` m), ``"arc"`` (``angle_deg`` > 0 left, < 0 right, at
    ``radius`` m) or ``"stop"`` (``seconds``)."""

    kind: str
    length: float = 0.0
    angle_deg: float = 0.0
    radius: float = 0.0
    seconds: float = 0.0

    @property
    def duration(self) -> float:
        """Seconds to drive (or wait through) this segment."""
        if self.kind == "stop":
            return self.seconds
        if self.kind == "arc":
            return abs(math.radians(self.angle_deg)) * self.radius / SPEED_M_S
        return self.length / SPEED_M_S


def _s(length: float) -> Segment:
    return Segment("straight", length=length)


def _arc(angle_deg: float, radius: float) -> Segment:
    return Segment("arc", angle_deg=angle_deg, radius=radius)


PATHS: dict[str, tuple[Segment, ...]] = {
    # A rounded rectangle driven anticlockwise, with a right-left jog on its far side and a stop,
    # ending on its first straight again.
    "loop": (_s(3.0), _arc(90, 1.0), _s(1.0), Segment("stop", seconds=3.0), _arc(90, 1.0),
             _s(1.0), _arc(-90, 0.5), _arc(90, 0.5), _arc(90, 1.0), _s(2.0), _arc(90, 1.0),
             _s(2.5)),
    # A figure of eight: a left lobe, a stop on the crossing straight, a right lobe, and the
    # first straight once more.
    "figure8": (_s(3.0), _arc(270, 1.5), _s(1.5), Segment("stop", seconds=3.0), _s(1.5),
                _arc(-270, 1.5), _s(3.0)),
}


@dataclass(frozen=True)
class DrivePath:
    """A sequence of segments from ``(0, 0)`` facing +x, starting at ``t_start``."""

    segments: tuple[Segment, ...]
    t_start: float

    @cached_property
    def _starts(self) -> list[tuple[float, float, float, float]]:
        """(t, x, y, yaw) at the start of every segment, and at the end."""
        out = [(0.0, 0.0, 0.0, 0.0)]
        for seg in self.segments:
            t, x, y, yaw = out[-1]
            x, y, yaw = _advance(seg, x, y, yaw, seg.duration)
            out.append((t + seg.duration, x, y, yaw))
        return out

    @property
    def duration(self) -> float:
        """Seconds from the first segment's start to the last one's end."""
        return self._starts[-1][0]

    def pose2d(self, t: float) -> tuple[float, float, float]:
        """(x, y, yaw) at epoch time ``t`` (standing still before the start and after the end)."""
        rel = min(max(t - self.t_start, 0.0), self.duration)
        for seg, (t0, x, y, yaw) in zip(self.segments, self._starts, strict=False):
            if rel <= t0 + seg.duration:
                return _advance(seg, x, y, yaw, rel - t0)
        _, x, y, yaw = self._starts[-1]
        return x, y, yaw

    def world_from_base(self, t: float) -> np.ndarray:
        """4×4 pose of the robot's base (on the floor, z = 0) at epoch time ``t``."""
        x, y, yaw = self.pose2d(t)
        c, s = math.cos(yaw), math.sin(yaw)
        m = np.eye(4)
        m[:2, :2] = [[c, -s], [s, c]]
        m[:2, 3] = (x, y)
        return m

    def samples(self, step_m: float = 0.05) -> np.ndarray:
        """(n, 2) xy points along the path, at most ``step_m`` apart (for clearance checks)."""
        n = max(2, math.ceil(self.duration * SPEED_M_S / step_m) + 1)
        ts = np.linspace(self.t_start, self.t_start + self.duration, n)
        return np.array([self.pose2d(float(t))[:2] for t in ts])


def _advance(seg: Segment, x: float, y: float, yaw: float,
             dt: float) -> tuple[float, float, float]:
    if seg.kind == "stop":
        return x, y, yaw
    d = SPEED_M_S * dt
    if seg.kind == "straight":
        return x + d * math.cos(yaw), y + d * math.sin(yaw), yaw
    sign = 1.0 if seg.angle_deg > 0 else -1.0
    dyaw = sign * d / seg.radius
    # Closed-form arc: the centre sits `radius` to the left (or right) of the heading.
    cx, cy = x - sign * seg.radius * math.sin(yaw), y + sign * seg.radius * math.cos(yaw)
    yaw2 = yaw + dyaw
    return cx + sign * seg.radius * math.sin(yaw2), cy - sign * seg.radius * math.cos(yaw2), yaw2


def drive_path(name: str, t_start: float) -> DrivePath:
    """The named path (``loop`` or ``figure8``) starting at ``t_start``."""
    if name not in PATHS:
        raise SimConfigError(f"unknown --path {name!r}; use one of {', '.join(PATHS)}")
    return DrivePath(PATHS[name], t_start)
