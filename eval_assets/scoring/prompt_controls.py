"""The prompt controls (:mod:`eval_assets.prompt_controls`): accuracy per template with the
models' rank stability between templates, stability under sampling, and parse failures with and
without a JSON schema (``../shared/specs/validity.md``).

Measured only when the run asked them (``templates.jsonl``, ``repeats.jsonl``,
``structured.jsonl`` in its folder: :mod:`eval_assets.model_runs.prompt_controls`); otherwise the
result is a not-measured record. Scored against dimOS's labels in force (overrides applied). The
leaderboard pools each per case over a row's cells; the report shows them per model and family,
and the Kendall τ between the template leaderboards.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from eval_assets.jsonio import read_jsonl
from eval_assets.metrics.prompt_controls import (
    RepeatRow,
    RepeatStats,
    StructuredRow,
    StructuredStats,
    TemplateRow,
    TemplateStats,
    repeat_stats,
    structured_stats,
    tau_pairs,
    template_stats,
)
from eval_assets.model_runs.prompt_controls import PROMPT_FILES
from eval_assets.prompt_controls import TEMPLATE_NAMES, PromptControl
from eval_assets.schemas.predictions import AnswerRecord, PromptVariantRecord
from eval_assets.schemas.results import CellScores, NotMeasured
from eval_assets.scoring.spec import (
    Cell,
    Column,
    Int,
    MetricSpec,
    Note,
    Num,
    Pct,
    ReportTable,
    ScoringInputs,
    Section,
    Text,
)

ALL = "all families"


def load_prompt_records(run_dir: Path, control: PromptControl) -> list[PromptVariantRecord] | None:
    """The standing calls of ``control`` in a run folder; None when none were asked."""
    path = Path(run_dir) / PROMPT_FILES[control][0]
    return list(read_jsonl(path, PromptVariantRecord)) if path.is_file() else None


def _right(record: AnswerRecord | PromptVariantRecord | None, gold: str) -> bool:
    return record is not None and record.status == "success" and record.choice == gold


def _nan(value: float | None) -> float:
    return math.nan if value is None else value


def _by_model(spec: MetricSpec[Any], cells: Sequence[CellScores]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for cell, report in spec.results(sorted(cells, key=lambda c: (c.model, c.recording))):
        out.setdefault(cell.model, []).extend(report.rows)
    return out


def _families(rows: Sequence[Any]) -> list[tuple[str, list[Any]]]:
    return [(ALL, list(rows)), *((f, [r for r in rows if r.family == f])
                                 for f in sorted({r.family for r in rows}))]


# --- templates ------------------------------------------------------------------------------

class TemplateReport(BaseModel):
    """Accuracy per template, overall and per family, with every case's rows."""

    overall: TemplateStats
    by_family: dict[str, TemplateStats]
    rows: list[TemplateRow]


def score_templates(inputs: ScoringInputs) -> TemplateReport | NotMeasured:
    """The templates of a cell: each asked case's record answer and its two other templates."""
    records = load_prompt_records(inputs.run_dir, "templates")
    if records is None:
        return NotMeasured(reason="no other templates asked")
    labels = {label.id: label for label in inputs.data.labels}
    by_case: dict[str, dict[str, AnswerRecord | PromptVariantRecord | None]] = {}
    for r in records:
        by_case.setdefault(r.case_id, {})[r.template] = r
    rows: list[TemplateRow] = []
    for case_id, asked in by_case.items():
        label = labels.get(case_id)
        if label is None:
            continue  # a case of another dataset version: not scored
        asked["record"] = inputs.run.answers.get(case_id)
        rows += [TemplateRow(case_id=case_id, family=label.family, recording=inputs.recording,
                             template=t, correct=None if asked.get(t) is None
                             else _right(asked[t], label.answer)) for t in TEMPLATE_NAMES]
    if not rows:
        return NotMeasured(reason="no labelled case was asked in the other templates (none is "
                                  "in dimOS's wording, or the dataset changed since the run)")
    families = sorted({r.family for r in rows})
    return TemplateReport(overall=template_stats(rows), rows=rows, by_family={
        f: template_stats(r for r in rows if r.family == f) for f in families})


def _templates_pool(cells: Sequence[CellScores]) -> dict[str, Any]:
    rows = [row for _, report in TEMPLATES.results(cells) for row in report.rows]
    if not rows:
        return {}
    s = template_stats(rows)
    return {"template_n": s.n, "template_min_accuracy": _nan(s.min_accuracy),
            "template_max_accuracy": _nan(s.max_accuracy),
            **{f"template_{t}_accuracy": _nan(s.accuracy[t]) for t in TEMPLATE_NAMES}}


def _tau_notes(by_model: dict[str, list[TemplateRow]]) -> tuple[Note, ...]:
    accuracies = {m: template_stats(rows).accuracy for m, rows in by_model.items()}
    parts: list[Cell] = [Text("Rank stability (Kendall \u03c4-b between the template "
                              "leaderboards, all families): ", "b")]
    for i, (a, b, tau, n) in enumerate(tau_pairs(accuracies)):
        parts += [Text("; " if i else ""), Text(f"{a} vs {b} "), Num(tau),
                  Text(f" ({n} models)")]
    return (Note("summary", tuple(parts)),)


def _template_row(model: str, family: str, s: TemplateStats) -> tuple[Cell, ...]:
    spread = (None if s.min_accuracy is None or s.max_accuracy is None
              else s.max_accuracy - s.min_accuracy)
    return (Text(model, "model"), Text(family, "b" if family == ALL else None), Int(s.n),
            *(Pct(s.accuracy[t]) for t in TEMPLATE_NAMES), Pct(s.min_accuracy),
            Pct(s.max_accuracy), Pct(spread))


def _templates_table(cells: Sequence[CellScores]) -> ReportTable:
    by_model = _by_model(TEMPLATES, cells)
    rows = tuple(_template_row(model, family, template_stats(group))
                 for model, model_rows in by_model.items()
                 for family, group in _families(model_rows))
    return ReportTable(
        anchor="prompt-templates", title="Sensitivity to the prompt (templates)",
        lead=TEMPLATES_LEAD, rows=rows, notes=_tau_notes(by_model) if by_model else (),
        empty="Not measured: no run asked the other templates (the vlm resource's templates "
              "switch is off by default, or the run had a budget or went through the Batch "
              "API).",
        headers=(("Model", False), ("Family", False), ("Cases", True),
                 *((t.capitalize(), True) for t in TEMPLATE_NAMES), ("Min", True),
                 ("Max", True), ("Spread", True)))


TEMPLATES_LEAD = (
    "A subset of cases (up to 100 per family and recording, drawn by case id) is asked in three "
    "templates that ask the same thing: <b>record</b> (dimOS's wording: the case's own answer), "
    "<b>paraphrase</b> (another sentence, same choices) and <b>lettered</b> (dimOS's question "
    "with the choices as A) B) C) lines, answered by letter). Accuracy per template over the "
    "cases answered in all three; <b>Min</b>/<b>Max</b>: the lowest and highest of the three "
    "(FormatSpread). Below: the Kendall \u03c4 between the models' leaderboards of each template "
    "pair (1: the same ranking).")
TEMPLATES_METHODS = (
    ("prompt_templates",
     "each selected dimOS case (eval_assets.prompt_controls.selected: up to prompt_control_cases "
     "per family and recording) is asked in the paraphrase and lettered templates "
     "(eval_assets.prompt_controls.TEMPLATES); the record template is its answer in "
     "answers.jsonl. template_<t>_accuracy = right / template_n over the cases answered in all "
     "three (a failed call or unparsed reply is wrong); template_min_accuracy / "
     "template_max_accuracy: the lowest and highest of the three. Pooled per case over a row's "
     "cells; null in 'common' rows. The report adds the Kendall tau-b between the models' "
     "per-template leaderboards for each template pair"),
)
TEMPLATES: MetricSpec[TemplateReport] = MetricSpec(
    name="prompt_templates", description=__doc__ or "", file="prompt_templates.json",
    version="1", result_model=TemplateReport, score=score_templates,
    metadata=lambda r: {"template_n": r.overall.n,
                        "template_min_accuracy": r.overall.min_accuracy,
                        "template_max_accuracy": r.overall.max_accuracy},
    methods=TEMPLATES_METHODS, pool=_templates_pool, label="Prompt templates",
    columns=tuple(Column(c, integer=c == "template_n") for c in (
        "template_n", "template_min_accuracy", "template_max_accuracy",
        *(f"template_{t}_accuracy" for t in TEMPLATE_NAMES))),
    section=Section("prompt-templates", "Templates", _templates_table),
)


# --- repeats --------------------------------------------------------------------------------

class RepeatReport(BaseModel):
    """Stability under sampling, overall and per family, with every case's rows."""

    k: int
    temperature: float | None
    overall: RepeatStats
    by_family: dict[str, RepeatStats]
    rows: list[RepeatRow]


def score_repeats(inputs: ScoringInputs) -> RepeatReport | NotMeasured:
    """The sampling repeats of a cell: each asked case's k answers against its gold."""
    records = load_prompt_records(inputs.run_dir, "repeats")
    if not records:
        return NotMeasured(reason="no sampling repeats asked")
    k = max(r.repeat for r in records) + 1
    labels = {label.id: label for label in inputs.data.labels}
    choices: dict[str, list[str | None]] = {}
    for r in sorted(records, key=lambda r: r.repeat):
        choices.setdefault(r.case_id, []).append(r.choice if r.status == "success" else None)
    rows = [RepeatRow(case_id=cid, family=labels[cid].family, recording=inputs.recording,
                      answer=labels[cid].answer, choices=cs)
            for cid, cs in choices.items() if cid in labels]
    if not rows:
        return NotMeasured(reason="no repeated case is labelled")
    families = sorted({r.family for r in rows})
    return RepeatReport(k=k, temperature=records[0].temperature, overall=repeat_stats(rows, k),
                        rows=rows, by_family={f: repeat_stats([r for r in rows if r.family == f],
                                                              k) for f in families})


def _repeats_pool(cells: Sequence[CellScores]) -> dict[str, Any]:
    results = REPEATS.results(cells)
    if not results or len({r.k for _, r in results}) != 1:
        return {}  # none, or cells repeated a different number of times: not one figure
    s = repeat_stats([row for _, r in results for row in r.rows], results[0][1].k)
    return {"repeat_k": s.k, "repeat_n": s.n, "repeat_consistency": _nan(s.consistency),
            "repeat_expected_accuracy": _nan(s.expected_accuracy),
            "repeat_majority_accuracy": _nan(s.majority_accuracy)}


def _repeats_table(cells: Sequence[CellScores]) -> ReportTable:
    by_model: dict[str, list[tuple[int, list[RepeatRow]]]] = {}
    for cell, report in REPEATS.results(sorted(cells, key=lambda c: (c.model, c.recording))):
        by_model.setdefault(cell.model, []).append((report.k, report.rows))
    rows = []
    for model, parts in by_model.items():
        k = parts[0][0]
        model_rows = [row for pk, rs in parts if pk == k for row in rs]
        for family, group in _families(model_rows):
            s = repeat_stats(group, k)
            rows.append((Text(model, "model"), Text(family, "b" if family == ALL else None),
                         Int(s.n), Int(s.k), Pct(s.consistency), Pct(s.expected_accuracy),
                         Pct(s.majority_accuracy)))
    return ReportTable(
        anchor="sampling-stability", title="Stability under sampling (repeats)",
        lead=REPEATS_LEAD, rows=tuple(rows),
        empty="Not measured: no run asked repeats (the vlm resource's repeats is 1 by default).",
        headers=(("Model", False), ("Family", False), ("Cases", True), ("k", True),
                 ("Consistency", True), ("Expected accuracy", True),
                 ("Majority-vote accuracy", True)))


REPEATS_LEAD = (
    "A robot acts on one sample. A subset of cases (up to 100 per family and recording) is "
    "asked k times at a temperature above 0, each with its repeat index as the seed. "
    "<b>Consistency</b>: the share whose k answers name the same choice; <b>Expected accuracy"
    "</b>: the mean share of repeats right; <b>Majority-vote accuracy</b>: the share whose most "
    "frequent answer (a strict plurality) is right (lmms-eval's stability metrics).")
REPEATS_METHODS = (
    ("sampling_stability",
     "each selected dimOS case is asked repeat_k times at the vlm resource's "
     "repeat_temperature (seed = repeat index). repeat_consistency = cases whose k answers "
     "name the same choice / repeat_n; repeat_expected_accuracy = mean over cases of the share "
     "of repeats right; repeat_majority_accuracy = cases whose strict-plurality answer is the "
     "gold / repeat_n. Pooled per case over a row's cells (null when its cells used different "
     "k, and in 'common' rows)"),
)
REPEATS: MetricSpec[RepeatReport] = MetricSpec(
    name="sampling_stability", description=__doc__ or "", file="sampling_stability.json",
    version="1", result_model=RepeatReport, score=score_repeats,
    metadata=lambda r: {"repeat_k": r.k, "repeat_n": r.overall.n,
                        "repeat_consistency": r.overall.consistency,
                        "repeat_expected_accuracy": r.overall.expected_accuracy,
                        "repeat_majority_accuracy": r.overall.majority_accuracy},
    methods=REPEATS_METHODS, pool=_repeats_pool, label="Sampling stability",
    columns=tuple(Column(c, integer=c in {"repeat_k", "repeat_n"}) for c in (
        "repeat_k", "repeat_n", "repeat_consistency", "repeat_expected_accuracy",
        "repeat_majority_accuracy")),
    section=Section("sampling-stability", "Repeats", _repeats_table),
)


# --- structured -----------------------------------------------------------------------------

class StructuredReport(BaseModel):
    """Parse failures with and without the schema, overall and per family, with the rows."""

    overall: StructuredStats
    by_family: dict[str, StructuredStats]
    rows: list[StructuredRow]


def _answered(record: AnswerRecord | PromptVariantRecord | None) -> bool:
    return record is not None and record.status == "success" and record.outcome in (
        None, "answered")


def score_structured(inputs: ScoringInputs) -> StructuredReport | NotMeasured:
    """The structured answers of a cell beside the same cases' free-text answers."""
    records = load_prompt_records(inputs.run_dir, "structured")
    if records is None:
        return NotMeasured(reason="no structured answers asked (switched off, or the endpoint's "
                                  "preflight found no enforced structured output)")
    labels = {label.id: label for label in inputs.data.labels}
    rows = []
    for r in records:
        label = labels.get(r.case_id)
        free = inputs.run.answers.get(r.case_id)
        if label is None or free is None:
            continue
        rows.append(StructuredRow(
            case_id=r.case_id, family=label.family, recording=inputs.recording,
            free_answered=_answered(free), free_parsed=_answered(free) and free.choice is not None,
            free_correct=_right(free, label.answer), schema_answered=_answered(r),
            schema_parsed=_answered(r) and r.choice is not None,
            schema_correct=_right(r, label.answer)))
    if not rows:
        return NotMeasured(reason="no structured case is labelled")
    families = sorted({r.family for r in rows})
    return StructuredReport(overall=structured_stats(rows), rows=rows, by_family={
        f: structured_stats(r for r in rows if r.family == f) for f in families})


def _structured_pool(cells: Sequence[CellScores]) -> dict[str, Any]:
    rows = [row for _, report in STRUCTURED.results(cells) for row in report.rows]
    if not rows:
        return {}
    s = structured_stats(rows)
    return {"structured_n": s.n, "structured_free_parse_failure": _nan(s.free_parse_failure),
            "structured_schema_parse_failure": _nan(s.schema_parse_failure),
            "structured_free_accuracy": _nan(s.free_accuracy),
            "structured_schema_accuracy": _nan(s.schema_accuracy)}


def _structured_table(cells: Sequence[CellScores]) -> ReportTable:
    rows = tuple(
        (Text(model, "model"), Text(family, "b" if family == ALL else None), Int(s.n),
         Pct(s.free_parse_failure), Pct(s.schema_parse_failure), Pct(s.free_accuracy),
         Pct(s.schema_accuracy))
        for model, model_rows in _by_model(STRUCTURED, cells).items()
        for family, group in _families(model_rows) for s in (structured_stats(group),))
    return ReportTable(
        anchor="structured-answers", title="Answers a parser cannot misread (JSON schema)",
        lead=STRUCTURED_LEAD, rows=rows,
        empty="Not measured: no run asked with a JSON schema (the vlm resource's structured "
              "switch is off by default, or no endpoint's preflight found structured output "
              "enforced).",
        headers=(("Model", False), ("Family", False), ("Cases", True),
                 ("Parse failures, free text", True), ("Parse failures, schema", True),
                 ("Accuracy, free text", True), ("Accuracy, schema", True)))


STRUCTURED_LEAD = (
    "Where the endpoint's preflight found structured output enforced, a subset of cases (up to "
    "100 per family and recording) is also asked with a JSON schema whose one field is an enum "
    "of the choices. <b>Parse failures</b>: answered replies that name no choice, free text "
    "(the case's own answer) and with the schema; the raw reply and the answer read from it "
    "are both kept (structured.jsonl).")
STRUCTURED_METHODS = (
    ("structured_answers",
     "each selected dimOS case is asked with response_format = json_schema {answer: enum of "
     "its choices} where the preflight found structured_output 'enforced'. "
     "structured_free_parse_failure / structured_schema_parse_failure = answered replies "
     "naming no choice / answered replies, free text (answers.jsonl) and with the schema; "
     "structured_free_accuracy / structured_schema_accuracy = right / structured_n. Pooled "
     "per case over a row's cells; null in 'common' rows"),
)
STRUCTURED: MetricSpec[StructuredReport] = MetricSpec(
    name="structured_answers", description=__doc__ or "", file="structured_answers.json",
    version="1", result_model=StructuredReport, score=score_structured,
    metadata=lambda r: {"structured_n": r.overall.n,
                        "structured_free_parse_failure": r.overall.free_parse_failure,
                        "structured_schema_parse_failure": r.overall.schema_parse_failure},
    methods=STRUCTURED_METHODS, pool=_structured_pool, label="Structured answers",
    columns=tuple(Column(c, integer=c == "structured_n") for c in (
        "structured_n", "structured_free_parse_failure", "structured_schema_parse_failure",
        "structured_free_accuracy", "structured_schema_accuracy")),
    section=Section("structured-answers", "Structured", _structured_table),
)
