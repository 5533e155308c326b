"""The metric sections the report draws itself (charts, per-family matrices), by anchor.

A metric declares such a section in its spec (``Section(anchor, nav, drawn=True)``); the drawing
lives here, in the report, so that scoring never imports the report. :func:`drawn_sections`
refuses a declared anchor with no drawer, naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from eval_assets.report.circular_section import circular_section
from eval_assets.report.coverage import Coverage
from eval_assets.report.flip_section import flip_section
from eval_assets.report.motion_section import motion_section
from eval_assets.report.numeric_section import numeric_case_rows, numeric_section
from eval_assets.schemas.results import CellScores
from eval_assets.scoring import METRICS


@dataclass(frozen=True)
class ReportView:
    """What a drawn section sees: the usable cells and the report's coverage (whose common
    cases it may restrict to)."""

    cells: Sequence[CellScores]
    coverage: Coverage
    models: Sequence[str]  # in the leaderboard's order: charts colour them in that order


def _numeric_families(view: ReportView) -> str:
    """The numeric families' scatter and MRA by distance; empty without a numeric result."""
    rows = numeric_case_rows(view.cells)
    return numeric_section(rows, view.models) if rows else ""


# Each drawn section's HTML (empty: no section, and no link), by the anchor its spec declares.
DRAWERS: Mapping[str, Callable[[ReportView], str]] = {
    "circular": lambda view: circular_section(view.cells, view.coverage),
    "flip": lambda view: flip_section(view.cells),
    "numeric-families": _numeric_families,
    # Distances, angles and the motion choice families (which the spatial metric scores).
    "motion": lambda view: motion_section(view.cells, view.models),
}


def drawn_sections(view: ReportView) -> list[tuple[str, str, str, str | None]]:
    """(anchor, navigation label, HTML, anchor it follows) of every metric section declared
    ``drawn``, in METRICS order."""
    out = []
    for spec in METRICS:
        for s in spec.sections:
            if not s.drawn:
                continue
            drawer = DRAWERS.get(s.anchor)
            if drawer is None:
                raise KeyError(f"metric {spec.name!r} declares the drawn section {s.anchor!r}, "
                               "which eval_assets.report.drawn_sections.DRAWERS does not draw: "
                               "add its drawer there")
            out.append((s.anchor, s.nav, drawer(view), s.after))
    return out
