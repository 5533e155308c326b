"""Numeric answers ("how far is the chair, in metres?", "in which direction, in degrees?"): the
score of each case by its unit, and the absolute relative error, over the cases whose answer is
a number, overall and per family.

Numeric cases are the spatial cases of answer type ``number`` (``spatial_cases.jsonl``: the
audit label's ``unit``, cm, m, m2 or deg, or none for a count), and any dimOS-file label without
choices whose answer is a number (in ``evidence["unit"]``, metres by default). A reply is read
by :func:`eval_assets.metrics.numeric.read_numeric_reply` (units convert, a bare number is in the
unit asked, a reply naming several values unmarked is unparseable); a reply without a number it
can read with certainty (or a failed call) is unparseable: it scores 0 and is counted. Without
any numeric case the metric is not measured ("no numeric cases"), as on datasets without spatial
cases.

Scoring by unit (``shared/specs/motion.md``, "Scoring"), with each family's rule read from its
declaration (:class:`eval_assets.family_spec.FamilySpec`: ``zero_rule``, ``magnitude``): degrees by
:func:`~eval_assets.metrics.angular.mean_angular_accuracy` (a magnitude family, by how many
degrees, compares the reply's size); the motion distance families (``camera_displacement_m``,
``path_length_m``, whose truth is 0 when the camera stayed put) by
:func:`~eval_assets.metrics.numeric.mra_with_zero_rule` (OSI-Bench's τ = 0.30 m); everything
else by VSI-Bench's MRA (their truths are never 0). The field ``mra`` of rows and figures holds
that score whichever rule gave it (``scored_by`` names the rule).

Result (``numeric.json``): the overall figures, ``by_family`` (the same figures per family:
``n``, ``unparseable``, ``mean_relative_accuracy``, ``mean_absolute_relative_error`` over the
parsed cases with a non-zero, non-angle truth, ``mean_absolute_error_deg`` over the parsed angle
cases) and ``rows`` (one per case: family, unit, truth, the raw reply, the parsed prediction in
the truth's unit or None with why, its score), for scatter plots.
:func:`eval_assets.scoring.families.family_scores` reads the per-family score.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from eval_assets.metrics.angular import angular_difference
from eval_assets.metrics.numeric import (
    UNITS,
    ParsedNumber,
    absolute_relative_error,
    read_numeric_reply,
)
from eval_assets.metrics.numeric_rules import PARSER_UNITS as PARSER_UNITS
from eval_assets.metrics.numeric_rules import ScoredBy as ScoredBy
from eval_assets.metrics.numeric_rules import case_score as case_score
from eval_assets.metrics.numeric_rules import magnitude_angle_families as magnitude_angle_families
from eval_assets.metrics.numeric_rules import scored_by as scored_by
from eval_assets.metrics.numeric_rules import zero_rule_families as zero_rule_families
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
FAILED_CALL = "failed call"


class NumericFigures(BaseModel):
    """The mean score over ``n`` numeric cases (unparseable replies score 0), the mean absolute
    relative error over the parsed ones with a non-zero distance, area or count truth, and the
    mean absolute angle error (wrapped, degrees) over the parsed angle ones (None where none)."""

    model_config = ConfigDict(frozen=True)

    n: int
    unparseable: int
    mean_relative_accuracy: float
    mean_absolute_relative_error: float | None
    mean_absolute_error_deg: float | None = None


class NumericRow(BaseModel):
    """One numeric case: its truth, the raw reply (None: a failed call), the parsed prediction
    in the truth's unit (None: unparseable, ``parse_error`` says why) and its score ``mra`` by
    the rule ``scored_by``."""

    model_config = ConfigDict(frozen=True)

    case_id: str
    family: str
    unit: str | None
    target: float
    predicted: float | None
    mra: float
    reply: str | None = None
    parse_error: str | None = None
    scored_by: ScoredBy = "mra"


class NumericScores(NumericFigures):
    """The figures over every numeric case, per family, and per case."""

    by_family: dict[str, NumericFigures] = Field(default_factory=dict)
    rows: list[NumericRow] = Field(default_factory=list)


def _number(answer: str) -> float | None:
    try:
        value = float(answer)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _scorable(target: float, family: str, unit: str | None) -> bool:
    """Whether the rule of ``family`` and ``unit`` scores a truth of ``target``: any angle,
    a zero-rule distance >= 0, any other truth > 0 (MRA divides by it)."""
    rule = scored_by(family, unit)
    return rule == "angular" or target > 0 or (rule == "mra_zero_rule" and target == 0)


def numeric_cases(data: PrivateDataset) -> list[tuple[str, str, float, str | None]]:
    """(case id, family, truth, parser unit) of every numeric case: dimOS-file labels without
    choices whose answer is a number its rule can score, then the spatial cases of answer type
    number."""
    cases: list[tuple[str, str, float, str | None]] = []
    for label in data.labels:
        target = None if label.choices else _number(label.answer)
        if target is None:
            continue
        unit = str(label.evidence.get("unit", DEFAULT_UNIT))
        if unit not in UNITS:
            raise ValueError(f"label {label.id!r}: field evidence.unit is {unit!r}, not one of "
                             f"{sorted(UNITS)}; fix the label's unit and regenerate the dataset")
        if _scorable(target, label.family, unit):
            cases.append((label.id, label.family, target, unit))
    for spatial in data.spatial_labels:
        if spatial.answer_type != "number":
            continue
        asked = PARSER_UNITS[spatial.unit]
        target = _number(spatial.answer)
        if target is None or not _scorable(target, spatial.family, asked):
            # never generated (spec: MRA targets are never 0); refuse, never skip
            raise ValueError(
                f"spatial label {spatial.id!r}: answer {spatial.answer!r} cannot be scored "
                f"by {scored_by(spatial.family, asked)} (a number, > 0 unless the family is "
                f"an angle or one of {sorted(zero_rule_families())}); regenerate the dataset")
        cases.append((spatial.id, spatial.family, target, asked))
    return cases


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def _figures(rows: Sequence[NumericRow]) -> NumericFigures:
    parsed = [r for r in rows if r.predicted is not None]
    relative = [absolute_relative_error(r.predicted, r.target) for r in parsed
                if r.predicted is not None and r.scored_by != "angular" and r.target != 0]
    angles = [angular_difference(r.predicted, r.target) for r in parsed
              if r.predicted is not None and r.scored_by == "angular"]
    return NumericFigures(n=len(rows), unparseable=len(rows) - len(parsed),
                          mean_relative_accuracy=math.fsum(r.mra for r in rows) / len(rows),
                          mean_absolute_relative_error=_mean(relative),
                          mean_absolute_error_deg=_mean(angles))


def score_numeric(data: PrivateDataset, run: ModelRun) -> NumericScores | NotMeasured:
    """The score and error of the numeric cases, overall and per family; not measured
    without any."""
    rows: list[NumericRow] = []
    for case_id, family, target, unit in numeric_cases(data):
        record = run.answers.get(case_id)
        reply = record.raw_response if record and record.status == "success" else None
        read = (read_numeric_reply(reply, unit, magnitude=family in magnitude_angle_families())
                if reply is not None else None)
        value = read.value if isinstance(read, ParsedNumber) else None
        error = (FAILED_CALL if read is None
                 else None if isinstance(read, ParsedNumber) else read.reason)
        rows.append(NumericRow(case_id=case_id, family=family, unit=unit, target=target,
                               predicted=value, reply=reply, parse_error=error,
                               scored_by=scored_by(family, unit),
                               mra=0.0 if value is None
                               else case_score(value, target, family, unit)))
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
    table = "\n".join(["| family | n | score | abs. relative error | abs. error (deg) "
                       "| unparseable |",
                       "|---|---|---|---|---|---|",
                       *(f"| {family} | {f.n} | {markdown_number(f.mean_relative_accuracy)} | "
                         f"{markdown_number(f.mean_absolute_relative_error)} | "
                         f"{markdown_number(f.mean_absolute_error_deg)} | {f.unparseable} |"
                         for family, f in s.by_family.items())])
    return {"mean_relative_accuracy": s.mean_relative_accuracy, "n": s.n,
            "unparseable": s.unparseable,
            "mean_absolute_relative_error": s.mean_absolute_relative_error,
            "mean_absolute_error_deg": s.mean_absolute_error_deg,
            "by_family": Markdown(table)}


def _pool(cells: Sequence[CellScores]) -> dict[str, Any]:
    """The score weighted by cases, the relative error over the cases it is defined on (parsed,
    truth neither 0 nor an angle); null when no cell was measured."""
    scores = [s for _, s in NUMERIC.results(cells)]
    n = sum(s.n for s in scores)
    if not n:
        return {"numeric_mra": math.nan, "numeric_abs_rel_error": math.nan,
                "numeric_n": None, "numeric_unparseable": None}
    relative = [absolute_relative_error(r.predicted, r.target) for s in scores for r in s.rows
                if r.predicted is not None and r.scored_by != "angular" and r.target != 0]
    error = _mean(relative)
    return {"numeric_mra": math.fsum(s.mean_relative_accuracy * s.n for s in scores) / n,
            "numeric_abs_rel_error": math.nan if error is None else error, "numeric_n": n,
            "numeric_unparseable": sum(s.unparseable for s in scores)}


LEAD = ("Questions answered with a number, scored with VSI-Bench's Mean Relative Accuracy "
        "(the share of confidence thresholds .50, .55, \u2026 .95 within which the relative "
        "error stays; for the camera's displacement and path length, OSI-Bench's rule for a "
        "truth under 0.30 m: a reply under 0.30 m scores 1, any other is scored against "
        "0.30 m), angles with the mean angular accuracy (the share of tolerances 5\u00b0, "
        "10\u00b0, \u2026 50\u00b0 within which the wrapped difference stays), and the mean "
        "absolute relative error. A reply without a number that can be read with certainty "
        "(none, or several unmarked values) scores 0 and is counted as unparseable.")


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
                "numeric_mra = mean over the cases of their score: VSI-Bench's Mean Relative "
                "Accuracy (the share of thresholds t in .50, .55, ... .95 with |pred - gt| / gt "
                "<= 1 - t), for camera_displacement_m and path_length_m with a truth under "
                "0.30 m 1 when 0 <= pred < 0.30 m else MRA against 0.30 m, for degrees the "
                "share of tolerances 5, 10, ... 50 deg with the wrapped |pred - gt| <= t; an "
                "unparseable reply or failed call scores 0 and is counted in "
                "numeric_unparseable), weighted by cases when pooled; numeric_abs_rel_error = "
                "mean |pred - gt| / gt over the parsed replies whose truth is neither 0 nor an "
                "angle; null when no numeric case was scored"),
)

NUMERIC: MetricSpec[NumericScores] = MetricSpec(
    order=90,
    name=NAME, description=__doc__ or "", file="numeric.json", version="4",
    result_model=NumericScores, score=_score, metadata=_metadata, label="numeric MRA",
    needs=frozenset({"labels"}),
    columns=(Column("numeric_mra"), Column("numeric_abs_rel_error"),
             Column("numeric_n", integer=True), Column("numeric_unparseable", integer=True)),
    pool=_pool, methods=METHODS, section=Section("numeric", "Numeric", _table),
    extra_sections=(Section("numeric-families", "Numeric families", drawn=True,
                            after="baselines"),
                    Section("motion", "Motion", drawn=True, after="numeric-families")),
)
