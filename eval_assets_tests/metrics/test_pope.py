"""POPE: the reference's case-sensitive parsing rule and the metrics with zero denominators."""

from __future__ import annotations

import warnings

import pytest

from eval_assets.metrics.pope import (
    ZeroDenominatorWarning,
    parse_pope_answer,
    pope_label,
    pope_metrics,
    pope_rates,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Yes", "yes"),
        ("yes.", "yes"),
        ("No.", "no"),
        ("no", "no"),
        ("No, there is no dog.", "no"),
        ("NO", "yes"),  # case-sensitive, as the reference
        ("Nope", "yes"),
        ("Yes, but not clearly", "no"),
        ("There is not a dog in the image.", "no"),
        ("Yes. There is no cat, though.", "yes"),  # only the first sentence counts
        ("Yes,no", "yes"),  # commas are removed, not split on: one token "Yesno"
        ("Yes, no", "no"),
        ("No\tdog", "yes"),  # split on single spaces only, as the reference
        ("", "yes"),
    ],
)
def test_parse_pope_answer(text: str, expected: str) -> None:
    assert parse_pope_answer(text) == expected


def test_label_coding() -> None:
    assert pope_label("no") == 0
    assert pope_label("yes") == 1
    assert pope_label("No") == 1  # the reference only maps the exact string "no" to 0


def test_pope_metrics() -> None:
    answers = ["Yes", "Yes, there is.", "No.", "No", "Yes", "There is not.", "NO"]
    labels = ["yes", "yes", "no", "yes", "no", "no", "no"]
    # preds:   1      1      0     0     1      0      1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = pope_metrics(answers, labels)
    assert (result.tp, result.fp, result.tn, result.fn, result.n) == (2, 2, 2, 1, 7)
    assert result.accuracy == pytest.approx(4 / 7)
    assert result.precision == pytest.approx(2 / 4)
    assert result.recall == pytest.approx(2 / 3)
    assert result.f1 == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))
    assert result.yes_ratio == pytest.approx(4 / 7)


def test_zero_denominators_warn_and_give_none_not_zero() -> None:
    # No "yes" answers and no "yes" labels: precision and recall are undefined, not 0%.
    with pytest.warns(ZeroDenominatorWarning, match="precision.*recall.*f1.*None"):
        result = pope_metrics(["No", "no"], ["no", "no"])
    assert (result.tn, result.n) == (2, 2)
    assert (result.precision, result.recall, result.f1) == (None, None, None)
    assert result.accuracy == 1.0
    assert result.yes_ratio == 0.0
    # A model that always says no: recall 0 of 2 is a real 0, precision over nothing is n/a.
    with pytest.warns(ZeroDenominatorWarning, match="precision"):
        never_yes = pope_metrics(["no", "no", "no"], ["yes", "yes", "no"])
    assert (never_yes.precision, never_yes.recall, never_yes.f1) == (None, 0.0, None)
    assert never_yes.model_dump_json().count("null") == 2
    with pytest.warns(ZeroDenominatorWarning, match="accuracy"):
        empty = pope_metrics([], [])
    assert empty.model_dump() == {
        "accuracy": None, "precision": None, "recall": None, "f1": None, "yes_ratio": None,
        "tp": 0, "fp": 0, "tn": 0, "fn": 0, "n": 0,
    }  # fmt: skip


def test_f1_is_zero_when_both_rates_are_defined_and_zero() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = pope_metrics(["yes", "no"], ["no", "yes"])
    assert (result.precision, result.recall, result.f1) == (0.0, 0.0, 0.0)


def test_length_mismatch_is_rejected() -> None:
    with pytest.raises(ValueError, match="2 answers and 1 labels"):
        pope_metrics(["yes", "no"], ["yes"])


def test_rates_from_counts_are_the_metrics_rates() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ZeroDenominatorWarning)
        for answers, labels in [(["yes", "no", "yes", "no"], ["yes", "yes", "no", "no"]),
                                (["no", "no"], ["no", "yes"]), (["yes"], ["no"])]:
            r = pope_metrics(answers, labels)
            assert pope_rates(r.tp, r.fp, r.tn, r.fn) == {
                "accuracy": r.accuracy, "precision": r.precision, "recall": r.recall,
                "f1": r.f1, "yes_ratio": r.yes_ratio}
    assert pope_rates(0, 0, 0, 0) == dict.fromkeys(
        ("accuracy", "precision", "recall", "f1", "yes_ratio"))
    assert pope_rates(0, 1, 0, 1)["f1"] == 0.0
