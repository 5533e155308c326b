"""The report's case browser: every case of every model as one JSON blob, each frame's overlay as
one JPEG (a data: URI, or a file beside the report: :mod:`eval_assets.report.frame_files`),
filtered and paged by the inline script (``static/report.js``).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from eval_assets.report.frame_files import FRAMES_DIR, frame_src
from eval_assets.report.markup import (
    esc,
    section,
)
from eval_assets.report.overlays import DEFAULT_DEPTH_RANGE, depth_colours
from eval_assets.schemas.report import CaseCard, FrameImage, frame_key

CASES_PER_PAGE = 20


_RAW_LIMIT = 2000  # characters of a raw reply shown before it is cut (the rest is counted)


# The outcomes the "wrong" filter shows (a parse failure and a failed call score as wrong).
_WRONG = ("incorrect", "parse_failure", "failed_call")

_BADGES = {
    "correct": "correct",
    "incorrect": "wrong",
    "parse_failure": "parse failure",
    "failed_call": "failed call",
    "judged": "judged",
    "judge_failed": "judge failed",
}


def _ramp() -> str:
    lo, hi = DEFAULT_DEPTH_RANGE
    stops = depth_colours(np.linspace(lo, hi, 9))
    css = ", ".join(f"rgb({r},{g},{b}) {i * 12.5:g}%" for i, (r, g, b) in enumerate(stops))
    return (f'<span>LiDAR range: {lo:g} m<span class="ramp" style="background:'
            f'linear-gradient(to right, {css})"></span>{hi:g}+ m</span>')


def _script_json(value: Any) -> str:
    """JSON safe inside a ``<script>`` element: no ``<``, ``>`` or ``&`` can end it early."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _raw(text: str | None) -> tuple[str | None, int]:
    if text is None or len(text) <= _RAW_LIMIT:
        return text, 0
    return text[:_RAW_LIMIT], len(text) - _RAW_LIMIT


# The case data is columnar: a case is a row of CASE_FIELDS, its answers rows of ANSWER_FIELDS,
# repeated strings (models, recordings, families, statuses, kinds) indices into lists stored once,
# trailing nulls dropped. As objects with named keys, the answers were three quarters of the page
# (10 recordings x 5 models: 1.3 MB of a 2.1 MB page); as rows the blob is 2.6x smaller.
# The blob names its fields and which of them are interned, so ``decode_case_data`` and the same
# steps at the top of ``static/report.js`` read it back without a second copy of either.
CASE_FIELDS = ("id", "recording", "frame", "kind", "family", "question", "choices", "gold",
               "objects", "evidence", "answers", "corrected", "bias", "solvable")
ANSWER_FIELDS = ("model", "status", "choice", "tier", "raw", "cut", "error", "latency", "judge")
JUDGE_FIELDS = ("score", "reasoning", "error", "category", "model")
_INTERNED = {"recording": "recordings", "kind": "kinds", "family": "families"}
_INTERNED_ANSWER = {"model": "models", "status": "statuses"}


def _row(values: Sequence[Any]) -> list[Any]:
    """``values`` as a list without its trailing nulls (a reader fills them back)."""
    row = list(values)
    while row and row[-1] is None:
        row.pop()
    return row


class _Interner:
    """Distinct strings of each interned field, in sorted order, and their indices."""

    def __init__(self, values: dict[str, set[str]]) -> None:
        self.lists = {name: sorted(v) for name, v in values.items()}
        self._index = {name: {s: i for i, s in enumerate(v)} for name, v in self.lists.items()}

    def __call__(self, name: str, value: str) -> int:
        return self._index[name][value]


def _answer_row(card: CaseCard, intern: _Interner) -> list[Any]:
    raw, cut = _raw(card.raw_response)
    judge = None
    if card.judge is not None:
        j = card.judge
        judge = _row((j.score, j.reasoning or None, j.error, j.error_category, j.judge_model))
    return _row((
        intern("models", card.model), intern("statuses", card.status), card.predicted_choice,
        card.tier, raw, cut or None, card.error,
        # Milliseconds are all the page shows (two decimals of seconds).
        None if card.latency_s is None else round(card.latency_s, 3),
        judge))


def _corrected(group: Sequence[CaseCard]) -> dict[str, str] | None:
    """The case's gold correction as the page shows it (its line and the reason), when the
    gold of every model's card is the corrected one; last in the row, so absent costs nothing."""
    corrections = {c.correction for c in group}
    if len(corrections) != 1 or (correction := corrections.pop()) is None:
        # Cards scored before and after the correction disagree on the gold: the rows the
        # metrics wrote say which gold each model was scored against, so nothing is claimed.
        return None
    return {"text": correction.text(), "reason": correction.reason}


def _case_data(cards: Sequence[CaseCard]) -> dict[str, Any]:
    """The browser's data: interned string lists, field names, and one row per case."""
    groups: dict[tuple[str, str], list[CaseCard]] = {}
    for card in cards:
        groups.setdefault((card.recording, card.case_id), []).append(card)
    intern = _Interner({
        "recordings": {c.recording for c in cards}, "kinds": {c.kind for c in cards},
        "families": {c.family for c in cards}, "models": {c.model for c in cards},
        "statuses": {c.status for c in cards}})
    rows = []
    for group in groups.values():
        first = group[0]
        rows.append(_row((
            first.case_id, intern("recordings", first.recording), first.frame_index,
            intern("kinds", first.kind), intern("families", first.family), first.question,
            first.choices, first.gold, first.object_names, first.evidence or None,
            [_answer_row(c, intern) for c in sorted(group, key=lambda c: c.model)],
            _corrected(group), first.bias_score, first.blind_solvable)))
    return {**intern.lists, "case_fields": CASE_FIELDS, "answer_fields": ANSWER_FIELDS,
            "judge_fields": JUDGE_FIELDS, "case_interned": _INTERNED,
            "answer_interned": _INTERNED_ANSWER, "cases": rows}


def _record(fields: Sequence[str], row: Sequence[Any], lists: dict[str, Any],
            interned: dict[str, str]) -> dict[str, Any]:
    out = {f: (row[i] if i < len(row) else None) for i, f in enumerate(fields)}
    for field_name, list_name in interned.items():
        if out[field_name] is not None:
            out[field_name] = lists[list_name][out[field_name]]
    return out


def decode_case_data(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The cases of a ``case-data`` blob as objects (as the page's script decodes them):
    named fields, interned strings resolved, ``frame_key`` added, each answer's ``cut`` 0 and
    a judge's ``reasoning`` "" where absent."""
    cases = []
    for row in data["cases"]:
        case = _record(data["case_fields"], row, data, data["case_interned"])
        case["frame_key"] = frame_key(case["recording"], case["frame"])
        answers = []
        for answer_row in case["answers"] or []:
            answer = _record(data["answer_fields"], answer_row, data, data["answer_interned"])
            answer["cut"] = answer["cut"] or 0
            if answer["judge"] is not None:
                answer["judge"] = _record(data["judge_fields"], answer["judge"], data, {})
                answer["judge"]["reasoning"] = answer["judge"]["reasoning"] or ""
            answers.append(answer)
        case["answers"] = answers
        cases.append(case)
    return cases


def _jpeg_uri(jpeg: bytes) -> str:
    return "data:image/jpeg;base64," + base64.b64encode(jpeg).decode("ascii")


def _options(name: str, label: str, values: Sequence[tuple[str, str]],
             first: str = "all") -> str:
    opts = "".join(f'<option value="{esc(v)}">{esc(text)}</option>' for v, text in values)
    return (f'<label>{esc(label)}<select id="f-{name}"><option value="">{esc(first)}</option>'
            f"{opts}</select></label>")


def cases_section(cards: Sequence[CaseCard], frames: Sequence[FrameImage], *,
                  frames_beside: bool = False) -> str:
    """Every case card, browsable; ``frames_beside``: the frames are linked as files of
    ``frame_files(frames)`` beside the report (loaded when shown) instead of inlined."""
    lead = ("Every case, with the ground truth drawn on the frame the model saw: each "
            "detection's box (label: median LiDAR range, or detector score) and mask outline "
            "(outlines only, so object colours stay as the model saw them), and LiDAR points "
            "projected with the rectified intrinsics. Each model's raw reply is shown as "
            "received. Filter by model, family, recording, outcome, right or wrong, and the "
            "bias audit's blind-solvable flag (a forest that sees no pixel solves the case out "
            "of fold: bias score s \u2265 the audit's threshold, VSI-Bench-Debiased's TsT); "
            "each case shows its bias score s, the out-of-fold probability that a blind guess "
            "is right (its MRA for a number). Sort by s to read the most guessable cases "
            "first. The filter is kept in the address "
            "(#cases?model=\u2026&amp;result=wrong&amp;blind=yes), so a view can be linked.")
    if frames_beside:
        lead += (f" The frames are files in the <code>{FRAMES_DIR}/</code> folder beside this "
                 "page, loaded as their cards are shown: copy that folder with the page.")
    src = frame_src if frames_beside else _jpeg_uri
    if not cards:
        return section("cases", "Cases", lead, '<p class="empty">No case cards.</p>')
    badges = "".join(f'<span class="badge b-{k}">{esc(v)}</span> ' for k, v in _BADGES.items())
    legend = f'<div class="legend">{_ramp()}<span>{badges}</span></div>'
    cases = _case_data(cards)
    counts: dict[str, int] = {}
    for card in cards:
        counts[card.status] = counts.get(card.status, 0) + 1
    models = sorted({c.model for c in cards})
    families = sorted({c.family for c in cards})
    recordings = sorted({c.recording for c in cards})
    audited = [c for c in {(c.recording, c.case_id): c for c in cards}.values()
               if c.blind_solvable is not None]
    flagged = sum(1 for c in audited if c.blind_solvable)
    right = sum(1 for c in cards if c.status == "correct")
    wrong = sum(1 for c in cards if c.status in _WRONG)
    filters = "".join([
        _options("model", "Model", [(m, m) for m in models]),
        _options("family", "Family", [(f, f.replace("_", " ")) for f in families]),
        _options("recording", "Recording", [(r, r) for r in recordings]),
        _options("outcome", "Outcome", [(k, f"{v} ({counts[k]:,} in all)")
                                        for k, v in _BADGES.items() if k in counts]),
        _options("result", "Right / wrong", [
            ("right", f"right ({right:,} answers)"),
            ("wrong", f"wrong, unparsed or failed ({wrong:,})")]),
        _options("blind", "Blind-solvable (bias audit)", [
            ("yes", f"flagged ({flagged:,} cases)"),
            ("no", f"not flagged ({len(audited) - flagged:,})"),
            ("unscored", "no bias score")]),
        _options("sort", "Order", [("bias", "bias score, highest first")], first="dataset"),
    ])
    pager = ('<div class="pager"><button type="button" data-step="-1">\u2190 previous'
             '</button><span class="page-info"></span><button type="button" data-step="1">'
             "next \u2192</button></div>")
    data = {"page_size": CASES_PER_PAGE, "labels": _BADGES, "wrong": _WRONG, **cases}
    frame_data = {
        f.key: {"src": src(f.overlay_jpeg), "plain": src(f.plain_jpeg),
                "w": f.width, "h": f.height, "note": f.note}
        for f in sorted(frames, key=lambda f: (f.recording, f.frame_index))
    }
    body = (legend + f'<div id="case-browser"><div class="filters">{filters}</div>'
            f'<p id="case-count" class="summary"></p>{pager}<div id="case-list"></div>{pager}'
            "</div><noscript><p class=\"notice\">The case browser needs JavaScript (inline, "
            "nothing is fetched).</p></noscript>"
            f'<script type="application/json" id="case-data">{_script_json(data)}</script>'
            f'<script type="application/json" id="frame-data">{_script_json(frame_data)}'
            "</script>")
    return section("cases", f"Cases ({len(cases['cases']):,})", lead, body)
