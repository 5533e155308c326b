"""Numeric answers ("how far is the chair, in metres?"): VSI-Bench's Mean Relative Accuracy and
the absolute relative error, over the cases whose answer is a number.

A numeric case is a label without choices whose answer is a number, in the unit its evidence
names (``evidence["unit"]``, metres by default). A reply is parsed by
:func:`eval_assets.metrics.numeric.parse_numeric_reply`; a reply without a number (or a failed
call) is unparseable: it scores 0 MRA and is counted. Today's question families have no numeric
case, so on today's datasets the metric is not measured ("no numeric cases").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from eval_assets.metrics.numeric import (
    absolute_relative_error,
    mean_relative_accuracy,
    parse_numeric_reply,
)
from eval_assets.schemas.results import CellScores, NotMeasured
from eval_assets.schemas.vqa import Label
from eval_assets.scoring.inputs import ModelRun, PrivateDataset
from eval_assets.scoring.spec import (
    Column,
    Int,
    MetricSpec,
    Num,
    Pct,
    ReportTable,
    ScoringInputs,
    Section,
    ordered,
    who,
)

NAME = "numeric_accuracy"
DEFAULT_UNIT = "m"
NO_NUMERIC_CASES = "no numeric cases"


class NumericScores(BaseModel):
    """MRA over every numeric case (unparseable replies score 0), and the mean absolute
    relative error over the parsed ones (None when none parsed)."""

    model_config = ConfigDict(frozen=True)

    n: int
    unparseable: int
    mean_relative_accuracy: float
    mean_absolute_relative_error: float | None


def _target(label: Label) -> float | None:
    """The label's numeric answer, or None when the label is not a numeric case."""
    if label.choices:
        return None
    try:
        value = float(label.answer)
    except ValueError:
        return None
    return value if value > 0 else None


def score_numeric(data: PrivateDataset, run: ModelRun) -> NumericScores | NotMeasured:
    """MRA and absolute relative error of the numeric cases; not measured without any."""
    mras: list[float] = []
    errors: list[float] = []
    unparseable = 0
    for label in data.labels:
        target = _target(label)
        if target is None:
            continue
        record = run.answers.get(label.id)
        reply = record.raw_response if record and record.status == "success" else None
        parsed = parse_numeric_reply(reply, str(label.evidence.get("unit", DEFAULT_UNIT)))
        if parsed is None:
            unparseable += 1
            mras.append(0.0)
            continue
        mras.append(mean_relative_accuracy(parsed.value, target))
        errors.append(absolute_relative_error(parsed.value, target))
    if not mras:
        return NotMeasured(reason=NO_NUMERIC_CASES)
    return NumericScores(n=len(mras), unparseable=unparseable,
                         mean_relative_accuracy=math.fsum(mras) / len(mras),
                         mean_absolute_relative_error=(math.fsum(errors) / len(errors)
                                                       if errors else None))


def _score(inputs: ScoringInputs) -> NumericScores | NotMeasured:
    return score_numeric(inputs.data, inputs.run)


def _metadata(s: NumericScores) -> dict[str, Any]:
    return {"mean_relative_accuracy": s.mean_relative_accuracy, "n": s.n,
            "unparseable": s.unparseable,
            "mean_absolute_relative_error": s.mean_absolute_relative_error}


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
    rows = tuple((*who(cell), Int(s.n), Pct(s.mean_relative_accuracy),
                  Num(s.mean_absolute_relative_error, 3), Int(s.unparseable))
                 for cell, s in NUMERIC.results(ordered(cells)))
    return ReportTable(
        anchor="numeric", title="Numeric answers (MRA)", lead=LEAD, rows=rows,
        empty=f"Not measured: {NO_NUMERIC_CASES}.",
        headers=(("Model", False), ("Recording", False), ("Cases", True), ("MRA", True),
                 ("Abs. relative error", True), ("Unparseable", True)))


METHODS = (
    ("numeric", "numeric cases (a label without choices whose answer is a number): "
                "numeric_mra = mean over the cases of VSI-Bench's Mean Relative Accuracy (the "
                "share of thresholds t in .50, .55, ... .95 with |pred - gt| / gt <= 1 - t; an "
                "unparseable reply or failed call scores 0 and is counted in "
                "numeric_unparseable), weighted by cases when pooled; numeric_abs_rel_error = "
                "mean |pred - gt| / gt over the parsed replies; null when no numeric case was "
                "scored"),
)

NUMERIC: MetricSpec[NumericScores] = MetricSpec(
    name=NAME, description=__doc__ or "", file="numeric.json", version="1",
    result_model=NumericScores, score=_score, metadata=_metadata, label="numeric MRA",
    needs=frozenset({"labels"}),
    columns=(Column("numeric_mra"), Column("numeric_abs_rel_error"),
             Column("numeric_n", integer=True), Column("numeric_unparseable", integer=True)),
    pool=_pool, methods=METHODS, section=Section("numeric", "Numeric", _table),
)
