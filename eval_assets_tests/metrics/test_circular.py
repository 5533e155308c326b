"""CircularEval and position bias on hand-built cases whose every number is known exactly."""

from __future__ import annotations

import math

import pytest

from eval_assets.metrics.circular import (
    CircularCase,
    circular_eval,
    circular_group_stats,
    position_bias,
    score_circular_case,
)
from eval_assets.metrics.stats import clustered_wilson
from eval_assets.schemas.predictions import rotate_choices

YES_NO = ["yes", "no"]
COUNTS = ["one", "two", "three", "four or more"]
SIDES = ["left", "center", "right"]


def cases(n_frames: int = 12) -> list[dict]:
    """Per frame: a yes/no case, a 4-choice and a 3-choice case, gold at varying positions."""
    out = []
    for f in range(n_frames):
        out.append({"case_id": f"f{f}-presence", "family": "presence", "choices": YES_NO,
                     "answer": YES_NO[f % 2], "frame_index": f})
        out.append({"case_id": f"f{f}-count", "family": "object_count", "choices": COUNTS,
                     "answer": COUNTS[f % 4], "frame_index": f})
        out.append({"case_id": f"f{f}-side", "family": "horizontal_direction", "choices": SIDES,
                     "answer": SIDES[(f + 1) % 3], "frame_index": f})
    return out


def asked(spec: dict, reply, rotations: range | None = None) -> CircularCase:
    """``spec`` asked in every rotation (or ``rotations``); ``reply(shown, gold)`` answers."""
    k = len(spec["choices"])
    wanted = range(k) if rotations is None else rotations
    return CircularCase(recording="rec", replies={
        r: reply(rotate_choices(spec["choices"], r), spec["answer"]) for r in wanted}, **spec)


def first_shown(shown: list[str], gold: str) -> str:
    return shown[0]


def by_content(shown: list[str], gold: str) -> str:
    return gold


def test_a_model_that_always_picks_the_first_choice_is_never_robust_and_strongly_biased() -> None:
    specs = cases()
    report = circular_eval([asked(s, first_shown) for s in specs])
    o = report.overall
    ks = [len(s["choices"]) for s in specs]
    # Rotations put the gold answer first exactly once per case: one right answer in k, never
    # all k, so CircularEval is 0 while the published order scores the gold-first share.
    assert o.n == len(specs) == 36 and o.not_asked == 0
    assert o.robust == 0 and o.accuracy == 0.0
    assert o.n_answers == sum(ks) == 108 and o.correct_answers == len(specs)
    assert o.rotation_accuracy == pytest.approx(36 / 108)
    gold_first = sum(1 for s in specs if s["choices"][0] == s["answer"])
    assert o.original_accuracy == pytest.approx(gold_first / 36)
    bias = o.bias
    assert bias.n == 108 and bias.answer_counts == [108, 0, 0, 0]
    # Gold sits once at each position of each case: 36 at 1 and 2, 24 at 3, 12 at 4.
    assert bias.gold_counts == [36, 36, 24, 12]
    assert bias.max_gap == pytest.approx(1 - 36 / 108) and bias.max_gap_position == 1
    expected = (108 - 36) ** 2 / 36 + 36 + 24 + 12
    assert bias.chi2 == pytest.approx(expected) and bias.df == 3
    assert bias.p_value is not None and bias.p_value < 1e-12


def test_a_model_that_answers_by_content_is_robust_and_unbiased() -> None:
    report = circular_eval([asked(s, by_content) for s in cases()])
    o = report.overall
    assert o.accuracy == 1.0 and o.rotation_accuracy == 1.0 and o.original_accuracy == 1.0
    assert o.ci_high == 1.0 and o.ci_low is not None and 0.8 < o.ci_low < 1.0
    assert o.bias.answer_counts == o.bias.gold_counts
    assert o.bias.max_gap == 0.0 and o.bias.chi2 == 0.0 and o.bias.p_value == pytest.approx(1.0)
    assert set(report.by_family) == {"presence", "object_count", "horizontal_direction"}
    assert all(f.accuracy == 1.0 and f.n == 12 for f in report.by_family.values())


def test_a_consistently_wrong_content_model_has_no_position_bias() -> None:
    """Always the last choice of the published order, whatever the display order: wrong but
    by content, so it picks each displayed position equally often."""
    specs = cases()
    rows = [asked(s, lambda shown, gold, c=s["choices"]: c[-1]) for s in specs]
    o = circular_eval(rows).overall
    robust = sum(1 for s in specs if s["answer"] == s["choices"][-1])
    assert o.robust == robust and o.accuracy == pytest.approx(robust / 36)
    assert o.bias.max_gap == 0.0 and o.bias.answer_counts == [36, 36, 24, 12]


def test_failures_count_as_misses_and_unasked_rotations_are_excluded_and_counted() -> None:
    spec = {"case_id": "c", "family": "object_count", "choices": COUNTS, "answer": "two",
            "frame_index": 1}
    failed = CircularCase(recording="rec", replies={0: "two", 1: "two", 2: None, 3: "two"},
                          **spec)
    unparsed = CircularCase(recording="rec",
                            replies={0: "two", 1: "two", 2: "maybe", 3: "two"}, **spec)
    partial = asked(spec | {"case_id": "p"}, by_content, rotations=range(3))
    row = score_circular_case(failed)
    assert row.statuses == ["correct", "correct", "failed_call", "correct"] and not row.robust
    assert row.chosen_positions == [1, 0, None, 2]
    assert score_circular_case(unparsed).statuses[2] == "parse_failure"
    assert score_circular_case(partial).statuses == ["correct"] * 3 + [None]
    o = circular_eval([failed, unparsed, partial]).overall
    assert o.n == 2 and o.not_asked == 1 and o.robust == 0 and o.accuracy == 0.0
    assert o.n_answers == 8 and o.correct_answers == 6
    assert o.failed_calls == 1 and o.parse_failures == 1
    assert o.bias.n == 6  # only answers that named a choice have a position


def test_nothing_asked_gives_no_numbers_rather_than_zeros() -> None:
    spec = {"case_id": "c", "family": "presence", "choices": YES_NO, "answer": "yes",
            "frame_index": 0}
    only_original = CircularCase(recording="rec", replies={0: "yes"}, **spec)
    o = circular_eval([only_original]).overall
    assert o.n == 0 and o.not_asked == 1
    assert o.accuracy is None and o.ci_low is None and o.chance is None
    assert o.rotation_accuracy is None and o.original_accuracy is None
    assert o.bias.n == 0 and o.bias.max_gap is None and o.bias.p_value is None
    assert o.bias.answer_share == [] and o.bias.answer_counts == []
    empty = circular_group_stats([])
    assert empty.n == 0 and empty.accuracy is None and empty.bias.answer_counts == []


def test_interval_is_clustered_by_frame_and_chance_is_k_to_the_minus_k() -> None:
    specs = cases(8)
    # Right on every rotation of even frames only: whole frames right or wrong together.
    rows = [asked(s, by_content if s["frame_index"] % 2 == 0 else first_shown) for s in specs]
    o = circular_eval(rows).overall
    direct = clustered_wilson([("rec", s["frame_index"]) for s in specs],
                              [s["frame_index"] % 2 == 0 for s in specs])
    assert direct is not None
    assert (o.accuracy, o.ci_low, o.ci_high, o.n_frames) == (
        direct.estimate, direct.low, direct.high, 8)
    assert o.design_effect is not None and o.design_effect > 1
    assert o.chance == pytest.approx((2 ** -2 + 4 ** -4 + 3 ** -3) / 3)


def test_chi_square_matches_the_closed_form_for_one_degree_of_freedom() -> None:
    spec = {"family": "presence", "choices": YES_NO, "answer": "yes"}
    # 10 cases: the first 7 answered "shown first" (position-biased), 3 by content.
    rows = [score_circular_case(asked(spec | {"case_id": f"c{i}", "frame_index": i},
                                      first_shown if i < 7 else by_content)) for i in range(10)]
    bias = position_bias(rows)
    assert bias.answer_counts == [17, 3] and bias.gold_counts == [10, 10]
    chi2 = (17 - 10) ** 2 / 10 + (3 - 10) ** 2 / 10
    assert bias.chi2 == pytest.approx(chi2) and bias.df == 1
    assert bias.p_value == pytest.approx(math.erfc(math.sqrt(chi2 / 2)))
    assert bias.answer_share == [0.85, 0.15] and bias.gold_share == [0.5, 0.5]
    assert bias.max_gap == pytest.approx(0.35) and bias.max_gap_position == 1


def test_a_position_that_never_holds_gold_leaves_the_test_undefined() -> None:
    spec = {"case_id": "c", "family": "object_count", "choices": COUNTS, "answer": "one",
            "frame_index": 0}
    # Only the published order parsed: gold at position 1, the reply names position 4.
    row = score_circular_case(CircularCase(recording="rec", replies={
        0: "four or more", 1: None, 2: None, 3: None}, **spec))
    bias = position_bias([row])
    assert bias.answer_counts == [0, 0, 0, 1] and bias.gold_counts == [1, 0, 0, 0]
    assert bias.max_gap == 1.0 and bias.chi2 is None and bias.p_value is None


def test_bad_cases_are_rejected_with_the_reason() -> None:
    with pytest.raises(ValueError, match="not one of its choices"):
        CircularCase(case_id="c", family="f", recording="r", frame_index=0, choices=YES_NO,
                     answer="maybe", replies={})
    with pytest.raises(ValueError, match=r"rotations \[2\] do not exist"):
        CircularCase(case_id="c", family="f", recording="r", frame_index=0, choices=YES_NO,
                     answer="yes", replies={2: "yes"})


def test_results_are_deterministic() -> None:
    rows = [asked(s, first_shown if s["frame_index"] % 3 else by_content) for s in cases()]
    assert circular_eval(rows).model_dump_json() == circular_eval(rows).model_dump_json()


@pytest.mark.parametrize("df", [1, 2, 3, 5, 8])
def test_the_p_value_is_scipy_stats_chi2_survival_exactly(df: int) -> None:
    # The p-value comes from scipy.special (scipy.stats costs each cell's run 0.6 s more to
    # import): the same function chi2.sf calls, so equal to the last bit.
    from scipy.stats import chi2

    from eval_assets.metrics.circular import _chi2_sf

    for statistic in (0.0, 0.004, 0.5, 1.0, 3.84, 7.81, 12.3, 40.0, 95.5):
        assert _chi2_sf(statistic, df) == float(chi2.sf(statistic, df))
