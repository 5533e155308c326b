"""Paired controls: a case asked as generated and again changed in a way whose effect on the
gold answer is known. FlipEval mirrors the image (:mod:`eval_assets.metrics.flip`); TimeFlip
reverses the frames and RepeatFrames shows each twice (:mod:`eval_assets.metrics.time_controls`).
Each control scores its own cases into :class:`PairedRow`; what a group of rows comes to is the
same for all three (:func:`paired_stats`).

Definitions (per model, overall and per family):

- **Included cases**: both the original and the variant have a record (a failed call or an
  unparseable reply counts, as a wrong answer). A case whose variant was never asked is
  excluded and counted (``not_asked``).
- **Consistency** = cases right both ways / n, with the frame-clustered Wilson interval
  (:func:`eval_assets.metrics.stats.clustered_wilson`).
- **Original / variant accuracy**: each side alone on the same cases.
- **Agreement**: among the cases where both replies were read (``n_compared``), the share whose
  variant answer is what the original answer becomes under the control; ``changed`` is its
  complement.

Empty denominators are None ("n/a"), never 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from pydantic import BaseModel, Field

from eval_assets.metrics.stats import clustered_wilson
from eval_assets.metrics.vqa import RowStatus

__all__ = ["PairedReport", "PairedRow", "PairedStats", "paired_report", "paired_stats"]


class PairedRow(BaseModel):
    """How one case fared both ways."""

    case_id: str
    family: str
    recording: str
    frame_index: int
    original: RowStatus
    variant: RowStatus | None = Field(description="None: the variant was not asked")
    agree: bool | None = Field(description="the variant's answer is the original's under the "
                                           "control; None unless both replies were read")

    @property
    def consistent(self) -> bool:
        """Both answers right."""
        return self.original == "correct" and self.variant == "correct"


class PairedStats(BaseModel):
    """One control over one group of cases."""

    n: int = Field(description="cases asked both ways")
    not_asked: int
    consistent: int
    consistency: float | None
    ci_low: float | None
    ci_high: float | None
    n_frames: int
    original_accuracy: float | None
    variant_accuracy: float | None
    n_compared: int = Field(description="cases where both replies were read")
    agreement: float | None
    changed: float | None = Field(description="1 - agreement: the share whose answer changed")


class PairedReport(BaseModel):
    """One control overall and per family (sorted by name), with every case's row."""

    overall: PairedStats
    by_family: dict[str, PairedStats]
    rows: list[PairedRow]


def paired_stats(rows: Iterable[PairedRow]) -> PairedStats:
    """The statistics of a group of rows (of one result or pooled over many)."""
    rows = list(rows)
    asked = [r for r in rows if r.variant is not None]
    n = len(asked)
    consistent = sum(1 for r in asked if r.consistent)
    interval = clustered_wilson([(r.recording, r.frame_index) for r in asked],
                                [r.consistent for r in asked])
    compared = [r.agree for r in asked if r.agree is not None]
    # A count over a count: exact, whichever way the agreeing cases are summed.
    agreement = sum(1 for a in compared if a) / len(compared) if compared else None
    return PairedStats(
        n=n, not_asked=len(rows) - n, consistent=consistent,
        consistency=consistent / n if n else None,
        ci_low=interval.low if interval else None, ci_high=interval.high if interval else None,
        n_frames=interval.n_clusters if interval else 0,
        original_accuracy=(sum(1 for r in asked if r.original == "correct") / n if n else None),
        variant_accuracy=(sum(1 for r in asked if r.variant == "correct") / n if n else None),
        n_compared=len(compared), agreement=agreement,
        changed=None if agreement is None else 1.0 - agreement)


R = TypeVar("R", bound=PairedReport)


def paired_report(rows: list[PairedRow], report: type[R]) -> R:
    """``rows`` overall and per family (sorted by name), as ``report`` (the control's own
    report type: FlipEval stores the same figures under its own names)."""
    families: dict[str, list[PairedRow]] = {}
    for row in rows:
        families.setdefault(row.family, []).append(row)
    return report(overall=paired_stats(rows),
                  by_family={f: paired_stats(r) for f, r in sorted(families.items())},
                  rows=rows)
