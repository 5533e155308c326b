"""The leaderboard's headline columns: a row's prior-free mean over families with its chance and
CAA (:mod:`eval_assets.metrics.headline`), and how far each pooled common row is above the best
blind baseline (:func:`eval_assets.metrics.headline.headline_difference`). The leaderboard
(:mod:`eval_assets.report.leaderboard`) builds the rows; these fill their headline part."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from eval_assets.metrics.headline import (
    FamilyScore,
    HeadlineCase,
    headline,
    headline_difference,
)

__all__ = ["headline_columns", "over_blind"]


def _nan_if_none(value: float | None) -> float:
    return math.nan if value is None else float(value)


def headline_columns(cases: Sequence[HeadlineCase],
                     scores: Mapping[str, FamilyScore]) -> dict[str, Any]:
    """The prior-free mean over the row's families (``cases``: dimOS's and the spatial ones,
    each family weighing the same; ``scores``: their records, :func:`score_families`) with its
    chance and CAA, and how many families are in it, left out under the minimum n, or
    uninformative; NaN without a family in the mean."""
    mean = headline(cases)
    uninformative = sum(1 for s in scores.values() if s.score is None)
    if mean is None:
        # No informative family reaches the minimum n: each informative one is left out.
        return {"family_mean": math.nan, "family_mean_ci_low": math.nan,
                "family_mean_ci_high": math.nan, "n_families": 0,
                "n_families_left_out": len(scores) - uninformative,
                "n_families_uninformative": uninformative, "headline_chance": math.nan,
                "caa": math.nan}
    return {"family_mean": mean.mean, "family_mean_ci_low": _nan_if_none(mean.ci_low),
            "family_mean_ci_high": _nan_if_none(mean.ci_high), "n_families": mean.n_families,
            "n_families_left_out": len(mean.left_out),
            "n_families_uninformative": len(mean.uninformative),
            "headline_chance": _nan_if_none(mean.chance), "caa": _nan_if_none(mean.caa)}


def over_blind(rows: Sequence[dict[str, Any]], cases: Mapping[str, Sequence[HeadlineCase]],
               baselines: Mapping[str, str]) -> None:
    """Fill each of the pooled common ``rows`` (one per model, with its ``cases``): its
    ``best_blind`` (the blind baseline, ``baselines`` naming them by kind, other than itself
    with the highest headline) and ``over_blind`` (its headline minus that one's on the cases
    both answered, with the paired interval). Rows without a headline, or without another
    blind baseline, are left as they are."""
    pooled = {r["model"]: r for r in rows}
    blind = [m for m in pooled if baselines.get(m) and not math.isnan(pooled[m]["family_mean"])]
    for model, row in pooled.items():
        others = [m for m in blind if m != model]
        if not others or math.isnan(row["family_mean"]):
            continue
        best = min(others, key=lambda m: (-pooled[m]["family_mean"], m))
        gap = headline_difference(cases[model], cases[best])
        row["best_blind"] = best
        if gap is not None:
            row.update({"over_blind": gap.difference,
                        "over_blind_ci_low": _nan_if_none(gap.ci_low),
                        "over_blind_ci_high": _nan_if_none(gap.ci_high)})
