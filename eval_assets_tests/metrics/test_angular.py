"""Mean angular accuracy (motion.md, "Scoring") on fixed vectors, and the wrap it rests on."""

from __future__ import annotations

import math

import pytest

from eval_assets.metrics.angular import (
    ANGULAR_TOLERANCES_DEG,
    angular_difference,
    mean_angular_accuracy,
    wrap_degrees,
)


@pytest.mark.parametrize(("pred", "truth", "expected"), [
    (0.0, 0.0, 1.0),
    (350.0, -10.0, 1.0),  # the same direction written two ways
    (30.0, 0.0, 0.5),  # passes 30, 35, ... 50: five of ten
    (180.0, -180.0, 1.0),
    (90.0, 0.0, 0.0),
    (-90.0, 270.0, 1.0),
    (5.0, 0.0, 1.0),  # d <= t: the 5° tolerance passes at exactly 5°
    (0.0, 5.0001, 0.9),
    (50.0, 0.0, 0.1),
    (50.0001, 0.0, 0.0),
    (-170.0, 170.0, 0.7),  # 20° apart across ±180°, not 340°
    (10.0, 370.0, 1.0),
    (45.0, -45.0, 0.0),  # "45° right" against "45° left"
    (12.5, 0.0, 0.8),
])
def test_mean_angular_accuracy_on_fixed_vectors(pred: float, truth: float,
                                                expected: float) -> None:
    assert mean_angular_accuracy(pred, truth) == expected
    assert mean_angular_accuracy(truth, pred) == expected  # symmetric


def test_ten_tolerances_five_to_fifty() -> None:
    assert ANGULAR_TOLERANCES_DEG == (5, 10, 15, 20, 25, 30, 35, 40, 45, 50)


@pytest.mark.parametrize(("a", "b", "d"), [(0.0, 0.0, 0.0), (350.0, -10.0, 0.0),
                                           (0.0, 180.0, 180.0), (0.0, 190.0, 170.0),
                                           (-179.0, 179.0, 2.0), (720.0, 0.0, 0.0)])
def test_the_difference_is_wrapped_into_0_180(a: float, b: float, d: float) -> None:
    assert angular_difference(a, b) == pytest.approx(d)
    assert 0.0 <= angular_difference(a, b) <= 180.0


@pytest.mark.parametrize(("angle", "wrapped"), [(0.0, 0.0), (180.0, 180.0), (-180.0, 180.0),
                                                (270.0, -90.0), (-270.0, 90.0), (360.0, 0.0),
                                                (540.0, 180.0), (330.0, -30.0)])
def test_wrap_into_minus_180_180(angle: float, wrapped: float) -> None:
    assert wrap_degrees(angle) == wrapped


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_non_finite_angle_is_an_error(bad: float) -> None:
    with pytest.raises(ValueError, match="finite number of degrees"):
        mean_angular_accuracy(bad, 0.0)
    with pytest.raises(ValueError, match="finite number of degrees"):
        wrap_degrees(bad)
