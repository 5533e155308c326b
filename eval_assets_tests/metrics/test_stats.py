"""Clustered intervals and paired comparisons, checked by hand and against scipy / statsmodels.

scipy and statsmodels are only test-time references; the metric code uses neither.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

from eval_assets.metrics.stats import (
    adjust_comparisons,
    cluster_bootstrap_difference,
    clustered_wilson,
    design_effect,
    mcnemar_exact_p,
    minimum_detectable_difference,
    paired_comparison,
    wilson_interval,
)

# Fixed discordant tables (b: only the first model right, c: only the second), including the
# edge cases: no discordance, ties, one-sided, and large counts.
TABLES = [(0, 0), (1, 0), (0, 1), (3, 3), (10, 2), (2, 10), (3, 17), (40, 25), (181, 137),
          (200, 170), (1, 30), (0, 12), (500, 430)]
Z_A = NormalDist().inv_cdf(0.975)
Z_B = NormalDist().inv_cdf(0.8)


@pytest.mark.parametrize(("b", "c"), TABLES)
def test_exact_mcnemar_matches_scipy_binomtest(b: int, c: int) -> None:
    stats = pytest.importorskip("scipy.stats")
    expected = stats.binomtest(b, b + c, 0.5, alternative="two-sided").pvalue if b + c else 1.0
    assert mcnemar_exact_p(b, c) == pytest.approx(expected, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize(("b", "c"), TABLES)
def test_exact_mcnemar_matches_statsmodels(b: int, c: int) -> None:
    contingency = pytest.importorskip("statsmodels.stats.contingency_tables")
    table = np.array([[7, b], [c, 5]])  # the concordant cells do not enter the test
    expected = contingency.mcnemar(table, exact=True).pvalue
    assert mcnemar_exact_p(b, c) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_exact_mcnemar_by_hand() -> None:
    # 10 vs 2: 2 * P(X <= 2 | n = 12, p = 1/2) = 2 * (1 + 12 + 66) / 4096.
    assert mcnemar_exact_p(10, 2) == 2 * 79 / 4096
    assert mcnemar_exact_p(5, 5) == 1.0 and mcnemar_exact_p(0, 0) == 1.0
    with pytest.raises(ValueError, match=">= 0"):
        mcnemar_exact_p(-1, 3)


def test_clustered_wilson_reduces_to_wilson_for_independent_cases() -> None:
    correct = [True] * 30 + [False] * 70
    interval = clustered_wilson(list(range(100)), correct)
    assert interval is not None
    # One case per frame: the design effect is only the small-sample factor m / (m - 1).
    assert interval.design_effect == pytest.approx(100 / 99)
    assert (interval.low, interval.high) == pytest.approx(wilson_interval(30 * 0.99, 99))
    assert interval.n_clusters == 100 and interval.estimate == 0.3


def test_clustered_wilson_widens_with_correlated_frames_and_never_narrows() -> None:
    keys = [f for f in range(10) for _ in range(20)]
    correlated = [f < 6 for f in keys]  # whole frames right or wrong
    wide = clustered_wilson(keys, correlated)
    assert wide is not None and wide.design_effect == pytest.approx(20 * 10 / 9)
    assert (wide.low, wide.high) == pytest.approx(wilson_interval(0.6 * 9, 9))
    # Perfectly balanced frames (the same 12 of 20 right in each): the estimate is below 1,
    # the interval still uses 1, i.e. the plain Wilson interval of the cases.
    balanced = [i % 20 < 12 for i in range(200)]
    narrow = clustered_wilson(keys, balanced)
    assert narrow is not None and narrow.design_effect is not None
    assert narrow.design_effect < 1
    assert (narrow.low, narrow.high) == pytest.approx(wilson_interval(120, 200))


def test_clustered_wilson_edges() -> None:
    assert clustered_wilson([], []) is None
    # One frame, or all right: the design effect cannot be estimated and is taken as 1.
    one = clustered_wilson([0] * 5, [True, False, True, True, False])
    assert one is not None and one.design_effect is None
    assert (one.low, one.high) == pytest.approx(wilson_interval(3, 5))
    perfect = clustered_wilson([0, 0, 1, 1], [True] * 4)
    assert perfect is not None and perfect.design_effect is None and perfect.high == 1.0
    assert design_effect(np.array([1.0]), np.array([2]), 0.25) is None


def test_cluster_bootstrap_matches_scipy_for_independent_cases() -> None:
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(3)
    a = rng.random(300) < 0.7
    b = rng.random(300) < 0.6
    diffs = a.astype(float) - b.astype(float)
    mine = cluster_bootstrap_difference(list(range(300)), diffs.tolist())
    ref = stats.bootstrap((diffs,), np.mean, method="percentile", n_resamples=20000,
                          random_state=np.random.default_rng(1)).confidence_interval
    assert mine is not None
    # Different random draws: the two percentile intervals agree to Monte Carlo error.
    assert mine[0] == pytest.approx(ref.low, abs=0.01)
    assert mine[1] == pytest.approx(ref.high, abs=0.01)


def test_cluster_bootstrap_is_deterministic_and_frame_aware() -> None:
    keys = [f for f in range(12) for _ in range(25)]
    rng = np.random.default_rng(5)
    frame_effect = rng.random(12) < 0.5
    a = [bool(frame_effect[f]) for f in keys]
    b = (rng.random(300) < 0.5).tolist()
    diffs = [float(x) - float(y) for x, y in zip(a, b, strict=True)]
    first = cluster_bootstrap_difference(keys, diffs)
    assert first == cluster_bootstrap_difference(keys, diffs)
    assert first != cluster_bootstrap_difference(keys, diffs, seed=12)
    naive = cluster_bootstrap_difference(list(range(300)), diffs)
    assert first is not None and naive is not None
    assert first[1] - first[0] > 1.5 * (naive[1] - naive[0])  # clustered is wider
    assert cluster_bootstrap_difference([0, 0], [1.0, 0.0]) is None
    with pytest.raises(ValueError, match="replicates"):
        cluster_bootstrap_difference(keys, diffs, replicates=10)


@pytest.mark.parametrize(("n", "psi"), [(100, 0.3), (749, 0.42), (2000, 0.1)])
def test_mdd_solves_connors_formula(n: int, psi: float) -> None:
    d = minimum_detectable_difference(n, psi)
    assert d is not None and d < psi
    needed = (Z_A * math.sqrt(psi) + Z_B * math.sqrt(psi - d * d)) ** 2 / (d * d)
    assert needed == pytest.approx(n, rel=1e-6)


def test_mdd_has_about_80_percent_exact_power() -> None:
    stats = pytest.importorskip("scipy.stats")
    n, psi = 400, 0.25
    d = minimum_detectable_difference(n, psi)
    assert d is not None
    # Exact power of the exact McNemar test at the MDD: discordant pairs ~ Bin(n, psi), the
    # first model's share of them ~ Bin(n_d, (psi + d) / (2 psi)).
    power = 0.0
    for n_d in range(n + 1):
        weight = stats.binom.pmf(n_d, n, psi)
        if weight < 1e-12:
            continue
        k = np.arange(n_d + 1)
        rejects = np.array([mcnemar_exact_p(int(x), n_d - int(x)) < 0.05 for x in k])
        power += weight * stats.binom.pmf(k, n_d, (psi + d) / (2 * psi))[rejects].sum()
    assert power == pytest.approx(0.8, abs=0.05)


def test_mdd_edges() -> None:
    assert minimum_detectable_difference(0, 0.3) is None
    assert minimum_detectable_difference(3, 0.0) is None  # nothing is detectable from 3 pairs
    # No discordance observed: the least discordance a difference d needs is d itself.
    d = minimum_detectable_difference(100, 0.0)
    assert d is not None
    assert math.sqrt(100) * d == pytest.approx(Z_A * math.sqrt(d) + Z_B * math.sqrt(d - d * d),
                                               rel=1e-6)


def test_paired_comparison_on_a_fixed_table() -> None:
    stats = pytest.importorskip("scipy.stats")
    # 749 cases on 24 frames: both right 147, only A 181, only B 137, neither 284.
    outcome = [(1, 1)] * 147 + [(1, 0)] * 181 + [(0, 1)] * 137 + [(0, 0)] * 284
    keys = [i % 24 for i in range(749)]
    result = paired_comparison("a", "b", keys, [x for x, _ in outcome], [y for _, y in outcome])
    assert (result.both_correct, result.a_only, result.b_only, result.neither) == (
        147, 181, 137, 284)
    assert result.n_common == 749 and result.n_frames == 24
    assert result.difference == pytest.approx(44 / 749)
    assert result.mcnemar_p == pytest.approx(stats.binomtest(181, 318, 0.5).pvalue, rel=1e-12)
    assert result.difference_ci_low is not None and result.difference_ci_high is not None
    assert result.difference_ci_low < result.difference < result.difference_ci_high
    assert result.mdd is not None and not result.mdd_discordance_assumed
    assert result.significant == (result.mcnemar_p < 0.05 and result.difference_ci_low > 0)
    assert result.better == ("a" if result.significant else None)
    assert result == paired_comparison("a", "b", keys, [x for x, _ in outcome],
                                       [y for _, y in outcome])


def test_paired_comparison_without_discordance_or_cases() -> None:
    same = paired_comparison("a", "b", [0, 1, 2, 3], [1, 0, 1, 1], [1, 0, 1, 1])
    assert (same.difference, same.mcnemar_p, same.significant) == (0.0, 1.0, False)
    assert (same.difference_ci_low, same.difference_ci_high) == (0.0, 0.0)
    empty = paired_comparison("a", "b", [], [], [])
    assert empty.n_common == 0 and empty.difference is None and empty.mdd is None
    with pytest.raises(ValueError, match="one entry per common case"):
        paired_comparison("a", "b", [0], [True, False], [True])


def _a_better(a_only: int, b_only: int, both: int = 10, neither: int = 10, name: str = "a"):
    """A comparison with one case per frame: ``a_only`` cases only A got right, etc."""
    outcome = ([(1, 1)] * both + [(1, 0)] * a_only + [(0, 1)] * b_only + [(0, 0)] * neither)
    return paired_comparison(name, "b", list(range(len(outcome))),
                             [bool(x) for x, _ in outcome], [bool(y) for _, y in outcome])


def test_the_verdict_uses_the_holm_adjusted_p() -> None:
    multipletests = pytest.importorskip("statsmodels.stats.multitest").multipletests
    strong = _a_better(12, 2)  # McNemar p = 2 (1 + 14 + 91) / 2^14 = 0.0129
    assert strong.mcnemar_p == pytest.approx(212 / 16384, rel=1e-12)
    assert strong.significant and strong.better == "a"  # alone, raw p decides
    nulls = [_a_better(3, 3, name=f"n{i}") for i in range(4)]
    table = adjust_comparisons([strong, *nulls])
    expected = multipletests([c.mcnemar_p for c in (strong, *nulls)], method="holm")[1]
    assert [c.mcnemar_p_adjusted for c in table] == pytest.approx(list(expected), abs=1e-12)
    # 5 tests: 5 x 0.0129 = 0.065 > 0.05, so the same difference is no longer significant,
    # though its raw p and its interval are unchanged.
    first = table[0]
    assert first.mcnemar_p == strong.mcnemar_p and first.mcnemar_p_adjusted == pytest.approx(
        5 * 212 / 16384)
    assert (first.difference_ci_low, first.difference_ci_high) == (
        strong.difference_ci_low, strong.difference_ci_high)
    assert not first.significant and first.better is None
    assert {(c.p_adjustment, c.n_tests) for c in table} == {("holm", 5)}
    # Among 3 tests it survives (3 x 0.0129 = 0.039).
    kept = adjust_comparisons([strong, *nulls[:2]])[0]
    assert kept.significant and kept.better == "a"


def test_benjamini_hochberg_and_empty_comparisons_in_a_table() -> None:
    empty = paired_comparison("a", "b", [], [], [])
    strong = _a_better(12, 2)
    table = adjust_comparisons([empty, strong, _a_better(3, 3)], method="fdr_bh")
    assert table[0].mcnemar_p_adjusted is None and not table[0].significant  # no test
    assert table[1].n_tests == 2 and table[1].p_adjustment == "fdr_bh"
    assert table[1].mcnemar_p_adjusted == pytest.approx(2 * 212 / 16384)  # m p / rank
    assert adjust_comparisons([]) == []
