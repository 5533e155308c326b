"""The static HTML report: one self-contained file (inline CSS, images as data: URIs, one inline
script, nothing fetched), so it works offline and can be mailed around. The pipeline's report
(``publish_report``) links the case browser's frames as files beside the page instead
(``frames_beside``; :mod:`eval_assets.report.frame_files`), so it stays light as recordings add up.

The page opens with the answer (:mod:`eval_assets.report.answer_section`: which model is best,
by how much, how certain, against the best baseline, and what to distrust); the sections follow
under at most twelve navigation groups (:mod:`eval_assets.report.nav`), the methods last. A
section's long explanation is folded behind a ``<details>`` element (``markup.section``).

The summary sections are plain HTML. Models are ranked only on the cases every ranked model
answered (the leaderboard's ``common`` rows); the headline says on how many, and a warning box
lists every (recording, model) cell that is missing or stale and every case left out. The
"Coverage" section is the full matrix; "Across nights" shows each model's nightly scores. Each
metric's section is rendered from its own table data (:mod:`eval_assets.report.metric_sections`).

Every case of every model is browsable in the "Cases" section
(:mod:`eval_assets.report.case_browser`); the filter state lives in the URL hash
(``#cases?model=M&outcome=parse_failure&page=2``), so a filtered view can be linked to. The
stylesheet and the script are package files (``static/report.css``, ``static/report.js``).

Every string that comes from data goes through ``html.escape`` in HTML, is escaped for a
``<script>`` block in the JSON, and is set with ``textContent`` by the script, never as markup.
Nothing is read from the clock: a generation time appears only when the caller passes one.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from functools import cache
from importlib import resources
from pathlib import Path

import pandas as pd

from eval_assets.atomic import write_text_atomic
from eval_assets.metrics.stats import PairedComparison
from eval_assets.report.answer_section import answer_section, build_answer, solvable_by_family
from eval_assets.report.baselines import FamilyBaselines, family_baselines
from eval_assets.report.baselines_section import baselines_section
from eval_assets.report.case_browser import CASES_PER_PAGE, cases_section
from eval_assets.report.concurrency_section import concurrency_section
from eval_assets.report.cost_section import CellCost, cost_section
from eval_assets.report.coverage import Coverage, build_coverage
from eval_assets.report.drawn_sections import ReportView, drawn_sections
from eval_assets.report.drift_section import REPORT_DRIFT_NIGHTS, drift_section
from eval_assets.report.endpoints_section import ModelEndpoint, endpoints_section
from eval_assets.report.evidence_section import evidence_quality_section
from eval_assets.report.history import NightResult, night_drift
from eval_assets.report.label_audit import LabelAudit, label_audit_section
from eval_assets.report.leaderboard import METHODS, paired_comparisons
from eval_assets.report.markup import esc, section
from eval_assets.report.metric_sections import metric_sections, not_computed_section
from eval_assets.report.nav import NavSection, render_nav_and_body
from eval_assets.report.nights_section import NO_NIGHTS, nights_section
from eval_assets.report.ranking_sections import (
    comparisons_section,
    coverage_section,
    families_section,
    headline_section,
    recordings_section,
)
from eval_assets.report.served_section import answered_by_another, served_section
from eval_assets.report.spatial_cards import spatial_cards_section
from eval_assets.schemas.concurrency import ConcurrencyHistory
from eval_assets.schemas.evidence_quality import EvidenceQuality
from eval_assets.schemas.report import CaseCard, FrameImage
from eval_assets.schemas.results import CellScores
from eval_assets.scoring.inputs import Annotations
from eval_assets.scoring.mcq import MCQ_NOT_MEASURED
from eval_assets.scoring.vqa import report_of

__all__ = ["CASES_PER_PAGE", "MCQ_NOT_MEASURED", "NO_NIGHTS", "render_report", "write_report"]


@cache
def static_text(name: str) -> str:
    """A file of the package's ``static`` folder (the report's stylesheet and script)."""
    return resources.files("eval_assets.report").joinpath("static", name).read_text("utf-8")


ReportSection = NavSection


def _methods() -> str:
    items = "".join(f"<li><b>{esc(k.replace('_', ' '))}</b>: {esc(v)}</li>"
                    for k, v in METHODS.items())
    return section("methods", "Methods", "How every number above is computed (the same text is "
                    "in leaderboard.json).", f"<ul>{items}</ul>")


def render_report(leaderboard: pd.DataFrame, results: Sequence[CellScores],
                  cards: Sequence[CaseCard], title: str, *,
                  frames: Sequence[FrameImage] = (),
                  comparisons: Sequence[PairedComparison] | None = None,
                  coverage: Coverage | None = None,
                  history: Sequence[NightResult] = (),
                  endpoints: Sequence[ModelEndpoint] = (),
                  costs: Sequence[CellCost] | None = None,
                  generated_at: str | None = None,
                  concurrency: Mapping[str, ConcurrencyHistory] | None = None,
                  blind: Collection[str] = (),
                  frames_beside: bool = False,
                  label_audit: LabelAudit | None = None,
                  spatial_cards: Sequence[str] = (),
                  evidence_quality: Sequence[EvidenceQuality] = (),
                  dropped_annotations: Mapping[str, Annotations] | None = None,
                  baselines: Sequence[FamilyBaselines] | None = None,
                  baseline_models: Collection[str] = ()) -> str:
    """The whole report as one self-contained HTML document.

    ``coverage`` comes from ``build_coverage(results, ...)`` (default: from ``results`` alone,
    every result usable); ``leaderboard`` from ``build_leaderboard(results,
    coverage=coverage)``. Only usable results and their cards are shown; missing and stale
    cells are listed. ``cards`` come from ``build_case_cards`` (cards of several models on one
    case are shown together, once) and ``frames`` from ``build_frame_images`` (a card whose frame
    is missing shows a note instead). ``comparisons`` default to ``paired_comparisons(results,
    coverage=coverage)``. ``history`` is ``load_history(...)`` for the "Across nights" section.
    ``generated_at`` is printed verbatim when given; nothing is read from the clock.
    ``costs`` (``cell_costs(...)``) adds the "Cost" section; None: no section.
    ``concurrency`` is ``load_concurrency(...)`` of the runs (no section when empty).
    ``blind`` names the blind models (``baselines.blind_models``): the blind baseline.
    Each metric's own sections are its spec's (``MetricSpec.section`` and
    ``extra_sections``; CircularEval, FlipEval and the numeric families' scatter and MRA by
    distance among them). ``spatial_cards`` (``spatial_cards.load_spatial_cards``) the multi-frame
    case cards.
    ``frames_beside``: the case browser links each frame as a file of ``frame_files(frames)``
    (:mod:`eval_assets.report.frame_files`) instead of inlining it; write them with the page.
    ``label_audit`` (``build_label_audit(...)``) adds the "Label audit" section; None: none.
    ``evidence_quality`` (``evidence_section.load_evidence_quality(...)``) adds the "Evidence
    quality" section before the family results; empty: none.
    ``dropped_annotations`` (``unmatched_annotations(...)``, by recording) lists in "Not
    computed" the annotations whose image is no frame of their recording's dataset.
    ``baselines`` are the leaderboard's (``family_baselines(...)``); default: computed here.
    ``baseline_models``: ranked rows that are baselines besides ``blind`` and those the
    leaderboard marks (``answer_section.baseline_rows``), e.g. the runs a random guesser served.
    """
    if coverage is None:
        coverage = build_coverage(results)
    results = [r for r in results if coverage.usable(r)]
    usable = {(r.recording, r.model) for r in results}
    cards = [c for c in cards if (c.recording, c.model) in usable]
    if comparisons is None:
        comparisons = paired_comparisons(results)
    models = sorted({r.model for r in results})
    recordings = sorted({r.recording for r in results})
    sub = [f"{len(models)} model{'s' if len(models) != 1 else ''}",
           f"{len(recordings)} recording{'s' if len(recordings) != 1 else ''}",
           f"{sum(report_of(r).overall.n for r in results):,} scored answers",
           f"ranked on {coverage.n_common:,} common cases" if coverage.ranked else "no ranking"]
    if generated_at:
        sub.append(f"generated {generated_at}")
    if baselines is None:
        baselines = family_baselines(results, coverage=coverage, blind=blind)
    # One list gives the navigation and the body, in the same order: a section is linked when
    # it has a label (some only when they have content), and its HTML may be empty.
    answer = build_answer(leaderboard, comparisons, coverage, baselines,
                          baseline_models={*blind, *baseline_models},
                          solvable=solvable_by_family(cards),
                          evidence_quality=evidence_quality,
                          answered_by_another=answered_by_another(results))
    sections: list[ReportSection] = [
        ReportSection("answer", "Answer", answer_section(answer)),
        ReportSection("headline", "Headline", headline_section(leaderboard, coverage)),
        ReportSection("served", None, served_section(results)),  # replies of another model
        ReportSection("coverage", "Coverage", coverage_section(coverage)),
        ReportSection("comparisons", "Comparisons", comparisons_section(comparisons)),
        ReportSection("evidence-quality", "Evidence quality" if evidence_quality else None,
                      evidence_quality_section(evidence_quality)),
        ReportSection("families", "Families", families_section(leaderboard)),
        ReportSection("baselines", "Baselines", baselines_section(baselines)),
        ReportSection("recordings", "Recordings", recordings_section(leaderboard)),
        ReportSection("nights", "Across nights", nights_section(history)),
        ReportSection("drift", "Drift",
                      drift_section(night_drift(history, latest=REPORT_DRIFT_NIGHTS))),
        ReportSection("endpoints", "Endpoints" if endpoints else None,
                      endpoints_section(endpoints)),
        ReportSection("concurrency", "Concurrency" if concurrency else None,
                      concurrency_section(concurrency or {})),
        ReportSection("cost", None if costs is None else "Cost",
                      "" if costs is None else cost_section(
                          [c for c in costs if (c.recording, c.model) in usable])),
        ReportSection("not-computed", "Not computed", not_computed_section(
            results, {rec: a for rec, a in (dropped_annotations or {}).items()
                      if rec in recordings})),
        ReportSection("label-audit", None if label_audit is None else "Label audit",
                      "" if label_audit is None else label_audit_section(label_audit, frames)),
        *(ReportSection(anchor, label, html) for anchor, label, html in
          metric_sections(results)),
        ReportSection("spatial-cards", "Multi-frame cases" if spatial_cards else None,
                      spatial_cards_section(spatial_cards)),
        ReportSection("cases", "Cases",
                      cases_section(cards, frames, frames_beside=frames_beside)),
        ReportSection("methods", "Methods", _methods()),
    ]
    # The sections a metric draws itself (CircularEval, FlipEval, the numeric families' charts)
    # go where their spec says.
    pending = drawn_sections(ReportView(
        cells=results, coverage=coverage,
        models=list(leaderboard["model"].unique()) if not leaderboard.empty else models))
    while pending:
        placed = [p for p in pending if any(s.anchor == p[3] for s in sections)]
        if not placed:
            raise ValueError(f"report sections {[p[0] for p in pending]}: no section "
                             f"{sorted({str(p[3]) for p in pending})} to follow; fix the "
                             "metric spec's Section.after")
        for anchor, label, html, after in placed:
            at = next(i for i, s in enumerate(sections) if s.anchor == after)
            sections.insert(at + 1, ReportSection(anchor, label if html else None, html))
        pending = [p for p in pending if p not in placed]
    nav, body = render_nav_and_body(sections)
    footer = ("Models are ranked only on the cases every ranked model answered. Leaderboard "
              "rows for all recordings are recomputed from pooled cases, never averaged from "
              "per-recording percentages. This report shows private ground truth: do not share "
              "it with models under test.")
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{static_text('report.css')}</style></head><body>"
        f'<header class="top"><div class="wrap"><h1>{esc(title)}</h1>'
        f'<p class="sub">{esc(" · ".join(sub))}</p><nav>{nav}</nav></div></header>'
        f'<main class="wrap">{body}</main>'
        f'<footer class="wrap">{esc(footer)}</footer>'
        f"<script>{static_text('report.js')}</script></body></html>\n"
    )


def write_report(html_text: str, path: Path) -> Path:
    """Write the report atomically (UTF-8) and return its path."""
    return write_text_atomic(Path(path), html_text)
