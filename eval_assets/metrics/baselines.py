"""Per-family baselines a model must beat before its family score means anything.

- **Frequency baseline**: a guesser that always gives the family's most common gold answer
  (ties broken by the answer's text, so it is deterministic); for a numeric family, the median
  of the gold numbers, scored with the family's own score (mean relative accuracy). It reads the
  labels only, never a model's answer.
- **Chance level (frequency)**, the same guesser as a row of the board (VSI-Bench's name):
  :func:`frequency_cases` answers every case of a case set with its family's most common gold
  answer (a numeric family's median), from the labels alone, so it is scored and ranked like any
  model. The prior-free headline (:mod:`eval_assets.metrics.headline`) scores it at the chance
  level exactly.
- **Blind baseline**: a model that never sees the image (the local ``blind-smollm2``: the
  question's language prior), scored like any model.

A model **beats** a baseline on a family when its score exceeds the baseline's on the same cases
by more than the minimum detectable difference (MDD) of that comparison: for 0/1 scores the
McNemar MDD of :func:`eval_assets.metrics.stats.paired_comparison` (frame design effect
included); for scores in [0, 1] that are not all 0/1 (MRA), the normal approximation
``(z_a + z_b) * sd(d) * sqrt(deff / n)`` of the paired differences d, deff the frame design
effect of d (floored at 1). A family where no model beats the better of its baselines is
flagged: its scores do not show image understanding.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import replace
from statistics import NormalDist

from pydantic import BaseModel, ConfigDict, Field

from eval_assets.metrics.headline import HeadlineCase
from eval_assets.metrics.numeric import mean_relative_accuracy
from eval_assets.metrics.numeric_rules import case_score
from eval_assets.metrics.stats import (
    ALPHA,
    POWER,
    cluster_sums,
    design_effect,
    paired_comparison,
)

__all__ = [
    "FREQUENCY_BASELINE",
    "BaselineComparison",
    "compare_to_baseline",
    "frequency_answer",
    "frequency_cases",
    "frequency_scores",
    "median_baseline",
]


# The frequency guesser's name on the board (VSI-Bench's "Chance Level (Frequency)"); it has
# spaces and parentheses, which no models.yaml partition key has.
FREQUENCY_BASELINE = "Chance level (frequency)"


def frequency_answer(answers: Sequence[str]) -> str:
    """The most common of ``answers``; ties go to the first in text order. Needs one answer."""
    if not answers:
        raise ValueError("a frequency baseline needs at least one gold answer")
    counts = Counter(answers)
    return min(counts, key=lambda a: (-counts[a], a))


def frequency_scores(answers: Sequence[str]) -> tuple[str, list[float]]:
    """The most common answer and, per case, 1.0 when it is the case's gold answer, else 0.0."""
    mode = frequency_answer(answers)
    return mode, [1.0 if a == mode else 0.0 for a in answers]


def median_baseline(targets: Sequence[float],
                    score: Callable[[float, float], float] = mean_relative_accuracy,
                    ) -> tuple[float, list[float]]:
    """The median of the gold numbers and each case's score of answering it (``score(pred,
    truth)``: VSI-Bench's MRA unless the family scores otherwise)."""
    if not targets:
        raise ValueError("a median baseline needs at least one gold number")
    median = float(statistics.median(targets))
    return median, [score(median, t) for t in targets]


def frequency_cases(cases: Sequence[HeadlineCase]) -> list[HeadlineCase]:
    """``cases`` answered by the frequency guesser: a choice case with its family's most common
    gold answer among the cases of its recording (``stratum``; ties by text; a case whose
    choices do not include it gets no choice, as a served guesser's reply naming another
    would), a numeric case with its family's median gold number in its recording, scored by
    the family's rule. Keys, frames and golds are kept."""
    golds: dict[tuple[Hashable, str], list[str]] = {}
    targets: dict[tuple[Hashable, str], list[float]] = {}
    for c in cases:
        if c.kind == "mra":
            targets.setdefault((c.stratum, c.family), []).append(
                c.target if c.target is not None else float(c.gold))
        else:
            golds.setdefault((c.stratum, c.family), []).append(c.gold)
    modes = {f: frequency_answer(answers) for f, answers in golds.items()}
    medians = {f: float(statistics.median(values)) for f, values in targets.items()}
    out = []
    for c in cases:
        if c.kind == "mra":
            median = medians[(c.stratum, c.family)]
            target = c.target if c.target is not None else float(c.gold)
            out.append(replace(c, number=median,
                               score=case_score(median, target, c.family, c.unit)))
        else:
            mode = modes[(c.stratum, c.family)]
            out.append(replace(c, predicted=mode if mode in c.choices or not c.choices
                               else None))
    return out


class BaselineComparison(BaseModel):
    """A model against a baseline on the same cases of one family."""

    model_config = ConfigDict(frozen=True)

    n: int
    score: float | None = Field(description="the model's mean score; None without cases")
    baseline: float | None
    difference: float | None = Field(description="score - baseline")
    mdd: float | None = Field(description="minimum detectable difference; None: not estimable")
    beats: bool = Field(description="difference > mdd (both known)")


def _continuous_mdd(keys: Sequence[Hashable], diffs: Sequence[float]) -> float | None:
    n = len(diffs)
    if n < 2:
        return None
    mean = math.fsum(diffs) / n
    variance = math.fsum((d - mean) ** 2 for d in diffs) / (n - 1)
    if variance <= 0:
        return None
    sums, sizes = cluster_sums(keys, diffs)
    deff = max(1.0, design_effect(sums, sizes, variance) or 1.0)
    z = NormalDist().inv_cdf(1 - ALPHA / 2) + NormalDist().inv_cdf(POWER)
    return z * math.sqrt(variance * deff / n)


def compare_to_baseline(keys: Sequence[Hashable], model: Sequence[float],
                        baseline: Sequence[float]) -> BaselineComparison:
    """``model`` against ``baseline``: per-case scores in [0, 1] on the same cases, ``keys`` the
    frame of each case (the cluster)."""
    if not len(keys) == len(model) == len(baseline):
        raise ValueError(f"keys, model and baseline scores must pair up: got {len(keys)}, "
                         f"{len(model)} and {len(baseline)}")
    n = len(model)
    if n == 0:
        return BaselineComparison(n=0, score=None, baseline=None, difference=None, mdd=None,
                                  beats=False)
    score, base = math.fsum(model) / n, math.fsum(baseline) / n
    if all(v in (0.0, 1.0) for v in (*model, *baseline)):
        mdd = paired_comparison("model", "baseline", keys, [v == 1.0 for v in model],
                                [v == 1.0 for v in baseline]).mdd
    else:
        mdd = _continuous_mdd(keys, [a - b for a, b in zip(model, baseline, strict=True)])
    difference = score - base
    return BaselineComparison(n=n, score=score, baseline=base, difference=difference, mdd=mdd,
                              beats=mdd is not None and difference > mdd)
