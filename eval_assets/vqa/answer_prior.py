"""A question family's answer prior: the bias audit's family-level check
(:mod:`eval_assets.vqa.bias`).

A family can be guessable as a whole though no case reaches the threshold: a
four-choice family whose gold is 53 % one answer gives each case a bias score near 0.53, never
flagged at 0.8, while answering that one answer everywhere scores 53 % against a chance of 25 %.
So per family: its most common gold answer (``majority_answer``; a numeric family's median), what
answering it on every case scores (``prior_score``: its share, or the median's mean score by the
family's rule), and, for a choice family, the ``chance`` (the mean of 1 / number of choices).
A choice family is **prior-flagged** when prior_score - chance > :data:`PRIOR_MARGIN` (0.10:
ten points a blind guesser gets for free) and the 95 % Wilson interval of the share lies above the
chance (so a family of 8 cases with 3 alike is not flagged on noise). A numeric family has no
chance level to compare with and is never prior-flagged; its median's score is shown (it is the
zero point of the prior-free headline, :mod:`eval_assets.metrics.headline`, which no such prior
moves).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

__all__ = ["PRIOR_MARGIN", "family_prior"]

# A choice family whose most common gold answer scores more than this above chance (and
# significantly above it) is flagged as guessable from the answer prior.
PRIOR_MARGIN = 0.10
# Written with this many decimals, as the audit's scores (eval_assets.vqa.bias.DECIMALS).
_DECIMALS = 4


class PriorCase(Protocol):
    """What the prior reads of a case (:class:`eval_assets.vqa.bias.BiasCase` has it): a
    protocol, so that the audit imports this module and not the other way round."""

    @property
    def family(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def choices(self) -> tuple[str, ...]: ...
    @property
    def unit(self) -> str | None: ...
    @property
    def answer(self) -> str: ...


def _round(value: float) -> float:
    return round(value, _DECIMALS)


def family_prior(cases: Sequence[PriorCase]) -> dict[str, Any]:
    """The answer prior of one family's cases (see the module docstring): ``majority_answer``,
    ``prior_score``, ``chance`` and ``prior_flagged``, as :class:`FamilyBias` fields."""
    from eval_assets.metrics.baselines import frequency_answer
    from eval_assets.metrics.stats import wilson_interval

    if cases[0].kind == "number":
        from eval_assets.metrics.numeric_rules import PARSER_UNITS, case_score

        median = float(np.median([float(c.answer) for c in cases]))
        prior = math.fsum(case_score(median, float(c.answer), c.family, PARSER_UNITS[c.unit])
                          for c in cases) / len(cases)
        return {"majority_answer": f"{median:g}", "prior_score": _round(prior), "chance": None,
                "prior_flagged": False}
    answer = frequency_answer([c.answer for c in cases])
    hits = sum(1 for c in cases if c.answer == answer)
    share = hits / len(cases)
    chance = math.fsum(1.0 / len(c.choices) for c in cases if c.choices) / len(cases)
    low, _ = wilson_interval(hits, len(cases))
    return {"majority_answer": answer, "prior_score": _round(share), "chance": _round(chance),
            "prior_flagged": bool(share - chance > PRIOR_MARGIN and low > chance)}
