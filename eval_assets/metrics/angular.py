"""Angles: the mean angular accuracy of a predicted direction against the true one.

No peer benchmark has one (OSI-Bench scores angles with plain MRA, which ignores that 350° and
−10° are the same direction), so the definition is ours (``shared/specs/motion.md``, "Scoring"):
with ``d`` the absolute difference wrapped into [0°, 180°], the mean over the ten tolerances
t ∈ {5°, 10°, …, 50°} of 1[d ≤ t]. It is MRA's shape (a mean of pass/fail over graded
tolerances) with absolute tolerances, since a relative error of an angle has no meaning (the
truth may be 0°).
"""

from __future__ import annotations

import math

__all__ = ["ANGULAR_TOLERANCES_DEG", "angular_difference", "mean_angular_accuracy",
           "wrap_degrees"]

# 5°, 10°, ... 50°: integers, so d <= t has no float artefact at the grid points.
ANGULAR_TOLERANCES_DEG: tuple[int, ...] = tuple(range(5, 55, 5))


def _finite(value: float, name: str) -> float:
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number of degrees, got {value!r}")
    return value


def angular_difference(a_deg: float, b_deg: float) -> float:
    """``|a − b|`` wrapped into [0°, 180°]: the smaller angle between the two directions."""
    d = abs(_finite(a_deg, "a_deg") - _finite(b_deg, "b_deg")) % 360.0
    return min(d, 360.0 - d)


def wrap_degrees(angle_deg: float) -> float:
    """``angle_deg`` wrapped into (−180°, 180°] (180° stays 180°, −180° becomes 180°)."""
    wrapped = math.fmod(_finite(angle_deg, "angle_deg"), 360.0)
    if wrapped > 180.0:
        wrapped -= 360.0
    elif wrapped <= -180.0:
        wrapped += 360.0
    return wrapped


def mean_angular_accuracy(pred_deg: float, truth_deg: float) -> float:
    """The share of the tolerances 5°, 10°, … 50° within which ``pred_deg`` lies of
    ``truth_deg``, the difference wrapped into [0°, 180°] (so 350° against −10° scores 1)."""
    d = angular_difference(pred_deg, truth_deg)
    return sum(1 for t in ANGULAR_TOLERANCES_DEG if d <= t) / len(ANGULAR_TOLERANCES_DEG)
