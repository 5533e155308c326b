"""The headline: the mean over question families, each family weighing the same (VSI-Bench's
"overall"), so a large family (presence: 58% of today's sample) does not make the headline its own.

Each family brings its score (accuracy for choice families, mean relative accuracy for numeric
ones), its case count and, when known, its 95% interval. Definitions:

- **Family mean** = the unweighted mean of the scores of the families with at least one case.
- **Interval**: a normal interval around the mean, ``mean +- z * se`` clipped to [0, 1], with
  ``se = sqrt(sum(se_f^2)) / F`` over the F families and ``se_f`` = half the width of family f's
  own 95% interval / z (for accuracy: the frame-clustered Wilson interval, so the frame design
  effect is in it, and the Wilson width is never 0 even at 0% or 100%). It treats the families
  as independent (they share frames, so it can be somewhat narrow). None when a family has no
  interval (the mean is still given).

Families without cases are left out and not counted; an empty set of families has no mean.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from eval_assets.metrics.stats import WILSON_Z

__all__ = ["FamilyMean", "FamilyScore", "ScoreKind", "family_mean"]

ScoreKind = Literal["accuracy", "mra"]


class FamilyScore(BaseModel):
    """One family's score on a case set: accuracy (choice) or mean relative accuracy (number)."""

    model_config = ConfigDict(frozen=True)

    family: str
    kind: ScoreKind = "accuracy"
    score: float | None = Field(description="None when the family has no case")
    ci_low: float | None = None
    ci_high: float | None = None
    n: int


class FamilyMean(BaseModel):
    """The unweighted mean over families, with its interval and the families it is over."""

    model_config = ConfigDict(frozen=True)

    mean: float
    ci_low: float | None
    ci_high: float | None
    n_families: int
    n_cases: int
    families: list[FamilyScore]


def _half_width(score: FamilyScore) -> float | None:
    if score.ci_low is None or score.ci_high is None:
        return None
    if math.isnan(score.ci_low) or math.isnan(score.ci_high):
        return None
    return (score.ci_high - score.ci_low) / 2


def family_mean(scores: Sequence[FamilyScore], z: float = WILSON_Z) -> FamilyMean | None:
    """The mean over the families of ``scores`` that have cases; None when none has.

    Families keep their given order in the result. Raises ``ValueError`` when a family is
    named twice (it would weigh double).
    """
    names = [s.family for s in scores]
    if len(set(names)) != len(names):
        raise ValueError(f"each family must appear once, got {names!r}")
    used = [s for s in scores if s.n > 0 and s.score is not None and not math.isnan(s.score)]
    if not used:
        return None
    count = len(used)
    mean = math.fsum(s.score for s in used if s.score is not None) / count
    halves = [_half_width(s) for s in used]
    low = high = None
    if all(h is not None for h in halves):
        se = math.sqrt(math.fsum((h / z) ** 2 for h in halves if h is not None)) / count
        low, high = max(0.0, mean - z * se), min(1.0, mean + z * se)
    return FamilyMean(mean=mean, ci_low=low, ci_high=high, n_families=count,
                      n_cases=sum(s.n for s in used), families=list(used))
