"""Which rule scores a numeric case of a family, and the score of one parsed prediction.

The rules are VSI-Bench's MRA, OSI-Bench's zero rule for a distance whose truth may be 0, and
mean angular accuracy for degrees; which one a family takes comes from its declaration
(:mod:`eval_assets.family_spec`). The numeric metric, the baselines and the bias audit score
with these, so a prediction is scored the same everywhere.
"""

from __future__ import annotations

from typing import Literal

from eval_assets.family_spec import families
from eval_assets.family_spec import family as declared_family
from eval_assets.metrics.angular import mean_angular_accuracy
from eval_assets.metrics.numeric import (
    UNITS,
    ZERO_TRUTH_TOLERANCE_M,
    mean_relative_accuracy,
    mra_with_zero_rule,
)

# A spatial label's unit (schemas.spatial.Unit) as the parser names it; None: a count.
PARSER_UNITS: dict[str | None, str | None] = {"cm": "cm", "m": "m", "m2": "m²", "deg": "deg",
                                              None: None}


def zero_rule_families() -> frozenset[str]:
    """Distances whose truth may be 0 (the camera did not move), scored by OSI-Bench's zero
    rule: the families declared with ``zero_rule`` (:mod:`eval_assets.family_spec`)."""
    return frozenset(s.name for s in families() if s.zero_rule)


def magnitude_angle_families() -> frozenset[str]:
    """Angles asked as a size ("by how many degrees did the camera turn"), a reply's sign or
    direction not part of the answer: the families declared with ``magnitude``."""
    return frozenset(s.name for s in families() if s.magnitude)


def _declared(family: str, fact: str) -> bool:
    spec = declared_family(family)
    return spec is not None and bool(getattr(spec, fact))

ScoredBy = Literal["mra", "mra_zero_rule", "angular"]


def scored_by(family: str, unit: str | None) -> ScoredBy:
    """The rule that scores a case of ``family`` asked in ``unit`` (a parser unit)."""
    if unit is not None and UNITS[unit][0] == "angle":
        return "angular"
    if _declared(family, "zero_rule") and unit is not None and UNITS[unit][0] == "length":
        return "mra_zero_rule"
    return "mra"


def case_score(predicted: float, target: float, family: str, unit: str | None) -> float:
    """The score of one parsed prediction, both in ``unit``, by :func:`scored_by`'s rule."""
    rule = scored_by(family, unit)
    if rule == "angular":
        return mean_angular_accuracy(predicted, target)
    if rule == "mra_zero_rule":
        assert unit is not None
        return mra_with_zero_rule(predicted, target, ZERO_TRUTH_TOLERANCE_M / UNITS[unit][1])
    return mean_relative_accuracy(predicted, target)
