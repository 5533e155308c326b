"""Night-over-night drift: pairing on common cases, exact McNemar (against scipy), the
frame-clustered bootstrap interval, and the flag rule (significant *and* at least the MDD)."""

from __future__ import annotations

import numpy as np
import pytest

from eval_assets.metrics.drift import (
    ALL_FAMILIES,
    DriftCase,
    adjust_by_night,
    adjust_drift,
    adjust_night,
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


def _drop(right_before: int, right_after: int, family: str = ALL_FAMILIES, n: int = 400):
    """A comparison of one case per frame: the first ``right_before`` / ``right_after`` cases
    right on each night."""
    before = night([i < right_before for i in range(n)], per_frame=1)
    after = night([i < right_after for i in range(n)], per_frame=1)
    return compare_nights("m", family, "n1", before, "n2", after)


def test_benjamini_hochberg_over_a_night_matches_statsmodels_and_decides_the_flag() -> None:
    multipletests = pytest.importorskip("statsmodels.stats.multitest").multipletests
    real = _drop(300, 276)  # 24 right -> wrong, none back: McNemar p = 2^-23
    borderline = _drop(300, 289, family="presence")  # 11 discordant: p = 2^-10 = 0.00098
    nulls = [_drop(300, 300, family=f"f{i}") for i in range(30)]
    assert borderline.flagged and real.flagged  # alone, the raw p decides
    drift = [real, borderline, *nulls]
    adjusted = adjust_drift(drift)
    expected = multipletests([d.mcnemar_p for d in drift], method="fdr_bh")[1]
    assert [d.mcnemar_p_adjusted for d in adjusted] == pytest.approx(list(expected), abs=1e-12)
    assert {(d.p_adjustment, d.n_tests) for d in adjusted} == {("fdr_bh", 32)}
    # BH: p(2) * 32 / 2 = 0.0156 < 0.05 keeps the borderline one significant; the raw p stays
    # beside the adjusted one.
    assert adjusted[1].mcnemar_p == borderline.mcnemar_p
    assert adjusted[1].mcnemar_p_adjusted == pytest.approx(2**-10 * 32 / 2)
    assert adjusted[1].significant
    # BH rejected 2 of 32, each at p <= 0.05 x 2 / 32: the MDD is the one at that level, and
    # the borderline change (2.75 points) is below it, so it is not flagged; the real one is.
    assert [d.mdd_alpha for d in adjusted] == pytest.approx([0.05 * 2 / 32] * 32)
    assert adjusted[1].mdd_unadjusted == borderline.mdd
    assert adjusted[1].mdd is not None and borderline.mdd is not None
    assert borderline.mdd < 0.0275 < adjusted[1].mdd
    assert adjusted[0].flagged and not adjusted[1].flagged
    assert not any(d.flagged for d in adjusted[2:])


def test_a_raw_p_below_005_that_bh_lifts_does_not_flag() -> None:
    weak = _drop(300, 290, family="presence", n=1000)  # 10 discordant: p = 2^-9 = 0.002
    assert weak.mcnemar_p < 0.05 and weak.flagged  # flagged on its raw p
    alone = adjust_drift([weak])[0]
    assert alone.mcnemar_p_adjusted == pytest.approx(weak.mcnemar_p)
    crowd = adjust_drift([weak, *(_drop(300, 300, family=f"f{i}", n=1000) for i in range(40))])
    assert crowd[0].mcnemar_p_adjusted == pytest.approx(41 * weak.mcnemar_p)  # > 0.05
    assert not crowd[0].significant and not crowd[0].flagged
    # Holm on the same set: no rejection, so the MDD is at 0.05 / 41.
    holm = adjust_drift(crowd, method="holm")
    assert holm[0].mcnemar_p_adjusted == pytest.approx(41 * weak.mcnemar_p)
    assert holm[0].mdd_alpha == pytest.approx(0.05 / 41) and not holm[0].flagged


def test_adjustment_groups_by_night_and_skips_comparisons_without_cases() -> None:
    empty = compare_nights("m", "presence", "n1", {}, "n2", {})
    real = _drop(300, 276)
    later = real.model_copy(update={"night_before": "n2", "night_after": "n3"})
    out = adjust_by_night([real, empty, later])
    assert [d.night_after for d in out] == ["n2", "n2", "n3"]
    assert out[1].mcnemar_p_adjusted is None and not out[1].flagged
    assert out[0].n_tests == 1 and out[2].n_tests == 1  # one test on each night


def test_a_night_adjusts_its_overall_and_its_family_comparisons_as_two_sets() -> None:
    overall = _drop(300, 276)
    families = [_drop(300, 289, family="presence"), *(_drop(300, 300, family=f"f{i}")
                                                      for i in range(5))]
    out = adjust_night([overall, *families])
    assert [d.family for d in out] == [ALL_FAMILIES, "presence", *(f"f{i}" for i in range(5))]
    assert out[0].n_tests == 1 and out[0].mcnemar_p_adjusted == overall.mcnemar_p
    assert out[0].mdd == pytest.approx(overall.mdd) and out[0].flagged  # a set of one: as raw
    assert {d.n_tests for d in out[1:]} == {6}
    # The families' set: 0.00098 x 6 = 0.0059, BH rejects 1 of 6, so the MDD is at 0.05 / 6.
    assert out[1].mcnemar_p_adjusted == pytest.approx(6 * 2**-10)
    assert out[1].mdd_alpha == pytest.approx(0.05 / 6)
