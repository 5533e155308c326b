"""Numeric answers ("how far is the chair, in metres?"): VSI-Bench's Mean Relative Accuracy and
the absolute relative error, over the cases whose answer is a number, overall and per family.

Numeric cases are the spatial cases of answer type ``number`` (``spatial_cases.jsonl``: the
audit label's ``unit``, cm, m or m2, or none for a count), and any dimOS-file label without
choices whose answer is a number (in ``evidence["unit"]``, metres by default). A reply is parsed
by :func:`eval_assets.metrics.numeric.parse_numeric_reply` (an explicit unit converts, a bare
number is in the unit asked); a reply without a number (or a failed call) is unparseable: it
scores 0 MRA and is counted. Without any numeric case the metric is not measured ("no numeric
cases"), as on datasets without spatial cases.

Result (``numeric.json``): the overall figures, ``by_family`` (the same figures per family:
``n``, ``unparseable``, ``mean_relative_accuracy``, ``mean_absolute_relative_error``) and
``rows`` (one per case: family, unit, truth, the parsed prediction in the truth's unit or None,
its MRA), for scatter plots. :func:`eval_assets.scoring.families.family_scores` reads the
per-family MRA as the family's score.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from eval_assets.metrics.numeric import (
    absolute_relative_error,
    mean_relative_accuracy,
    parse_numeric_reply,
)
from eval_assets.schemas.results import CellScores, NotMeasured
from eval_assets.scoring.inputs import ModelRun, PrivateDataset
from eval_assets.scoring.spec import (
    Column,
    Int,
    Markdown,
    MetricSpec,
    Num,
    Pct,
    ReportTable,
    ScoringInputs,
    Section,
    Text,
    markdown_number,
    ordered,
    who,
)

NAME = "numeric_accuracy"
DEFAULT_UNIT = "m"
NO_NUMERIC_CASES = "no numeric cases"
ALL = "all numeric"


# A spatial label's unit (schemas.spatial.Unit) as the parser names it; None: a count.
PARSER_UNITS: dict[str | None, str | None] = {"cm": "cm", "m": "m", "m2": "m²", None: None}


class NumericFigures(BaseModel):
    """MRA over ``n`` numeric cases (unparseable replies score 0), and the mean absolute
    relative error over the parsed ones (None when none parsed)."""

    model_config = ConfigDict(frozen=True)

    n: int
    unparseable: int
    mean_relative_accuracy: float
    mean_absolute_relative_error: float | None


class NumericRow(BaseModel):
    """One numeric case: its truth, the parsed prediction in the truth's unit (None:
    unparseable or a failed call) and its MRA."""

    model_config = ConfigDict(frozen=True)

    case_id: str
    family: str
    unit: str | None
    target: float
    predicted: float | None
    mra: float


class NumericScores(NumericFigures):
    """The figures over every numeric case, per family, and per case."""

    by_family: dict[str, NumericFigures] = Field(default_factory=dict)
    rows: list[NumericRow] = Field(default_factory=list)


def _positive(answer: str) -> float | None:
    try:
        value = float(answer)
    except ValueError:
        return None
    return value if value > 0 else None


def _zero_distance(answer: str) -> bool:
    try:
        return float(answer) == 0.0
    except ValueError:
        return False


def numeric_cases(data: PrivateDataset) -> list[tuple[str, str, float, str | None]]:
    """(case id, family, truth, parser unit) of every numeric case: dimOS-file labels without
    choices whose answer is a positive number, then the spatial cases of answer type number."""
    cases: list[tuple[str, str, float, str | None]] = []
    for label in data.labels:
        target = None if label.choices else _positive(label.answer)
        if target is not None:
            cases.append((label.id, label.family, target,
                          str(label.evidence.get("unit", DEFAULT_UNIT))))
    for spatial in data.spatial_labels:
        if spatial.answer_type != "number":
            continue
        if spatial.unit == "deg" or _zero_distance(spatial.answer):
            # Angles (shared/specs/motion.md: mean angular accuracy) and a motion distance of 0
            # (OSI-Bench's rule) are not MRA's to score; until scoring by unit lands they are
            # left out of this metric, never scored wrongly.
            continue
        target = _positive(spatial.answer)
        if target is None:  # never generated (spec: targets are never 0); refuse, never skip
            raise ValueError(f"spatial label {spatial.id!r}: answer {spatial.answer!r} is not a "
                             f"positive number; regenerate the dataset")
        cases.append((spatial.id, spatial.family, target, PARSER_UNITS[spatial.unit]))
    return cases


def _figures(rows: Sequence[NumericRow]) -> NumericFigures:
    errors = [absolute_relative_error(r.predicted, r.target) for r in rows
              if r.predicted is not None]
    return NumericFigures(n=len(rows), unparseable=sum(1 for r in rows if r.predicted is None),
                          mean_relative_accuracy=math.fsum(r.mra for r in rows) / len(rows),
                          mean_absolute_relative_error=(math.fsum(errors) / len(errors)
                                                        if errors else None))


def score_numeric(data: PrivateDataset, run: ModelRun) -> NumericScores | NotMeasured:
    """MRA and absolute relative error of the numeric cases, overall and per family; not
    measured without any."""
    rows: list[NumericRow] = []
    for case_id, family, target, unit in numeric_cases(data):
        record = run.answers.get(case_id)
        reply = record.raw_response if record and record.status == "success" else None
        parsed = parse_numeric_reply(reply, unit)
        value = None if parsed is None else parsed.value
        rows.append(NumericRow(case_id=case_id, family=family, unit=unit, target=target,
                               predicted=value, mra=0.0 if value is None
                               else mean_relative_accuracy(value, target)))
    if not rows:
        return NotMeasured(reason=NO_NUMERIC_CASES)
    families = sorted({r.family for r in rows})
    return NumericScores(**_figures(rows).model_dump(),
                         by_family={f: _figures([r for r in rows if r.family == f])
                                    for f in families},
                         rows=rows)


def _score(inputs: ScoringInputs) -> NumericScores | NotMeasured:
    return score_numeric(inputs.data, inputs.run)


def _metadata(s: NumericScores) -> dict[str, Any]:
    table = "\n".join(["| family | n | MRA | abs. relative error | unparseable |",
                       "|---|---|---|---|---|",
                       *(f"| {family} | {f.n} | {markdown_number(f.mean_relative_accuracy)} | "
                         f"{markdown_number(f.mean_absolute_relative_error)} | {f.unparseable} |"
                         for family, f in s.by_family.items())])
    return {"mean_relative_accuracy": s.mean_relative_accuracy, "n": s.n,
            "unparseable": s.unparseable,
            "mean_absolute_relative_error": s.mean_absolute_relative_error,
            "by_family": Markdown(table)}


def _pool(cells: Sequence[CellScores]) -> dict[str, Any]:
    """MRA weighted by cases, the error by parsed cases; null when no cell was measured."""
    scores = [s for _, s in NUMERIC.results(cells)]
    n = sum(s.n for s in scores)
    if not n:
        return {"numeric_mra": math.nan, "numeric_abs_rel_error": math.nan,
                "numeric_n": None, "numeric_unparseable": None}
    parsed = [(s.mean_absolute_relative_error, s.n - s.unparseable) for s in scores
              if s.mean_absolute_relative_error is not None]
    error = (math.fsum(e * k for e, k in parsed) / sum(k for _, k in parsed)
             if parsed else math.nan)
    return {"numeric_mra": math.fsum(s.mean_relative_accuracy * s.n for s in scores) / n,
            "numeric_abs_rel_error": error, "numeric_n": n,
            "numeric_unparseable": sum(s.unparseable for s in scores)}


LEAD = ("Questions answered with a number, scored with VSI-Bench's Mean Relative Accuracy "
        "(the share of confidence thresholds .50, .55, \u2026 .95 within which the relative "
        "error stays) and the mean absolute relative error. A reply without a number scores 0 "
        "and is counted as unparseable.")


def _table(cells: Sequence[CellScores]) -> ReportTable:
    rows = tuple((*who(cell), Text(family, "b" if family == ALL else None), Int(f.n),
                  Pct(f.mean_relative_accuracy, bold=family == ALL),
                  Num(f.mean_absolute_relative_error, 3), Int(f.unparseable))
                 for cell, s in NUMERIC.results(ordered(cells))
                 for family, f in ((ALL, s), *s.by_family.items()))
    return ReportTable(
        anchor="numeric", title="Numeric answers (MRA)", lead=LEAD, rows=rows,
        empty=f"Not measured: {NO_NUMERIC_CASES}.",
        headers=(("Model", False), ("Recording", False), ("Family", False), ("Cases", True),
                 ("MRA", True), ("Abs. relative error", True), ("Unparseable", True)))


METHODS = (
    ("numeric", "numeric cases (spatial cases of answer type number, in the label's unit, "
                "and any label without choices whose answer is a number): "
                "numeric_mra = mean over the cases of VSI-Bench's Mean Relative Accuracy (the "
                "share of thresholds t in .50, .55, ... .95 with |pred - gt| / gt <= 1 - t; an "
                "unparseable reply or failed call scores 0 and is counted in "
                "numeric_unparseable), weighted by cases when pooled; numeric_abs_rel_error = "
                "mean |pred - gt| / gt over the parsed replies; null when no numeric case was "
                "scored"),
)

NUMERIC: MetricSpec[NumericScores] = MetricSpec(
    name=NAME, description=__doc__ or "", file="numeric.json", version="2",
    result_model=NumericScores, score=_score, metadata=_metadata, label="numeric MRA",
    needs=frozenset({"labels"}),
    columns=(Column("numeric_mra"), Column("numeric_abs_rel_error"),
             Column("numeric_n", integer=True), Column("numeric_unparseable", integer=True)),
    pool=_pool, methods=METHODS, section=Section("numeric", "Numeric", _table),
)
