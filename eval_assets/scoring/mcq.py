"""AVLM MCQ accuracy: the cases written as an AVLM inference folder and scored by AVLM's rules.

The model was prompted the dimOS way (choice text, no letters), so AVLM's strict letter regex
mostly reports parse failures; the lenient tier's exact-choice-text match is the comparable
number. Both are kept, strict as the AVLM-compatible headline. The leaderboard and the report
count the strict score only when every case was prompted with lettered choices.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from eval_assets.jsonio import write_jsonl
from eval_assets.layout import AVLM_PREDICTIONS
from eval_assets.metrics.mcq import score_mcq_dir
from eval_assets.schemas.results import CellScores
from eval_assets.scoring.inputs import ModelRun, PrivateDataset
from eval_assets.scoring.spec import (
    Column,
    Int,
    MetricSpec,
    Note,
    Pct,
    ReportTable,
    ScoringInputs,
    Section,
    Text,
    ordered,
    who,
)
from eval_assets.scoring.vqa import report_of

NAME = "mcq_avlm"
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
MCQ_NOT_MEASURED = ("AVLM MCQ not measured: cases are prompted for the choice text, not "
                    "lettered options, so the AVLM strict \u201c(X)\u201d rule would only measure "
                    "the prompt format. Choice accuracy is the VQA headline above.")


class McqScores(BaseModel):
    """AVLM's strict ``mcq_results.json`` as written, and the lenient tier's share correct."""

    model_config = ConfigDict(frozen=True)

    strict: dict[str, Any]
    lenient_pct_correct: float | None


def _lettered(choices: Sequence[str]) -> list[str]:
    return [f"({LETTERS[i]}) {choice}" for i, choice in enumerate(choices)]


def avlm_mcq_rows(data: PrivateDataset, run: ModelRun) -> list[dict[str, Any]]:
    """The dataset as AVLM ``predictions.jsonl`` MCQ rows (ground truth ``"(B) no"``)."""
    rows = []
    for index, label in enumerate(data.labels):
        case = data.cases[label.id]
        record = run.answers.get(label.id)
        ok = record is not None and record.status == "success"
        question = f"{case.question}\n" + "\n".join(_lettered(case.choices))
        rows.append({
            "index": index,
            "id": label.id,
            "class": label.family,
            "evaluation_type": "mcq",
            "inference_status": "success" if ok else "failed",
            "ground_truth": _lettered(case.choices)[case.choices.index(label.answer)],
            "prediction": record.raw_response if ok and record is not None else None,
            "choices": list(case.choices),
            "conversations": [{"from": "human", "value": f"<image>\n{question}"}],
        })
    return rows


def _score(inputs: ScoringInputs) -> McqScores:
    write_jsonl(inputs.out_dir / AVLM_PREDICTIONS, avlm_mcq_rows(inputs.data, inputs.run),
                sort_keys=True)
    report = score_mcq_dir(inputs.out_dir)
    inputs.notes["mcq_results"] = report.strict_path
    return McqScores(strict=report.strict, lenient_pct_correct=report.lenient["pct_correct"])


def _metadata(result: McqScores) -> dict[str, Any]:
    return {"strict_pct_correct": result.strict["pct_correct"],
            "strict_parse_failed": result.strict["num_parse_failed"],
            "lenient_pct_correct": result.lenient_pct_correct}


def _total(scores: McqScores | None) -> int:
    return int(scores.strict.get("total_mcq_questions", 0) or 0) if scores else 0


def mcq_measured(cell: CellScores) -> bool:
    """Whether the AVLM MCQ score of ``cell`` measures the model: MCQ rows were scored and
    every case was prompted with lettered choices (else the strict "(X)" rule only measures the
    prompt format)."""
    rows = report_of(cell).rows
    return _total(MCQ.result(cell)) > 0 and bool(rows) and all(r.lettered for r in rows)


def _pool(cells: Sequence[CellScores]) -> dict[str, Any]:
    lettered = sum(1 for c in cells for row in report_of(c).rows if row.lettered)
    counted = [s for c, s in MCQ.results(cells) if mcq_measured(c)]
    total = sum(int(s.strict["total_mcq_questions"]) for s in counted)
    if not total:
        return {"mcq_lettered_cases": lettered, "mcq_pct_correct": math.nan,
                "mcq_lenient_pct_correct": math.nan, "mcq_total": 0}
    correct = sum(int(s.strict.get("num_correct", 0)) for s in counted)
    lenient = math.nan
    if all(s.lenient_pct_correct is not None for s in counted):
        # Lenient shares strict's denominator (metrics/mcq.py), so pct * total is a count.
        lenient_correct = sum(
            round(float(s.lenient_pct_correct or 0) * int(s.strict["total_mcq_questions"]))
            for s in counted)
        lenient = lenient_correct / total
    return {"mcq_lettered_cases": lettered, "mcq_pct_correct": correct / total,
            "mcq_lenient_pct_correct": lenient, "mcq_total": total}


LEAD = ("AVLM MCQ scoring counts an answer only when it opens with a lettered option "
        "\u201c(X)\u201d, so it measures a model only on cases prompted with lettered "
        "\u201c(A) \u2026\u201d choices. The strict number is the headline, comparable with "
        "AVLM; the lenient number also accepts a bare letter, an answer line or the exact "
        "choice text.")


def _not_measured_note(cells: Sequence[CellScores]) -> Note:
    lettered = sum(1 for c in cells for row in report_of(c).rows if row.lettered)
    total = sum(len(report_of(c).rows) for c in cells)
    extra = (f" ({lettered:,} of {total:,} cases were lettered: a mixed prompt format is "
             "not scored either.)" if lettered else "")
    affected = ", ".join(sorted({f"{c.model} on {c.recording}" for c in cells}))
    return Note("notice", (Text(MCQ_NOT_MEASURED, "b"), Text(extra), Text(" "),
                           Text(f"Affects: {affected}.", "meta")), before=True)


def _table(cells: Sequence[CellScores]) -> ReportTable:
    cells = ordered(cells)
    unmeasured = [c for c in cells if not mcq_measured(c)]
    notes = (_not_measured_note(unmeasured),) if unmeasured else ()
    rows = []
    for cell, s in MCQ.results(cells):
        if not mcq_measured(cell):
            continue
        m = s.strict
        rows.append((*who(cell), Int(m.get("total_mcq_questions")),
                     Pct(m.get("pct_correct"), bold=True), Pct(s.lenient_pct_correct),
                     Int(m.get("num_correct")), Int(m.get("num_incorrect")),
                     Int(m.get("num_parse_failed")), Int(m.get("num_infer_failed"))))
    return ReportTable(
        anchor="mcq", title="MCQ accuracy (AVLM)", lead=LEAD, notes=notes, rows=tuple(rows),
        headers=(("Model", False), ("Recording", False), ("Questions", True),
                 ("Strict correct", True), ("Lenient", True), ("Correct", True),
                 ("Incorrect", True), ("Parse failed", True), ("Inference failed", True)))


METHODS = (
    ("mcq",
     "AVLM MCQ columns are null unless every case was prompted with lettered (A) ... "
     "choices (mcq_lettered_cases); the AVLM strict score of a choice-text prompt "
     "measures the prompt format, not the model"),
)

MCQ: MetricSpec[McqScores] = MetricSpec(
    order=50,
    name=NAME, description=__doc__ or "", file="mcq.json", version="2", result_model=McqScores,
    score=_score, metadata=_metadata, label="AVLM MCQ", needs=frozenset({"labels"}),
    columns=(Column("mcq_lettered_cases", integer=True), Column("mcq_pct_correct"),
             Column("mcq_lenient_pct_correct"), Column("mcq_total", integer=True)),
    pool=_pool, methods=METHODS, section=Section("mcq", "MCQ", _table),
)
