"""The prompt controls (:mod:`eval_assets.prompt_controls`): the score per template with the
models' rank stability between templates, stability under sampling, and parse failures with
and without a JSON schema (``../shared/specs/validity.md``).

Measured only when the run asked them (``templates.jsonl``, ``repeats.jsonl``,
``structured.jsonl`` in its folder: :mod:`eval_assets.model_runs.prompt_controls`); otherwise the
result is a not-measured record. Scored against the labels in force (dimOS's with overrides
applied, and the spatial labels), each case by its family's own rule (:func:`judge`): a choice
right or wrong, a number by the numeric metric's MRA (the zero rule where declared) or mean
angular accuracy. The leaderboard pools each per case over a row's cells; the report shows them
per model and family, and the Kendall τ between the template leaderboards (all families, and
the spatial ones alone).

The three controls share one shape (:func:`_control`): a result with ``overall``, ``by_family``
and ``rows``; the leaderboard columns of a stats object; the asset metadata are those columns of
``overall``, the pool those columns of the stats of every cell's rows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, Field

from eval_assets.jsonio import read_jsonl
from eval_assets.metrics.numeric import ParsedNumber, read_numeric_reply
from eval_assets.metrics.numeric_rules import PARSER_UNITS, case_score
from eval_assets.metrics.prompt_controls import (
    RepeatRow,
    RepeatStats,
    StructuredRow,
    StructuredStats,
    TemplateRow,
    TemplateStats,
    majority_choice,
    median,
    repeat_stats,
    spread_noise,
    structured_stats,
    tau_interval,
    tau_pairs,
    template_stats,
)
from eval_assets.model_runs.prompt_controls import PROMPT_FILES
from eval_assets.prompt_controls import TEMPLATE_NAMES, PromptControl, read_structured_number
from eval_assets.schemas.predictions import AnswerRecord, PromptVariantRecord
from eval_assets.schemas.results import CellScores, NotMeasured
from eval_assets.scoring.spec import (
    Cell,
    Column,
    Int,
    Join,
    MetricSpec,
    Note,
    Num,
    Pct,
    ReportTable,
    ScoringInputs,
    Section,
    Text,
)
from eval_assets.vqa.declarations import family as declared_family

ALL = "all families"
SPATIAL = "spatial families"


def load_prompt_records(run_dir: Path, control: PromptControl) -> list[PromptVariantRecord] | None:
    """The standing calls of ``control`` in a run folder; None when none were asked."""
    path = Path(run_dir) / PROMPT_FILES[control][0]
    return list(read_jsonl(path, PromptVariantRecord)) if path.is_file() else None


def _nan(value: float | None) -> float:
    return math.nan if value is None else value


# --- one case's answer by its family's rule -------------------------------------------------

@dataclass(frozen=True)
class Gold:
    """What a case's answer is judged against: its family, gold answer, and for a number its
    unit (the parser's name: ``m``, ``deg``, ``m²``; None: a count), its declared unit (the
    structured schema's) and whether it is an angle asked as a size."""

    family: str
    answer: str
    kind: Literal["choice", "number"]
    unit: str | None = None
    declared_unit: str | None = None
    magnitude: bool = False


def golds(inputs: ScoringInputs) -> dict[str, Gold]:
    """Every labelled case of a cell's dataset by id: dimOS's (choices) and the spatial ones."""
    out = {label.id: Gold(label.family, label.answer, "choice") for label in inputs.data.labels}
    for label in inputs.data.spatial_labels:
        spec = declared_family(label.family)
        out[label.id] = Gold(label.family, label.answer, label.answer_type,
                             unit=PARSER_UNITS[label.unit], declared_unit=label.unit,
                             magnitude=spec is not None and spec.magnitude)
    return out


def _answered(record: AnswerRecord | PromptVariantRecord | None) -> bool:
    return record is not None and record.status == "success" and record.outcome in (
        None, "answered")


def judge(gold: Gold, record: AnswerRecord | PromptVariantRecord | None, *,
          structured: bool = False) -> tuple[str | None, float]:
    """(the answer a reply gives: its choice, or its number as text; None when it gives none,
    or the call failed) and its score in [0, 1] by the family's rule. A ``structured`` reply to
    a number family is read as the schema's JSON (:func:`read_structured_number`); a free one
    as the numeric metric reads it."""
    if record is None or record.status != "success":
        return None, 0.0
    if gold.kind == "choice":
        return record.choice, float(record.choice is not None and record.choice == gold.answer)
    try:
        target = float(gold.answer)
    except ValueError:
        return None, 0.0
    value: float | None
    if structured:
        value = read_structured_number(record.raw_response, gold.declared_unit)
        if value is not None and gold.magnitude:
            value = abs(value)  # a size: the sign is not part of the answer
    else:
        read = (read_numeric_reply(record.raw_response, gold.unit, magnitude=gold.magnitude)
                if record.raw_response else None)
        value = read.value if isinstance(read, ParsedNumber) else None
    if value is None or not math.isfinite(target):
        return None, 0.0
    return f"{value:g}", case_score(value, target, gold.family, gold.unit)


def _families(rows: Sequence[Any], spatial: set[str]) -> list[tuple[str, list[Any]]]:
    groups: list[tuple[str, list[Any]]] = [(ALL, list(rows))]
    spatial_rows = [r for r in rows if r.family in spatial]
    if spatial_rows and len(spatial_rows) < len(rows):
        groups.append((SPATIAL, spatial_rows))
    return [*groups, *((f, [r for r in rows if r.family == f])
                       for f in sorted({r.family for r in rows}))]


def _spatial_families(rows: Sequence[Any]) -> set[str]:
    out = set()
    for r in rows:
        spec = declared_family(r.family)
        if spec is not None and spec.file == "spatial":
            out.add(r.family)
    return out


def _rule_names(rows: Sequence[Any]) -> dict[str, str]:
    out = {}
    for r in rows:
        spec = declared_family(r.family)
        if spec is None or spec.answer_type == "choice":
            out[r.family] = "accuracy"
        else:
            out[r.family] = "angular" if spec.unit == "deg" else "MRA"
    return out


# --- the shape the three controls share ------------------------------------------------------

S = TypeVar("S", bound=BaseModel)
R = TypeVar("R", bound=BaseModel)


@dataclass(frozen=True)
class _Shape(Generic[R, S]):
    """A control's figures: ``columns`` the leaderboard columns of a stats object (in order),
    ``pooled`` the stats of every cell's results (None: not one figure), ``overall`` a
    result's own stats."""

    columns: Callable[[S], dict[str, float | int | None]]
    pooled: Callable[[list[R]], S | None]
    overall: Callable[[R], S]
    integer: frozenset[str]


def _control(name: str, file: str, result_model: type[R], score: Callable[[ScoringInputs], R |
             NotMeasured], shape: _Shape[R, S], *, methods: tuple[tuple[str, str], ...],
             label: str, section: Section, names: Sequence[str], order: int) -> MetricSpec[R]:
    """The MetricSpec of one prompt control: its metadata are ``shape``'s columns of its
    overall stats, its pool the same columns of the pooled stats (a float column null as NaN,
    as the leaderboard writes it), its leaderboard columns ``names`` in order."""

    def pool(cells: Sequence[CellScores]) -> dict[str, Any]:
        pooled = shape.pooled([r for c in cells if (r := c.result(name, result_model))])
        if pooled is None:
            return {}
        return {k: v if k in shape.integer else _nan(None if v is None else float(v))
                for k, v in shape.columns(pooled).items()}

    return MetricSpec(
        order=order, name=name, description=__doc__ or "", file=file, version="3",
        result_model=result_model,
        score=score, metadata=lambda r: shape.columns(shape.overall(r)), methods=methods,
        pool=pool, label=label, section=section,
        columns=tuple(Column(c, integer=c in shape.integer) for c in names))


def _by_model(spec: MetricSpec[Any], cells: Sequence[CellScores]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for cell, report in spec.results(sorted(cells, key=lambda c: (c.model, c.recording))):
        out.setdefault(cell.model, []).extend(report.rows)
    return out


def _rule_cell(family: str, rows: Sequence[Any], rules: dict[str, str]) -> Text:
    found = sorted({rules[r.family] for r in rows})
    return Text(found[0] if len(found) == 1 else "mixed", "b" if family in (ALL, SPATIAL) else None)


def _family_cell(family: str) -> Text:
    return Text(family, "b" if family in (ALL, SPATIAL) else None)


# --- templates ------------------------------------------------------------------------------

class TemplateReport(BaseModel):
    """The score per template, overall and per family, with every case's rows."""

    overall: TemplateStats
    by_family: dict[str, TemplateStats]
    rows: list[TemplateRow]


def score_templates(inputs: ScoringInputs) -> TemplateReport | NotMeasured:
    """The templates of a cell: each asked case's record answer and its two other templates,
    scored by its family's rule."""
    records = load_prompt_records(inputs.run_dir, "templates")
    if records is None:
        return NotMeasured(reason="no other templates asked")
    gold = golds(inputs)
    by_case: dict[str, dict[str, AnswerRecord | PromptVariantRecord | None]] = {}
    for r in records:
        by_case.setdefault(r.case_id, {})[r.template] = r
    rows: list[TemplateRow] = []
    for case_id, asked in by_case.items():
        g = gold.get(case_id)
        if g is None:
            continue  # a case of another dataset version: not scored
        asked["record"] = inputs.run.answers.get(case_id)
        rows += [TemplateRow(case_id=case_id, family=g.family, recording=inputs.recording,
                             template=t, score=None if asked.get(t) is None
                             else judge(g, asked[t])[1]) for t in TEMPLATE_NAMES]
    if not rows:
        return NotMeasured(reason="no labelled case was asked in the other templates (none is "
                                  "in its family's declared wording, or the dataset changed "
                                  "since the run)")
    families = sorted({r.family for r in rows})
    return TemplateReport(overall=template_stats(rows), rows=rows, by_family={
        f: template_stats(r for r in rows if r.family == f) for f in families})


def _template_columns(s: TemplateStats) -> dict[str, float | int | None]:
    return {"template_n": s.n, "template_min_accuracy": s.min_accuracy,
            "template_max_accuracy": s.max_accuracy,
            **{f"template_{t}_accuracy": s.accuracy[t] for t in TEMPLATE_NAMES}}


def _tau_line(title: str, by_model: dict[str, list[TemplateRow]]) -> Note:
    accuracies = {m: template_stats(rows).accuracy for m, rows in by_model.items() if rows}
    parts: list[Cell] = [Text(f"Rank stability (Kendall \u03c4-b between the template "
                              f"leaderboards, {title}): ", "b")]
    for i, (a, b, tau, n) in enumerate(tau_pairs(accuracies)):
        parts += [Text("; " if i else ""), Text(f"{a} vs {b} "), Num(tau),
                  Text(f" ({n} model{'' if n == 1 else 's'})")]
        interval = tau_interval(by_model, a, b) if tau is not None else None
        if interval is not None:
            low, high = interval
            noise = low <= 0.0 <= high
            parts += [Text(" [95% CI "), Num(low), Text(" to "), Num(high), Text("]"),
                      Text(": indistinguishable from noise" if noise else "",
                           "flag" if noise else None)]
    return Note("summary", tuple(parts))


def _tau_notes(by_model: dict[str, list[TemplateRow]]) -> tuple[Note, ...]:
    notes = [_tau_line(ALL, by_model)]
    spatial = _spatial_families([r for rows in by_model.values() for r in rows])
    if spatial:
        notes.append(_tau_line(SPATIAL, {m: [r for r in rows if r.family in spatial]
                                         for m, rows in by_model.items()}))
    return tuple(notes)


def _template_row(model: str, family: str, group: list[TemplateRow],
                  rules: dict[str, str]) -> tuple[Cell, ...]:
    s = template_stats(group)
    noise = spread_noise(group)
    beyond = noise.beyond_noise
    return (Text(model, "model"), _family_cell(family), _rule_cell(family, group, rules),
            Int(s.n), *(Pct(s.accuracy[t]) for t in TEMPLATE_NAMES), Pct(s.min_accuracy),
            Pct(s.max_accuracy),
            Join((Pct(noise.spread), Text(" ["), Pct(noise.ci_low), Text("–"),
                  Pct(noise.ci_high), Text("]"))) if noise.spread is not None else Pct(None),
            Pct(noise.noise_bound),
            Text("n/a", "na") if beyond is None else
            Text("yes", "b") if beyond else Text("indistinguishable from noise", "flag"))


def _templates_table(cells: Sequence[CellScores]) -> ReportTable:
    by_model = _by_model(TEMPLATES, cells)
    every = [r for rows in by_model.values() for r in rows]
    rules, spatial = _rule_names(every), _spatial_families(every)
    rows = tuple(_template_row(model, family, group, rules)
                 for model, model_rows in by_model.items()
                 for family, group in _families(model_rows, spatial))
    return ReportTable(
        anchor="prompt-templates", title="Sensitivity to the prompt (templates)",
        lead=TEMPLATES_LEAD, rows=rows, notes=_tau_notes(by_model) if by_model else (),
        empty="Not measured: no run asked the other templates (off by default: set "
              "'templates: true' on a model's entry in the models file, or in the vlm "
              "resource; or the run had a budget or went through the Batch API).",
        headers=(("Model", False), ("Family", False), ("Scored by", False), ("Cases", True),
                 *((t.capitalize(), True) for t in TEMPLATE_NAMES), ("Min", True),
                 ("Max", True), ("Spread [95% CI]", True), ("Noise bound", True),
                 ("Spread beyond noise?", False)))


TEMPLATES_LEAD = (
    "A subset of cases (up to 100 per family and recording, drawn by case id), dimOS's and the "
    "spatial and motion ones, is asked in three templates that ask the same thing: <b>record"
    "</b> (the family's declared wording: the case's own answer), <b>paraphrase</b> (the "
    "family's declared paraphrase, same choices or unit) and <b>format</b> (the declared "
    "question in another answer format: the choices as A) B) C) lines answered by letter, or "
    "a number asked on an 'Answer: &lt;number&gt; &lt;unit&gt;' line). Each case is scored by "
    "its family's rule (<b>Scored by</b>: accuracy for a choice, MRA or mean angular accuracy "
    "for a number), over the cases answered in all three; <b>Min</b>/<b>Max</b>: the lowest "
    "and highest of the three (FormatSpread). Below: the Kendall \u03c4 between the models' "
    "leaderboards of each template pair (1: the same ranking), over all families and over the "
    "spatial families alone. Both carry their uncertainty: <b>Spread</b> a 95% bootstrap "
    "interval over the cases, and the <b>noise bound</b>, the spread that shuffling each "
    "case's three scores among the templates reaches 95% of the time (no template effect "
    "at all); a spread at or under it is indistinguishable from noise. <b>\u03c4</b> a 95% "
    "interval over the cases resampled (one draw for every model); one that holds 0 is "
    "indistinguishable from noise: with models at chance, \u03c4 = \u00b11 is what two coin "
    "flips give. Seeded, so the same answers give the same intervals.")
TEMPLATES_METHODS = (
    ("prompt_templates",
     "each selected case, dimOS's or spatial (eval_assets.prompt_controls.selected: up to "
     "prompt_control_cases per family and recording) is asked in the paraphrase and format "
     "templates (the family's FamilySpec.paraphrase; lettered choices, or an 'Answer:' line for "
     "a number); the record template is its answer in answers.jsonl. Each answer is scored by "
     "its family's rule (1/0 for a choice; the numeric metric's MRA, zero rule or mean angular "
     "accuracy for a number; an unparsed reply or failed call is 0). template_<t>_accuracy = "
     "mean score / template_n over the cases answered in all three; template_min_accuracy / "
     "template_max_accuracy: the lowest and highest of the three. Pooled per case over a row's "
     "cells; null in 'common' rows. The report adds the Kendall tau-b between the models' "
     "per-template leaderboards for each template pair"),
)
_TEMPLATE_NAMES_ALL = ("template_n", "template_min_accuracy", "template_max_accuracy",
                       *(f"template_{t}_accuracy" for t in TEMPLATE_NAMES))
TEMPLATES: MetricSpec[TemplateReport] = _control(
    "prompt_templates", "prompt_templates.json", TemplateReport, score_templates,
    _Shape(_template_columns,
           lambda rs: template_stats([row for r in rs for row in r.rows]) if rs else None,
           lambda r: r.overall, frozenset({"template_n"})),
    methods=TEMPLATES_METHODS, label="Prompt templates",
    section=Section("prompt-templates", "Templates", _templates_table),
    names=_TEMPLATE_NAMES_ALL, order=140)


# --- repeats --------------------------------------------------------------------------------

class RepeatReport(BaseModel):
    """Stability under sampling, overall and per family, with every case's rows."""

    k: int
    temperature: float | None
    seed_refused: bool = Field(
        default=False, description="some repeats went without their seed: the endpoint "
        "refused the seed parameter (the server sampled them unseeded)")
    overall: RepeatStats
    by_family: dict[str, RepeatStats]
    rows: list[RepeatRow]


def _repeat_row(case_id: str, g: Gold, recording: str,
                records: list[PromptVariantRecord]) -> RepeatRow:
    judged = [judge(g, r) for r in records]
    answers = [a for a, _ in judged]
    if g.kind == "choice":
        vote = majority_choice(answers)
        vote_score = float(vote is not None and vote == g.answer)
    else:
        middle = median([float(a) for a in answers if a is not None])
        vote_score = 0.0 if middle is None else case_score(middle, float(g.answer), g.family,
                                                           g.unit)
    return RepeatRow(case_id=case_id, family=g.family, recording=recording, answers=answers,
                     scores=[score for _, score in judged], vote_score=vote_score)


def score_repeats(inputs: ScoringInputs) -> RepeatReport | NotMeasured:
    """The sampling repeats of a cell: each asked case's k answers against its gold."""
    records = load_prompt_records(inputs.run_dir, "repeats")
    if not records:
        return NotMeasured(reason="no sampling repeats asked")
    k = max(r.repeat for r in records) + 1
    gold = golds(inputs)
    by_case: dict[str, list[PromptVariantRecord]] = {}
    for r in sorted(records, key=lambda r: r.repeat):
        by_case.setdefault(r.case_id, []).append(r)
    rows = [_repeat_row(cid, gold[cid], inputs.recording, rs)
            for cid, rs in by_case.items() if cid in gold]
    if not rows:
        return NotMeasured(reason="no repeated case is labelled")
    families = sorted({r.family for r in rows})
    return RepeatReport(k=k, temperature=records[0].temperature,
                        seed_refused=any(r.seed_refused for r in records),
                        overall=repeat_stats(rows, k),
                        rows=rows, by_family={f: repeat_stats([r for r in rows if r.family == f],
                                                              k) for f in families})


def _repeat_columns(s: RepeatStats) -> dict[str, float | int | None]:
    return {"repeat_k": s.k, "repeat_n": s.n, "repeat_consistency": s.consistency,
            "repeat_expected_accuracy": s.expected_accuracy,
            "repeat_majority_accuracy": s.majority_accuracy}


def _repeats_pooled(reports: list[RepeatReport]) -> RepeatStats | None:
    if not reports or len({r.k for r in reports}) != 1:
        return None  # none, or cells repeated a different number of times: not one figure
    return repeat_stats([row for r in reports for row in r.rows], reports[0].k)


def _repeats_table(cells: Sequence[CellScores]) -> ReportTable:
    by_model: dict[str, list[tuple[int, list[RepeatRow]]]] = {}
    unseeded: set[str] = set()
    for cell, report in REPEATS.results(sorted(cells, key=lambda c: (c.model, c.recording))):
        by_model.setdefault(cell.model, []).append((report.k, report.rows))
        if report.seed_refused:
            unseeded.add(cell.model)
    every = [row for parts in by_model.values() for _, rs in parts for row in rs]
    rules, spatial = _rule_names(every), _spatial_families(every)
    rows = []
    for model, parts in by_model.items():
        k = parts[0][0]
        model_rows = [row for pk, rs in parts if pk == k for row in rs]
        for family, group in _families(model_rows, spatial):
            s = repeat_stats(group, k)
            shown = f"{model} (seed refused)" if model in unseeded else model
            rows.append((Text(shown, "model"), _family_cell(family),
                         _rule_cell(family, group, rules), Int(s.n), Int(s.k),
                         Pct(s.consistency), Pct(s.expected_accuracy),
                         Pct(s.majority_accuracy)))
    return ReportTable(
        anchor="sampling-stability", title="Stability under sampling (repeats)",
        lead=REPEATS_LEAD, rows=tuple(rows),
        empty="Not measured: no run asked repeats (1 by default: set 'repeats: k' on a "
              "model's entry in the models file, or in the vlm resource).",
        headers=(("Model", False), ("Family", False), ("Scored by", False), ("Cases", True),
                 ("k", True), ("Consistency", True), ("Expected accuracy", True),
                 ("Majority-vote accuracy", True)))


REPEATS_LEAD = (
    "A robot acts on one sample. A subset of cases (up to 100 per family and recording, dimOS's "
    "and the spatial and motion ones) is asked k times at a temperature above 0, each with its "
    "repeat index as the seed (a model shown \"(seed refused)\": its endpoint refused the seed "
    "parameter, so its repeats went unseeded). <b>Consistency</b>: the share whose k answers "
    "are the same (choice, or parsed number); <b>Expected accuracy</b>: the mean score of a "
    "repeat by the family's rule; <b>Majority-vote accuracy</b>: the score of the vote: the "
    "most frequent choice (a strict plurality), or the median of a number's repeats "
    "(lmms-eval's stability metrics).")
REPEATS_METHODS = (
    ("sampling_stability",
     "each selected case (dimOS's or spatial) is asked repeat_k times at the vlm resource's "
     "repeat_temperature (seed = repeat index). repeat_consistency = cases whose k answers are "
     "the same choice or parsed number / repeat_n; repeat_expected_accuracy = mean over cases "
     "of the mean score of its repeats (1/0 for a choice, MRA / angular accuracy for a number); "
     "repeat_majority_accuracy = mean score of each case's vote (strict-plurality choice; a "
     "number's median) / repeat_n. Pooled per case over a row's cells (null when its cells "
     "used different k, and in 'common' rows)"),
)
REPEATS: MetricSpec[RepeatReport] = _control(
    "sampling_stability", "sampling_stability.json", RepeatReport, score_repeats,
    _Shape(_repeat_columns, _repeats_pooled, lambda r: r.overall,
           frozenset({"repeat_k", "repeat_n"})),
    methods=REPEATS_METHODS, label="Sampling stability",
    section=Section("sampling-stability", "Repeats", _repeats_table), order=150,
    names=("repeat_k", "repeat_n", "repeat_consistency", "repeat_expected_accuracy",
           "repeat_majority_accuracy"))


# --- structured -----------------------------------------------------------------------------

class StructuredReport(BaseModel):
    """Parse failures with and without the schema, overall and per family, with the rows."""

    overall: StructuredStats
    by_family: dict[str, StructuredStats]
    rows: list[StructuredRow]


def score_structured(inputs: ScoringInputs) -> StructuredReport | NotMeasured:
    """The structured answers of a cell beside the same cases' free-text answers."""
    records = load_prompt_records(inputs.run_dir, "structured")
    if records is None:
        return NotMeasured(reason="no structured answers asked (switched off, or the endpoint's "
                                  "preflight found no enforced structured output)")
    gold = golds(inputs)
    rows = []
    for r in records:
        g = gold.get(r.case_id)
        free = inputs.run.answers.get(r.case_id)
        if g is None or free is None:
            continue
        free_answer, free_score = judge(g, free)
        schema_answer, schema_score = judge(g, r, structured=True)
        rows.append(StructuredRow(
            case_id=r.case_id, family=g.family, recording=inputs.recording,
            free_answered=_answered(free), free_parsed=_answered(free) and free_answer is not None,
            free_score=free_score, schema_answered=_answered(r),
            schema_parsed=_answered(r) and schema_answer is not None, schema_score=schema_score))
    if not rows:
        return NotMeasured(reason="no structured case is labelled")
    families = sorted({r.family for r in rows})
    return StructuredReport(overall=structured_stats(rows), rows=rows, by_family={
        f: structured_stats(r for r in rows if r.family == f) for f in families})


def _structured_columns(s: StructuredStats) -> dict[str, float | int | None]:
    return {"structured_n": s.n, "structured_free_parse_failure": s.free_parse_failure,
            "structured_schema_parse_failure": s.schema_parse_failure,
            "structured_free_accuracy": s.free_accuracy,
            "structured_schema_accuracy": s.schema_accuracy,
            "structured_schema_not_answered": s.schema_not_answered}


def _structured_table(cells: Sequence[CellScores]) -> ReportTable:
    by_model = _by_model(STRUCTURED, cells)
    every = [r for rows in by_model.values() for r in rows]
    rules, spatial = _rule_names(every), _spatial_families(every)
    rows = tuple(
        (Text(model, "model"), _family_cell(family), _rule_cell(family, group, rules),
         Int(s.n), Pct(s.free_parse_failure), Pct(s.schema_parse_failure),
         Int(s.schema_not_answered), Pct(s.free_accuracy), Pct(s.schema_accuracy))
        for model, model_rows in by_model.items()
        for family, group in _families(model_rows, spatial) for s in (structured_stats(group),))
    return ReportTable(
        anchor="structured-answers", title="Answers a parser cannot misread (JSON schema)",
        lead=STRUCTURED_LEAD, rows=rows,
        empty="Not measured: no run asked with a JSON schema (off by default: set "
              "'structured: true' on a model's entry in the models file, or in the vlm "
              "resource; or no endpoint's preflight found structured output enforced).",
        headers=(("Model", False), ("Family", False), ("Scored by", False), ("Cases", True),
                 ("Parse failures, free text", True), ("Parse failures, schema", True),
                 ("Schema calls failed", True), ("Score, free text", True),
                 ("Score, schema", True)))


STRUCTURED_LEAD = (
    "Where the endpoint's preflight found structured output enforced, a subset of cases (up to "
    "100 per family and recording, dimOS's and the spatial and motion ones) is also asked with "
    "a JSON schema: an enum of the choices, or for a number family <code>{\"value\": number, "
    "\"unit\": enum}</code> with the family's declared unit. <b>Parse failures</b>: answered "
    "replies that give no choice or number, free text (the case's own answer) and with the "
    "schema; <b>Schema calls failed</b>: schema calls that failed or were refused (counted "
    "apart, in no rate). Scores by the family's rule; the raw reply and the answer read from it "
    "are both kept (structured.jsonl).")
STRUCTURED_METHODS = (
    ("structured_answers",
     "each selected case is asked with response_format = json_schema {answer: enum of its "
     "choices}, or for a number family {value: number, unit: enum [the family's declared "
     "unit]} (a count: {value: number}), where the preflight found structured_output "
     "'enforced'. structured_free_parse_failure / structured_schema_parse_failure = answered "
     "replies giving no choice or number / answered replies, free text (answers.jsonl) and "
     "with the schema; structured_schema_not_answered = schema calls that failed or were "
     "refused; structured_free_accuracy / structured_schema_accuracy = mean score by the "
     "family's rule / structured_n. Pooled per case over a row's cells; null in 'common' rows"),
)
STRUCTURED: MetricSpec[StructuredReport] = _control(
    "structured_answers", "structured_answers.json", StructuredReport, score_structured,
    _Shape(_structured_columns,
           lambda rs: structured_stats([row for r in rs for row in r.rows]) if rs else None,
           lambda r: r.overall, frozenset({"structured_n", "structured_schema_not_answered"})),
    methods=STRUCTURED_METHODS, label="Structured answers",
    section=Section("structured-answers", "Structured", _structured_table),
    names=("structured_n", "structured_free_parse_failure", "structured_schema_parse_failure",
           "structured_free_accuracy", "structured_schema_accuracy",
           "structured_schema_not_answered"), order=160)
