"""Night-over-night drift: did a model really change between two nightly runs?

Hosted models change without notice, so the nightly schedule re-asks every model and keeps each
night's results. A change in accuracy between two nights is worth an alert only when it is real,
not noise. Each night is compared with the previous night the model ran, on the cases both nights
answered (paired), overall (:data:`ALL_FAMILIES`) and per question family, with the paired
machinery of :mod:`eval_assets.metrics.stats`:

- the exact two-sided McNemar p-value of the discordant cases,
- the difference in accuracy (later night minus earlier) with a 95% paired cluster-bootstrap
  interval (frames resampled with replacement; deterministic seed),
- the minimum detectable difference (MDD) at alpha 0.05 and power 0.8, from the observed
  discordance and the frame design effect.

**Flag rule** (:func:`drift_flagged`): a change is flagged only when it is significant (McNemar
p < 0.05 *and* the clustered interval excludes 0) *and* its size is at least the MDD. The second
condition keeps an underpowered comparison (few common cases, few frames) from raising an alarm on
a change it could not reliably see: such a comparison is reported, not flagged.

**Many comparisons** (:func:`adjust_night`): a night compares every family of every recording of
every model, so a few raw p-values fall under 0.05 by chance every night. The p-values of one
night's per-family comparisons (families x recordings x models) are adjusted together by
Benjamini-Hochberg (false discovery rate; :mod:`eval_assets.metrics.multitest`), and so are its
overall comparisons (recordings x models) as a set of their own. "Significant" in the flag
rule uses the adjusted p (``mcnemar_p_adjusted``; the raw ``mcnemar_p`` stays beside it), and
the MDD of the size condition is recomputed at the per-test level the adjustment tested at
(``mdd_alpha``; the single-test MDD stays as ``mdd_unadjusted``). Until a comparison is
adjusted (a lone :func:`compare_nights`), its raw p and the MDD at 0.05 decide.
``benchmarks/drift_alarms.py`` measures the rule's false-alarm rate (same model twice) and its
detection rate (a true 10-point drop), raw and adjusted.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Mapping, Sequence
from typing import NamedTuple, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from eval_assets.metrics.multitest import Adjustment, adjust_p
from eval_assets.metrics.stats import (
    ALPHA,
    BOOTSTRAP_REPLICATES,
    BOOTSTRAP_SEED,
    POWER,
    PairedComparison,
    minimum_detectable_difference,
    paired_comparison,
)

__all__ = [
    "ALL_FAMILIES",
    "DriftCase",
    "NightDrift",
    "adjust_by_night",
    "adjust_drift",
    "adjust_night",
    "compare_nights",
    "drift_flagged",
    "model_drift",
]

ALL_FAMILIES = "all families"
# A case's identity across nights, e.g. (recording, dataset fingerprint, case id): sortable, so
# the pairing (and with it the bootstrap's cluster order) is the same on every run.
CaseId = TypeVar("CaseId", bound=tuple[str, ...])


class DriftCase(NamedTuple):
    """One scored case of one night: its cluster (frame), question family and correctness."""

    cluster: Hashable
    family: str
    correct: bool


class NightDrift(BaseModel):
    """One model, one family: a night compared with the previous night on their common cases.

    ``difference`` is ``accuracy_after - accuracy_before`` (negative: the model got worse).
    Numbers that cannot be computed (no common case, fewer than 2 frames, nothing detectable)
    are None, never filled.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    family: str
    night_before: str
    night_after: str
    n_common: int
    n_frames: int
    accuracy_before: float | None
    accuracy_after: float | None
    difference: float | None = Field(description="accuracy_after - accuracy_before")
    ci_low: float | None = Field(description="95% frame-clustered bootstrap interval, lower")
    ci_high: float | None = Field(description="the same interval, upper bound")
    mcnemar_p: float = Field(description="exact two-sided McNemar p-value")
    mdd: float | None = Field(
        description="minimum detectable difference (alpha 0.05, power 0.8); None: nothing up "
                    "to 100 points is detectable on these cases")
    significant: bool = Field(
        description="McNemar p < alpha and the interval excludes 0; p is mcnemar_p_adjusted "
                    "once adjusted, else mcnemar_p")
    flagged: bool = Field(description="significant and |difference| >= mdd")
    mcnemar_p_adjusted: float | None = Field(
        default=None, description="McNemar p adjusted over the night's comparisons "
                                  "(p_adjustment); None: not adjusted, or no common case")
    p_adjustment: Adjustment | None = Field(
        default=None, description="fdr_bh (Benjamini-Hochberg) or holm; None: raw p decides")
    n_tests: int | None = Field(default=None,
                                description="comparisons the p-value was adjusted over")
    mdd_alpha: float = Field(
        default=ALPHA, description="the two-sided level the MDD is computed at: alpha, or once "
                                   "adjusted the per-test level the adjustment tested at")
    mdd_unadjusted: float | None = Field(
        default=None, description="the MDD at alpha for a single test; None until adjusted")
    n_effective: float | None = Field(
        default=None, description="common cases / the frame design effect of the paired "
                                  "difference (floored at 1): the MDD's n")
    discordance: float | None = Field(
        default=None, description="share of common cases only one night got right")


def drift_flagged(comparison: PairedComparison) -> bool:
    """The flag rule: significant (McNemar and the clustered interval agree) and at least the MDD.

    A comparison without an MDD (too few cases to detect anything) is never flagged.
    """
    return (comparison.significant and comparison.difference is not None
            and comparison.mdd is not None and abs(comparison.difference) >= comparison.mdd)


def compare_nights(model: str, family: str, night_before: str,
                   before: Mapping[CaseId, DriftCase], night_after: str,
                   after: Mapping[CaseId, DriftCase], *, alpha: float = ALPHA,
                   power: float = POWER, replicates: int = BOOTSTRAP_REPLICATES,
                   seed: int = BOOTSTRAP_SEED) -> NightDrift:
    """``night_after`` against ``night_before`` on the cases both answered (keys in both maps).

    The cluster of a common case is taken from ``after`` (a case's frame does not change while
    its identity holds). Raises ``ValueError`` when a common case changes family between nights.
    """
    common = sorted(set(before) & set(after))
    for key in common:
        if before[key].family != after[key].family:
            raise ValueError(f"case {key!r} is family {before[key].family!r} on {night_before} "
                             f"and {after[key].family!r} on {night_after}; a case id must keep "
                             "its content")
    paired = paired_comparison(
        night_after, night_before, [after[k].cluster for k in common],
        [after[k].correct for k in common], [before[k].correct for k in common],
        alpha=alpha, power=power, replicates=replicates, seed=seed)
    n = paired.n_common
    return NightDrift(
        model=model, family=family, night_before=night_before, night_after=night_after,
        n_common=paired.n_common, n_frames=paired.n_frames,
        accuracy_before=paired.accuracy_b, accuracy_after=paired.accuracy_a,
        difference=paired.difference, ci_low=paired.difference_ci_low,
        ci_high=paired.difference_ci_high, mcnemar_p=paired.mcnemar_p, mdd=paired.mdd,
        significant=paired.significant, flagged=drift_flagged(paired), mdd_alpha=alpha,
        n_effective=n / max(1.0, paired.design_effect or 1.0) if n else None,
        discordance=(paired.a_only + paired.b_only) / n if n else None)


def _of_family(cases: Mapping[CaseId, DriftCase], family: str
               ) -> Mapping[CaseId, DriftCase]:
    if family == ALL_FAMILIES:
        return cases
    return {k: c for k, c in cases.items() if c.family == family}


def model_drift(model: str, nights: Mapping[str, Mapping[CaseId, DriftCase]], *,
                latest: int | None = None, alpha: float = ALPHA, power: float = POWER,
                replicates: int = BOOTSTRAP_REPLICATES,
                seed: int = BOOTSTRAP_SEED) -> list[NightDrift]:
    """Every night of ``model`` against the previous night it ran, overall and per family.

    ``nights`` maps a night (``YYYY-MM-DD``; sorted as text) to that night's scored cases.
    Families are those of the common cases (a family with no common case is not compared).
    ``latest``: compare only the last ``latest`` nights with their previous nights (None: all).
    Sorted by night, then :data:`ALL_FAMILIES` first, then families by name. The keywords are
    :func:`compare_nights`'s.
    """
    out: list[NightDrift] = []
    order = sorted(nights)
    pairs = list(itertools.pairwise(order))
    if latest is not None:
        if latest < 1:
            raise ValueError(f"latest must be >= 1 (or None for every night), got {latest}")
        pairs = pairs[-latest:]
    for night_before, night_after in pairs:
        before, after = nights[night_before], nights[night_after]
        common = set(before) & set(after)
        families: Sequence[str] = [ALL_FAMILIES, *sorted({after[k].family for k in common})]
        for family in families:
            out.append(compare_nights(model, family, night_before, _of_family(before, family),
                                      night_after, _of_family(after, family), alpha=alpha,
                                      power=power, replicates=replicates, seed=seed))
    return out


def _tested_level(adjusted: Sequence[float], method: Adjustment, alpha: float) -> float:
    """The per-test level the adjustment rejected at: a rejected p-value was at most this.

    BH rejects the R smallest p-values when p(R) <= alpha R / m, so its level is alpha R / m;
    Holm rejects p(k) <= alpha / (m - k + 1) for k <= R, so its level is alpha / (m - R + 1).
    With no rejection, the level the smallest p-value would have needed (alpha / m for both).
    """
    m = len(adjusted)
    rejected = max(1, sum(1 for p in adjusted if p < alpha))
    if method == "fdr_bh":
        return alpha * rejected / m
    return alpha / (m - rejected + 1)


def adjust_drift(drift: Sequence[NightDrift], *, method: Adjustment = "fdr_bh",
                 alpha: float = ALPHA, power: float = POWER) -> list[NightDrift]:
    """``drift`` with McNemar's p adjusted over all of its comparisons as one set of tests.

    ``significant`` is decided again on the adjusted p (the interval condition unchanged), and
    the MDD is recomputed at the per-test level the adjustment tested at
    (:func:`_tested_level`): a change must be as large as what these cases detect with
    ``power`` *at the level it was tested at*, or the size condition would let through the
    very chance findings the adjustment removes (with the MDD at 0.05 the adjustment changed
    the A/A false-alarm rate of ``benchmarks/drift_alarms.py`` from 3.8 % to 3.6 % only).
    ``flagged`` = significant and |difference| >= that MDD. A comparison without a common case
    is no test: adjusted p None, not counted in ``n_tests``, never flagged. Order is kept.
    """
    tested = [i for i, d in enumerate(drift) if d.n_common > 0]
    adjusted = dict(zip(tested, adjust_p([drift[i].mcnemar_p for i in tested], method),
                        strict=True))
    level = _tested_level(list(adjusted.values()), method, alpha) if tested else alpha
    out = []
    for i, d in enumerate(drift):
        p_adj = adjusted.get(i)
        excludes_zero = (d.ci_low is not None and d.ci_high is not None
                         and (d.ci_low > 0 or d.ci_high < 0))
        significant = p_adj is not None and p_adj < alpha and excludes_zero
        mdd = d.mdd
        if d.n_effective is not None and d.discordance is not None:
            mdd = minimum_detectable_difference(d.n_effective, d.discordance, alpha=level,
                                                power=power)
        flagged = (significant and d.difference is not None and mdd is not None
                   and abs(d.difference) >= mdd)
        out.append(d.model_copy(update={
            "mcnemar_p_adjusted": p_adj, "p_adjustment": method, "n_tests": len(tested),
            "significant": significant, "flagged": flagged, "mdd": mdd, "mdd_alpha": level,
            # Adjusting twice must not take the first adjustment's MDD for the single-test one.
            "mdd_unadjusted": d.mdd if d.mdd_unadjusted is None else d.mdd_unadjusted}))
    return out


def adjust_night(drift: Sequence[NightDrift], *, method: Adjustment = "fdr_bh",
                 alpha: float = ALPHA, power: float = POWER) -> list[NightDrift]:
    """The comparisons of one night adjusted as two sets of tests (:func:`adjust_drift` each):
    the overall ones (:data:`ALL_FAMILIES`, "did this model change?", one per model and
    recording) and the per-family ones ("where?", families x recordings x models).

    Why two sets: the overall comparison pools every family's cases, so a real drop shows
    there first; in one set with the families, each far less powered, it pays for the families'
    number (``benchmarks/drift_alarms.py``: a true 10-point drop flagged overall 86 % of the
    time, from 94 %), while the families' false alarms, which were the problem, are controlled
    within their own set either way. Order is kept.
    """
    out: list[NightDrift | None] = [None] * len(drift)
    for overall in (True, False):
        idx = [i for i, d in enumerate(drift) if (d.family == ALL_FAMILIES) == overall]
        for i, d in zip(idx, adjust_drift([drift[i] for i in idx], method=method, alpha=alpha,
                                          power=power), strict=True):
            out[i] = d
    return [d for d in out if d is not None]


def adjust_by_night(drift: Sequence[NightDrift], *, method: Adjustment = "fdr_bh",
                    alpha: float = ALPHA) -> list[NightDrift]:
    """:func:`adjust_night` within each night (``night_after``): every model compared that
    night, overall and per family. Order is kept."""
    out: list[NightDrift | None] = [None] * len(drift)
    for night in sorted({d.night_after for d in drift}):
        idx = [i for i, d in enumerate(drift) if d.night_after == night]
        for i, d in zip(idx, adjust_night([drift[i] for i in idx], method=method, alpha=alpha),
                        strict=True):
            out[i] = d
    return [d for d in out if d is not None]
