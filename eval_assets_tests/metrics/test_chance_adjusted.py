"""SITE's chance-adjusted accuracy on fixed vectors, and its form from accuracy and chance."""

from __future__ import annotations

import pytest

from eval_assets.metrics.chance_adjusted import (
    chance_adjusted_accuracy,
    chance_adjusted_from_rates,
)


def test_a_fixed_mixed_vector_by_hand() -> None:
    # 2 of 4 right; 1/n: 1/2 + 1/2 + 1/4 + 1/4 = 1.5 -> (2 - 1.5) / (4 - 1.5) = 0.2.
    assert chance_adjusted_accuracy([1, 0, 1, 0], [2, 2, 4, 4]) == pytest.approx(0.2, abs=1e-15)


def test_guessing_scores_zero_all_right_one_all_wrong_below_zero() -> None:
    # Half of the yes/no and a quarter of the four-choice cases right: exactly chance.
    correct = [True] * 2 + [False] * 2 + [True] + [False] * 3
    assert chance_adjusted_accuracy(correct, [2] * 4 + [4] * 4) == pytest.approx(0.0, abs=1e-15)
    assert chance_adjusted_accuracy([True] * 3, [2, 3, 5]) == 1.0
    # All wrong: -sum(1/n) / (N - sum(1/n)) = -(1/2 + 1/3) / (2 - 5/6) = -5/7.
    assert chance_adjusted_accuracy([False, False], [2, 3]) == pytest.approx(-5 / 7, abs=1e-15)


def test_raw_accuracy_over_credits_yes_no_and_caa_does_not() -> None:
    # 60 % on yes/no and 60 % on five choices: the same raw accuracy, very different skill.
    yes_no = chance_adjusted_accuracy([1] * 6 + [0] * 4, [2] * 10)
    five = chance_adjusted_accuracy([1] * 6 + [0] * 4, [5] * 10)
    assert yes_no == pytest.approx(0.2) and five == pytest.approx(0.5)


def test_rates_form_equals_the_per_case_form() -> None:
    correct = [1, 0, 1, 1, 0, 1, 0]
    n_choices = [2, 3, 4, 2, 5, 3, 4]
    accuracy = sum(correct) / len(correct)
    chance = sum(1 / n for n in n_choices) / len(n_choices)
    assert chance_adjusted_from_rates(accuracy, chance) == pytest.approx(
        chance_adjusted_accuracy(correct, n_choices), abs=1e-12)


def test_no_case_is_none_not_zero_and_bad_input_is_named() -> None:
    assert chance_adjusted_accuracy([], []) is None
    assert chance_adjusted_from_rates(None, 0.5) is None
    assert chance_adjusted_from_rates(float("nan"), 0.5) is None
    assert chance_adjusted_from_rates(0.5, 1.0) is None
    with pytest.raises(ValueError, match="one entry per case"):
        chance_adjusted_accuracy([1], [2, 2])
    with pytest.raises(ValueError, match="at least 2 choices"):
        chance_adjusted_accuracy([1], [1])
