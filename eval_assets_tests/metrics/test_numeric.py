"""Numeric answers: VSI-Bench's Mean Relative Accuracy on fixed vectors (float artefacts
included), the absolute relative error, and the reply parser."""

from __future__ import annotations

import numpy as np
import pytest

from eval_assets.metrics.numeric import (
    ParsedNumber,
    abs_dist_norm,
    absolute_relative_error,
    mean_relative_accuracy,
    mra_with_zero_rule,
    parse_numeric_reply,
)


def reference_mra(pred: float, target: float, start: float = 0.5, end: float = 0.95,
                  interval: float = 0.05) -> float:
    """vision-x-nyu/thinking-in-space lmms_eval/tasks/vsibench/utils.py, as written there
    (commit e6a72f3: ``abs_dist_norm`` inlined; the task calls it with start=.5, end=.95,
    interval=.05 through ``partial``)."""
    num_pts = (end - start) / interval + 2
    conf_intervs = np.linspace(start, end, int(num_pts))
    accuracy = abs(pred - target) / target <= 1 - conf_intervs
    return accuracy.mean()


# (prediction, truth, MRA), the MRA computed with the reference formula. Float artefacts are the
# reference's: 1.35 vs 1, 6 vs 5 and 3 * 1.05 vs 3 each score 0.1 below exact arithmetic.
VECTORS = [
    (1.0, 1.0, 1.0), (2.0, 1.0, 0.0), (0.0, 1.0, 0.0),
    (0.5, 1.0, 0.1), (1.5, 1.0, 0.1), (0.45, 1.0, 0.0),
    (1.05, 1.0, 1.0), (0.95, 1.0, 1.0), (1.1, 1.0, 0.9), (0.9, 1.0, 0.9),
    (1.35, 1.0, 0.3), (0.6499999999999999, 1.0, 0.3),
    (3 * 1.05, 3.0, 0.9), (3 * 0.95, 3.0, 0.9), (6.0, 5.0, 0.6), (4.0, 5.0, 0.6),
    (7.25, 5.0, 0.1), (2.7, 2.0, 0.3), (10.5, 10.0, 1.0), (11.0, 10.0, 0.9),
    # The spatial families' scales (counts, centimetres, square metres) and a negative reply.
    # 0.55 vs 0.5 and 2.2 vs 2 pass the .90 threshold only through float rounding.
    (4.0, 3.0, 0.4), (2.0, 3.0, 0.4), (50.0, 45.0, 0.8), (95.0, 100.0, 1.0),
    (105.0, 100.0, 1.0), (36.0, 40.0, 0.9), (12.6, 12.0, 1.0), (0.55, 0.5, 0.9),
    (2.2, 2.0, 0.9), (3.3, 3.0, 0.9), (-1.0, 2.0, 0.0),
]


@pytest.mark.parametrize(("pred", "target", "expected"), VECTORS)
def test_mra_matches_the_reference_formula_on_fixed_vectors(pred: float, target: float,
                                                            expected: float) -> None:
    assert mean_relative_accuracy(pred, target) == reference_mra(pred, target) == expected


def test_mra_has_ten_thresholds_and_keeps_the_reference_artefacts() -> None:
    # (0.95 - 0.5) / 0.05 is 8.999..., so int(... + 2) is 10 thresholds: .50, .55, ... .95.
    assert int((0.95 - 0.5) / 0.05 + 2) == 10
    # 1.35 vs 1 would pass .50-.65 in exact arithmetic (0.4); in floats it passes 3 of them.
    assert mean_relative_accuracy(1.35, 1.0) == 0.3
    # 5% over 3 is 0.15000000000000036 away: it misses the .95 threshold, 5% over 1 does not.
    assert abs_dist_norm(3 * 1.05, 3.0) > 1 - 0.95 >= abs_dist_norm(1.05, 1.0)
    rng = np.random.default_rng(0)
    for pred, target in rng.uniform(0.1, 10.0, size=(200, 2)):
        assert mean_relative_accuracy(pred, target) == reference_mra(pred, target)


def test_absolute_relative_error() -> None:
    assert absolute_relative_error(1.5, 2.0) == 0.25
    assert absolute_relative_error(2.5, 2.0) == 0.25
    assert absolute_relative_error(2.0, 2.0) == 0.0


@pytest.mark.parametrize(("reply", "unit", "value", "written"), [
    ("2.5", "m", 2.5, None),
    ("2,5", "m", 2.5, None),
    ("About 2,5 m away.", "m", 2.5, "m"),
    ("120 cm", "m", 1.2, "cm"),
    ("1500mm", "m", 1.5, "mm"),
    ("1.5 metres", "m", 1.5, "m"),
    ("0.8 m", "cm", 80.0, "m"),
    ("The room is 12 m² large", "m²", 12.0, "m²"),
    ("12 m2", "m²", 12.0, "m²"),
    ("3", "cm", 3.0, None),
])
def test_the_parser_reads_decimal_commas_and_converts_units(reply: str, unit: str, value: float,
                                                            written: str | None) -> None:
    parsed = parse_numeric_reply(reply, unit)
    assert parsed is not None
    assert parsed.value == pytest.approx(value) and parsed.written_unit == written


def test_a_count_takes_the_first_number_as_written() -> None:
    assert parse_numeric_reply("3 chairs", None) == ParsedNumber(3.0, None)
    assert parse_numeric_reply("I see 2,0 of them", None) == ParsedNumber(2.0, None)
    assert parse_numeric_reply("none that I can see", None) is None


@pytest.mark.parametrize("reply", [None, "", "I cannot tell.", "about a metre", "4 m²"])
def test_a_reply_without_a_number_in_the_asked_dimension_is_unparseable(reply: str | None
                                                                        ) -> None:
    assert parse_numeric_reply(reply, "m") is None


def test_an_unknown_unit_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown unit 'ft'"):
        parse_numeric_reply("3", "ft")


# OSI-Bench's zero rule (lmms_eval/tasks/osi_bench/utils.py, calculate_mra_with_threshold,
# τ = 0.30 m): (pred, truth, score). Below τ a prediction in [0, τ) scores 1, any other is MRA
# against τ; from τ up it is plain MRA.
ZERO_RULE_VECTORS = [
    (0.2, 0.0, 1.0), (0.0, 0.0, 1.0), (0.2999, 0.0, 1.0),
    (0.6, 0.0, mean_relative_accuracy(0.6, 0.3)), (0.6, 0.0, 0.0),
    (0.3, 0.0, 1.0),  # not below τ: MRA against τ, which it equals
    (0.33, 0.0, mean_relative_accuracy(0.33, 0.3)),
    (0.33, 0.0, 0.9),  # 0.1 off: passes .90 through the reference's float rounding
    (0.42, 0.0, 0.3), (-0.1, 0.0, 0.0),  # a negative distance is not "nearly zero"
    (0.1, 0.04, 1.0),  # any truth below τ, not only 0 (motion.md)
    (0.5, 0.5, 1.0), (0.2, 0.5, mean_relative_accuracy(0.2, 0.5)), (0.55, 0.5, 0.9),
]


@pytest.mark.parametrize(("pred", "target", "expected"), ZERO_RULE_VECTORS)
def test_the_zero_rule_on_fixed_vectors(pred: float, target: float, expected: float) -> None:
    assert mra_with_zero_rule(pred, target) == expected


def test_the_zero_rule_takes_tau_in_the_cases_unit_and_leaves_vsi_mra_alone() -> None:
    assert mra_with_zero_rule(20.0, 0.0, tolerance=30.0) == 1.0  # centimetres
    assert mra_with_zero_rule(60.0, 0.0, tolerance=30.0) == mean_relative_accuracy(60.0, 30.0)
    # VSI-Bench's MRA still refuses a truth of 0 (it divides by it): only the rule scores it.
    with pytest.raises(ZeroDivisionError):
        mean_relative_accuracy(0.2, 0.0)
    with pytest.raises(ValueError, match="distance truth"):
        mra_with_zero_rule(0.2, -1.0)
    with pytest.raises(ValueError, match="tolerance"):
        mra_with_zero_rule(0.2, 0.0, tolerance=0.0)
