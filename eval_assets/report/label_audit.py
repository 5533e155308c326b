"""The report's "Label audit" section: the cases most worth a human look, the corrections made,
and an estimated label-error rate per family.

Gold answers come from sensors, and a few are wrong. The clearest sign of a wrong label is
several models that are good elsewhere agreeing on the *same* other answer. Each model's vote
on a case is weighted by its skill on the other cases *of the same family*: its accuracy there,
rescaled so that the family's frequency baseline on those cases (the share of their most common
gold answer) is 0 and always right is 1. A model no better than always giving the commonest
answer says nothing about a label: two blind models that both answer "no" to every presence
question agree against every "yes" and prove nothing (with skill rescaled from chance over all
families, the demo listed 75 disputed cases). A case is *disputed* when the weight of
one other answer exceeds the weight of the gold answer and at least :data:`MIN_AGREEING` models
chose it; disputed cases are ranked by that margin.

Pure: it reads the cells' scored rows and each recording's dataset with its overrides resolved
(:func:`eval_assets.scoring.inputs.load_private_dataset`), and draws each listed case's frame
from the report's overlays (:func:`eval_assets.report.cards.build_frame_images`).
"""

from __future__ import annotations

import base64
import json
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from eval_assets.metrics.stats import ClusteredInterval, clustered_wilson
from eval_assets.metrics.vqa import VqaRowResult
from eval_assets.report.markup import NA, esc, pct, section, table
from eval_assets.schemas.report import FrameImage
from eval_assets.schemas.results import CellScores
from eval_assets.schemas.vqa import Label
from eval_assets.scoring.inputs import PrivateDataset
from eval_assets.scoring.vqa import report_of
from eval_assets.vqa.overrides import INVALID, STATE_TEXT, OverrideState

MIN_AGREEING = 2
"""Models that must choose the same other answer before a case is disputed: one model's error
is that model's, not the label's."""
SHOWN = 12
"""Disputed cases shown with their evidence (the rest are counted)."""


@dataclass(frozen=True)
class Dispute:
    """One case where skilled models agree against the gold answer."""

    recording: str
    case_id: str
    family: str
    frame_index: int
    question: str
    choices: tuple[str, ...]
    gold: str
    answer: str
    models: tuple[tuple[str, float], ...]
    """The models that chose ``answer``, each with its skill weight."""
    margin: float
    """Weight of ``answer`` minus weight of the gold answer."""
    n_models: int
    evidence: Mapping[str, object]
    corrected: bool
    """The gold answer in force comes from a human override."""


@dataclass(frozen=True)
class FamilyRate:
    """The estimated label-error rate of one family."""

    family: str
    n: int
    disputed: int
    corrected: int
    interval: ClusteredInterval | None


@dataclass(frozen=True)
class LabelAudit:
    """Everything the section shows."""

    disputes: tuple[Dispute, ...]
    rates: tuple[FamilyRate, ...]
    overrides: tuple[tuple[str, OverrideState], ...]
    """(recording, override and its state), every recording's overrides in file order."""
    models: tuple[str, ...]


Skills = Mapping[tuple[str, str], tuple[int, int]]
"""Per (model, family): (correct, scored) over every row with a choice or a parse failure."""


def _skills(results: Sequence[CellScores]) -> dict[tuple[str, str], tuple[int, int]]:
    totals: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for cell in results:
        for row in report_of(cell).rows:
            if row.status != "failed_call":
                totals[cell.model, row.family][0] += row.status == "correct"
                totals[cell.model, row.family][1] += 1
    return {key: (c, n) for key, (c, n) in totals.items()}


def skill_weight(correct_elsewhere: int, n_elsewhere: int, baseline: float) -> float:
    """Accuracy on the other cases rescaled so ``baseline`` (the frequency baseline there) is 0
    and always right is 1: weight 0 at or below the baseline, with no other case, or where every
    other case has one answer (then nothing tells skill from habit)."""
    if n_elsewhere <= 0 or baseline >= 1.0:
        return 0.0
    return max(0.0, (correct_elsewhere / n_elsewhere - baseline) / (1.0 - baseline))


def baseline_elsewhere(answers: Counter[str], answer: str) -> float:
    """The share of the most common gold answer among a family's cases other than one whose
    gold is ``answer`` (1.0 when there is no other case: no evidence of skill)."""
    others = answers.copy()
    others[answer] -= 1
    n = sum(others.values())
    return max(others.values()) / n if n > 0 else 1.0


def _votes(rows: Mapping[str, VqaRowResult], skills: Skills, family: str,
           baseline: float) -> dict[str, list[tuple[str, float]]]:
    """Each chosen answer with the models that chose it and their leave-this-case-out skill."""
    votes: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for model, row in sorted(rows.items()):
        if row.predicted_choice is None:
            continue
        correct, n = skills[model, family]
        right_here = row.status == "correct"
        weight = skill_weight(correct - right_here, n - 1, baseline)
        votes[row.predicted_choice].append((model, weight))
    return votes


def _dispute(recording: str, data: PrivateDataset, label: Label,
             rows: Mapping[str, VqaRowResult], skills: Skills, baseline: float,
             corrected: set[str]) -> Dispute | None:
    """The case's strongest answer against the gold, if skilled models agree on one."""
    case_id = label.id
    votes = _votes(rows, skills, label.family, baseline)
    gold_weight = sum(w for _, w in votes.get(label.answer, []))
    best: Dispute | None = None
    for answer, voters in votes.items():
        margin = sum(w for _, w in voters) - gold_weight
        if answer == label.answer or len(voters) < MIN_AGREEING or margin <= 0:
            continue
        if best is None or margin > best.margin:
            case = data.cases[case_id]
            best = Dispute(recording=recording, case_id=case_id, family=label.family,
                           frame_index=label.frame_index, question=case.question,
                           choices=tuple(case.choices), gold=label.answer, answer=answer,
                           models=tuple(voters), margin=margin, n_models=len(rows),
                           evidence=label.evidence, corrected=case_id in corrected)
    return best


def _scored_rows(results: Sequence[CellScores], datasets: Mapping[str, PrivateDataset]
                 ) -> dict[str, dict[str, dict[str, VqaRowResult]]]:
    """Per recording, per case id, per model: the scored row."""
    rows: dict[str, dict[str, dict[str, VqaRowResult]]] = {r: defaultdict(dict) for r in datasets}
    for cell in results:
        if cell.recording in rows:
            for row in report_of(cell).rows:
                rows[cell.recording][row.case_id][cell.model] = row
    return rows


def build_label_audit(results: Sequence[CellScores],
                      datasets: Mapping[str, PrivateDataset]) -> LabelAudit:
    """The audit of ``results`` (usable cells) against each recording's dataset, its labels
    the ones in force (overrides applied) and its ``overrides`` resolved."""
    skills = _skills(results)
    scored = _scored_rows(results, datasets)
    answers: dict[str, Counter[str]] = defaultdict(Counter)
    for recording, rows in scored.items():
        for label in datasets[recording].labels:
            if label.id in rows:
                answers[label.family][label.answer] += 1
    disputes: list[Dispute] = []
    keys: dict[str, list[tuple[str, int]]] = defaultdict(list)
    flags: dict[str, list[bool]] = defaultdict(list)
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    overrides: list[tuple[str, OverrideState]] = []
    for recording in sorted(datasets):
        data = datasets[recording]
        states = data.overrides.states if data.overrides is not None else ()
        overrides += [(recording, s) for s in states]
        corrected = {s.override.case_id for s in states if s.state == "applied"}
        rows = scored[recording]
        for label in data.labels:
            if label.id not in rows:
                continue  # no usable result scored it
            baseline = baseline_elsewhere(answers[label.family], label.answer)
            found = _dispute(recording, data, label, rows[label.id], skills, baseline, corrected)
            if found is not None:
                disputes.append(found)
            keys[label.family].append((recording, label.frame_index))
            flags[label.family].append(found is not None or label.id in corrected)
            counts[label.family][0] += found is not None
            counts[label.family][1] += label.id in corrected
    rates = tuple(FamilyRate(family=f, n=len(keys[f]), disputed=counts[f][0],
                             corrected=counts[f][1], interval=clustered_wilson(keys[f], flags[f]))
                  for f in sorted(keys))
    disputes.sort(key=lambda d: (-d.margin, -len(d.models), d.recording, d.case_id))
    return LabelAudit(disputes=tuple(disputes), rates=rates, overrides=tuple(overrides),
                      models=tuple(sorted({model for model, _ in skills})))


_LEAD = (
    "Gold answers come from sensors, and a few are wrong (a detector that calls a ball near the "
    "image edge a box). Listed first: the cases where models that are right elsewhere agree on "
    "the same other answer. Each model's vote is weighted by its skill on the family's other "
    "cases (accuracy rescaled so always giving the commonest answer is 0 and always right is "
    "1: agreeing on a habit is not evidence); a case is <b>disputed</b> when "
    f"at least {MIN_AGREEING} models chose one other answer and its weight exceeds the gold "
    "answer's. Ranked by that margin, with the frame, the detector's evidence and the label's "
    "evidence. A correction is recorded with <code>eval-assets labels override</code> and "
    "applied on the next run, without asking any model again.")
_RATE_TEXT = (
    "Estimated label-error rate: the share of a family's scored cases that are disputed or "
    "were corrected by a person (an applied override), with a 95% Wilson interval clustered "
    "by frame. Why this estimator: no set of cases has been audited at random, so there is no "
    "unbiased sample to count errors in; agreement of skilled models against the gold is the "
    "signal available on every case. It over-counts where models share a mistake and misses "
    "wrong labels no model disagrees with, so read it as a screen, not a measurement; with "
    f"fewer than {MIN_AGREEING} models it counts only the corrections made.")


def _jpeg(frame: FrameImage | None) -> str:
    if frame is None:
        return '<p class="empty">frame not in the report</p>'
    data = base64.b64encode(frame.overlay_jpeg).decode("ascii")
    return (f'<img class="frame" style="max-width:320px" alt="frame {frame.frame_index} with '
            f'the detector\'s evidence" src="data:image/jpeg;base64,{data}">')


def _dispute_html(d: Dispute, frame: FrameImage | None) -> str:
    voters = ", ".join(f"{m} (skill {w:.2f})" for m, w in d.models)
    fixed = " <b>(gold in force is a human correction)</b>" if d.corrected else ""
    evidence = esc(json.dumps(d.evidence, sort_keys=True, default=str)[:2000])
    return (
        f'<div class="audit-case"><h3>{esc(d.recording)} · <code>{esc(d.case_id)}</code></h3>'
        f"{_jpeg(frame)}<p>{esc(d.question)} <span class=\"meta\">choices: "
        f"{esc(' / '.join(d.choices))}</span></p>"
        f"<p>gold <b>{esc(d.gold)}</b>{fixed}; {len(d.models)} of {d.n_models} models chose "
        f"<b>{esc(d.answer)}</b>: {esc(voters)}; margin {d.margin:.2f}.</p>"
        f"<details><summary>the label's evidence</summary><pre>{evidence}</pre></details></div>")


def _rates_html(rates: Sequence[FamilyRate]) -> str:
    rows = []
    for r in rates:
        iv = r.interval
        cell = NA if iv is None else (f'{pct(iv.estimate)} <span class="ci">'
                                      f"[{pct(iv.low)}–{pct(iv.high)}]</span>")
        rows.append([esc(r.family.replace("_", " ")), f"{r.n:,}", f"{r.disputed:,}",
                     f"{r.corrected:,}", cell])
    return table((("Family", False), ("Cases", True), ("Disputed", True), ("Corrected", True),
                  ("Label-error rate [95% CI]", True)), rows)


def _overrides_html(overrides: Sequence[tuple[str, OverrideState]]) -> str:
    if not overrides:
        return ('<p class="empty">No label overrides: every gold answer is the sensor\'s.</p>')
    rows = [[esc(rec), f"<code>{esc(s.override.case_id)}</code>", esc(s.override.old_answer),
             esc(s.override.new_answer), esc(s.override.by), esc(s.override.at),
             esc(s.override.reason), esc(STATE_TEXT[s.state])] for rec, s in overrides]
    return table((("Recording", False), ("Case", False), ("Was", False), ("Now", False),
                  ("By", False), ("When (UTC)", False), ("Why", False), ("State", False)), rows,
                 row_classes=["flag" if s.needs_action else "" for _, s in overrides])


def label_audit_section(audit: LabelAudit, frames: Sequence[FrameImage]) -> str:
    """The "Label audit" section (anchor ``label-audit``)."""
    by_frame = {(f.recording, f.frame_index): f for f in frames}
    shown = audit.disputes[:SHOWN]
    if len(audit.models) < MIN_AGREEING:
        cases = (f'<p class="empty">{len(audit.models)} model(s) scored: disputes need at least '
                 f"{MIN_AGREEING} models that agree.</p>")
    elif not shown:
        cases = ('<p class="empty">No disputed case: no two models that are right elsewhere '
                 "agree against a gold answer.</p>")
    else:
        more = len(audit.disputes) - len(shown)
        cases = "".join(_dispute_html(d, by_frame.get((d.recording, d.frame_index)))
                        for d in shown)
        if more:
            cases += f'<p class="summary">{more:,} more disputed cases, not shown.</p>'
    orphaned = sum(1 for _, s in audit.overrides if s.orphaned)
    invalid = sum(1 for _, s in audit.overrides if s.state in INVALID)
    applied = sum(1 for _, s in audit.overrides if s.state == "applied")
    heading = f"{applied} applied, {orphaned} orphaned"
    heading += f", {invalid} invalid" if invalid else ""
    body = (f"<h3>Cases worth a look ({len(audit.disputes):,} disputed)</h3>{cases}"
            f"<h3>Overrides ({heading})</h3>"
            + ('<p class="notice">An orphaned override is not applied: its case is gone or shows '
               "other content since it was made. Record it again if it still holds.</p>"
               if orphaned else "")
            + ('<p class="notice">An invalid override is not applied: its answer is not one of '
               "its case's choices (a hand-edited line). Delete the line and record the "
               "correction with <code>eval-assets labels override</code>, which checks it.</p>"
               if invalid else "")
            + _overrides_html(audit.overrides)
            + f'<h3>Label-error rate per family</h3><p class="summary">{_RATE_TEXT}</p>'
            + _rates_html(audit.rates))
    return section("label-audit", "Label audit", _LEAD, body)
