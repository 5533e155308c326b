"""Night-over-night drift: pairing on common cases, exact McNemar (against scipy), the
frame-clustered bootstrap interval, and the flag rule (significant *and* at least the MDD)."""

from __future__ import annotations

import numpy as np
import pytest

from eval_assets.metrics.drift import (
    ALL_FAMILIES,
    DriftCase,
    compare_nights,
    drift_flagged,
    model_drift,
)
from eval_assets.metrics.stats import paired_comparison

Cases = dict[tuple[str, ...], DriftCase]


def night(correct: list[bool], *, per_frame: int = 10, family_of=lambda i: "presence",
          prefix: str = "c") -> Cases:
    """Cases c0..c<n-1>, ``per_frame`` consecutive cases to a frame."""
    return {("rec", "sha", f"{prefix}{i}"): DriftCase(("rec", i // per_frame), family_of(i), ok)
            for i, ok in enumerate(correct)}


def test_pairs_only_the_common_cases_and_matches_scipy_binomtest() -> None:
    stats = pytest.importorskip("scipy.stats")
    before = night([True] * 60 + [False] * 40)
    after = night([True] * 45 + [False] * 55)
    after.update(night([False] * 30, prefix="extra"))  # answered only on the later night
    d = compare_nights("m", ALL_FAMILIES, "2025-01-01", before, "2025-01-02", after)
    assert d.n_common == 100 and d.n_frames == 10
    assert d.accuracy_before == 0.6 and d.accuracy_after == 0.45
    assert d.difference == pytest.approx(-0.15)
    # Discordant: 15 cases right before and wrong after, none the other way round.
    assert d.mcnemar_p == pytest.approx(stats.binomtest(0, 15, 0.5).pvalue, rel=1e-12)


def test_the_interval_resamples_frames_not_cases() -> None:
    # The drop is concentrated in 3 of 12 frames: resampling frames must see that spread.
    before = night([True] * 120, per_frame=10)
    after = night([not (i < 30) for i in range(120)], per_frame=10)
    d = compare_nights("m", ALL_FAMILIES, "n1", before, "n2", after)
    one_per_frame = {k: c._replace(cluster=k) for k, c in after.items()}
    naive = compare_nights("m", ALL_FAMILIES, "n1", before, "n2", one_per_frame)
    assert d.ci_low is not None and d.ci_high is not None
    assert naive.ci_low is not None and naive.ci_high is not None
    assert d.ci_low <= -0.25 <= d.ci_high
    assert d.ci_high - d.ci_low > 1.5 * (naive.ci_high - naive.ci_low)
    # McNemar alone (cases independent) would call it certain; the frames say it is not.
    assert d.mcnemar_p < 1e-6 and not d.significant and not d.flagged
    assert compare_nights("m", ALL_FAMILIES, "n1", before, "n2", after) == d  # deterministic


def _comparison(n: int, before_right: int, after_right: int, per_frame: int = 1):
    rng = np.random.default_rng(0)
    a = np.zeros(n, dtype=bool)
    a[rng.permutation(n)[:before_right]] = True
    b = np.zeros(n, dtype=bool)
    b[rng.permutation(n)[:after_right]] = True
    keys = [i // per_frame for i in range(n)]
    return paired_comparison("after", "before", keys, b.tolist(), a.tolist())


def test_flag_rule_needs_significance_and_the_mdd() -> None:
    big = _comparison(2000, 1200, 1000)  # a 10-point drop on 2000 independent cases
    assert big.significant and big.mdd is not None and abs(big.difference or 0) >= big.mdd
    assert drift_flagged(big)
    same = _comparison(2000, 1200, 1195)
    assert not same.significant and not drift_flagged(same)
    # A significant change smaller than the MDD is reported, not flagged.
    below = big.model_copy(update={"mdd": 0.2})
    assert below.significant and not drift_flagged(below)
    # No MDD (nothing detectable on so few cases) is never flagged, even when significant.
    assert not drift_flagged(big.model_copy(update={"mdd": None}))
    assert not drift_flagged(big.model_copy(update={"significant": False}))


def test_a_real_drop_is_flagged_and_noise_rarely() -> None:
    """Seeded draws (the rates themselves are measured by benchmarks/drift_alarms.py)."""
    alarms, caught = 0, 0
    for seed in range(60):
        rng = np.random.default_rng(seed)
        p = rng.uniform(0.3, 0.9, 1500)
        before = night((rng.random(1500) < p).tolist(), per_frame=30)
        again = night((rng.random(1500) < p).tolist(), per_frame=30)
        alarms += compare_nights("m", ALL_FAMILIES, "n1", before, "n2", again).flagged
        if seed < 10:
            dropped = night((rng.random(1500) < p - 0.2).tolist(), per_frame=30)
            d = compare_nights("m", ALL_FAMILIES, "n1", before, "n2", dropped)
            caught += d.flagged and d.difference is not None and d.difference < 0
    assert alarms <= 3  # at most 5% of same-model nights
    assert caught == 10  # a 20-point drop on 1,500 cases is never missed


def test_model_drift_compares_consecutive_nights_overall_and_per_family() -> None:
    family = lambda i: "presence" if i % 2 else "counting"  # noqa: E731
    nights = {"2025-01-03": night([True] * 40, family_of=family),
              "2025-01-01": night([True] * 40, family_of=family),
              "2025-01-02": night([False] * 40, family_of=family)}
    drift = model_drift("m", nights)
    assert [(d.night_before, d.night_after, d.family) for d in drift] == [
        ("2025-01-01", "2025-01-02", ALL_FAMILIES), ("2025-01-01", "2025-01-02", "counting"),
        ("2025-01-01", "2025-01-02", "presence"), ("2025-01-02", "2025-01-03", ALL_FAMILIES),
        ("2025-01-02", "2025-01-03", "counting"), ("2025-01-02", "2025-01-03", "presence")]
    assert [d.n_common for d in drift] == [40, 20, 20, 40, 20, 20]
    assert [d.difference for d in drift] == [-1.0, -1.0, -1.0, 1.0, 1.0, 1.0]
    latest = model_drift("m", nights, latest=1)
    assert {d.night_after for d in latest} == {"2025-01-03"}
    assert model_drift("m", {"2025-01-01": nights["2025-01-01"]}) == []
    with pytest.raises(ValueError, match="latest"):
        model_drift("m", nights, latest=0)


def test_no_common_case_is_reported_with_nothing_filled() -> None:
    d = compare_nights("m", ALL_FAMILIES, "n1", night([True] * 5),
                       "n2", night([True] * 5, prefix="other"))
    assert d.n_common == 0 and d.difference is None and d.mdd is None and not d.flagged


def test_a_case_that_changes_family_is_an_error() -> None:
    with pytest.raises(ValueError, match="keep its content"):
        compare_nights("m", ALL_FAMILIES, "n1", night([True]),
                       "n2", night([True], family_of=lambda i: "counting"))
