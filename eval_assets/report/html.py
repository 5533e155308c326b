"""The static HTML report: one self-contained file (inline CSS, base64 images, no scripts).

Every string that comes from data (model names, answers, judge reasoning, evidence) goes through
``html.escape``; nothing is read from the clock, so the same inputs give the same bytes. A
generation time appears only when the caller passes one.
"""

from __future__ import annotations

import base64
import html
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from eval_assets.atomic import write_text_atomic
from eval_assets.report.charts import family_chart, headline_chart, recording_chart
from eval_assets.report.leaderboard import ALL_RECORDINGS, family_column, leaderboard_families
from eval_assets.report.overlays import DEFAULT_DEPTH_RANGE, depth_colours
from eval_assets.schemas.report import CaseCard
from eval_assets.schemas.results import BenchmarkResult

__all__ = ["render_report", "write_report"]

_RAW_LIMIT = 2000  # characters of a raw reply shown before it is cut (the rest is counted)
_BADGES = {
    "correct": "correct",
    "incorrect": "incorrect",
    "parse_failure": "parse failure",
    "failed_call": "failed call",
    "judged": "judged",
    "judge_failed": "judge failed",
}
_GT_SOURCES = {"annotations": "human annotations", "audit": "detector evidence (audit)"}

_CSS = """
:root{--ink:#1d2430;--muted:#5d6778;--line:#e2e6ec;--bg:#f6f7f9;--card:#fff;--accent:#0b5cad;
--ok:#1a7f37;--bad:#c62828;--warn:#b26a00;--grey:#6b7280;--info:#0b5cad}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:15px/1.5 system-ui,-apple-system,
"Segoe UI",Roboto,"DejaVu Sans",sans-serif}
header.top{background:#14213d;color:#fff;padding:28px 0 18px}
.wrap{max-width:1240px;margin:0 auto;padding:0 24px}
header.top h1{margin:0 0 4px;font-size:26px;font-weight:650}
header.top .sub{color:#c9d3e6;margin:0 0 14px}
nav a{color:#fff;text-decoration:none;margin-right:16px;font-size:14px;opacity:.85}
nav a:hover{opacity:1;text-decoration:underline}
section{background:var(--card);border:1px solid var(--line);border-radius:10px;
padding:20px 24px;margin:22px 0;box-shadow:0 1px 2px rgba(0,0,0,.04)}
h2{margin:0 0 6px;font-size:20px}
h3{margin:18px 0 8px;font-size:16px}
p.lead{color:var(--muted);margin:0 0 14px;font-size:14px}
.table-wrap{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:14px;margin:6px 0 10px}
th,td{padding:7px 10px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
th{background:#f0f3f7;font-weight:600;color:#334;white-space:nowrap}
tbody tr:nth-child(even){background:#fafbfc}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.model{font-weight:600;white-space:nowrap}
tr.pooled td{background:#eef4fb;font-weight:600}
.ci{color:var(--muted);font-weight:400;font-size:12.5px}
.meter{position:relative;width:180px;height:12px;background:#e9edf2;border-radius:6px;
display:inline-block;vertical-align:middle;margin-right:8px}
.meter .fill{position:absolute;left:0;top:0;bottom:0;background:var(--accent);border-radius:6px}
.meter .band{position:absolute;top:-2px;bottom:-2px;border-left:2px solid #333;
border-right:2px solid #333}
.meter .chance{position:absolute;top:-4px;bottom:-4px;border-left:2px dashed #c62828}
img.chart{display:block;max-width:100%;height:auto;margin:8px auto 4px}
.empty{color:var(--muted);font-style:italic}
.summary{color:var(--muted);font-size:13.5px;margin:4px 0}
.badge{display:inline-block;padding:2px 9px;border-radius:999px;font-size:12px;font-weight:600;
color:#fff;white-space:nowrap}
.b-correct{background:var(--ok)}.b-incorrect{background:var(--bad)}
.b-parse_failure{background:var(--warn)}.b-failed_call{background:var(--grey)}
.b-judged{background:var(--info)}.b-judge_failed{background:var(--grey)}
.chip{display:inline-block;background:#eef1f6;color:#334;border-radius:6px;padding:1px 8px;
font-size:12.5px;margin-right:6px}
.legend{display:flex;flex-wrap:wrap;gap:18px;align-items:center;font-size:13px;
color:var(--muted);margin:0 0 10px}
.ramp{display:inline-block;width:160px;height:12px;border-radius:3px;vertical-align:middle;
margin:0 6px}
article.case{border:1px solid var(--line);border-radius:10px;margin:18px 0;overflow:hidden}
article.case>header{background:#f3f5f8;padding:9px 14px;border-bottom:1px solid var(--line);
font-size:13.5px}
article.case>header code{font-size:13px;color:#223}
.case-body{display:grid;grid-template-columns:minmax(0,640px) minmax(0,1fr);gap:18px;padding:14px}
@media (max-width:1000px){.case-body{grid-template-columns:1fr}}
figure{margin:0}
figure img{width:100%;height:auto;border-radius:6px;display:block;background:#000}
figcaption{font-size:12px;color:var(--muted);margin-top:4px}
.question{font-size:16px;font-weight:600;margin:0 0 8px}
ol.choices{margin:0 0 8px;padding-left:22px}
ol.choices li{margin:2px 0}
ol.choices li.gold{font-weight:650;color:var(--ok)}
.gold-tag{font-size:11px;font-weight:700;color:#fff;background:var(--ok);border-radius:4px;
padding:0 5px;margin-left:6px}
.reference{background:#f3f8f3;border-left:3px solid var(--ok);padding:6px 10px;font-size:14px;
margin:0 0 8px;white-space:pre-wrap}
details{font-size:13px;margin:6px 0 10px}
details summary{cursor:pointer;color:var(--accent)}
pre{white-space:pre-wrap;word-break:break-word;background:#f7f8fa;border:1px solid var(--line);
border-radius:6px;padding:7px 9px;margin:4px 0;font-size:12.5px;max-height:260px;overflow:auto}
.answer{border-top:1px solid var(--line);padding:9px 0 4px}
.answer .who{display:flex;gap:10px;align-items:center;flex-wrap:wrap;font-size:14px}
.answer .who b{font-size:14.5px}
.meta{color:var(--muted);font-size:12.5px}
.judge{background:#f2f6fc;border-left:3px solid var(--info);padding:6px 10px;margin-top:6px;
font-size:13.5px}
.score{font-weight:700;color:var(--info)}
footer{color:var(--muted);font-size:13px;padding:8px 0 40px}
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _missing(value: Any) -> bool:
    if value is None:
        return True
    try:
        return bool(math.isnan(float(value)))
    except (TypeError, ValueError):
        return False


def _pct(value: Any, digits: int = 1) -> str:
    return "—" if _missing(value) else f"{float(value) * 100:.{digits}f}%"


def _num(value: Any, digits: int = 2) -> str:
    return "—" if _missing(value) else f"{float(value):.{digits}f}"


def _int(value: Any) -> str:
    return "—" if _missing(value) else f"{int(value):,}"


def _img(png: bytes, alt: str, cls: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img class="{cls}" alt="{_e(alt)}" src="data:image/png;base64,{data}">'


def _table(headers: Sequence[tuple[str, bool]], rows: Iterable[Sequence[str]],
           row_classes: Sequence[str] | None = None) -> str:
    """A table; ``headers`` are (label, numeric); cells are already-escaped HTML."""
    head = "".join(f'<th class="num">{_e(h)}</th>' if numeric else f"<th>{_e(h)}</th>"
                   for h, numeric in headers)
    body = []
    for i, row in enumerate(rows):
        cls = f' class="{row_classes[i]}"' if row_classes and row_classes[i] else ""
        cells = "".join(
            f'<td class="num">{c}</td>' if numeric else f"<td>{c}</td>"
            for c, (_, numeric) in zip(row, headers, strict=True))
        body.append(f"<tr{cls}>{cells}</tr>")
    return (f'<div class="table-wrap"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")


def _meter(acc: float, low: float, high: float, chance: float) -> str:
    if _missing(acc):
        return ""
    parts = [f'<span class="fill" style="width:{acc * 100:.1f}%"></span>']
    if not _missing(low) and not _missing(high):
        parts.append(f'<span class="band" style="left:{low * 100:.1f}%;'
                     f'width:{max(0.0, high - low) * 100:.1f}%"></span>')
    if not _missing(chance):
        parts.append(f'<span class="chance" style="left:{chance * 100:.1f}%"></span>')
    return f'<span class="meter">{"".join(parts)}</span>'


def _acc_cell(acc: Any, low: Any, high: Any) -> str:
    if _missing(acc):
        return "—"
    return f'{_pct(acc)} <span class="ci">[{_pct(low)}–{_pct(high)}]</span>'


def _section(anchor: str, title: str, lead: str, body: str) -> str:
    lead_html = f'<p class="lead">{lead}</p>' if lead else ""
    return f'<section id="{anchor}"><h2>{_e(title)}</h2>{lead_html}{body}</section>'


def _chart(render: Callable[[pd.DataFrame], bytes], leaderboard: pd.DataFrame,
           alt: str) -> str:
    try:
        return _img(render(leaderboard), alt, "chart")
    except ValueError as exc:
        # A chart with nothing to plot (no families, no per-recording rows) is a note, not a crash.
        return f'<p class="empty">{_e(f"No chart: {exc}")}</p>'


def _pooled(leaderboard: pd.DataFrame) -> pd.DataFrame:
    pooled = leaderboard[leaderboard["recording"] == ALL_RECORDINGS].copy()
    pooled["_rank_key"] = pooled["vqa_accuracy"].fillna(-1.0)
    return pooled.sort_values(["_rank_key", "model"], ascending=[False, True], kind="stable")


def _headline(leaderboard: pd.DataFrame) -> str:
    pooled = _pooled(leaderboard)
    if pooled.empty:
        return _section("headline", "Headline: VQA accuracy", "",
                        '<p class="empty">No results.</p>')
    headers = [("#", True), ("Model", False), ("Accuracy [95% CI]", False), ("", False),
               ("n", True), ("Correct", True), ("Parse failures", True), ("Failed calls", True),
               ("Chance", True), ("Over chance", True)]
    rows = []
    for rank, r in enumerate(pooled.itertuples(index=False), start=1):
        lift = (r.vqa_accuracy - r.chance) if not _missing(r.vqa_accuracy) else math.nan
        lift_s = "—" if _missing(lift) else f"{lift * 100:+.1f} pts"
        rows.append([
            str(rank), f'<span class="model">{_e(r.model)}</span>',
            _acc_cell(r.vqa_accuracy, r.vqa_ci_low, r.vqa_ci_high),
            _meter(r.vqa_accuracy, r.vqa_ci_low, r.vqa_ci_high, r.chance),
            _int(r.n_cases), _int(r.correct), _int(r.parse_failures), _int(r.failed_calls),
            _pct(r.chance), lift_s,
        ])
    lead = ("All recordings pooled: accuracy = correct / n, where n counts parse failures and "
            "failed calls as wrong. Interval: Wilson 95% of the pooled counts. Chance: the mean "
            "of 1 / number of choices over the cases. Bar: accuracy; black brackets: interval; "
            "red dashes: chance.")
    body = _table(headers, rows) + _chart(headline_chart, leaderboard,
                                          "Bar chart of pooled VQA accuracy per model")
    return _section("headline", "Headline: VQA accuracy", lead, body)


def _families(leaderboard: pd.DataFrame) -> str:
    pooled = leaderboard[leaderboard["recording"] == ALL_RECORDINGS]
    families = leaderboard_families(leaderboard)
    if not families or pooled.empty:
        return _section("families", "By question family", "",
                        '<p class="empty">No VQA cases were scored.</p>')
    models = list(pooled["model"])
    headers = [("Family", False), ("Chance", True)] + [(m, False) for m in models]
    rows = []
    for family in families:
        ns = pooled[family_column(family, "n")]
        with_cases = pooled[ns > 0]
        chance = (with_cases[family_column(family, "chance")].iloc[0]
                  if not with_cases.empty else math.nan)
        cells = [f"<b>{_e(family.replace('_', ' '))}</b>", _pct(chance)]
        for _, sel in pooled.iterrows():
            n = int(sel[family_column(family, "n")])
            if n == 0:
                cells.append("—")
                continue
            cells.append(
                _acc_cell(sel[family_column(family, "accuracy")],
                          sel[family_column(family, "ci_low")],
                          sel[family_column(family, "ci_high")])
                + f' <span class="ci">n={n}</span>')
        rows.append(cells)
    lead = ("Pooled over recordings. Dashed marks in the chart are each family's chance level; "
            "a family near chance is one the models have not learned from the image.")
    body = _chart(family_chart, leaderboard, "Grouped bar chart of accuracy per family") + \
        _table(headers, rows)
    return _section("families", "By question family", lead, body)


def _recordings(leaderboard: pd.DataFrame) -> str:
    per = leaderboard[leaderboard["recording"] != ALL_RECORDINGS]
    if per.empty:
        return _section("recordings", "By recording", "",
                        '<p class="empty">No per-recording rows.</p>')
    per = per.sort_values(["recording", "model"], kind="stable")
    headers = [("Recording", False), ("Model", False), ("Accuracy [95% CI]", False),
               ("n", True), ("Parse failures", True), ("Failed calls", True), ("Chance", True)]
    rows = [[_e(r.recording), f'<span class="model">{_e(r.model)}</span>',
             _acc_cell(r.vqa_accuracy, r.vqa_ci_low, r.vqa_ci_high), _int(r.n_cases),
             _int(r.parse_failures), _int(r.failed_calls), _pct(r.chance)]
            for r in per.itertuples(index=False)]
    body = _chart(recording_chart, leaderboard, "Grouped bar chart of accuracy per recording") \
        + _table(headers, rows)
    return _section("recordings", "By recording", "", body)


def _ordered(results: Sequence[BenchmarkResult]) -> list[BenchmarkResult]:
    return sorted(results, key=lambda r: (r.model, r.recording))


def _who(r: BenchmarkResult) -> list[str]:
    return [f'<span class="model">{_e(r.model)}</span>', _e(r.recording)]


def _pope(results: Sequence[BenchmarkResult]) -> str:
    have = [r for r in _ordered(results) if r.pope is not None]
    lead = ("Presence questions scored with the POPE rule (RUCAIBox/POPE): first sentence, "
            "\"no\"/\"not\"/\"No\" means no. Positive class: yes.")
    if not have:
        return _section("pope", "POPE (presence)", lead,
                        '<p class="empty">No presence cases, so no POPE results.</p>')
    headers = [("Model", False), ("Recording", False), ("n", True), ("Accuracy", True),
               ("Precision", True), ("Recall", True), ("F1", True), ("Yes ratio", True),
               ("TP / FP / TN / FN", True)]
    rows = []
    for r in have:
        p = r.pope
        assert p is not None
        rows.append([*_who(r), _int(p.n), _pct(p.accuracy), _pct(p.precision), _pct(p.recall),
                               _num(p.f1, 3), _pct(p.yes_ratio),
                               f"{p.tp} / {p.fp} / {p.tn} / {p.fn}"])
    return _section("pope", "POPE (presence)", lead, _table(headers, rows))


def _mcq(results: Sequence[BenchmarkResult]) -> str:
    have = [r for r in _ordered(results) if int(r.mcq.get("total_mcq_questions", 0) or 0) > 0]
    lead = ("AVLM MCQ scoring. The strict number (answer opens with \"(X)\") is the headline, "
            "comparable with AVLM; the lenient number also accepts a bare letter, an answer line "
            "or the exact choice text, and is shown separately.")
    if not have:
        return _section("mcq", "MCQ accuracy", lead,
                        '<p class="empty">No MCQ-format rows in these runs.</p>')
    headers = [("Model", False), ("Recording", False), ("Questions", True),
               ("Strict correct", True), ("Lenient", True), ("Correct", True),
               ("Incorrect", True), ("Parse failed", True), ("Inference failed", True)]
    rows = [
        [*_who(r), _int(r.mcq.get("total_mcq_questions")),
                   f"<b>{_pct(r.mcq.get('pct_correct'))}</b>", _pct(r.mcq_lenient_pct_correct),
                   _int(r.mcq.get("num_correct")), _int(r.mcq.get("num_incorrect")),
                   _int(r.mcq.get("num_parse_failed")), _int(r.mcq.get("num_infer_failed"))]
        for r in have
    ]
    return _section("mcq", "MCQ accuracy", lead, _table(headers, rows))


def _judge(results: Sequence[BenchmarkResult]) -> str:
    have = [r for r in _ordered(results) if r.judge is not None]
    lead = ("Open-ended answers scored 1–10 by an LLM judge with the AVLM rubric. Failed "
            "judgements are counted, never averaged in as zeros.")
    if not have:
        return _section("judge", "LLM judge", lead, '<p class="empty">No judged rows.</p>')
    headers = [("Model", False), ("Recording", False), ("Judge", False), ("Judged", True),
               ("Scored", True), ("Failed", True), ("Mean", True), ("Median", True),
               ("Min–max", True), ("9–10 / 8 / 7 / 6 / 1–5", True)]
    rows = []
    for r in have:
        j = r.judge
        assert j is not None
        d = j.score_distribution
        dist = " / ".join(str(d.get(k, 0)) for k in
                          ("excellent_9_10", "good_8", "fair_7", "poor_6", "very_poor_1_5"))
        span = "—" if _missing(j.min_score) else f"{_num(j.min_score, 0)}–{_num(j.max_score, 0)}"
        rows.append([*_who(r), _e(j.judge_model), _int(j.total_judged), _int(j.num_success),
                               _int(j.num_failed), _num(j.mean_score), _num(j.median_score, 1),
                               span, dist])
    return _section("judge", "LLM judge", lead, _table(headers, rows))


def _vision(results: Sequence[BenchmarkResult]) -> str:
    have = [r for r in _ordered(results) if r.vision is not None]
    lead = ("VisionSimilarity / VisionHallucination (Fair Forge): cosine similarity of sentence "
            "embeddings of the model's frame description and the human annotation; a frame is a "
            "hallucination when its similarity is below the threshold.")
    if not have:
        return _section("vision", "VisionSimilarity and VisionHallucination", lead,
                        '<p class="empty">No descriptions were scored.</p>')
    headers = [("Model", False), ("Recording", False), ("Embedder", False), ("Frames", True),
               ("Mean similarity", True), ("Min", True), ("Max", True), ("Threshold", True),
               ("Hallucination rate", True), ("Hallucinated", True)]
    rows, notes = [], []
    for r in have:
        v = r.vision
        assert v is not None
        rows.append([*_who(r), _e(v.embedder), _int(v.n_frames), _num(v.mean_similarity, 4),
                               _num(v.min_similarity, 4), _num(v.max_similarity, 4),
                               _num(v.threshold, 2), _pct(v.hallucination_rate),
                               _int(v.n_hallucinations)])
        notes.append(f'<p class="summary"><b>{_e(r.model)}</b> on {_e(r.recording)}: '
                     f"{_e(v.similarity_summary)} {_e(v.hallucination_summary)}</p>")
    return _section("vision", "VisionSimilarity and VisionHallucination", lead,
                    _table(headers, rows) + "".join(notes))


def _chair(results: Sequence[BenchmarkResult]) -> str:
    have = [r for r in _ordered(results) if r.chair is not None]
    lead = ("CHAIR (Rohrbach et al. 2018) of the descriptions with the MSCOCO synonym list: "
            "CHAIR<sub>i</sub> = hallucinated object mentions / all mentions, CHAIR<sub>s</sub> "
            "= descriptions with a hallucination / all descriptions. The ground-truth source "
            "says which objects counted as present.")
    if not have:
        return _section("chair", "CHAIR", lead, '<p class="empty">No CHAIR results.</p>')
    headers = [("Model", False), ("Recording", False), ("Descriptions", True),
               ("CHAIR_i", True), ("CHAIR_s", True), ("Hallucinated objects", False),
               ("Ground truth from", False)]
    rows = []
    for r in have:
        c = r.chair
        assert c is not None
        objects = ", ".join(c.hallucinated_objects) or "none"
        rows.append([*_who(r), _int(c.n_captions), _num(c.chair_i, 4), _num(c.chair_s, 4),
                               _e(objects),
                               _e(_GT_SOURCES.get(c.ground_truth_source,
                                                  c.ground_truth_source))])
    return _section("chair", "CHAIR", lead, _table(headers, rows))


def _evidence(evidence: Mapping[str, Any]) -> str:
    if not evidence:
        return ""
    text = json.dumps(evidence, ensure_ascii=False, indent=1, sort_keys=True, default=str)
    return f"<details><summary>Evidence behind the gold answer</summary><pre>{_e(text)}</pre>" \
        "</details>"


def _raw(text: str | None) -> str:
    if text is None:
        return '<span class="meta">(no reply)</span>'
    if len(text) > _RAW_LIMIT:
        extra = len(text) - _RAW_LIMIT
        return f"<pre>{_e(text[:_RAW_LIMIT])}\n… ({extra:,} more characters)</pre>"
    return f"<pre>{_e(text)}</pre>"


def _answer(card: CaseCard) -> str:
    badge = f'<span class="badge b-{card.status}">{_e(_BADGES[card.status])}</span>'
    meta = []
    if card.kind == "vqa":
        choice = card.predicted_choice if card.predicted_choice is not None else "none"
        meta.append(f"extracted choice: <b>{_e(choice)}</b>")
        if card.tier:
            meta.append(f"matched by: {_e(card.tier)}")
    if card.latency_s is not None:
        meta.append(f"latency {card.latency_s:.2f} s")
    parts = [f'<div class="answer"><div class="who"><b>{_e(card.model)}</b>{badge}'
             f'<span class="meta">{" · ".join(meta)}</span></div>']
    if card.error:
        parts.append(f'<div class="meta">error: {_e(card.error)}</div>')
    parts.append(_raw(card.raw_response))
    if card.judge is not None:
        j = card.judge
        who = f" ({_e(j.judge_model)})" if j.judge_model else ""
        if j.score is not None:
            head = f'Judge{who}: <span class="score">{j.score}/10</span>'
        else:
            category = f" [{_e(j.error_category)}]" if j.error_category else ""
            head = f"Judge{who}: failed{category}: {_e(j.error or '')}"
        reasoning = f"<div>{_e(j.reasoning)}</div>" if j.reasoning else ""
        parts.append(f'<div class="judge">{head}{reasoning}</div>')
    parts.append("</div>")
    return "".join(parts)


def _case(group: Sequence[CaseCard]) -> str:
    first = group[0]
    head = (f'<header><code>{_e(first.case_id)}</code> · recording <b>{_e(first.recording)}</b>'
            f' · frame {first.frame_index} · <span class="chip">{_e(first.family)}</span>'
            "</header>")
    image = _img(first.overlay_png, f"Frame {first.frame_index} with ground truth", "overlay")
    figure = f"<figure>{image}<figcaption>{_e(first.overlay_note)}</figcaption></figure>"
    info = [f'<p class="question">{_e(first.question or "(prompt not recorded)")}</p>']
    if first.kind == "vqa":
        items = []
        for choice in first.choices:
            if choice == first.gold:
                items.append(f'<li class="gold">{_e(choice)}<span class="gold-tag">gold</span>'
                             "</li>")
            else:
                items.append(f"<li>{_e(choice)}</li>")
        info.append(f'<ol class="choices" type="A">{"".join(items)}</ol>')
    elif first.gold is not None:
        info.append(f'<div class="reference"><b>Reference:</b> {_e(first.gold)}</div>')
    info.append(_evidence(first.evidence))
    info.extend(_answer(card) for card in group)
    return (f'<article class="case">{head}<div class="case-body">{figure}'
            f'<div>{"".join(info)}</div></div></article>')


def _ramp() -> str:
    lo, hi = DEFAULT_DEPTH_RANGE
    stops = depth_colours(np.linspace(lo, hi, 9))
    css = ", ".join(f"rgb({r},{g},{b}) {i * 12.5:g}%" for i, (r, g, b) in enumerate(stops))
    return (f'<span>LiDAR range: {lo:g} m<span class="ramp" style="background:'
            f'linear-gradient(to right, {css})"></span>{hi:g}+ m</span>')


def _cases(cards: Sequence[CaseCard]) -> str:
    lead = ("Ground truth drawn on the frame the model saw: boxes and masks of the detections the "
            "question is about (label: median LiDAR range, or detector score), LiDAR points "
            "projected with the rectified intrinsics. Each model's raw reply is shown as received.")
    if not cards:
        return _section("cases", "Cases", lead, '<p class="empty">No case cards.</p>')
    badges = "".join(f'<span class="badge b-{k}">{_e(v)}</span> ' for k, v in _BADGES.items())
    legend = f'<div class="legend">{_ramp()}<span>{badges}</span></div>'
    groups: dict[tuple[str, str], list[CaseCard]] = {}
    for card in cards:
        groups.setdefault((card.recording, card.case_id), []).append(card)
    return _section("cases", "Cases", lead, legend + "".join(_case(g) for g in groups.values()))


def render_report(leaderboard: pd.DataFrame, results: Sequence[BenchmarkResult],
                  cards: Sequence[CaseCard], title: str, *,
                  generated_at: str | None = None) -> str:
    """The whole report as one self-contained HTML document.

    ``leaderboard`` comes from ``build_leaderboard(results)``; ``cards`` from
    ``build_case_cards`` (cards of several models on one case are shown together, once).
    ``generated_at`` is printed verbatim when given; nothing is read from the clock.
    """
    models = sorted({r.model for r in results})
    recordings = sorted({r.recording for r in results})
    sub = [f"{len(models)} model{'s' if len(models) != 1 else ''}",
           f"{len(recordings)} recording{'s' if len(recordings) != 1 else ''}",
           f"{sum(r.vqa.overall.n for r in results):,} scored answers"]
    if generated_at:
        sub.append(f"generated {generated_at}")
    nav = "".join(f'<a href="#{a}">{_e(t)}</a>' for a, t in (
        ("headline", "Headline"), ("families", "Families"), ("recordings", "Recordings"),
        ("pope", "POPE"), ("mcq", "MCQ"), ("judge", "Judge"), ("vision", "Vision"),
        ("chair", "CHAIR"), ("cases", "Cases")))
    body = "".join([
        _headline(leaderboard), _families(leaderboard), _recordings(leaderboard),
        _pope(results), _mcq(results), _judge(results), _vision(results), _chair(results),
        _cases(cards),
    ])
    footer = ("Leaderboard rows for all recordings are recomputed from pooled counts, never "
              "averaged from per-recording percentages. This report shows private ground truth: "
              "do not share it with models under test.")
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>"
        f'<header class="top"><div class="wrap"><h1>{_e(title)}</h1>'
        f'<p class="sub">{_e(" · ".join(sub))}</p><nav>{nav}</nav></div></header>'
        f'<main class="wrap">{body}</main>'
        f'<footer class="wrap">{_e(footer)}</footer></body></html>\n'
    )


def write_report(html_text: str, path: Path) -> Path:
    """Write the report atomically (UTF-8) and return its path."""
    return write_text_atomic(Path(path), html_text)
