"""CircularEval and position bias: each case re-asked with its choices rotated.

Measured only when the run asked rotations (``rotations.jsonl`` in its folder); otherwise the
result is a not-measured record. The leaderboard pools it per case, like accuracy, restricted to
each row's case set (:func:`pool_circular`), and the report shows it beside the ranking.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eval_assets.jsonio import read_jsonl
from eval_assets.metrics.circular import (
    CircularCase,
    CircularGroupStats,
    CircularReport,
    CircularRow,
    circular_eval,
    circular_group_stats,
)
from eval_assets.metrics.vqa import VqaRowResult
from eval_assets.schemas.predictions import RUN_ROTATIONS, RotationRecord, rotate_choices
from eval_assets.schemas.results import CellScores, NotMeasured
from eval_assets.scoring.inputs import ModelRun, PrivateDataset
from eval_assets.scoring.spec import Column, MetricSpec, ScoringInputs, Section

NAME = "circular_eval"
NOT_ASKED = "no rotations asked"


def load_rotations(run_dir: Path) -> dict[tuple[str, int], RotationRecord] | None:
    """The standing rotated re-asks of a run folder by (case id, rotation); None when the run
    did not ask rotations (no ``rotations.jsonl``)."""
    path = Path(run_dir) / RUN_ROTATIONS
    if not path.is_file():
        return None
    return {(r.case_id, r.rotation): r for r in read_jsonl(path, RotationRecord)}


def circular_cases(data: PrivateDataset, run: ModelRun,
                   rotations: dict[tuple[str, int], RotationRecord],
                   recording: str) -> list[CircularCase]:
    """One CircularEval case per label: rotation 0 from the answers, the others from
    ``rotations``. A rotation without a record, or whose record shows the choices in another
    order than the label's rotated choices (a dataset changed since the run), was not asked."""
    cases = []
    for label in data.labels:
        answer = run.answers.get(label.id)
        replies: dict[int, str | None] = {
            0: answer.raw_response if answer and answer.status == "success" else None}
        for r in range(1, len(label.choices)):
            record = rotations.get((label.id, r))
            if record is None or record.choices != rotate_choices(label.choices, r):
                continue
            replies[r] = record.raw_response if record.status == "success" else None
        cases.append(CircularCase(case_id=label.id, family=label.family, recording=recording,
                                  frame_index=label.frame_index, choices=label.choices,
                                  answer=label.answer, replies=replies))
    return cases


def score_circular(data: PrivateDataset, run: ModelRun,
                   rotations: dict[tuple[str, int], RotationRecord] | None,
                   recording: str) -> CircularReport | NotMeasured:
    """CircularEval and position bias; not measured when the run asked no rotations."""
    if rotations is None:
        return NotMeasured(reason=NOT_ASKED)
    return circular_eval(circular_cases(data, run, rotations, recording))


def _score(inputs: ScoringInputs) -> CircularReport | NotMeasured:
    return score_circular(inputs.data, inputs.run, load_rotations(inputs.run_dir),
                          inputs.recording)


def _metadata(report: CircularReport) -> dict[str, Any]:
    c = report.overall
    return {"circular_accuracy": c.accuracy, "circular_n": c.n, "circular_not_asked": c.not_asked,
            "rotation_accuracy": c.rotation_accuracy, "position_bias_max_gap": c.bias.max_gap,
            "position_bias_p": c.bias.p_value}


_COUNTS = {"circular_n", "circular_not_asked", "rotation_n_answers", "position_bias_position",
           "position_bias_df", "position_bias_n"}
COLUMNS = tuple(Column(c, integer=c in _COUNTS) for c in (
    "circular_accuracy", "circular_ci_low", "circular_ci_high", "circular_n",
    "circular_not_asked", "circular_chance", "rotation_accuracy", "rotation_ci_low",
    "rotation_ci_high", "rotation_n_answers", "original_accuracy", "position_bias_gap",
    "position_bias_position", "position_bias_chi2", "position_bias_df", "position_bias_p",
    "position_bias_n"))
# Per family, after the VQA family statistics: CircularEval accuracy and its n.
FAMILY_STATS: tuple[str, ...] = ("circular", "circular_n")

METHODS = (
    ("circular_eval",
     "each case of k choices is also asked with its choices rotated by 1 .. "
     "k-1 (rotation r shows choices[r:] + choices[:r]); circular_n counts the "
     "cases whose every rotation was asked (a failed call or unparseable reply "
     "counts as wrong), circular_not_asked those left out because a rotation "
     "was never asked. circular_accuracy = cases answered correctly under every "
     "rotation / circular_n, with the frame-clustered 95% interval; "
     "circular_chance = mean of k^-k (a random guesser). rotation_accuracy = "
     "correct answers / all rotation answers of those cases (k per case), same "
     "interval; original_accuracy: rotation 0 alone on the same cases"),
    ("position_bias",
     "over the rotation answers of the circular_n cases that named a choice "
     "(position_bias_n): the share choosing each displayed position against "
     "the share of those prompts whose gold answer is there (rotations balance "
     "gold over positions); position_bias_gap = the largest absolute difference "
     "of the two shares, at position_bias_position (1 = shown first); "
     "position_bias_chi2 / _df / _p: Pearson chi-square goodness of fit of the "
     "chosen positions against the gold positions (treats answers as "
     "independent); null when no answer named a choice or fewer than 2 "
     "positions hold a gold answer"),
)


CIRCULAR: MetricSpec[CircularReport] = MetricSpec(
    order=20,
    name=NAME, description=__doc__ or "", file="circular.json", version="1",
    result_model=CircularReport, score=_score, needs=frozenset({"labels", "rotations"}),
    methods=METHODS,
    metadata=_metadata,
    columns=COLUMNS, label="CircularEval / position bias",
    section=Section("circular", "Position bias", drawn=True, after="comparisons"),
)


def circular_columns(stats: CircularGroupStats | None) -> dict[str, Any]:
    """The CircularEval columns of one leaderboard row; all null (counts NA) without
    rotations."""
    # pandas here, not at the top: this module loads with every Dagster process (the metric
    # declarations), and pandas is a quarter of a second of each one's start.
    import pandas as pd

    if stats is None:
        return {c.name: (pd.NA if c.integer else math.nan) for c in COLUMNS}
    bias = stats.bias

    def na(value: Any, integer: bool = False) -> Any:
        return (pd.NA if integer else math.nan) if value is None else value

    return {
        "circular_accuracy": na(stats.accuracy), "circular_ci_low": na(stats.ci_low),
        "circular_ci_high": na(stats.ci_high), "circular_n": stats.n,
        "circular_not_asked": stats.not_asked, "circular_chance": na(stats.chance),
        "rotation_accuracy": na(stats.rotation_accuracy),
        "rotation_ci_low": na(stats.rotation_ci_low),
        "rotation_ci_high": na(stats.rotation_ci_high), "rotation_n_answers": stats.n_answers,
        "original_accuracy": na(stats.original_accuracy),
        "position_bias_gap": na(bias.max_gap),
        "position_bias_position": na(bias.max_gap_position, True),
        "position_bias_chi2": na(bias.chi2), "position_bias_df": na(bias.df, True),
        "position_bias_p": na(bias.p_value), "position_bias_n": bias.n,
    }


CircularPool = tuple[CircularGroupStats | None, dict[str, CircularGroupStats]]


def pool_circular(parts: Sequence[tuple[CellScores, Sequence[VqaRowResult]]]) -> CircularPool:
    """CircularEval of the cases of ``parts`` (each cell with its rows in the case set):
    overall and by family; None when no cell of them asked rotations. Cases of a cell without
    rotations count as not asked."""
    rows: list[CircularRow] = []
    unasked: dict[str, int] = {}
    measured = False
    for cell, part in parts:
        report = CIRCULAR.result(cell)
        if report is None:
            for x in part:
                unasked[x.family] = unasked.get(x.family, 0) + 1
            continue
        measured = True
        wanted = {x.case_id for x in part}
        rows += [c for c in report.rows if c.case_id in wanted]
    if not measured:
        return None, {}

    def stats(subset: list[CircularRow], family: str | None) -> CircularGroupStats:
        extra = sum(unasked.values()) if family is None else unasked.get(family, 0)
        s = circular_group_stats(subset)
        return s.model_copy(update={"not_asked": s.not_asked + extra}) if extra else s

    families = sorted({c.family for c in rows} | set(unasked))
    return stats(rows, None), {f: stats([c for c in rows if c.family == f], f)
                               for f in families}
