"""The camera's TF trajectory: poses, path and turn at any stamp, and the route cut into runs.

The motion families (:mod:`eval_assets.vqa.spatial.motion`) ask about it; the truth check
(:mod:`eval_assets.vqa.spatial.truth`) recomputes it from the synthesizer's scene.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from eval_assets.vqa.spatial.evidence import TrackIndex

# Route: straight runs of at least RUN_MIN_M whose heading stays within RUN_MAX_TURN_DEG, and
# turns of at least ROUTE_TURN_DEG. A TF step turning faster than TURN_RATE_DEG_S is part of a
# turn; one moving slower than STILL_MPS (and not turning) is standing still. A straight run goes
# forward: its displacement along the heading is at least FORWARD_SHARE of its length.
RUN_MIN_M = 0.5
RUN_MAX_TURN_DEG = 15.0
ROUTE_TURN_DEG = 45.0
TURN_RATE_DEG_S = 10.0
STILL_MPS = 0.03
FORWARD_SHARE = 0.8
# A frame's pose needs TF samples on both sides within this many seconds (else a TF gap), and
# steady motion around it: its TF step and the neighbouring ones alike within these.
MAX_TF_GAP_S = 0.5
STEADY_DEG = 0.5
STEADY_M = 0.005

def wrap_deg(angle: float) -> float:
    """``angle`` wrapped into (-180, 180]."""
    out = math.fmod(angle, 360.0)
    if out <= -180.0:
        out += 360.0
    elif out > 180.0:
        out -= 360.0
    return out


@dataclass(frozen=True)
class Pose:
    """A shown frame's camera: optical centre ``p`` (metres) and heading ``psi`` (degrees, CCW)."""

    frame: int
    t: float
    p: tuple[float, float, float]
    psi: float


class Motion:
    """The camera's TF trajectory of one recording, with poses, path and turn at any stamp.

    ``times`` are the TF samples' stamps; ``cum_path`` the distance travelled up to each sample,
    ``cum_turn`` the signed turn (sum of wrapped yaw steps) up to each sample. Between samples
    the camera moves linearly, so both are interpolated linearly as well.
    """

    def __init__(self, times: np.ndarray, positions: np.ndarray, yaws: np.ndarray) -> None:
        """From the trajectory's stamps, optical centres (n × 3) and headings (degrees)."""
        self.times = times
        self.positions = positions
        steps = np.array([wrap_deg(float(d)) for d in np.diff(yaws)])
        self.cum_turn = np.concatenate([[0.0], np.cumsum(steps)]) + float(yaws[0] if len(yaws)
                                                                          else 0.0)
        self.cum_path = np.concatenate(
            [[0.0], np.cumsum(np.linalg.norm(np.diff(positions, axis=0), axis=1))])

    @classmethod
    def of(cls, index: TrackIndex) -> Motion:
        """The trajectory the tracks file carries (empty for a file written before it did)."""
        samples = sorted(index.tracks.trajectory, key=lambda s: s.t)
        return cls(np.array([s.t for s in samples], dtype=np.float64),
                   np.array([s.position for s in samples], dtype=np.float64).reshape(-1, 3),
                   np.array([s.yaw_deg for s in samples], dtype=np.float64))

    def covers(self, t: float) -> bool:
        """Whether ``t`` lies between two TF samples at most :data:`MAX_TF_GAP_S` apart."""
        if len(self.times) < 2 or not self.times[0] <= t <= self.times[-1]:
            return False
        i = int(np.searchsorted(self.times, t))
        lo, hi = max(i - 1, 0), min(i, len(self.times) - 1)
        return bool(self.times[hi] - self.times[lo] <= MAX_TF_GAP_S)

    def steady(self, t: float) -> bool:
        """Whether the camera moved uniformly around ``t``: the TF step containing it and the
        steps on either side differ by at most :data:`STEADY_DEG` / :data:`STEADY_M`. Where a
        turn or a run starts or ends between two samples, the interpolated pose can be off by
        half a step (2° at 45°/s and 10 Hz), so such a frame is not used."""
        i = int(np.searchsorted(self.times, t, side="right")) - 1
        if i < 1 or i + 2 >= len(self.times):
            return False
        yaw = np.diff(self.cum_turn[i - 1:i + 3])
        step = np.diff(self.positions[i - 1:i + 3], axis=0)
        return bool(np.ptp(yaw) <= STEADY_DEG
                    and np.max(np.linalg.norm(step - step.mean(axis=0), axis=1)) <= STEADY_M)

    def pose(self, frame: int, t: float) -> Pose:
        """The camera at stamp ``t`` (interpolated between the samples around it)."""
        p = tuple(float(np.interp(t, self.times, self.positions[:, k])) for k in range(3))
        return Pose(frame, t, (p[0], p[1], p[2]), wrap_deg(float(np.interp(t, self.times,
                                                                             self.cum_turn))))

    def path(self, a: float, b: float) -> float:
        """Distance travelled between stamps ``a`` and ``b``, over every TF sample between."""
        return float(np.interp(b, self.times, self.cum_path) -
                     np.interp(a, self.times, self.cum_path))

    def turn(self, a: float, b: float) -> float:
        """Signed total turn (degrees, left positive) between stamps ``a`` and ``b``."""
        return float(np.interp(b, self.times, self.cum_turn) -
                     np.interp(a, self.times, self.cum_turn))

    def steps(self, a: float, b: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(times, positions, cumulative turn)`` at ``a``, every sample between, and ``b``."""
        inner = (self.times > a) & (self.times < b)
        times = np.concatenate([[a], self.times[inner], [b]])
        positions = np.stack([np.interp(times, self.times, self.positions[:, k])
                              for k in range(3)], axis=1)
        return times, positions, np.interp(times, self.times, self.cum_turn)


@dataclass(frozen=True)
class Run:
    """A stretch of the route: a straight ``forward`` run or a turn."""

    move: str
    length_m: float
    turn_deg: float
    clean: bool
    why: str = ""


def route(motion: Motion, a: float, b: float) -> list[Run]:
    """The TF path between stamps ``a`` and ``b`` cut into runs (stands still are dropped).

    A step turning faster than :data:`TURN_RATE_DEG_S` belongs to a turn (consecutive turning
    steps of one sign are one turn), else one moving faster than :data:`STILL_MPS` to a straight
    run; a stop between two runs of one kind joins them. Each run says whether it is clean: a
    turn of at least :data:`ROUTE_TURN_DEG`, a forward run of at least :data:`RUN_MIN_M` whose
    heading stays within :data:`RUN_MAX_TURN_DEG`.
    """
    times, positions, turn = motion.steps(a, b)
    kinds: list[str] = []
    for k in range(len(times) - 1):
        dt = max(float(times[k + 1] - times[k]), 1e-9)
        dpsi = float(turn[k + 1] - turn[k])
        ds = float(np.linalg.norm(positions[k + 1] - positions[k]))
        if abs(dpsi) / dt >= TURN_RATE_DEG_S:
            kinds.append("turn left" if dpsi > 0 else "turn right")
        elif ds / dt >= STILL_MPS:
            kinds.append("forward")
        else:
            kinds.append("still")
    runs: list[Run] = []
    moving = [(kind, k) for k, kind in enumerate(kinds) if kind != "still"]
    for move, group in itertools.groupby(moving, key=lambda item: item[0]):
        idx = [k for _, k in group]
        first, last = idx[0], idx[-1] + 1
        if move == "forward":
            step = np.linalg.norm(np.diff(positions[first:last + 1], axis=0), axis=1)
            kept = np.array([i for i in range(first, last) if kinds[i] == "forward"]) - first
            length = float(np.sum(step[kept]))
            heading = turn[first:last + 1]
            swing = float(np.max(heading) - np.min(heading))
            psi = math.radians(float(turn[first]))
            ahead = float(np.dot(positions[last, :2] - positions[first, :2],
                                 [math.cos(psi), math.sin(psi)]))
            why = ("short" if length < RUN_MIN_M else "curved" if swing >= RUN_MAX_TURN_DEG
                   else "not_forward" if ahead < FORWARD_SHARE * length else "")
            runs.append(Run(move, length, swing, not why, why))
        else:
            angle = float(sum(turn[i + 1] - turn[i] for i in range(first, last)
                              if kinds[i] == move))
            why = "small_turn" if abs(angle) < ROUTE_TURN_DEG else ""
            runs.append(Run(move, 0.0, angle, not why, why))
    return runs
