"""The report's numeric families: per family, predicted against true values on log axes and the
mean relative accuracy (MRA) by the camera's distance to the object.

Built from per-case rows (:class:`NumericCaseRow`: model, case, family, target, the parsed
prediction or None, unit, camera distance when known), whatever metric scored them. MRA is
VSI-Bench's (:func:`eval_assets.metrics.numeric.mean_relative_accuracy`); an unparseable reply
(prediction None) scores 0, is counted, and is not drawn in the scatter (it has no value).
A distance bucket without cases shows n/a, never 0. The chart is a deterministic PNG (the
report's chart style; :mod:`eval_assets.report.charts`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter

from eval_assets.metrics.numeric import mean_relative_accuracy
from eval_assets.report.charts import _STYLE, _png, model_colours
from eval_assets.report.markup import NA, count, esc, img, pct, section, table
from eval_assets.schemas.results import CellScores
from eval_assets.scoring.numeric import NUMERIC

__all__ = ["DISTANCE_BUCKETS", "BucketScore", "NumericCaseRow", "mra_by_distance",
           "numeric_family_chart", "numeric_section"]

# Camera-to-object distance buckets, metres: [low, high).
DISTANCE_BUCKETS: tuple[tuple[float, float], ...] = ((0.0, 1.0), (1.0, 2.0), (2.0, 4.0),
                                                     (4.0, math.inf))


@dataclass(frozen=True)
class NumericCaseRow:
    """One model's answer to one numeric case."""

    model: str
    case_id: str
    family: str
    target: float
    prediction: float | None
    unit: str | None = None
    camera_distance_m: float | None = None
    score: float | None = None

    @property
    def mra(self) -> float:
        """The case's score: ``score`` as the numeric metric gave it (by the case's rule: MRA,
        MRA with the zero rule, angular accuracy) where known, else its MRA; 0 for an
        unparseable reply."""
        if self.prediction is None:
            return 0.0
        if self.score is not None:
            return self.score
        return mean_relative_accuracy(self.prediction, self.target)


@dataclass(frozen=True)
class BucketScore:
    """MRA of one model's cases of one family in one distance bucket (None without cases)."""

    label: str
    n: int
    mra: float | None


def bucket_label(low: float, high: float) -> str:
    """``"1-2 m"``, or ``">= 4 m"`` for the open bucket."""
    return f">= {low:g} m" if math.isinf(high) else f"{low:g}-{high:g} m"


def mra_by_distance(rows: Sequence[NumericCaseRow]) -> list[BucketScore]:
    """MRA per distance bucket over ``rows`` (rows without a distance are left out), plus an
    ``"unknown"`` bucket when some row has no distance."""
    out = []
    for low, high in DISTANCE_BUCKETS:
        mine = [r.mra for r in rows if r.camera_distance_m is not None
                and low <= r.camera_distance_m < high]
        out.append(BucketScore(bucket_label(low, high), len(mine),
                               math.fsum(mine) / len(mine) if mine else None))
    unknown = [r.mra for r in rows if r.camera_distance_m is None]
    if unknown:
        out.append(BucketScore("unknown", len(unknown), math.fsum(unknown) / len(unknown)))
    return out


def _by_model(rows: Sequence[NumericCaseRow]) -> dict[str, list[NumericCaseRow]]:
    out: dict[str, list[NumericCaseRow]] = {}
    for r in sorted(rows, key=lambda r: (r.model, r.case_id)):
        out.setdefault(r.model, []).append(r)
    return out


def numeric_family_chart(rows: Sequence[NumericCaseRow], family: str,
                         models_shown: Sequence[str] = ()) -> bytes:
    """Predicted vs true on log axes (linear for angles and truths that may be 0; y = x
    dashed) and the score (MRA, or the family's rule) by distance bucket, per model, for
    ``family``'s rows (each model in its colour among ``models_shown``, default the models of
    ``rows``, as in the report's other charts; a bucket without cases is marked n/a). Raises
    ``ValueError`` when the family has no row."""
    mine = [r for r in rows if r.family == family]
    if not mine:
        raise ValueError(f"no numeric rows of family {family!r}")
    models = _by_model(mine)
    colours = model_colours(sorted({r.model for r in rows} | set(models_shown)))
    unit = next((r.unit for r in mine if r.unit), None)
    with matplotlib.rc_context(_STYLE):
        fig = Figure(figsize=(9.0, 3.8))
        scatter, bars = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.2]})
        # Log axes need positive values: angles (signed) and distances whose truth may be 0
        # (a camera that stayed put) are drawn on linear axes.
        log = unit != "deg" and all(r.target > 0 for r in mine)

        def drawable(r: NumericCaseRow) -> bool:
            return r.prediction is not None and (r.prediction > 0 or not log)

        drawn = [r for r in mine if drawable(r)]
        values = [r.target for r in mine] + [r.prediction for r in drawn
                                             if r.prediction is not None]
        if log:
            low, high = min(values) / 1.5, max(values) * 1.5
        else:
            margin = max(1e-9, 0.1 * (max(values) - min(values)))
            low, high = min(values) - margin, max(values) + margin
        scatter.plot([low, high], [low, high], color="#555555", linestyle="--", linewidth=1)
        for model, model_rows in models.items():
            points = [(r.target, r.prediction) for r in model_rows if drawable(r)]
            if points:
                x, y = zip(*points, strict=True)
                scatter.scatter(x, y, s=18, alpha=0.75, color=colours[model], label=model)
        if log:
            scatter.set_xscale("log")
            scatter.set_yscale("log")
            for axis in (scatter.xaxis, scatter.yaxis):  # minor labels crowd a short log axis
                axis.set_minor_formatter(NullFormatter())
        scatter.set_xlim(low, high)
        scatter.set_ylim(low, high)
        suffix = f" ({unit})" if unit else ""
        unparsed = sum(1 for r in mine if r.prediction is None)
        scatter.set_xlabel(f"truth{suffix}" + (f"; {unparsed} unparseable not drawn"
                                                 if unparsed else ""))
        scatter.set_ylabel(f"prediction{suffix}")
        scatter.set_title("predicted vs truth", fontsize=10)
        width = 0.8 / max(1, len(models))
        labels = [b.label for b in mra_by_distance(mine)]
        for i, (model, model_rows) in enumerate(models.items()):
            scores = {b.label: b for b in mra_by_distance(model_rows)}
            heights = [np.nan if (s := scores.get(label)) is None or s.mra is None else s.mra
                       for label in labels]
            xs = np.arange(len(labels)) + (i - (len(models) - 1) / 2) * width
            bars.bar(xs, np.nan_to_num(heights), width=width, color=colours[model], label=model)
            for x, h in zip(xs, heights, strict=True):
                if math.isnan(h):
                    bars.text(x, 0.02, "n/a", ha="center", fontsize=7, color="#666666",
                              rotation=90)
        bars.set_xticks(np.arange(len(labels)), labels)
        bars.set_ylim(0, 1)
        bars.set_ylabel("MRA")
        bars.set_xlabel("camera distance to the object")
        bars.set_title("MRA by distance", fontsize=10)
        bars.legend(loc="upper right", fontsize=8)
        fig.tight_layout()
        return _png(fig)


LEAD = (
    "Questions answered with a number, per family. Left: each model's prediction against the "
    "truth on log axes (the dashed line is a perfect answer; a factor of two off is the same "
    "distance from it at any size); unparseable replies have no value and are counted, not "
    "drawn. Right and in the table: mean relative accuracy (VSI-Bench's MRA: the share of "
    "thresholds .50 ... .95 within which the relative error stays; an unparseable reply "
    "scores 0) by the camera's distance to the object; a bucket without cases is n/a.")


def numeric_section(rows: Sequence[NumericCaseRow], models_shown: Sequence[str] = ()) -> str:
    """The section's HTML ('' without numeric rows); ``models_shown``: every model of the
    report, so each keeps its colour."""
    if not rows:
        return ""
    parts = []
    for family in sorted({r.family for r in rows}):
        mine = [r for r in rows if r.family == family]
        parts.append(f"<h3>{esc(family.replace('_', ' '))}</h3>")
        parts.append(img(numeric_family_chart(rows, family, models_shown),
                         f"Predicted vs truth and MRA by distance for {family}", "chart"))
        labels = [b.label for b in mra_by_distance(mine)]
        headers = [("Model", False), ("n", True), ("Unparseable", True), ("MRA", True)] + [
            (label, True) for label in labels]
        body = []
        for model, model_rows in _by_model(mine).items():
            buckets = {b.label: b for b in mra_by_distance(model_rows)}
            cells = [NA if (b := buckets.get(label)) is None or b.mra is None
                     else f"{pct(b.mra)} <span class=\"ci\">n={b.n}</span>" for label in labels]
            body.append([f'<span class="model">{esc(model)}</span>', count(len(model_rows)),
                         count(sum(1 for r in model_rows if r.prediction is None)),
                         pct(math.fsum(r.mra for r in model_rows) / len(model_rows)), *cells])
        parts.append(table(headers, body))
    return section("numeric-families", "Numeric families: predictions and distance", LEAD,
                   "".join(parts))


def numeric_case_rows(results: Sequence[CellScores]) -> list[NumericCaseRow]:
    """Every model's answer to every numeric case of ``results`` (the numeric metric's per-case
    rows), for the numeric families' scatter and MRA by distance. The camera distance is known
    only for ``camera_distance_m`` cases, where it is the truth itself."""
    rows: list[NumericCaseRow] = []
    for cell in results:
        scores = NUMERIC.result(cell)
        if scores is None:
            continue
        rows += [NumericCaseRow(model=cell.model, case_id=f"{cell.recording}/{r.case_id}",
                                family=r.family, target=r.target, prediction=r.predicted,
                                unit=r.unit, score=r.mra,
                                camera_distance_m=(r.target if r.family == "camera_distance_m"
                                                   else None))
                 for r in scores.rows]
    return rows
