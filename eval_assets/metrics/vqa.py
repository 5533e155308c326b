"""Multiple-choice VQA accuracy (specs/metrics.md §5; reference: dimOS ``dimos evals vqa run``).

A reply is mapped to one of the case's fixed choices by ``match_choice``, in tiers: the exact
choice text, a letter (only when the choices were shown lettered: "B", "B) no", not "B) yes" when B
is "no"; see :mod:`eval_assets.choices`), or a reply that starts with exactly one choice. Anything
else is a parse failure and stays in the denominator. Unlike dimOS we
never let "the last choice mentioned" win: "Yes, there is no doubt" is "yes", not "no".

Intervals are clustered by frame (see :mod:`eval_assets.metrics.stats`): the cases of one frame
share one image and are not independent. A group without cases has no accuracy: its rates are
None ("n/a"), never 0.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from eval_assets.choices import ChoiceMatch, Tier, match_choice, normalise_reply
from eval_assets.metrics.headline import (
    FamilyMean,
    FamilyScore,
    HeadlineCase,
    family_mean,
    headline,
)
from eval_assets.metrics.stats import WILSON_Z, clustered_wilson, wilson_interval

__all__ = [
    "WILSON_Z",
    "ChoiceMatch",
    "VqaGroupStats",
    "VqaReport",
    "VqaRow",
    "VqaRowResult",
    "accuracy_family_mean",
    "frame_keys",
    "headline_case",
    "match_choice",
    "normalise_reply",
    "vqa_accuracy",
    "wilson_interval",
]

RowStatus = Literal["correct", "incorrect", "parse_failure", "failed_call"]


class GoldCase(BaseModel):
    """A case with its gold answer: what every scored row of it carries."""

    case_id: str
    family: str
    recording: str
    frame_index: int
    choices: list[str] = Field(min_length=2)
    answer: str

    @field_validator("choices")
    @classmethod
    def _distinct(cls, choices: list[str]) -> list[str]:
        if len(set(choices)) != len(choices):
            raise ValueError(f"choices must be distinct, got {choices!r}")
        return choices

    @model_validator(mode="after")
    def _answer_is_a_choice(self) -> GoldCase:
        if self.answer not in self.choices:
            raise ValueError(
                f"case {self.case_id!r}: field 'answer' = {self.answer!r} is not one of its "
                f"choices {self.choices!r}; fix the case's gold answer"
            )
        return self


class VqaRow(GoldCase):
    """One answered case: the question's choices, the gold answer and the model's reply.

    ``prediction`` is None when the call to the model failed (no reply at all).
    """

    prediction: str | None
    lettered: bool = False


class VqaRowResult(BaseModel):
    """How one row was scored."""

    case_id: str
    family: str
    recording: str
    frame_index: int
    answer: str
    predicted_choice: str | None
    tier: Tier | None
    status: RowStatus
    lettered: bool = Field(
        default=False, description="whether the prompt showed the choices lettered (A), (B), ...")
    choices: list[str] = Field(
        default_factory=list, description="the choices shown (empty: scored before rows kept "
                                          "them); the headline's false-alarm rates need them")


class VqaGroupStats(BaseModel):
    """Accuracy of one group of rows (overall, a family or a recording)."""

    n: int
    correct: int
    parse_failures: int
    failed_calls: int
    accuracy: float | None = Field(
        description="correct / n; n includes parse failures and failed calls; None when n = 0")
    ci_low: float | None = Field(
        description="95% interval clustered by frame (design-effect-adjusted Wilson), lower")
    ci_high: float | None = Field(description="the same interval, upper bound")
    parse_failure_rate: float | None = Field(description="parse_failures / n; None when n = 0")
    chance: float | None = Field(description="mean of 1 / len(choices) over the rows")
    n_frames: int | None = Field(default=None, description="frames (clusters) of the rows")
    design_effect: float | None = Field(
        default=None, description="estimated frame design effect; None: not estimable")


class VqaReport(BaseModel):
    """VQA accuracy overall, per question family and per recording (groups sorted by name),
    and the mean over families (each family weighs the same; the headline)."""

    overall: VqaGroupStats
    by_family: dict[str, VqaGroupStats]
    by_recording: dict[str, VqaGroupStats]
    rows: list[VqaRowResult]
    family_mean: FamilyMean | None = Field(
        default=None, description="the headline: unweighted mean of the families' prior-free "
        "scores (eval_assets.metrics.headline); None without an informative family of enough "
        "cases, or on results scored before it")


def headline_case(row: VqaRowResult, key: Hashable | None = None) -> HeadlineCase:
    """A scored row as the headline reads it (``key`` default: the case id)."""
    return HeadlineCase(key=row.case_id if key is None else key, family=row.family,
                        frame=(row.recording, row.frame_index), gold=row.answer,
                        choices=tuple(row.choices), predicted=row.predicted_choice,
                        stratum=row.recording)


def accuracy_family_mean(by_family: Mapping[str, VqaGroupStats]) -> FamilyMean | None:
    """The mean over families of their raw accuracies, with their clustered intervals (the
    headline before issue 41; :func:`headline` of the rows is the headline now)."""
    return family_mean([FamilyScore(family=f, kind="accuracy", score=s.accuracy,
                                    ci_low=s.ci_low, ci_high=s.ci_high, n=s.n)
                        for f, s in by_family.items()])


def _group_stats(results: Sequence[VqaRowResult], chances: Sequence[float]) -> VqaGroupStats:
    n = len(results)
    correct = sum(1 for r in results if r.status == "correct")
    parse_failures = sum(1 for r in results if r.status == "parse_failure")
    failed_calls = sum(1 for r in results if r.status == "failed_call")
    interval = clustered_wilson(frame_keys(results), [r.status == "correct" for r in results])
    return VqaGroupStats(
        n=n,
        correct=correct,
        parse_failures=parse_failures,
        failed_calls=failed_calls,
        accuracy=correct / n if n else None,
        ci_low=interval.low if interval else None,
        ci_high=interval.high if interval else None,
        parse_failure_rate=parse_failures / n if n else None,
        chance=math.fsum(chances) / n if n else None,
        n_frames=interval.n_clusters if interval else 0,
        design_effect=interval.design_effect if interval else None,
    )


def frame_keys(results: Sequence[VqaRowResult]) -> list[tuple[str, int]]:
    """The cluster of each row: its (recording, frame_index)."""
    return [(r.recording, r.frame_index) for r in results]


def _score_row(row: VqaRow) -> VqaRowResult:
    if row.prediction is None:
        match, status = ChoiceMatch(), "failed_call"
    else:
        match = match_choice(row.prediction, row.choices, lettered=row.lettered)
        if match.choice is None:
            status = "parse_failure"
        else:
            status = "correct" if match.choice == row.answer else "incorrect"
    return VqaRowResult(
        case_id=row.case_id,
        family=row.family,
        recording=row.recording,
        frame_index=row.frame_index,
        answer=row.answer,
        predicted_choice=match.choice,
        tier=match.tier,
        status=status,
        lettered=row.lettered,
        choices=list(row.choices),
    )


def vqa_accuracy(rows: Iterable[VqaRow | Mapping[str, Any]]) -> VqaReport:
    """Score every row and aggregate overall, per family and per recording.

    Rows may be VqaRow or plain mappings with the same fields. Row results keep input order; the
    family and recording groups are sorted by name.
    """
    parsed: list[VqaRow] = []
    for position, row in enumerate(rows):
        if isinstance(row, VqaRow):
            parsed.append(row)
            continue
        try:
            parsed.append(VqaRow.model_validate(row))
        except ValueError as exc:
            raise ValueError(f"VQA row #{position} is invalid: {exc}") from exc
    results = [_score_row(r) for r in parsed]
    chances = [1.0 / len(r.choices) for r in parsed]

    def grouped(key: str) -> dict[str, VqaGroupStats]:
        groups: dict[str, list[int]] = {}
        for i, r in enumerate(results):
            groups.setdefault(getattr(r, key), []).append(i)
        return {
            name: _group_stats([results[i] for i in idx], [chances[i] for i in idx])
            for name, idx in sorted(groups.items())
        }

    by_family = grouped("family")
    return VqaReport(
        overall=_group_stats(results, chances),
        by_family=by_family,
        by_recording=grouped("recording"),
        rows=results,
        # Families in name order, as by_family.
        family_mean=headline(headline_case(r) for r in sorted(results, key=lambda r: r.family)),
    )
