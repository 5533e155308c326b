"""Numeric answers: VSI-Bench's Mean Relative Accuracy, OSI-Bench's rule for a truth of
(nearly) zero, the absolute relative error, and the reply parser
(:mod:`eval_assets.metrics.numeric_reply`, re-exported here).

``mean_relative_accuracy`` is VSI-Bench's (vision-x-nyu/thinking-in-space,
``lmms_eval/tasks/vsibench/utils.py``) with its defaults start .5, end .95, interval .05: the
share of the confidence thresholds ``np.linspace(start, end, int((end - start) / interval + 2))``
at which ``|pred - gt| / gt <= 1 - threshold``. The float arithmetic is the reference's, its
artefacts included: ``(0.95 - 0.5) / 0.05`` is 8.999..., so there are 10 thresholds, and
whether an error of "exactly" 5% passes the 0.95 threshold depends on how ``|pred - gt| / gt``
and ``1 - 0.95`` round.

MRA divides by the truth, so it cannot score a truth of 0 (a camera that did not move).
:func:`mra_with_zero_rule` is OSI-Bench's rule for it (``lmms_eval/tasks/osi_bench/utils.py``,
``calculate_mra_with_threshold``, τ = 0.30 m for displacements): a prediction below τ scores 1,
any other is scored by MRA against τ.
"""

from __future__ import annotations

import math

import numpy as np

from eval_assets.metrics.numeric_reply import (
    UNITS,
    ParsedNumber,
    Unparseable,
    parse_numeric_reply,
    read_numeric_reply,
)

__all__ = [
    "UNITS",
    "ZERO_TRUTH_TOLERANCE_M",
    "ParsedNumber",
    "Unparseable",
    "abs_dist_norm",
    "absolute_relative_error",
    "mean_relative_accuracy",
    "mra_with_zero_rule",
    "parse_numeric_reply",
    "read_numeric_reply",
]

# OSI-Bench's τ for displacements and speeds: a distance this small is "did not move".
ZERO_TRUTH_TOLERANCE_M = 0.30

def abs_dist_norm(pred: float, target: float) -> float:
    """``|pred - target| / target`` (the reference's name and arithmetic)."""
    return abs(pred - target) / target


def mean_relative_accuracy(pred: float, target: float, start: float = 0.5, end: float = 0.95,
                           interval: float = 0.05) -> float:
    """VSI-Bench's MRA of one prediction: the mean over the confidence thresholds of
    ``abs_dist_norm(pred, target) <= 1 - threshold``."""
    num_pts = (end - start) / interval + 2
    conf_intervs = np.linspace(start, end, int(num_pts))
    accuracy = abs_dist_norm(pred, target) <= 1 - conf_intervs
    return float(accuracy.mean())


def absolute_relative_error(pred: float, target: float) -> float:
    """``|pred - target| / |target|``: how far off, as a share of the truth."""
    return abs(pred - target) / abs(target)


def mra_with_zero_rule(pred: float, target: float, tolerance: float = ZERO_TRUTH_TOLERANCE_M
                       ) -> float:
    """MRA with OSI-Bench's rule for a truth of zero, in the unit of ``tolerance`` (τ).

    Where ``target`` is below τ, a prediction in [0, τ) scores 1 and any other is scored by MRA
    against τ; elsewhere this is :func:`mean_relative_accuracy`. Two deliberate departures from
    OSI-Bench's code, both from ``shared/specs/motion.md``: the rule holds for every truth below
    τ, not only for exactly 0 (our generated truths are 0 or at least 0.5 m, so the two agree on
    them), and a negative prediction is no "nearly zero" distance (OSI scores any pred < τ 1).
    """
    if not (math.isfinite(tolerance) and tolerance > 0):
        raise ValueError(f"tolerance must be a positive number, got {tolerance!r}")
    if not (math.isfinite(target) and target >= 0):
        raise ValueError(f"a distance truth must be a finite number >= 0, got {target!r}")
    if target >= tolerance:
        return mean_relative_accuracy(pred, target)
    if 0 <= pred < tolerance:
        return 1.0
    return mean_relative_accuracy(pred, tolerance)
