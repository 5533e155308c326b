"""VQA: mapping replies to choices, and accuracy with frame-clustered intervals per family and
recording."""

from __future__ import annotations

import pytest

from eval_assets.metrics.stats import clustered_wilson
from eval_assets.metrics.vqa import (
    ChoiceMatch,
    VqaRow,
    match_choice,
    normalise_reply,
    vqa_accuracy,
    wilson_interval,
)

YES_NO = ["yes", "no"]
DISTANCES = ["under 1 meter", "1 to under 2 meters", "2 to under 4 meters", "4 meters or more"]
SHARES = ["0-10%", "10-25%", "25-50%", "50-100%"]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("yes", ChoiceMatch(choice="yes", tier="exact")),
        ("  YES. ", ChoiceMatch(choice="yes", tier="exact")),
        ('"No"', ChoiceMatch(choice="no", tier="exact")),
        ("**No**", ChoiceMatch(choice="no", tier="exact")),
        ("Answer: yes", ChoiceMatch(choice="yes", tier="exact")),
        ('answer: **"No."**', ChoiceMatch(choice="no", tier="exact")),
        # dimOS picks the last choice mentioned ("no"); the reply clearly says yes.
        ("Yes, there is no doubt.", ChoiceMatch(choice="yes", tier="leading")),
        ("No, it is not there", ChoiceMatch(choice="no", tier="leading")),
        ("Not sure", ChoiceMatch()),
        ("Nope", ChoiceMatch()),
        ("yesterday", ChoiceMatch()),
        ("I think yes", ChoiceMatch()),
        ("", ChoiceMatch()),
        (None, ChoiceMatch()),
    ],
)
def test_yes_no(reply: str | None, expected: ChoiceMatch) -> None:
    assert match_choice(reply, YES_NO) == expected


def test_longest_choice_wins_and_boundaries_hold() -> None:
    choices = ["1", "1 to under 2 meters", "2"]
    assert match_choice("1 to under 2 meters away.", choices) == ChoiceMatch(
        choice="1 to under 2 meters", tier="leading"
    )
    assert match_choice("1 meter", choices) == ChoiceMatch(choice="1", tier="leading")
    assert match_choice("1.", choices) == ChoiceMatch(choice="1", tier="exact")
    # A decimal, a range or a longer number is not the choice "1".
    assert match_choice("1.5 meters", choices) == ChoiceMatch()
    assert match_choice("1-2 meters", choices) == ChoiceMatch()
    assert match_choice("12 meters", choices) == ChoiceMatch()
    assert match_choice("2 to under 4 meters", DISTANCES).choice == "2 to under 4 meters"


def test_percent_and_dash_choices() -> None:
    assert match_choice("25-50%", SHARES) == ChoiceMatch(choice="25-50%", tier="exact")
    assert match_choice("**10-25%**.", SHARES) == ChoiceMatch(choice="10-25%", tier="exact")
    assert match_choice("50-100% of the image is floor", SHARES) == ChoiceMatch(
        choice="50-100%", tier="leading"
    )
    assert match_choice("0-10%, roughly", SHARES) == ChoiceMatch(choice="0-10%", tier="leading")
    assert match_choice("25-5", SHARES) == ChoiceMatch()
    assert match_choice("about 25-50%", SHARES) == ChoiceMatch()


def test_letters_only_when_lettered() -> None:
    for reply in ["B", "(B)", "B.", "B)", "b", "Answer: (B)"]:
        assert match_choice(reply, DISTANCES, lettered=True) == ChoiceMatch(
            choice="1 to under 2 meters", tier="letter"
        ), reply
        assert match_choice(reply, DISTANCES) == ChoiceMatch(), reply
    assert match_choice("E", DISTANCES, lettered=True) == ChoiceMatch()
    # An exact choice text still wins over a letter reading.
    assert match_choice("a", ["b", "a"], lettered=True) == ChoiceMatch(choice="a", tier="exact")


def test_ambiguous_choices_are_rejected() -> None:
    with pytest.raises(ValueError, match="not distinct"):
        match_choice("yes", ["Yes", "yes."])


def test_normalise_reply() -> None:
    assert normalise_reply('  **"Answer: 25-50%."** ') == "25-50%"


def test_wilson_interval_hand_computed() -> None:
    # 7 of 10, z = 1.959964 (z² = 3.841459): the bounds are the roots of
    # (1 + z²/10)·p² − (1.4 + z²/10)·p + 0.49 = 0, i.e. 0.396778 and 0.892209
    # (the textbook 95% Wilson interval for 7/10 is 0.3968–0.8922).
    low, high = wilson_interval(7, 10)
    assert low == pytest.approx(0.396778, abs=1e-6)
    assert high == pytest.approx(0.892209, abs=1e-6)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    assert wilson_interval(0, 5)[0] == 0.0
    assert wilson_interval(5, 5)[1] == 1.0


def _row(case: str, family: str, rec: str, choices: list[str], answer: str, pred: str | None):
    return {
        "case_id": case,
        "family": family,
        "recording": rec,
        "frame_index": int(case[-1]),
        "choices": choices,
        "answer": answer,
        "prediction": pred,
    }


def test_vqa_accuracy() -> None:
    rows = [
        _row("c1", "presence", "rec-b", YES_NO, "yes", "Yes, there is no doubt."),
        _row("c2", "presence", "rec-a", YES_NO, "no", "Yes"),
        _row("c3", "presence", "rec-a", YES_NO, "no", "Hard to say"),
        _row("c4", "distance", "rec-b", DISTANCES, "2 to under 4 meters", "2 to under 4 meters"),
        _row("c5", "distance", "rec-a", DISTANCES, "under 1 meter", None),
    ]
    report = vqa_accuracy(rows)
    assert [r.status for r in report.rows] == [
        "correct", "incorrect", "parse_failure", "correct", "failed_call",
    ]  # fmt: skip
    assert [r.tier for r in report.rows] == ["leading", "exact", None, "exact", None]
    overall = report.overall
    assert (overall.n, overall.correct, overall.parse_failures, overall.failed_calls) == (
        5,
        2,
        1,
        1,
    )
    assert overall.accuracy == 0.4
    assert overall.parse_failure_rate == 0.2
    assert overall.chance == pytest.approx((0.5 * 3 + 0.25 * 2) / 5)
    # Every case is on its own frame (frame_index from the case id, recordings differ).
    assert overall.n_frames == 5
    interval = clustered_wilson([(r["recording"], r["frame_index"]) for r in rows],
                                [True, False, False, True, False])
    assert interval is not None
    assert (overall.ci_low, overall.ci_high) == pytest.approx((interval.low, interval.high))
    # Independent cases: the design effect is the small-sample factor n / (n - 1) only.
    assert overall.design_effect == pytest.approx(5 / 4)
    assert (overall.ci_low, overall.ci_high) == pytest.approx(wilson_interval(2 * 4 / 5, 4))
    assert list(report.by_family) == ["distance", "presence"]
    assert list(report.by_recording) == ["rec-a", "rec-b"]
    assert report.by_family["presence"].accuracy == pytest.approx(1 / 3)
    assert report.by_family["distance"].chance == 0.25
    assert report.by_recording["rec-b"].accuracy == 1.0
    assert report.by_recording["rec-a"].correct == 0
    assert vqa_accuracy(rows).model_dump_json() == report.model_dump_json()


def test_vqa_rows_are_validated() -> None:
    bad = _row("c7", "presence", "rec-a", YES_NO, "maybe", "yes")
    with pytest.raises(ValueError, match=r"(?s)row #0 .*case 'c7': field 'answer' = 'maybe'"):
        vqa_accuracy([bad])
    with pytest.raises(ValueError, match="choices must be distinct"):
        VqaRow.model_validate(_row("c8", "presence", "rec-a", ["yes", "yes"], "yes", "yes"))


def test_cases_of_one_frame_are_not_independent() -> None:
    # 4 frames of 10 cases, each frame all right or all wrong: 40 cases carry the information
    # of 4, so the interval is the Wilson interval of 2 of 4 (design effect 10 * 4/3).
    rows = [_row(f"f{f}c{c}", "presence", "rec", YES_NO, "yes", "yes" if f % 2 else "no")
            for f in range(4) for c in range(10)]
    for r, f in zip(rows, [f for f in range(4) for _ in range(10)], strict=True):
        r["frame_index"] = f
    overall = vqa_accuracy(rows).overall
    assert (overall.n, overall.correct, overall.n_frames) == (40, 20, 4)
    assert overall.design_effect == pytest.approx(10 * 4 / 3)
    assert (overall.ci_low, overall.ci_high) == pytest.approx(wilson_interval(1.5, 3))
    assert overall.ci_high - overall.ci_low > 2 * (wilson_interval(20, 40)[1] - 0.5)


def test_prompt_format_is_kept_per_row() -> None:
    row = _row("c1", "distance", "rec", DISTANCES, "under 1 meter", "A")
    assert vqa_accuracy([{**row, "lettered": True}]).rows[0].lettered
    assert vqa_accuracy([{**row, "lettered": True}]).rows[0].status == "correct"
    assert not vqa_accuracy([row]).rows[0].lettered


def test_empty_report() -> None:
    report = vqa_accuracy([])
    assert report.overall.n == 0
    # No cases: no accuracy, not 0%.
    assert report.overall.accuracy is None and report.overall.parse_failure_rate is None
    assert (report.overall.ci_low, report.overall.ci_high) == (None, None)
    assert report.overall.chance is None
    assert report.by_family == {} and report.rows == []
