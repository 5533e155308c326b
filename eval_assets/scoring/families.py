"""Every question family's score in one shape, for a headline that weighs families equally.

Three metrics score families: VQA accuracy (dimOS's seven single-image families,
:mod:`eval_assets.scoring.vqa`), spatial choice accuracy (``appearance_order``,
``relative_direction``: :mod:`eval_assets.scoring.spatial`) and the numeric metric (the numeric
spatial families, MRA: :mod:`eval_assets.scoring.numeric`). :func:`family_scores` reads one
cell's results into :class:`FamilyScore` records, one per family the dataset asked:

    {"family": "pair_distance_m", "metric": "numeric_accuracy", "measure": "mra",
     "n": 12, "score": 0.41}

``score`` is the family's accuracy (correct / n, a parse failure or failed call is wrong) or its
mean MRA (an unparseable reply scores 0), in [0, 1]; ``n`` its cases. A family a metric did not
measure is absent, never 0. Not a metric: no asset, no file of its own.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from eval_assets.metrics.headline import FamilyScore as HeadlineFamily
from eval_assets.metrics.headline import HeadlineCase
from eval_assets.metrics.stats import WILSON_Z, wilson_interval
from eval_assets.metrics.vqa import headline_case
from eval_assets.schemas.results import CellScores
from eval_assets.scoring.numeric import NUMERIC
from eval_assets.scoring.spatial import SPATIAL
from eval_assets.scoring.vqa import VQA

Measure = Literal["accuracy", "mra"]


class FamilyScore(BaseModel):
    """One family's score in one cell: accuracy or mean MRA over its ``n`` cases."""

    model_config = ConfigDict(frozen=True)

    family: str
    metric: str
    measure: Measure
    n: int
    score: float | None


def family_scores(cell: CellScores) -> dict[str, FamilyScore]:
    """Every family the cell's metrics scored, by family name: dimOS's (VQA accuracy), then the
    spatial choice families, then the numeric ones, each group sorted by name. A family scored
    by two metrics is an error (the metrics split the cases between them)."""
    scores: list[FamilyScore] = []
    for spec in (VQA, SPATIAL):
        report = spec.result(cell)
        if report is not None:
            scores += [FamilyScore(family=family, metric=spec.name, measure="accuracy", n=s.n,
                                   score=s.accuracy) for family, s in report.by_family.items()]
    numeric = NUMERIC.result(cell)
    if numeric is not None:
        scores += [FamilyScore(family=family, metric=NUMERIC.name, measure="mra", n=f.n,
                               score=f.mean_relative_accuracy)
                   for family, f in numeric.by_family.items()]
    out: dict[str, FamilyScore] = {}
    for score in scores:
        if score.family in out:
            raise ValueError(f"family {score.family!r} of {cell.model!r} on {cell.recording!r} "
                             f"is scored by both {out[score.family].metric} and {score.metric}")
        out[score.family] = score
    return out


def pooled_spatial_families(cells: Sequence[CellScores]) -> list[HeadlineFamily]:
    """The spatial families of ``cells`` (one model's cells, any recordings) pooled into the
    headline's records (:mod:`eval_assets.metrics.headline`), in name order.

    Choice families pool correct / n with a Wilson interval; numeric families pool every case's
    MRA (an unparseable reply scores 0) with a normal interval of the mean. dimOS's families are
    not here: the leaderboard pools them on the ranked models' common cases.
    """
    correct: dict[str, list[int]] = {}
    mras: dict[str, list[float]] = {}
    for cell in cells:
        spatial = SPATIAL.result(cell)
        for family, stats in (spatial.by_family.items() if spatial is not None else ()):
            pooled = correct.setdefault(family, [0, 0])
            pooled[0] += stats.correct
            pooled[1] += stats.n
        numeric = NUMERIC.result(cell)
        for row in (numeric.rows if numeric is not None else ()):
            mras.setdefault(row.family, []).append(row.mra)
    out = []
    for family, (right, n) in correct.items():
        low, high = wilson_interval(right, n) if n else (None, None)
        out.append(HeadlineFamily(family=family, kind="accuracy", score=right / n if n else None,
                                  ci_low=low, ci_high=high, n=n))
    for family, values in mras.items():
        mean = math.fsum(values) / len(values)
        half = (WILSON_Z * statistics.stdev(values) / math.sqrt(len(values))
                if len(values) > 1 else None)
        out.append(HeadlineFamily(
            family=family, kind="mra", score=mean, n=len(values),
            ci_low=None if half is None else max(0.0, mean - half),
            ci_high=None if half is None else min(1.0, mean + half)))
    return sorted(out, key=lambda f: f.family)


def spatial_headline_cases(cells: Sequence[CellScores]) -> list[HeadlineCase]:
    """The spatial cases of ``cells`` (one model's cells, any recordings) as the headline reads
    them (:mod:`eval_assets.metrics.headline`), keyed as the leaderboard keys cases
    (recording, dataset, case id): the choice cases clustered by their first frame, each
    numeric case its own cluster (its row carries no frame). dimOS's families are not here:
    the leaderboard takes them from the ranked models' common cases."""
    out: list[HeadlineCase] = []
    for cell in cells:
        spatial = SPATIAL.result(cell)
        for row in spatial.rows if spatial is not None else ():
            out.append(headline_case(row, (cell.recording, cell.dataset_sha256, row.case_id)))
        numeric = NUMERIC.result(cell)
        for number in numeric.rows if numeric is not None else ():
            key = (cell.recording, cell.dataset_sha256, number.case_id)
            out.append(HeadlineCase(key=key, family=number.family, frame=key,
                                    gold=f"{number.target!r}", kind="mra",
                                    target=number.target, unit=number.unit,
                                    number=number.predicted, score=number.mra,
                                    stratum=cell.recording))
    return out
