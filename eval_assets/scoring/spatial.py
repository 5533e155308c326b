"""Spatial choice accuracy: the spatial families answered with a choice (``appearance_order``,
``relative_direction``: ``spatial_cases.jsonl`` cases of answer type ``choice``), per family.

Scored exactly as dimOS's cases are (:func:`eval_assets.metrics.vqa.vqa_accuracy`: the reply is
matched to a choice; no match is a parse failure, a failed call stays in the denominator; Wilson
95% intervals clustered by the case's first frame). Kept apart from VQA accuracy, whose cases
are dimOS's single-image ones and which the leaderboard ranks on. The numeric spatial families
are the numeric metric's (:mod:`eval_assets.scoring.numeric`). Without a spatial choice case the
metric is not measured ("no spatial choice cases").

Result (``spatial.json``): a :class:`~eval_assets.metrics.vqa.VqaReport` (``overall``,
``by_family`` with ``n`` and ``accuracy`` per family, ``rows``).
:func:`eval_assets.scoring.families.family_scores` reads its per-family accuracy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from eval_assets.metrics.vqa import VqaReport, VqaRow, vqa_accuracy
from eval_assets.schemas.results import CellScores, NotMeasured
from eval_assets.scoring.inputs import ModelRun, PrivateDataset
from eval_assets.scoring.spec import (
    Column,
    Int,
    Markdown,
    MetricSpec,
    Pct,
    ReportTable,
    ScoringInputs,
    Section,
    Text,
    markdown_number,
    ordered,
    who,
)
from eval_assets.scoring.vqa import family_table

NAME = "spatial_accuracy"
NO_SPATIAL_CHOICES = "no spatial choice cases"
ALL = "all spatial choice"


def spatial_rows(data: PrivateDataset, run: ModelRun, recording: str) -> list[VqaRow]:
    """One row per spatial choice case, in case order, with the choices it was shown."""
    rows = []
    for label in data.spatial_labels:
        if label.answer_type != "choice":
            continue
        case = data.spatial_cases[label.id]
        answer = run.answers.get(label.id)
        frames = label.frame_indices or [label.frame_index or 0]
        rows.append(VqaRow(case_id=label.id, family=label.family, recording=recording,
                           frame_index=frames[0], choices=case.choices or [],
                           answer=label.answer,
                           prediction=(answer.raw_response if answer and answer.status == "success"
                                       else None)))
    return rows


def score_spatial(data: PrivateDataset, run: ModelRun, recording: str
                  ) -> VqaReport | NotMeasured:
    """Accuracy of the spatial choice cases, overall and per family; not measured without."""
    rows = spatial_rows(data, run, recording)
    if not rows:
        return NotMeasured(reason=NO_SPATIAL_CHOICES)
    return vqa_accuracy(rows)


def _score(inputs: ScoringInputs) -> VqaReport | NotMeasured:
    return score_spatial(inputs.data, inputs.run, inputs.recording)


def _metadata(report: VqaReport) -> dict[str, Any]:
    return {"accuracy": report.overall.accuracy, "n": report.overall.n,
            "parse_failures": report.overall.parse_failures,
            "failed_calls": report.overall.failed_calls,
            "by_family": Markdown(family_table(report))}


def _pool(cells: Sequence[CellScores]) -> dict[str, Any]:
    """Accuracy weighted by cases; null when no cell was measured."""
    reports = [r for _, r in SPATIAL.results(cells)]
    n = sum(r.overall.n for r in reports)
    if not n:
        return {"spatial_accuracy": math.nan, "spatial_n": None}
    return {"spatial_accuracy": sum(r.overall.correct for r in reports) / n, "spatial_n": n}


LEAD = ("Spatial questions across frames answered with a choice (the order in which objects "
        "first appeared; where an object is relative to the camera of a reference frame), "
        "scored like the VQA cases: the reply must name one choice, a reply naming none is a "
        "parse failure and a failed call counts as wrong. Numeric spatial questions are in "
        "<a href=\"#numeric\">Numeric answers</a>.")


def _table(cells: Sequence[CellScores]) -> ReportTable:
    rows = tuple((*who(cell), Text(family, "b" if family == ALL else None), Int(s.n),
                  Pct(s.accuracy, bold=family == ALL),
                  Text(f"[{markdown_number(s.ci_low)}, {markdown_number(s.ci_high)}]", "ci"),
                  Int(s.parse_failures), Pct(s.chance))
                 for cell, report in SPATIAL.results(ordered(cells))
                 for family, s in ((ALL, report.overall), *report.by_family.items()))
    return ReportTable(
        anchor="spatial", title="Spatial choices across frames", lead=LEAD, rows=rows,
        empty=f"Not measured: {NO_SPATIAL_CHOICES}.",
        headers=(("Model", False), ("Recording", False), ("Family", False), ("Cases", True),
                 ("Accuracy", True), ("95% CI", True), ("Parse failures", True),
                 ("Chance", True)))


METHODS = (
    ("spatial", "spatial choice cases (spatial_cases.jsonl, answer type choice): "
                "spatial_accuracy = correct / cases over them, pooled by cases (a parse failure "
                "or failed call is wrong); spatial_n = their number; null when none was "
                "scored"),
)

SPATIAL: MetricSpec[VqaReport] = MetricSpec(
    order=100,
    name=NAME, description=__doc__ or "", file="spatial.json", version="2",
    result_model=VqaReport, score=_score, metadata=_metadata, label="spatial choice accuracy",
    columns=(Column("spatial_accuracy"), Column("spatial_n", integer=True)),
    pool=_pool, methods=METHODS, section=Section("spatial", "Spatial", _table),
)
