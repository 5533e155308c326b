"""POPE yes/no metrics, compatible with RUCAIBox/POPE ``evaluate.py`` (specs/metrics.md §6).

The parsing rule is the reference's, quirks included: it is case-sensitive, so "NO" and "Nope"
count as "yes", and any "not" in the first sentence makes the answer "no". Where the reference
divides by zero and crashes, the quantity is None ("n/a") and a warning names it: a precision
over no "yes" answers is undefined, and a 0.0 there would read as "every yes was wrong".
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

__all__ = [
    "PopeResult",
    "ZeroDenominatorWarning",
    "parse_pope_answer",
    "pope_label",
    "pope_metrics",
    "pope_rates",
]

_NEGATIONS = ("No", "not", "no")


class ZeroDenominatorWarning(RuntimeWarning):
    """A metric had an empty denominator and was reported as None (n/a)."""


def parse_pope_answer(text: str) -> Literal["yes", "no"]:
    """The reference rule: first sentence, commas removed, split on single spaces; "no" when a
    token is exactly ``No``, ``not`` or ``no``, else "yes"."""
    if not isinstance(text, str):
        raise TypeError(f"a POPE answer must be a string, got {type(text).__name__}: {text!r}")
    first = text.split(".", 1)[0]
    tokens = first.replace(",", "").split(" ")
    return "no" if any(neg in tokens for neg in _NEGATIONS) else "yes"


def pope_label(label: str) -> int:
    """The reference's label coding: ``"no"`` -> 0, anything else -> 1."""
    return 0 if label == "no" else 1


class PopeResult(BaseModel):
    """POPE metrics over n answers (positive class: "yes")."""

    accuracy: float | None
    precision: float | None
    recall: float | None
    f1: float | None
    yes_ratio: float | None
    tp: int
    fp: int
    tn: int
    fn: int
    n: int


def _ratio(num: float, den: float, name: str, empty: list[str]) -> float | None:
    if den == 0:
        empty.append(name)
        return None
    return num / den


def pope_rates(tp: int, fp: int, tn: int, fn: int) -> dict[str, float | None]:
    """Accuracy, precision, recall, F1 and yes-ratio from the confusion counts; a quantity with
    an empty denominator is None (n/a). F1 is None when precision or recall is, and 0.0 when
    both are 0. One rule for a cell, a pooled leaderboard row and the report."""
    return _rates(tp, fp, tn, fn, [])


def _rates(tp: int, fp: int, tn: int, fn: int, empty: list[str]) -> dict[str, float | None]:
    n = tp + fp + tn + fn
    precision = _ratio(tp, tp + fp, "precision (no 'yes' predictions)", empty)
    recall = _ratio(tp, tp + fn, "recall (no 'yes' labels)", empty)
    if precision is None or recall is None:
        f1 = None
        empty.append("f1 (precision or recall undefined)")
    else:
        # Both defined and both 0 means every positive was missed: F1 is 0, not undefined.
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    accuracy = _ratio(tp + tn, n, "accuracy (no answers)", empty)
    yes_ratio = _ratio(tp + fp, n, "yes_ratio (no answers)", empty)
    return {"accuracy": accuracy, "precision": precision, "recall": recall, "f1": f1,
            "yes_ratio": yes_ratio}


def pope_metrics(answers: Sequence[str], labels: Sequence[str]) -> PopeResult:
    """Accuracy, precision, recall, F1 and yes-ratio of raw answers against yes/no labels.

    Every answer goes through ``parse_pope_answer`` (so "yes"/"no" pass through unchanged).
    Quantities with a zero denominator are None and one ZeroDenominatorWarning names them; F1
    is None when precision or recall is, and 0.0 when both are 0 (defined, just bad).
    """
    if len(answers) != len(labels):
        raise ValueError(
            f"answers and labels must pair up: got {len(answers)} answers and {len(labels)} labels"
        )
    preds = [0 if parse_pope_answer(a) == "no" else 1 for a in answers]
    gold = [pope_label(lab) for lab in labels]
    pairs = list(zip(preds, gold, strict=True))
    tp = sum(1 for p, g in pairs if p == 1 and g == 1)
    fp = sum(1 for p, g in pairs if p == 1 and g == 0)
    tn = sum(1 for p, g in pairs if p == 0 and g == 0)
    fn = sum(1 for p, g in pairs if p == 0 and g == 1)
    n = len(pairs)
    empty: list[str] = []
    rates = _rates(tp, fp, tn, fn, empty)
    if empty:
        warnings.warn(
            f"POPE over {n} answers: zero denominator for {', '.join(empty)}; reported as None "
            "(n/a)",
            ZeroDenominatorWarning,
            stacklevel=2,
        )
    return PopeResult(
        **rates,
        tp=tp,
        fp=fp,
        tn=tn,
        fn=fn,
        n=n,
    )
