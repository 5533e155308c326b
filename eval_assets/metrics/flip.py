"""FlipEval: a left/right case asked about its image and about the image mirrored.

Mirroring the image swaps left and right, so the mirrored case's gold answer is the original's
with "left" and "right" swapped (``flip_text``). A model that reads the image answers both
correctly; one that answers from the question's wording or a preferred side cannot.

Definitions (per model, overall and per family; a row is a left/right case):

- **Included cases**: both the original and the mirrored case have a record (a failed call or an
  unparseable reply counts, as a wrong answer). A case whose mirror was never asked is excluded
  and counted (``not_asked``).
- **Consistency** (FlipEval accuracy) = cases answered correctly both ways / n, with the
  frame-clustered Wilson interval (:func:`eval_assets.metrics.stats.clustered_wilson`).
- **Original / mirrored accuracy**: each side alone on the same cases.
- **Agreement**: among the cases where both replies named a choice, the share whose mirrored
  choice is the mirror of the original choice (right or wrong): a model that flips its answer
  with the image, whatever its accuracy.

Empty denominators are None ("n/a"), never 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from pydantic import BaseModel, Field

from eval_assets.choices import flip_text, is_left_right
from eval_assets.metrics.stats import clustered_wilson
from eval_assets.metrics.vqa import GoldCase, RowStatus, match_choice

__all__ = ["FlipCase", "FlipGroupStats", "FlipReport", "FlipRow", "flip_eval", "flip_text",
           "is_left_right"]

class FlipCase(GoldCase):
    """A left/right case with the reply to it and to its mirror (None: failed call; absent
    ``mirrored_asked``: the mirror was never asked)."""

    reply: str | None
    mirrored_reply: str | None = None
    mirrored_asked: bool


class FlipRow(BaseModel):
    """How one case fared both ways."""

    case_id: str
    family: str
    recording: str
    frame_index: int
    original: RowStatus
    mirrored: RowStatus | None = Field(description="None: the mirror was not asked")
    agree: bool | None = Field(description="mirrored choice = mirror of the original choice; "
                                           "None unless both named a choice")

    @property
    def consistent(self) -> bool:
        """Both answers correct."""
        return self.original == "correct" and self.mirrored == "correct"


class FlipGroupStats(BaseModel):
    """FlipEval of one group of cases."""

    n: int = Field(description="cases asked both ways")
    not_asked: int
    consistent: int
    consistency: float | None
    ci_low: float | None
    ci_high: float | None
    n_frames: int
    original_accuracy: float | None
    mirrored_accuracy: float | None
    n_agreement: int = Field(description="cases where both replies named a choice")
    agreement: float | None


class FlipReport(BaseModel):
    """FlipEval overall and per family (sorted by name), with every case's row."""

    overall: FlipGroupStats
    by_family: dict[str, FlipGroupStats]
    rows: list[FlipRow]


def _status(reply: str | None, choices: list[str], gold: str) -> tuple[RowStatus, str | None]:
    if reply is None:
        return "failed_call", None
    chosen = match_choice(reply, choices).choice
    if chosen is None:
        return "parse_failure", None
    return ("correct" if chosen == gold else "incorrect"), chosen


def score_flip_case(case: FlipCase) -> FlipRow:
    """Score the original reply against the gold answer and the mirrored one against its
    mirror (the choices are shown in the same order both ways)."""
    original, chosen = _status(case.reply, case.choices, case.answer)
    mirrored: RowStatus | None = None
    agree = None
    if case.mirrored_asked:
        mirrored, mirrored_chosen = _status(case.mirrored_reply, case.choices,
                                            flip_text(case.answer))
        if chosen is not None and mirrored_chosen is not None:
            agree = mirrored_chosen == flip_text(chosen)
    return FlipRow(case_id=case.case_id, family=case.family, recording=case.recording,
                   frame_index=case.frame_index, original=original, mirrored=mirrored,
                   agree=agree)


def flip_group_stats(rows: Iterable[FlipRow]) -> FlipGroupStats:
    """The statistics of a group of rows (of one result or pooled over many)."""
    rows = list(rows)
    asked = [r for r in rows if r.mirrored is not None]
    n = len(asked)
    consistent = sum(1 for r in asked if r.consistent)
    interval = clustered_wilson([(r.recording, r.frame_index) for r in asked],
                                [r.consistent for r in asked])
    agreeing = [r.agree for r in asked if r.agree is not None]
    return FlipGroupStats(
        n=n, not_asked=len(rows) - n, consistent=consistent,
        consistency=consistent / n if n else None,
        ci_low=interval.low if interval else None, ci_high=interval.high if interval else None,
        n_frames=interval.n_clusters if interval else 0,
        original_accuracy=(sum(1 for r in asked if r.original == "correct") / n if n else None),
        mirrored_accuracy=(sum(1 for r in asked if r.mirrored == "correct") / n if n else None),
        n_agreement=len(agreeing),
        agreement=(math.fsum(1.0 for a in agreeing if a) / len(agreeing) if agreeing else None))


def flip_eval(cases: Iterable[FlipCase]) -> FlipReport:
    """Score every case both ways; overall and per family (sorted by name)."""
    rows = [score_flip_case(c) for c in cases]
    families: dict[str, list[FlipRow]] = {}
    for row in rows:
        families.setdefault(row.family, []).append(row)
    return FlipReport(overall=flip_group_stats(rows),
                      by_family={f: flip_group_stats(r) for f, r in sorted(families.items())},
                      rows=rows)
