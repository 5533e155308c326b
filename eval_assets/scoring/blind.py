"""Blind solvability: every model's score on all cases and on the cases a blind forest cannot
solve (``../shared/specs/validity.md``, "Per-item blind solvability").

The dataset's private audit (``audit/bias.jsonl``, :mod:`eval_assets.vqa.bias`) flags each case
a random forest that sees no pixel solves out of fold (bias score >= the threshold, default
0.8). A model's accuracy on the unflagged cases says how it does where the question's wording,
names and answer distribution do not give the answer away. Per family and for all choice cases
(dimOS's and the spatial choice cases: correct / n, a parse failure or failed call is wrong) and
all numeric cases (mean MRA, an unparseable reply scores 0): n, flagged, the family's mean bias
score and its blind upper bound (the forest's own accuracy, from ``audit/bias.json``), and the
model's score on all and on the unflagged cases. A dataset without the audit (written by dimOS,
or before it existed) is not measured.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from eval_assets.metrics.vqa import vqa_accuracy
from eval_assets.schemas.results import CellScores, NotMeasured
from eval_assets.scoring.inputs import ModelRun, PrivateDataset
from eval_assets.scoring.numeric import NumericScores, score_numeric
from eval_assets.scoring.spatial import spatial_rows
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
from eval_assets.scoring.vqa import vqa_rows
from eval_assets.vqa.bias import read_bias_cases, read_bias_summary

NAME = "blind_solvability"
NO_AUDIT = ("the dataset has no blind-solvability audit (audit/bias.jsonl); regenerate it with "
            "this version (eval-assets vqa generate, or rematerialize the dataset)")
ALL_CHOICE = "all choice"
ALL_NUMERIC = "all numeric"


class SolvabilityGroup(BaseModel):
    """One group of cases (a family, or all choice / all numeric cases) of one cell."""

    model_config = ConfigDict(frozen=True)

    measure: Literal["accuracy", "mra"]
    n: int
    flagged: int
    n_unflagged: int
    flagged_share: float | None = Field(description="flagged / cases with a bias score")
    mean_bias_score: float | None
    blind_upper_bound: float | None = Field(
        description="the blind forest's own accuracy (its MRA for numbers) on these cases")
    score_all: float | None
    score_unflagged: float | None = Field(description="None: every case is flagged")


class SolvabilityScores(BaseModel):
    """A model's scores on all and on the unflagged cases, per family and per answer kind."""

    model_config = ConfigDict(frozen=True)

    threshold: float
    choice: SolvabilityGroup | None
    number: SolvabilityGroup | None
    by_family: dict[str, SolvabilityGroup]


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def score_blind(data: PrivateDataset, run: ModelRun, recording: str
                ) -> SolvabilityScores | NotMeasured:
    """The model's scores on all and on the unflagged cases; not measured without the audit."""
    flags = read_bias_cases(data.root)
    summary = read_bias_summary(data.root)
    if flags is None or summary is None:
        return NotMeasured(reason=NO_AUDIT)
    # (case id, family, the model's score of the case) per answer kind.
    choice_rows = vqa_accuracy([*vqa_rows(data, run, recording),
                                *spatial_rows(data, run, recording)]).rows
    choice = [(r.case_id, r.family, 1.0 if r.status == "correct" else 0.0)
              for r in choice_rows]
    numeric = score_numeric(data, run)
    number = ([(r.case_id, r.family, r.mra) for r in numeric.rows]
              if isinstance(numeric, NumericScores) else [])
    missing = [i for i, _, _ in (*choice, *number) if i not in flags]
    if missing:
        raise ValueError(f"{data.root}/audit/bias.jsonl has no line for the cases "
                         f"{missing[:5]} ({len(missing)} in all); regenerate the dataset")

    def group(measure: Literal["accuracy", "mra"], rows: Sequence[tuple[str, str, float]],
              bound: float | None) -> SolvabilityGroup:
        biases = [b for i, _, _ in rows if (b := flags[i].bias_score) is not None]
        unflagged = [s for i, _, s in rows if not flags[i].flagged]
        n_flagged = len(rows) - len(unflagged)
        return SolvabilityGroup(
            measure=measure, n=len(rows), flagged=n_flagged, n_unflagged=len(unflagged),
            flagged_share=n_flagged / len(biases) if biases else None,
            mean_bias_score=_mean(biases), blind_upper_bound=bound,
            score_all=_mean([s for _, _, s in rows]), score_unflagged=_mean(unflagged))

    def pooled_bound(rows: Sequence[tuple[str, str, float]]) -> float | None:
        # The forest's accuracy over a kind, weighted by each family's scored cases.
        parts = [(f.blind_upper_bound, f.n_scored) for name in sorted({r[1] for r in rows})
                 if (f := summary.families.get(name)) is not None
                 and f.blind_upper_bound is not None]
        weight = sum(k for _, k in parts)
        return math.fsum(b * k for b, k in parts) / weight if weight else None

    by_family: dict[str, SolvabilityGroup] = {}
    kinds: tuple[tuple[Literal["accuracy", "mra"], list[tuple[str, str, float]]], ...] = (
        ("accuracy", choice), ("mra", number))
    for measure, rows in kinds:
        for family in sorted({f for _, f, _ in rows}):
            info = summary.families.get(family)
            by_family[family] = group(measure, [r for r in rows if r[1] == family],
                                      info.blind_upper_bound if info else None)
    return SolvabilityScores(
        threshold=summary.config.threshold,
        choice=group("accuracy", choice, pooled_bound(choice)) if choice else None,
        number=group("mra", number, pooled_bound(number)) if number else None,
        by_family=dict(sorted(by_family.items())))


def _score(inputs: ScoringInputs) -> SolvabilityScores | NotMeasured:
    return score_blind(inputs.data, inputs.run, inputs.recording)


def _rows(s: SolvabilityScores) -> list[tuple[str, SolvabilityGroup]]:
    kinds = [(name, g) for name, g in ((ALL_CHOICE, s.choice), (ALL_NUMERIC, s.number))
             if g is not None]
    return [*kinds, *s.by_family.items()]


def _metadata(s: SolvabilityScores) -> dict[str, Any]:
    num = markdown_number
    table = "\n".join([
        "| cases | n | flagged | mean bias score | blind upper bound | score, all | "
        "score, unflagged |", "|---|---|---|---|---|---|---|",
        *(f"| {name} | {g.n} | {g.flagged} | {num(g.mean_bias_score)} | "
          f"{num(g.blind_upper_bound)} | {num(g.score_all)} | {num(g.score_unflagged)} |"
          for name, g in _rows(s))])
    choice, number = s.choice, s.number
    return {"threshold": s.threshold,
            "accuracy_all": choice.score_all if choice else None,
            "accuracy_unflagged": choice.score_unflagged if choice else None,
            "mra_all": number.score_all if number else None,
            "mra_unflagged": number.score_unflagged if number else None,
            "by_family": Markdown(table)}


def _pool(cells: Sequence[CellScores]) -> dict[str, Any]:
    """All and unflagged scores weighted by cases over the row's cells; null when none was
    measured (or, for the unflagged score, when every case is flagged)."""
    results = [s for _, s in BLIND.results(cells)]

    def pooled(kind: str) -> tuple[float, float, int | None, int | None]:
        groups = [g for s in results if (g := getattr(s, kind)) is not None]
        n = sum(g.n for g in groups)
        if not n:
            return math.nan, math.nan, None, None
        unflagged = [g for g in groups if g.score_unflagged is not None]
        k = sum(g.n_unflagged for g in unflagged)
        return (math.fsum((g.score_all or 0.0) * g.n for g in groups) / n,
                math.fsum((g.score_unflagged or 0.0) * g.n_unflagged for g in unflagged) / k
                if k else math.nan,
                sum(g.flagged for g in groups), sum(g.n_unflagged for g in groups))

    acc_all, acc_unflagged, flagged, unflagged = pooled("choice")
    mra_all, mra_unflagged, flagged_numbers, unflagged_numbers = pooled("number")
    counts = [c for c in (flagged, flagged_numbers) if c is not None]
    rest = [c for c in (unflagged, unflagged_numbers) if c is not None]
    return {"tst_accuracy_all": acc_all, "tst_accuracy_unflagged": acc_unflagged,
            "tst_mra_all": mra_all, "tst_mra_unflagged": mra_unflagged,
            "tst_n_flagged": sum(counts) if counts else None,
            "tst_n_unflagged": sum(rest) if rest else None}


LEAD = ("Is the image needed? A random forest that sees no pixel (the question's template and "
        "words, the object names, the numbers, the choices and their positions, the frame "
        "count, the family) is trained on the other folds of the dataset (k = 5, grouped by "
        "frame) and asked each held-out case: the probability it gives the gold choice, or "
        "the MRA of its number, is the case's bias score (VSI-Bench-Debiased's TsT). A case "
        "scoring at least the threshold is flagged. The blind upper bound is the forest's own "
        "accuracy; a model's score on the unflagged cases is the one the wording does not "
        "give away.")


def _table(cells: Sequence[CellScores]) -> ReportTable:
    rows = tuple(
        (*who(cell), Text(name, "b" if name in (ALL_CHOICE, ALL_NUMERIC) else None), Int(g.n),
         Int(g.flagged), Pct(g.flagged_share), Num(g.mean_bias_score, 2),
         Pct(g.blind_upper_bound), Pct(g.score_all),
         Pct(g.score_unflagged, bold=name in (ALL_CHOICE, ALL_NUMERIC)))
        for cell, s in BLIND.results(ordered(cells)) for name, g in _rows(s))
    return ReportTable(
        anchor="blind-solvability", title="Blind solvability (TsT)", lead=LEAD, rows=rows,
        empty=f"Not measured: {NO_AUDIT}.",
        headers=(("Model", False), ("Recording", False), ("Cases", False), ("n", True),
                 ("Flagged", True), ("Flagged share", True), ("Mean bias score", True),
                 ("Blind upper bound", True), ("Score, all", True),
                 ("Score, unflagged", True)))


METHODS = (
    ("tst", "blind solvability (audit/bias.jsonl of the dataset, eval_assets.vqa.bias): a case "
            "is flagged when a pixel-free random forest's out-of-fold probability of its gold "
            "choice (or MRA of its number) is >= the threshold (default 0.8); "
            "tst_accuracy_all / tst_accuracy_unflagged = correct / n over all / the unflagged "
            "choice cases (dimOS's and the spatial choice cases; a parse failure or failed call "
            "is wrong); tst_mra_all / tst_mra_unflagged = mean MRA over all / the unflagged "
            "numeric cases; tst_n_flagged / tst_n_unflagged count the cases; pooled by cases; "
            "null when not measured (a dataset without the audit) or no case is unflagged"),
)

BLIND: MetricSpec[SolvabilityScores] = MetricSpec(
    order=130,
    name=NAME, description=__doc__ or "", file="blind.json", version="2",
    result_model=SolvabilityScores, score=_score, metadata=_metadata,
    label="blind solvability", needs=frozenset({"labels"}),
    columns=(Column("tst_accuracy_all"), Column("tst_accuracy_unflagged"),
             Column("tst_mra_all"), Column("tst_mra_unflagged"),
             Column("tst_n_flagged", integer=True), Column("tst_n_unflagged", integer=True)),
    pool=_pool, methods=METHODS, section=Section("blind-solvability", "Blind", _table),
)
