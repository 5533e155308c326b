"""Chance-adjusted accuracy (CAA): accuracy with the credit a blind guess gets taken out.

Families have 2, 3, 4 or more choices, so raw accuracy over-credits the easy formats: a coin flip
scores 50 % on yes/no and 25 % on four choices. SITE (arXiv 2505.05456) reports, over N choice
cases where case i has n_i choices and X_i = 1 when it was answered right,

    CAA = (sum X_i - sum 1/n_i) / (N - sum 1/n_i)

0 is a uniform random guess (in expectation), 1 every case right, below 0 worse than guessing.
This is VLMEvalKit's ``spatial_bench/cal_scores.py`` ``compute_caa_score``, with one difference
on purpose: with no case it is None (null, n/a), not 0, as every empty denominator here is.
(With at least two choices per case the denominator is at least N / 2, so only N = 0 empties it.)

With ``chance = sum 1/n_i / N`` (the leaderboard's ``chance`` column: the mean of 1 / number of
choices) and ``accuracy = sum X_i / N`` it is ``(accuracy - chance) / (1 - chance)``, which is how
the leaderboard computes it from a row's accuracy and chance.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["chance_adjusted_accuracy", "chance_adjusted_from_rates"]


def chance_adjusted_accuracy(correct: Sequence[bool | int], n_choices: Sequence[int]
                             ) -> float | None:
    """SITE's CAA of cases answered ``correct[i]`` out of ``n_choices[i]`` choices; None: no case.

    Raises ``ValueError`` when the sequences differ in length or a case has fewer than 2 choices.
    """
    if len(correct) != len(n_choices):
        raise ValueError(f"correct and n_choices must have one entry per case; got "
                         f"{len(correct)} and {len(n_choices)}")
    few = [n for n in n_choices if n < 2]
    if few:
        raise ValueError(f"a choice case has at least 2 choices; got n_choices {few[:5]!r}")
    n = len(correct)
    if n == 0:
        return None
    hits = sum(1 for x in correct if x)
    guess = math.fsum(1.0 / k for k in n_choices)
    return (hits - guess) / (n - guess)


def chance_adjusted_from_rates(accuracy: float | None, chance: float | None) -> float | None:
    """CAA from a group's accuracy and its mean 1 / number of choices; None when either is
    missing (None or NaN) or chance is not below 1 (no choice to get wrong)."""
    if accuracy is None or chance is None or math.isnan(accuracy) or math.isnan(chance):
        return None
    if chance >= 1.0:
        return None
    return (accuracy - chance) / (1.0 - chance)
