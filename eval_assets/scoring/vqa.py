"""VQA choice accuracy: overall and per family, Wilson 95% intervals, parse failures, chance,
and the headline mean over families (each family weighs the same, scored so that no answer prior
moves it: :mod:`eval_assets.metrics.headline`).

The leaderboard ranks models on it and pools it per case (restricted to the common case set),
so its columns are filled by the leaderboard's pooling, and the report shows it with the ranking.
"""

from __future__ import annotations

from typing import Any

from eval_assets.metrics.vqa import VqaReport, VqaRow, vqa_accuracy
from eval_assets.schemas.results import CellScores, PredictionCounts
from eval_assets.scoring.inputs import ModelRun, PrivateDataset
from eval_assets.scoring.spec import (
    Column,
    Markdown,
    MetricSpec,
    ScoringInputs,
    markdown_number,
)

NAME = "vqa_accuracy"


def vqa_rows(data: PrivateDataset, run: ModelRun, recording: str) -> list[VqaRow]:
    """One row per labelled case; a case the model never answered counts as a failed call."""
    rows = []
    for label in data.labels:
        answer = run.answers.get(label.id)
        prediction = answer.raw_response if answer and answer.status == "success" else None
        rows.append(VqaRow(case_id=label.id, family=label.family, recording=recording,
                           frame_index=label.frame_index, choices=label.choices,
                           answer=label.answer, prediction=prediction))
    return rows


def score_vqa(data: PrivateDataset, run: ModelRun, recording: str) -> VqaReport:
    """Accuracy overall / per family with Wilson intervals; failures stay in the denominator."""
    return vqa_accuracy(vqa_rows(data, run, recording))


def prediction_counts(data: PrivateDataset, run: ModelRun, report: VqaReport) -> PredictionCounts:
    """How many calls succeeded or failed, answers and descriptions alike (dimOS's cases: the
    spatial cases' answers are counted by their own metrics)."""
    described = list(run.descriptions.values())
    return PredictionCounts(
        cases=len(data.labels),
        succeeded=sum(1 for label in data.labels
                      if (r := run.answers.get(label.id)) is not None and r.status == "success"),
        failed=report.overall.failed_calls,
        parse_failures=report.overall.parse_failures,
        descriptions=sum(1 for r in described if r.status == "success"),
        descriptions_failed=sum(1 for r in described if r.status != "success"),
    )


def family_table(report: VqaReport) -> str:
    """Per family: n, accuracy with its interval, parse failures and chance, as a Markdown
    table for the asset's metadata (the spatial choice families' too)."""
    num = markdown_number
    rows = [f"| {family} | {s.n} | {num(s.accuracy)} | [{num(s.ci_low)}, {num(s.ci_high)}] | "
            f"{s.parse_failures} | {num(s.chance)} |" for family, s in report.by_family.items()]
    return "\n".join(["| family | n | accuracy | 95% CI | parse failures | chance |",
                      "|---|---|---|---|---|---|", *rows])


def _metadata(report: VqaReport) -> dict[str, Any]:
    table = family_table(report)
    overall = report.overall
    mean = report.family_mean
    return {"family_mean": mean.mean if mean else None,
            "family_mean_ci_low": mean.ci_low if mean else None,
            "family_mean_ci_high": mean.ci_high if mean else None,
            "n_families": mean.n_families if mean else 0,
            "headline_chance": mean.chance if mean else None,
            "headline_caa": mean.caa if mean else None, "accuracy": overall.accuracy,
            "ci_low": overall.ci_low, "ci_high": overall.ci_high,
            "n": overall.n, "parse_failure_rate": overall.parse_failure_rate,
            "failed_calls": overall.failed_calls, "by_family": Markdown(table)}


def report_of(cell: CellScores) -> VqaReport:
    """The cell's VQA report: every cell has one (the ranking is built on it)."""
    outcome = VQA.result(cell)
    if outcome is None:
        raise ValueError(f"results of {cell.model!r} on {cell.recording!r} have no "
                         f"{NAME!r} score: every cell must have one")
    return outcome


def _score(inputs: ScoringInputs) -> VqaReport:
    return score_vqa(inputs.data, inputs.run, inputs.recording)


_COUNT = {"n_cases", "n_frames", "correct", "parse_failures", "failed_calls"}
VQA: MetricSpec[VqaReport] = MetricSpec(
    order=10,
    name=NAME, description=__doc__ or "", file="vqa.json", version="5", result_model=VqaReport,
    score=_score, metadata=_metadata, label="VQA accuracy", needs=frozenset({"labels"}),
    columns=tuple(Column(c, integer=c in _COUNT, nullable=False) for c in (
        "vqa_accuracy", "vqa_ci_low", "vqa_ci_high", "n_cases", "n_frames", "design_effect",
        "correct", "parse_failures", "failed_calls", "parse_failure_rate", "chance")),
)

# The headline columns the leaderboard adds after every metric's: the mean over families of the
# prior-free scores (eval_assets.metrics.headline), its chance and CAA, the raw pooled CAA.
HEADLINE_COLUMNS: tuple[Column, ...] = (
    Column("family_mean"), Column("family_mean_ci_low"), Column("family_mean_ci_high"),
    Column("n_families", integer=True, nullable=False),
    # Families with cases but under the headline's minimum n: shown, not in the mean.
    Column("n_families_left_out", integer=True, nullable=False),
    # Families whose cases all have one gold answer: a prior scores them, not in the mean.
    Column("n_families_uninformative", integer=True, nullable=False),
    # The mean of the families' chances: what any answer prior scores on the headline.
    Column("headline_chance"),
    # (family_mean - headline_chance) / (1 - headline_chance): 0 for every answer prior.
    Column("caa"),
    # SITE's chance-adjusted accuracy of the raw pooled accuracy over the single-image cases.
    Column("raw_caa"),
    # The headline minus the best blind baseline's (random, frequency, blind models) on the
    # cases both answered, with a paired interval; null outside the pooled common rows.
    Column("over_blind"), Column("over_blind_ci_low"), Column("over_blind_ci_high"))
# Text columns of the leaderboard beside them: which baseline a row is ("" for a model under
# test; "random", "blind" or "frequency") and the best blind baseline it is compared with.
BASELINE_TEXT_COLUMNS: tuple[str, ...] = ("baseline", "best_blind")
