"""Holm and Benjamini-Hochberg adjusted p-values, checked against statsmodels' multipletests."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from eval_assets.metrics.multitest import adjust_p, benjamini_hochberg, holm

FIXED = [0.01, 0.04, 0.03, 0.005, 0.2, 0.04, 1.0, 0.0, 0.5]


def test_holm_by_hand_on_a_small_vector() -> None:
    # Sorted: 0.01 (x3), 0.02 (x2 -> 0.04), 0.04 (x1): the step-down keeps it non-decreasing.
    assert holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04], abs=1e-15)


def test_benjamini_hochberg_by_hand_on_a_small_vector() -> None:
    # m = 3: 0.01 * 3/1 = 0.03, 0.02 * 3/2 = 0.03, 0.04 * 3/3 = 0.04.
    assert benjamini_hochberg([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.03],
                                                                   abs=1e-15)


@pytest.mark.parametrize(("ours", "method"), [(holm, "holm"), (benjamini_hochberg, "fdr_bh")])
def test_matches_statsmodels_on_a_fixed_vector_with_ties_zero_and_one(ours, method) -> None:
    expected = multipletests(FIXED, alpha=0.05, method=method)[1]
    assert np.max(np.abs(np.array(ours(FIXED)) - expected)) <= 1e-12
    assert adjust_p(FIXED, method) == ours(FIXED)


@pytest.fixture
def frozen_heap() -> Iterator[None]:
    """Move every object alive now out of the collector's reach for the test's length.

    statsmodels' ``multipletests(method="holm")`` ends with an explicit ``gc.collect()``: inside a
    pytest process that has imported Dagster that full collection costs 0.2-0.5 s a call, so 200
    reference calls took 95-119 s (the ``fdr_bh`` branch does not collect: 0.15 s). Freezing the
    heap leaves the reference's arithmetic as it is and makes each collection scan only the
    test's own few objects (200 calls: 0.04 s).
    """
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@pytest.mark.usefixtures("frozen_heap")
@pytest.mark.parametrize("method", ["holm", "fdr_bh"])
def test_matches_statsmodels_on_random_vectors(method: str) -> None:
    rng = np.random.default_rng(30)
    for trial in range(200):
        m = int(rng.integers(1, 300))
        p = rng.random(m) ** float(rng.uniform(0.2, 3.0))  # skewed toward 0 or 1
        if trial % 4 == 0:  # McNemar p-values come in ties: round some
            p = np.round(p, 2)
        expected = multipletests(p, alpha=0.05, method=method)[1]
        got = np.array(adjust_p(p.tolist(), method), dtype=float)  # type: ignore[arg-type]
        assert np.max(np.abs(got - expected)) <= 1e-12, (trial, m)


def test_adjusted_is_never_below_raw_and_never_above_one() -> None:
    for adjusted in (holm(FIXED), benjamini_hochberg(FIXED)):
        assert all(raw <= adj <= 1.0 for raw, adj in zip(FIXED, adjusted, strict=True))


def test_one_test_is_not_adjusted_and_no_test_gives_nothing() -> None:
    assert holm([0.03]) == [0.03] and benjamini_hochberg([0.03]) == [0.03]
    assert holm([]) == [] and benjamini_hochberg([]) == []


@pytest.mark.parametrize("bad", [[float("nan")], [-0.1], [1.5]])
def test_a_p_value_outside_zero_one_is_refused(bad: list[float]) -> None:
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        holm(bad)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        benjamini_hochberg(bad)


def test_unknown_method_is_named() -> None:
    with pytest.raises(ValueError, match="bonferroni"):
        adjust_p([0.1], "bonferroni")  # type: ignore[arg-type]
