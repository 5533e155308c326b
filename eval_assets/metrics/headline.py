"""The headline: the mean over question families, each family weighing the same (VSI-Bench's
"overall"), so a large family (presence: 58% of today's sample) does not make the headline its own.

Each family brings its score (accuracy for choice families, mean relative accuracy for numeric
ones), its case count and, when known, its 95% interval. Definitions:

- **Minimum n**: a family with fewer than ``min_n`` cases (:data:`MIN_FAMILY_N`, the report's
  "read as an anecdote" bound) is shown but left out of the mean (``FamilyMean.left_out``).
  Each family weighs 1/F of the mean whatever its n, so a family of 3 cases would move the
  headline by up to 1/F on a coin flip: two copies of one random guesser that differ only in
  their seed scored 29.9 % and 20.1 % on the demo before this rule (issue 30).
- **Family mean** = the unweighted mean of the scores of the F families with at least ``min_n``
  cases. None when no family has that many (the report then ranks on pooled accuracy).
- **Interval**: a normal interval around the mean, ``mean +- z * se`` clipped to [0, 1], with
  ``se = sqrt(sum(se_f^2)) / F`` over the F families and ``se_f`` = the *larger* side of family
  f's own 95% interval (``max(score - low, high - score)``) / z. For accuracy that interval is
  the frame-clustered Wilson interval (the frame design effect is in it; its width is never 0
  even at 0 % or 100 %); Wilson intervals are lopsided near 0 and 1, and their larger side
  keeps a family's uncertainty whole where half the width would shrink it. It treats the
  families as independent (they share frames, so it can be somewhat narrow). None when a
  family in the mean has no interval (the mean is still given).

Families without cases are not counted anywhere.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from eval_assets.metrics.stats import MIN_RELIABLE_N, WILSON_Z

__all__ = ["MIN_FAMILY_N", "FamilyMean", "FamilyScore", "ScoreKind", "family_mean"]

# Families with fewer cases are shown but not in the mean: the bound under which the report
# already fades a family's accuracy as an anecdote (its interval spans tens of points).
MIN_FAMILY_N = MIN_RELIABLE_N

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
    left_out: list[FamilyScore] = Field(
        default_factory=list, description="families with cases but fewer than min_n: shown "
                                          "beside the mean, not in it")
    min_n: int = Field(default=MIN_FAMILY_N, description="the least cases of a family in the mean")


def _half_width(score: FamilyScore) -> float | None:
    """The larger side of the family's interval around its score; None without an interval."""
    if score.ci_low is None or score.ci_high is None or score.score is None:
        return None
    if math.isnan(score.ci_low) or math.isnan(score.ci_high):
        return None
    return max(score.score - score.ci_low, score.ci_high - score.score, 0.0)


def family_mean(scores: Sequence[FamilyScore], z: float = WILSON_Z,
                min_n: int = MIN_FAMILY_N) -> FamilyMean | None:
    """The mean over the families of ``scores`` with at least ``min_n`` cases; None when none
    has that many.

    Families with cases but fewer than ``min_n`` are returned in ``left_out``. Families keep
    their given order in the result. Raises ``ValueError`` when a family is named twice (it
    would weigh double) or ``min_n`` < 1.
    """
    if min_n < 1:
        raise ValueError(f"min_n must be >= 1 (a family without cases has no score), got {min_n}")
    names = [s.family for s in scores]
    if len(set(names)) != len(names):
        raise ValueError(f"each family must appear once, got {names!r}")
    scored = [s for s in scores if s.n > 0 and s.score is not None and not math.isnan(s.score)]
    used = [s for s in scored if s.n >= min_n]
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
                      n_cases=sum(s.n for s in used), families=list(used),
                      left_out=[s for s in scored if s.n < min_n], min_n=min_n)
