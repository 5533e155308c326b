"""The report's motion families (``shared/specs/motion.md``): how well each model tells the
robot's own motion, per family and model.

- Distances (``camera_displacement_m``, ``path_length_m``): predicted against true metres on
  linear axes from 0 (a truth of 0, a camera that stayed put, is a point like any other; log axes
  would drop it) and the signed error's histogram.
- Angles (``turn_angle_deg``, ``egocentric_direction_deg``): predicted against true degrees on a
  linear −180…180 axis (0…180 for ``turn_angle_deg``, a magnitude), every value wrapped into
  that range, and the error's histogram wrapped around (350° against −10° is 0° off).
- Choices (``turn_direction``, ``route_sequence``, ``same_place``): accuracy with its Wilson
  interval, and which answers each model gave against the gold answers' distribution.

Each numeric table row gives ``n``, the unparseable replies (scored 0, not drawn), the score by
the family's rule (as :mod:`eval_assets.scoring.numeric` gave it) with a normal 95% interval of
the mean, and the mean absolute error. A model's cells (recordings) are pooled case by case.
Charts are deterministic PNGs in the report's chart style (:mod:`eval_assets.report.charts`).
The section is one of the numeric metric's drawn sections (``NUMERIC.extra_sections``), placed
after the numeric families'.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from eval_assets.metrics.angular import wrap_degrees
from eval_assets.metrics.stats import WILSON_Z, wilson_interval
from eval_assets.report.charts import _STYLE, _png, model_colours
from eval_assets.report.markup import NA, acc_cell, count, esc, img, num, section, table
from eval_assets.schemas.results import CellScores
from eval_assets.scoring.numeric import NUMERIC, magnitude_angle_families
from eval_assets.scoring.spatial import SPATIAL

__all__ = ["MOTION_ANGLE", "MOTION_CHOICE", "MOTION_DISTANCE", "MotionChoiceRow",
           "MotionNumberRow", "motion_choice_rows", "motion_number_chart", "motion_number_rows",
           "motion_section"]

# The motion families by how they are drawn (the generator's list:
# eval_assets.vqa.spatial.truth.MOTION_NUMERIC / MOTION_CHOICE; not imported, it loads the
# perception stack, which rendering a report does not need).
MOTION_DISTANCE: tuple[str, ...] = ("camera_displacement_m", "path_length_m")
MOTION_ANGLE: tuple[str, ...] = ("turn_angle_deg", "egocentric_direction_deg")
MOTION_CHOICE: tuple[str, ...] = ("turn_direction", "route_sequence", "same_place")
ANCHOR = "motion"


@dataclass(frozen=True)
class MotionNumberRow:
    """One model's answer to one numeric motion case (``predicted`` None: unparseable)."""

    model: str
    case_id: str
    family: str
    target: float
    predicted: float | None
    score: float


@dataclass(frozen=True)
class MotionChoiceRow:
    """One model's answer to one motion choice case (``predicted`` None: no choice read)."""

    model: str
    case_id: str
    family: str
    answer: str
    predicted: str | None
    status: str


def motion_number_rows(results: Sequence[CellScores]) -> list[MotionNumberRow]:
    """The numeric metric's per-case rows of the motion distance and angle families."""
    out: list[MotionNumberRow] = []
    for cell in results:
        scores = NUMERIC.result(cell)
        out += [MotionNumberRow(cell.model, f"{cell.recording}/{r.case_id}", r.family, r.target,
                                r.predicted, r.mra)
                for r in (scores.rows if scores is not None else ())
                if r.family in (*MOTION_DISTANCE, *MOTION_ANGLE)]
    return out


def motion_choice_rows(results: Sequence[CellScores]) -> list[MotionChoiceRow]:
    """The spatial choice metric's per-case rows of the motion choice families."""
    out: list[MotionChoiceRow] = []
    for cell in results:
        report = SPATIAL.result(cell)
        out += [MotionChoiceRow(cell.model, f"{cell.recording}/{r.case_id}", r.family, r.answer,
                                r.predicted_choice, r.status)
                for r in (report.rows if report is not None else ())
                if r.family in MOTION_CHOICE]
    return out


def _shown(family: str, value: float) -> float:
    """A value as the chart draws it: degrees wrapped into (−180, 180], a magnitude's size."""
    if family in MOTION_ANGLE:
        wrapped = wrap_degrees(value)
        return abs(wrapped) if family in magnitude_angle_families() else wrapped
    return value


def _error(family: str, predicted: float, target: float) -> float:
    """Signed error: metres, or degrees wrapped around into (−180, 180]."""
    if family in MOTION_ANGLE:
        if family in magnitude_angle_families():
            return abs(wrap_degrees(predicted)) - abs(wrap_degrees(target))
        return wrap_degrees(predicted - target)
    return predicted - target


Row = TypeVar("Row", MotionNumberRow, MotionChoiceRow)


def _by_model(rows: Sequence[Row]) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = {}
    for r in rows:
        out.setdefault(r.model, []).append(r)
    return dict(sorted(out.items()))


def motion_number_chart(rows: Sequence[MotionNumberRow], family: str,
                        models_shown: Sequence[str] = ()) -> bytes:
    """Predicted vs true (y = x dashed) and the signed error's histogram for ``family``'s rows,
    each model in its report colour; unparseable replies are not drawn (the table counts them).
    Raises ``ValueError`` when the family has no row."""
    mine = [r for r in rows if r.family == family]
    if not mine:
        raise ValueError(f"no motion rows of family {family!r}")
    models = _by_model(mine)
    colours = model_colours(sorted({r.model for r in rows} | set(models_shown)))
    angle = family in MOTION_ANGLE
    unit = "deg" if angle else "m"
    with matplotlib.rc_context(_STYLE):
        fig = Figure(figsize=(9.0, 3.8))
        scatter, hist = fig.subplots(1, 2)
        if angle:
            low, high = (0.0, 180.0) if family in magnitude_angle_families() else (-180.0, 180.0)
            # 15° bins over the whole circle, one centred on 0 (an exact answer).
            edges = np.arange(-187.5, 188.0, 15.0)
        else:
            # From 0: a truth of 0 (the camera stayed put) sits on the axis, never dropped. A
            # wild guess (over 3 times the largest truth) is drawn at the top edge rather than
            # squashing every other point into a corner.
            top = max(1.0, max(r.target for r in mine)) * 3
            values = [r.target for r in mine] + [min(top, r.predicted) for r in mine
                                                 if r.predicted is not None]
            low, high = 0.0, max(values) * 1.05
            errors = [r.predicted - r.target for r in mine if r.predicted is not None]
            reach = 1.1 * min(top, max((abs(e) for e in errors), default=1.0) or 1.0)
            edges = np.linspace(-reach, reach, 22)  # 21 bins, one centred on 0
        scatter.plot([low, high], [low, high], color="#555555", linestyle="--", linewidth=1)
        for model, model_rows in models.items():
            drawn = [r for r in model_rows if r.predicted is not None]
            if drawn:
                scatter.scatter([_shown(family, r.target) for r in drawn],
                                [min(high, max(low, _shown(family, r.predicted or 0.0)))
                                 for r in drawn],
                                s=18, alpha=0.75, color=colours[model], label=model)
                # An error past the histogram's reach counts in its outermost bin.
                hist.hist(np.clip([_error(family, r.predicted or 0.0, r.target) for r in drawn],
                                  edges[0], edges[-1]),
                          bins=edges, histtype="step", linewidth=1.5, color=colours[model],
                          label=model)
        scatter.set_xlim(low, high)
        scatter.set_ylim(low, high)
        unparsed = sum(1 for r in mine if r.predicted is None)
        scatter.set_xlabel(f"truth ({unit})" + (f"; {unparsed} unparseable not drawn"
                                                 if unparsed else ""))
        clipped = sum(1 for r in mine if r.predicted is not None and not angle
                      and r.predicted > high)
        scatter.set_ylabel(f"prediction ({unit})" + (f"; {clipped} above: at the top"
                                                      if clipped else ""))
        scatter.set_title("predicted vs truth", fontsize=10)
        if angle:
            ticks = range(int(low), int(high) + 1, 45 if low == 0 else 90)
            scatter.set_xticks(list(ticks))
            scatter.set_yticks(list(ticks))
        hist.set_xlim(float(edges[0]), float(edges[-1]))
        hist.axvline(0.0, color="#555555", linestyle="--", linewidth=1)
        hist.set_xlabel("prediction − truth (°, wrapped)" if angle else "prediction − truth (m)")
        hist.set_ylabel("cases")
        hist.set_title("error", fontsize=10)
        if any(r.predicted is not None for r in mine):
            hist.legend(loc="upper right", fontsize=8)
        else:  # every reply unparseable: say so rather than show two blank plots
            for ax in (scatter, hist):
                ax.text(0.5, 0.5, "no parseable answer", transform=ax.transAxes,
                        ha="center", va="center", color="#666666")
        fig.tight_layout()
        return _png(fig)


def _mean_interval(values: Sequence[float]) -> tuple[float, float | None, float | None]:
    """The mean and its normal 95% interval, clipped to [0, 1] (None with one value)."""
    mean = math.fsum(values) / len(values)
    if len(values) < 2:
        return mean, None, None
    half = WILSON_Z * statistics.stdev(values) / math.sqrt(len(values))
    return mean, max(0.0, mean - half), min(1.0, mean + half)


def _number_table(rows: Sequence[MotionNumberRow], family: str) -> str:
    angle = family in MOTION_ANGLE
    rule = "angular accuracy" if angle else "MRA (zero rule)"
    headers = [("Model", False), ("n", True), ("Unparseable", True), (rule, True),
               ("Mean |error| (°)" if angle else "Mean |error| (m)", True)]
    body = []
    for model, mine in _by_model(rows).items():
        score, low, high = _mean_interval([r.score for r in mine])
        errors = [abs(_error(family, r.predicted, r.target)) for r in mine
                  if r.predicted is not None]
        body.append([f'<span class="model">{esc(model)}</span>', count(len(mine)),
                     count(sum(1 for r in mine if r.predicted is None)),
                     acc_cell(score, low, high, len(mine)) if low is not None
                     else acc_cell(score, score, score, len(mine)),
                     num(math.fsum(errors) / len(errors), 1 if angle else 2) if errors else NA])
    return table(headers, body)


# Answers listed per distribution; a route question has many distinct answers, the rest are
# summed up so the row stays readable.
MAX_ANSWERS_LISTED = 6


def _distribution(answers: Sequence[str | None]) -> str:
    """``answers`` by count, most given first: "“left” ×7; “right” ×5" (None: "no choice");
    answers beyond :data:`MAX_ANSWERS_LISTED` summed as "k other answers ×m". Route answers
    contain commas, so each answer is quoted and the list is separated by semicolons."""
    counts = sorted(Counter("no choice" if a is None else f"“{a}”" for a in answers).items(),
                    key=lambda kv: (-kv[1], kv[0]))
    shown = [f"{esc(a)} ×{n}" for a, n in counts[:MAX_ANSWERS_LISTED]]
    rest = counts[MAX_ANSWERS_LISTED:]
    if rest:
        shown.append(f"{len(rest)} other answers ×{sum(n for _, n in rest)}")
    return "; ".join(shown)


def _choice_table(rows: Sequence[MotionChoiceRow]) -> str:
    headers = [("Model", False), ("n", True), ("Accuracy", True), ("Parse failures", True),
               ("Failed calls", True), ("Answers given", False)]
    body = []
    for model, mine in _by_model(rows).items():
        right = sum(1 for r in mine if r.status == "correct")
        low, high = wilson_interval(right, len(mine))
        body.append([f'<span class="model">{esc(model)}</span>', count(len(mine)),
                     acc_cell(right / len(mine), low, high, len(mine)),
                     count(sum(1 for r in mine if r.status == "parse_failure")),
                     count(sum(1 for r in mine if r.status == "failed_call")),
                     _distribution([r.predicted for r in mine])])
    # The gold answers of one model's cases (every model answers the same dataset's cases).
    first = next(iter(_by_model(rows).values()))
    gold = _distribution([r.answer for r in first])
    return table(headers, body) + f"<p>Gold answers: {gold}.</p>"


LEAD = (
    "Questions about the robot's own motion, per family (truth from the recorded camera poses "
    "alone). Distances: prediction against truth in metres on linear axes from 0 (a camera "
    "that stayed put has truth 0), scored by MRA with OSI-Bench's zero rule. Angles: degrees "
    "on a linear −180…180 axis (0…180 for the turn's size), every value and error wrapped "
    "around, scored by mean angular accuracy (tolerances 5°…50°). Unparseable replies score "
    "0, are counted and not drawn. Choices: accuracy with its 95% Wilson interval and which "
    "answers each model gave.")


def motion_section(results: Sequence[CellScores], models_shown: Sequence[str] = ()) -> str:
    """The "Motion" section's HTML ('' when no result has a motion case); ``models_shown``:
    every model of the report, so each keeps its colour."""
    numbers = motion_number_rows(results)
    choices = motion_choice_rows(results)
    if not numbers and not choices:
        return ""
    parts = []
    for family in (*MOTION_DISTANCE, *MOTION_ANGLE):
        mine = [r for r in numbers if r.family == family]
        if mine:
            parts.append(f"<h3>{esc(family.replace('_', ' '))}</h3>")
            parts.append(img(motion_number_chart(numbers, family, models_shown),
                             f"Predicted vs truth and error histogram for {family}", "chart"))
            parts.append(_number_table(mine, family))
    for family in MOTION_CHOICE:
        picked = [r for r in choices if r.family == family]
        if picked:
            parts.append(f"<h3>{esc(family.replace('_', ' '))}</h3>")
            parts.append(_choice_table(picked))
    return section(ANCHOR, "Motion: distance, angle and route", LEAD, "".join(parts))
