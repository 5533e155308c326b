"""What the paired controls (FlipEval, TimeFlip, RepeatFrames: :mod:`eval_assets.metrics.paired`)
put on the leaderboard and in their asset's metadata: figures of :class:`PairedStats`, each
under the control's prefix, in the order the control lists them.

A figure's column is ``<prefix>_<figure>`` (``time_flip_consistency``), except the variant's
accuracy, named by what the variant is (``flip_mirrored_accuracy``,
``time_flip_reversed_accuracy``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from eval_assets.metrics.paired import PairedReport, PairedRow, paired_stats
from eval_assets.schemas.results import CellScores
from eval_assets.scoring.spec import Column, MetricSpec

__all__ = ["Figure", "PairedFigures", "rows_by_model"]

Figure = Literal["consistency", "ci_low", "ci_high", "n", "not_asked", "n_compared",
                 "original_accuracy", "variant_accuracy", "agreement", "changed"]
"""A figure of :class:`~eval_assets.metrics.paired.PairedStats` a control may show."""
_COUNTS: frozenset[Figure] = frozenset({"n", "not_asked", "n_compared"})

R = TypeVar("R", bound=PairedReport)


@dataclass(frozen=True)
class PairedFigures:
    """One control's figures: ``pooled`` its leaderboard columns, ``shown`` its asset metadata
    (each in order); ``variant`` names its variant (mirrored, reversed, repeated)."""

    prefix: str
    variant: str
    pooled: tuple[Figure, ...]
    shown: tuple[Figure, ...]

    def column(self, figure: Figure) -> str:
        """The name of ``figure`` on the leaderboard and in the metadata."""
        if figure == "variant_accuracy":
            return f"{self.prefix}_{self.variant}_accuracy"
        return f"{self.prefix}_{figure}"

    def columns(self) -> tuple[Column, ...]:
        """The leaderboard columns, counts as integers."""
        return tuple(Column(self.column(f), integer=f in _COUNTS) for f in self.pooled)

    def metadata(self, report: PairedReport) -> dict[str, Any]:
        """The asset's metadata of a cell's result: its overall figures (None where n/a)."""
        return {self.column(f): getattr(report.overall, f) for f in self.shown}

    def pool(self, spec: MetricSpec[R], cells: Sequence[CellScores]) -> dict[str, Any]:
        """The leaderboard columns over every case of ``cells``, pooled per case; none when no
        cell measured the control (an empty denominator is NaN)."""
        rows = [row for _, report in spec.results(cells) for row in report.rows]
        if not rows:
            return {}
        stats = paired_stats(rows)
        return {self.column(f): _nan(getattr(stats, f)) for f in self.pooled}


def rows_by_model(spec: MetricSpec[R], cells: Sequence[CellScores]) -> dict[str, list[PairedRow]]:
    """Every case's row of the control ``spec`` per model (models by name, each model's cells by
    recording): what its report section pools."""
    out: dict[str, list[PairedRow]] = {}
    for cell, report in spec.results(sorted(cells, key=lambda c: (c.model, c.recording))):
        out.setdefault(cell.model, []).extend(report.rows)
    return out


def _nan(value: float | None) -> float:
    return math.nan if value is None else value
