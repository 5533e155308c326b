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

**Many comparisons** (:func:`adjust_drift`): a night compares every family of every recording of
every model, so a few raw p-values fall under 0.05 by chance every night. The p-values of one
night's comparisons are adjusted together by Benjamini-Hochberg (false discovery rate;
:mod:`eval_assets.metrics.multitest`), and "significant" in the flag rule uses the adjusted p
(``mcnemar_p_adjusted``; the raw ``mcnemar_p`` stays beside it). Until a comparison is adjusted
(a lone :func:`compare_nights`), its raw p decides. The MDD stays the single-test one.
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
    paired_comparison,
)

__all__ = [
    "ALL_FAMILIES",
    "DriftCase",
    "NightDrift",
    "adjust_by_night",
    "adjust_drift",
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
    return NightDrift(
        model=model, family=family, night_before=night_before, night_after=night_after,
        n_common=paired.n_common, n_frames=paired.n_frames,
        accuracy_before=paired.accuracy_b, accuracy_after=paired.accuracy_a,
        difference=paired.difference, ci_low=paired.difference_ci_low,
        ci_high=paired.difference_ci_high, mcnemar_p=paired.mcnemar_p, mdd=paired.mdd,
        significant=paired.significant, flagged=drift_flagged(paired))


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


def _flag(d: NightDrift, p_value: float | None, alpha: float) -> tuple[bool, bool]:
    """(significant, flagged) of ``d`` decided on ``p_value`` by the flag rule."""
    excludes_zero = (d.ci_low is not None and d.ci_high is not None
                     and (d.ci_low > 0 or d.ci_high < 0))
    significant = p_value is not None and p_value < alpha and excludes_zero
    flagged = (significant and d.difference is not None and d.mdd is not None
               and abs(d.difference) >= d.mdd)
    return significant, flagged


def adjust_drift(drift: Sequence[NightDrift], *, method: Adjustment = "fdr_bh",
                 alpha: float = ALPHA) -> list[NightDrift]:
    """``drift`` with McNemar's p adjusted over all of its comparisons as one set of tests.

    ``significant`` and ``flagged`` are decided again on the adjusted p (the interval and the
    MDD conditions unchanged). A comparison without a common case is no test: adjusted p None,
    not counted in ``n_tests``, never flagged. Order is kept.
    """
    tested = [i for i, d in enumerate(drift) if d.n_common > 0]
    adjusted = dict(zip(tested, adjust_p([drift[i].mcnemar_p for i in tested], method),
                        strict=True))
    out = []
    for i, d in enumerate(drift):
        significant, flagged = _flag(d, adjusted.get(i), alpha)
        out.append(d.model_copy(update={
            "mcnemar_p_adjusted": adjusted.get(i), "p_adjustment": method,
            "n_tests": len(tested), "significant": significant, "flagged": flagged}))
    return out


def adjust_by_night(drift: Sequence[NightDrift], *, method: Adjustment = "fdr_bh",
                    alpha: float = ALPHA) -> list[NightDrift]:
    """:func:`adjust_drift` within each night (``night_after``): every model and family
    compared that night is one set of tests. Order is kept."""
    out: list[NightDrift | None] = [None] * len(drift)
    for night in sorted({d.night_after for d in drift}):
        idx = [i for i, d in enumerate(drift) if d.night_after == night]
        for i, d in zip(idx, adjust_drift([drift[i] for i in idx], method=method, alpha=alpha),
                        strict=True):
            out[i] = d
    return [d for d in out if d is not None]
