"""POPE on the presence questions: accuracy, precision, recall, F1 and yes-ratio.

POPE has no notion of a failed call, so failed cases are left out here (VQA accuracy counts
them); the number scored is the result's ``n``. Pooled leaderboard rows recompute the rates from
the summed confusion matrix, with the one rule of :func:`eval_assets.metrics.pope.pope_rates`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from eval_assets.metrics.pope import PopeResult, parse_pope_answer, pope_metrics, pope_rates
from eval_assets.schemas.results import CellScores, NotMeasured
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
    Text,
    ordered,
    who,
)

NAME = "pope_presence"
PRESENCE = "presence"


def score_pope(data: PrivateDataset, run: ModelRun) -> PopeResult | NotMeasured:
    """POPE over the presence cases the model answered; not measured when there are none."""
    answers, labels = [], []
    for label in data.labels:
        record = run.answers.get(label.id)
        if label.family != PRESENCE or record is None or record.status != "success":
            continue
        answers.append(parse_pope_answer(record.raw_response or ""))
        labels.append(label.answer)
    if not answers:
        return NotMeasured(reason="no presence answers")
    return pope_metrics(answers, labels)


def _score(inputs: ScoringInputs) -> PopeResult | NotMeasured:
    return score_pope(inputs.data, inputs.run)


def _metadata(result: PopeResult) -> dict[str, Any]:
    return {"accuracy": result.accuracy, "f1": result.f1, "yes_ratio": result.yes_ratio,
            "n": result.n}


def _nan(value: float | None) -> float:
    return math.nan if value is None else value


def _pool(cells: Sequence[CellScores]) -> dict[str, Any]:
    popes = [p for _, p in POPE.results(cells)]
    tp, fp = sum(p.tp for p in popes), sum(p.fp for p in popes)
    tn, fn = sum(p.tn for p in popes), sum(p.fn for p in popes)
    rates = pope_rates(tp, fp, tn, fn)
    return {"pope_f1": _nan(rates["f1"]), "pope_accuracy": _nan(rates["accuracy"]),
            "pope_precision": _nan(rates["precision"]), "pope_recall": _nan(rates["recall"]),
            "pope_yes_ratio": _nan(rates["yes_ratio"]), "pope_n": tp + fp + tn + fn}


LEAD = ("Presence questions scored with the POPE rule (RUCAIBox/POPE): first sentence, "
        "\"no\"/\"not\"/\"No\" means no. Positive class: yes. A rate whose denominator is "
        "empty (precision with no \"yes\" answers, recall with no \"yes\" labels) is n/a, "
        "not 0.")


def _table(cells: Sequence[CellScores]) -> ReportTable:
    rows = []
    for cell, p in POPE.results(ordered(cells)):
        # Rates from the confusion counts, so results stored before the n/a rule show n/a too.
        rates = pope_rates(p.tp, p.fp, p.tn, p.fn)
        rows.append((*who(cell), Int(p.n), Pct(rates["accuracy"]), Pct(rates["precision"]),
                     Pct(rates["recall"]), Num(rates["f1"], 3), Pct(rates["yes_ratio"]),
                     Text(f"{p.tp} / {p.fp} / {p.tn} / {p.fn}")))
    return ReportTable(
        anchor="pope", title="POPE (presence)", lead=LEAD,
        headers=(("Model", False), ("Recording", False), ("n", True), ("Accuracy", True),
                 ("Precision", True), ("Recall", True), ("F1", True), ("Yes ratio", True),
                 ("TP / FP / TN / FN", True)),
        rows=tuple(rows), empty="No presence cases, so no POPE results.")


POPE: MetricSpec[PopeResult] = MetricSpec(
    order=40,
    name=NAME, description=__doc__ or "", file="pope.json", version="2", result_model=PopeResult,
    score=_score, metadata=_metadata, label="POPE", needs=frozenset({"labels"}),
    columns=(Column("pope_f1"), Column("pope_accuracy"), Column("pope_precision"),
             Column("pope_recall"), Column("pope_yes_ratio"), Column("pope_n", integer=True)),
    pool=_pool, section=Section("pope", "POPE", _table),
)
