"""The static HTML report: one self-contained file (inline CSS, images as data: URIs, one inline
script, nothing fetched), so it works offline and can be mailed around.

The summary sections are plain HTML. Models are ranked only on the cases every ranked model
answered (the leaderboard's ``common`` rows); the headline says on how many, and a warning box
lists every (recording, model) cell that is missing or stale and every case left out. The
"Coverage" section is the full matrix; "Across nights" shows each model's nightly scores.

Every case of every model is browsable in the "Cases" section: the cases are one JSON blob and
each frame's overlay one JPEG data: URI (shared by all the cases of that frame); a small inline
script filters them by model, family, recording and outcome and renders one page of cards at a
time. The filter state lives in the URL hash
(``#cases?model=M&outcome=parse_failure&page=2``), so a filtered view can be linked to.

Every string that comes from data goes through ``html.escape`` in HTML, is escaped for a
``<script>`` block in the JSON, and is set with ``textContent`` by the script, never as markup.
Nothing is read from the clock: a generation time appears only when the caller passes one.
"""

from __future__ import annotations

import base64
import html
import importlib
import json
import math
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from eval_assets.atomic import write_text_atomic
from eval_assets.metrics.circular import CircularGroupStats, PositionBias
from eval_assets.metrics.stats import MIN_RELIABLE_N, PairedComparison
from eval_assets.report.coverage import Coverage, build_coverage, short_sha
from eval_assets.report.history import NightResult, NightScore, night_scores
from eval_assets.report.leaderboard import (
    ALL_RECORDINGS,
    ANSWERED,
    COMMON,
    METHODS,
    circular_by_model,
    family_column,
    leaderboard_families,
    mcq_measured,
    paired_comparisons,
    ranked_rows,
)
from eval_assets.report.overlays import DEFAULT_DEPTH_RANGE, depth_colours
from eval_assets.schemas.report import CaseCard, FrameImage, frame_key
from eval_assets.schemas.results import BenchmarkResult, JudgeScores
from eval_assets.schemas.vqa import FAMILY_NAMES

__all__ = ["CASES_PER_PAGE", "MCQ_NOT_MEASURED", "NO_NIGHTS", "render_report", "write_report"]


def charts() -> Any:
    """The chart module, imported when a report is rendered (it loads matplotlib, which the
    code location does not need at import)."""
    return importlib.import_module("eval_assets.report.charts")

CASES_PER_PAGE = 20
MCQ_NOT_MEASURED = ("AVLM MCQ not measured: cases are prompted for the choice text, not "
                    "lettered options, so the AVLM strict \u201c(X)\u201d rule would only measure "
                    "the prompt format. Choice accuracy is the VQA headline above.")
NO_NIGHTS = "No nightly runs yet."
_RAW_LIMIT = 2000  # characters of a raw reply shown before it is cut (the rest is counted)
_BADGES = {
    "correct": "correct",
    "incorrect": "wrong",
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
th{background:#f0f3f7;font-weight:600;color:#334}
tbody tr:nth-child(even){background:#fafbfc}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.nw{white-space:nowrap}
th.num{text-align:right}
td.model,span.model{font-weight:600;white-space:nowrap}
tr.pooled td{background:#eef4fb;font-weight:600}
.ci{color:var(--muted);font-weight:400;font-size:12.5px}
.meter{position:relative;width:140px;height:12px;background:#e9edf2;border-radius:6px;
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
.na{color:var(--muted)}
.lown{opacity:.6;background-image:repeating-linear-gradient(135deg,transparent 0 5px,
rgba(0,0,0,.07) 5px 7px)}
.flag{display:inline-block;font-size:11px;font-weight:700;color:var(--warn);border:1px solid
var(--warn);border-radius:4px;padding:0 4px;margin-left:4px;white-space:nowrap}
.notice{background:#fff8e6;border-left:3px solid var(--warn);padding:8px 12px;margin:6px 0;
font-size:14px}
.verdict-yes{color:var(--ok);font-weight:650}.verdict-no{color:var(--muted)}
.filters{display:flex;flex-wrap:wrap;gap:12px;align-items:end;margin:8px 0 6px;font-size:13.5px}
.filters label{display:flex;flex-direction:column;gap:2px;color:var(--muted)}
.filters select{font:inherit;padding:3px 6px;min-width:150px}
.pager{display:flex;gap:10px;align-items:center;margin:10px 0;font-size:14px}
.pager button{font:inherit;padding:3px 12px;cursor:pointer}
.pager button:disabled{cursor:default;opacity:.4}
.objects{font-size:13px;color:var(--muted);margin:0 0 6px}
figure img{cursor:zoom-in}
button.toggle{font:inherit;font-size:12.5px;margin-top:4px;padding:2px 10px;cursor:pointer}
.warnbox{background:#fff4e0;border:1px solid var(--warn);border-left:5px solid var(--warn);
border-radius:6px;padding:10px 14px;margin:8px 0 12px;font-size:14px}
.cov-ok{color:var(--ok)}.cov-missing{color:var(--bad);font-weight:600}
.cov-stale{color:var(--warn);font-weight:600}
"""

# The case browser: plain ES5, no library, every data string set with textContent.
_BROWSER_JS = r"""
(function () {
  "use strict";
  var root = document.getElementById("case-browser");
  if (!root) { return; }
  var data = JSON.parse(document.getElementById("case-data").textContent);
  var frames = JSON.parse(document.getElementById("frame-data").textContent);
  var PAGE = data.page_size;
  var KEYS = ["model", "family", "recording", "outcome"];
  var sel = {};
  KEYS.forEach(function (k) { sel[k] = document.getElementById("f-" + k); });
  var page = 0;
  var touched = false;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function answersOf(c) {
    var m = sel.model.value;
    return m ? c.answers.filter(function (a) { return a.model === m; }) : c.answers;
  }
  function matches(c) {
    if (sel.family.value && c.family !== sel.family.value) { return false; }
    if (sel.recording.value && c.recording !== sel.recording.value) { return false; }
    var shown = answersOf(c);
    if (!shown.length) { return false; }
    var o = sel.outcome.value;
    return !o || shown.some(function (a) { return a.status === o; });
  }
  function answer(c, a) {
    var d = el("div", "answer");
    var who = el("div", "who");
    who.appendChild(el("b", null, a.model));
    who.appendChild(el("span", "badge b-" + a.status, data.labels[a.status] || a.status));
    var meta = [];
    if (c.kind === "vqa") {
      meta.push("extracted choice: " + (a.choice === null ? "none" : a.choice));
      if (a.tier) { meta.push("matched by: " + a.tier); }
    }
    if (a.latency !== null) { meta.push("latency " + a.latency.toFixed(2) + " s"); }
    who.appendChild(el("span", "meta", meta.join(" \u00b7 ")));
    d.appendChild(who);
    if (a.error) { d.appendChild(el("div", "meta", "error: " + a.error)); }
    if (a.raw === null) {
      d.appendChild(el("span", "meta", "(no reply)"));
    } else {
      var more = a.cut ? "\n\u2026 (" + a.cut + " more characters)" : "";
      d.appendChild(el("pre", null, a.raw + more));
    }
    if (a.judge) {
      var j = el("div", "judge");
      var by = a.judge.model ? " (" + a.judge.model + ")" : "";
      if (a.judge.score !== null) {
        j.appendChild(document.createTextNode("Judge" + by + ": "));
        j.appendChild(el("span", "score", a.judge.score + "/10"));
      } else {
        j.appendChild(document.createTextNode("Judge" + by + ": failed" +
          (a.judge.category ? " [" + a.judge.category + "]" : "") + ": " + (a.judge.error || "")));
      }
      if (a.judge.reasoning) { j.appendChild(el("div", null, a.judge.reasoning)); }
      d.appendChild(j);
    }
    return d;
  }
  function card(c) {
    var art = el("article", "case");
    art.setAttribute("data-case", c.id);
    var h = el("header");
    h.appendChild(el("code", null, c.id));
    h.appendChild(document.createTextNode(" \u00b7 recording "));
    h.appendChild(el("b", null, c.recording));
    h.appendChild(document.createTextNode(" \u00b7 frame " + c.frame + " \u00b7 "));
    h.appendChild(el("span", "chip", c.family.replace(/_/g, " ")));
    art.appendChild(h);
    var body = el("div", "case-body");
    var fig = el("figure");
    var f = frames[c.frame_key];
    if (f) {
      var img = el("img");
      img.alt = "Frame " + c.frame + " with ground truth";
      img.loading = "lazy";
      img.width = f.w;
      img.height = f.h;
      img.src = f.src;
      img.title = "click: show the frame as the model saw it / with ground truth";
      var plain = false;
      var cap = el("figcaption", null, f.note);
      var toggle = el("button", "toggle", "show the frame as the model saw it");
      toggle.type = "button";
      var flip = function () {
        plain = !plain;
        img.src = plain ? f.plain : f.src;
        cap.textContent = plain ? "The frame as the model saw it (no ground truth drawn)."
          : f.note;
        toggle.textContent = plain ? "show the ground truth" : "show the frame as the model saw it";
      };
      img.addEventListener("click", flip);
      toggle.addEventListener("click", flip);
      fig.appendChild(img);
      fig.appendChild(cap);
      fig.appendChild(toggle);
    } else {
      fig.appendChild(el("p", "empty", "No overlay image for this frame."));
    }
    body.appendChild(fig);
    var info = el("div");
    info.appendChild(el("p", "question", c.question || "(prompt not recorded)"));
    if (c.objects.length) {
      info.appendChild(el("p", "objects", "About: " + c.objects.join(", ")));
    }
    if (c.kind === "vqa") {
      var ol = el("ol", "choices");
      ol.type = "A";
      c.choices.forEach(function (ch) {
        var li = el("li", ch === c.gold ? "gold" : null, ch);
        if (ch === c.gold) { li.appendChild(el("span", "gold-tag", "gold")); }
        ol.appendChild(li);
      });
      info.appendChild(ol);
    } else if (c.gold !== null) {
      var r = el("div", "reference");
      r.appendChild(el("b", null, "Reference: "));
      r.appendChild(document.createTextNode(c.gold));
      info.appendChild(r);
    }
    if (c.evidence) {
      var det = el("details");
      det.appendChild(el("summary", null, "Evidence behind the gold answer"));
      det.appendChild(el("pre", null, JSON.stringify(c.evidence, null, 1)));
      info.appendChild(det);
    }
    answersOf(c).forEach(function (a) { info.appendChild(answer(c, a)); });
    body.appendChild(info);
    art.appendChild(body);
    return art;
  }
  function writeHash() {
    if (!touched) { return; }
    var parts = [];
    KEYS.forEach(function (k) {
      if (sel[k].value) { parts.push(k + "=" + encodeURIComponent(sel[k].value)); }
    });
    if (page) { parts.push("page=" + (page + 1)); }
    var h = "#cases" + (parts.length ? "?" + parts.join("&") : "");
    if (location.hash !== h) {
      try { history.replaceState(null, "", h); } catch (e) { /* file: URLs may refuse */ }
    }
  }
  function readHash() {
    var h = location.hash;
    var i = h.indexOf("?");
    if (h.indexOf("#cases") !== 0 || i < 0) { return false; }
    var params = new URLSearchParams(h.slice(i + 1));
    KEYS.forEach(function (k) {
      var v = params.get(k);
      sel[k].value = "";
      if (v !== null) {
        for (var n = 0; n < sel[k].options.length; n++) {
          if (sel[k].options[n].value === v) { sel[k].value = v; }
        }
      }
    });
    var p = parseInt(params.get("page") || "1", 10);
    page = isNaN(p) ? 0 : p - 1;
    return true;
  }
  function render() {
    var list = data.cases.filter(matches);
    var pages = Math.max(1, Math.ceil(list.length / PAGE));
    page = Math.min(Math.max(page, 0), pages - 1);
    var out = document.getElementById("case-list");
    out.textContent = "";
    list.slice(page * PAGE, (page + 1) * PAGE).forEach(function (c) { out.appendChild(card(c)); });
    var first = list.length ? page * PAGE + 1 : 0;
    var last = Math.min(list.length, (page + 1) * PAGE);
    document.getElementById("case-count").textContent = list.length
      ? "Cases " + first + "\u2013" + last + " of " + list.length + " matching (" +
        data.cases.length + " in all)"
      : "No case matches these filters (" + data.cases.length + " in all).";
    root.setAttribute("data-matching", String(list.length));
    Array.prototype.forEach.call(root.querySelectorAll(".pager"), function (p) {
      p.querySelector("[data-step='-1']").disabled = page <= 0;
      p.querySelector("[data-step='1']").disabled = page >= pages - 1;
      p.querySelector(".page-info").textContent = "page " + (page + 1) + " of " + pages;
    });
    writeHash();
  }
  KEYS.forEach(function (k) {
    sel[k].addEventListener("change", function () { touched = true; page = 0; render(); });
  });
  Array.prototype.forEach.call(root.querySelectorAll(".pager button"), function (b) {
    b.addEventListener("click", function () {
      touched = true;
      page += parseInt(b.getAttribute("data-step"), 10);
      render();
      root.scrollIntoView();
    });
  });
  window.addEventListener("hashchange", function () {
    if (readHash()) { touched = true; render(); }
  });
  var preset = readHash();
  touched = preset;
  render();
  if (preset) { root.scrollIntoView(); }
}());
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


_NA = '<span class="na">n/a</span>'


def _pct(value: Any, digits: int = 1) -> str:
    return _NA if _missing(value) else f"{float(value) * 100:.{digits}f}%"


def _num(value: Any, digits: int = 2) -> str:
    return _NA if _missing(value) else f"{float(value):.{digits}f}"


def _int(value: Any) -> str:
    return _NA if _missing(value) else f"{int(value):,}"


def _low(n: Any) -> bool:
    return not _missing(n) and 0 < int(n) < MIN_RELIABLE_N


def _flag(n: Any) -> str:
    return f'<span class="flag" title="fewer than {MIN_RELIABLE_N} cases: the interval is ' \
        f'too wide to rely on">n&lt;{MIN_RELIABLE_N}</span>' if _low(n) else ""


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


def _meter(acc: float, low: float, high: float, chance: float, n: Any = None) -> str:
    if _missing(acc):
        return ""
    parts = [f'<span class="fill" style="width:{acc * 100:.1f}%"></span>']
    if not _missing(low) and not _missing(high):
        parts.append(f'<span class="band" style="left:{low * 100:.1f}%;'
                     f'width:{max(0.0, high - low) * 100:.1f}%"></span>')
    if not _missing(chance):
        parts.append(f'<span class="chance" style="left:{chance * 100:.1f}%"></span>')
    cls = "meter lown" if _low(n) else "meter"
    return f'<span class="{cls}">{"".join(parts)}</span>'


def _acc_cell(acc: Any, low: Any, high: Any, n: Any = None) -> str:
    if _missing(acc):
        return _NA
    return f'{_pct(acc)} <span class="ci">[{_pct(low)}–{_pct(high)}]</span>{_flag(n)}'


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


_INTERVAL_NOTE = ("Interval: 95%, clustered by frame (the ~30 questions of one frame are not "
                  "independent): a Wilson interval over the effective sample size n / design "
                  "effect.")


def _deff(estimate: Any) -> str:
    """The design effect the interval used (the estimate floored at 1), the estimate on hover."""
    if _missing(estimate):
        return '<span class="na" title="not estimable; taken as 1">1 (n/a)</span>'
    used = max(1.0, float(estimate))
    return f'<span title="estimated {float(estimate):.2f}, floored at 1">{used:.2f}</span>'


def _coverage_box(coverage: Coverage, link: bool = True) -> str:
    """What the ranking is on, in a warning box when anything is missing, stale or left out."""
    if coverage.needs_warning:
        more = ' <a href="#coverage">Coverage matrix</a>.' if link else ""
        return (f'<div class="warnbox" role="note"><b>Not every result is in the ranking.</b> '
                f"{_e(coverage.summary())}{more}</div>")
    return f'<p class="summary">{_e(coverage.summary())}</p>'


def _answered(leaderboard: pd.DataFrame, coverage: Coverage) -> str:
    """Each model on every case it answered, when that is not the common set: not a ranking."""
    pooled = leaderboard[(leaderboard["recording"] == ALL_RECORDINGS)
                         & (leaderboard["case_set"] == ANSWERED)]
    if pooled.empty or bool(pooled["comparable"].all()):
        return ""
    headers = [("Model", False), ("Accuracy [95% CI]", False), ("n answered", True),
               ("Outside the common set", True), ("Comparable", False)]
    rows = []
    for r in pooled.sort_values("model", kind="stable").itertuples(index=False):
        outside = int(r.n_cases) - coverage.n_common if r.model in coverage.ranked_models \
            and coverage.ranked else int(r.n_cases)
        rows.append([f'<span class="model">{_e(r.model)}</span>',
                     _acc_cell(r.vqa_accuracy, r.vqa_ci_low, r.vqa_ci_high, r.n_cases),
                     _int(r.n_cases), _int(outside),
                     "yes" if r.comparable else
                     '<span class="flag">not comparable: different cases</span>'])
    return ("<h3>Every case each model answered: not a ranking</h3>"
            '<p class="summary">Each model on all of its usable cases. Where these case sets '
            "differ, a higher number can mean easier questions rather than a better model: "
            "compare models only in the table above.</p>" + _table(headers, rows))


def _headline(leaderboard: pd.DataFrame, coverage: Coverage) -> str:
    if leaderboard.empty:
        return _section("headline", "Headline: VQA accuracy", "",
                        '<p class="empty">No results.</p>' + _coverage_box(coverage))
    pooled = ranked_rows(leaderboard)
    box = _coverage_box(coverage)
    if pooled.empty:
        body = (box + '<p class="empty">No ranking: no case is common to every model, so no '
                "two models can be compared on the same questions.</p>"
                + _answered(leaderboard, coverage))
        return _section("headline", "Headline: VQA accuracy", "", body)
    headers = [("#", True), ("Model", False), ("Accuracy [95% CI]", False), ("", False),
               ("n (common)", True), ("Frames", True), ("Design effect", True),
               ("Correct", True), ("Parse failures", True), ("Failed calls", True),
               ("Chance", True), ("Over chance", True)]
    rows, classes = [], []
    for rank, r in enumerate(pooled.itertuples(index=False), start=1):
        lift = (r.vqa_accuracy - r.chance) if not _missing(r.vqa_accuracy) else math.nan
        lift_s = _NA if _missing(lift) else f"{lift * 100:+.1f} pts"
        rows.append([
            str(rank), f'<span class="model">{_e(r.model)}</span>',
            _acc_cell(r.vqa_accuracy, r.vqa_ci_low, r.vqa_ci_high, r.n_cases),
            _meter(r.vqa_accuracy, r.vqa_ci_low, r.vqa_ci_high, r.chance, r.n_cases),
            _int(r.n_cases), _int(r.n_frames), _deff(r.design_effect), _int(r.correct),
            _int(r.parse_failures), _int(r.failed_calls), _pct(r.chance), lift_s,
        ])
        classes.append("lown" if _low(r.n_cases) else "")
    n = int(pooled["n_cases"].iloc[0])
    lead = (f"Every ranked model on the same {n:,} common cases (the cases each of them "
            "answered; a case is a recording, dataset version and case id), pooled over "
            "recordings: accuracy = correct / n, where n counts parse failures and failed calls "
            f"as wrong. {_INTERVAL_NOTE} Design effect n/a: not estimable (fewer than 2 frames, "
            "or accuracy 0 or 1), taken as 1. Chance: the mean of 1 / number of choices over "
            "the cases. Bar: accuracy; black brackets: interval; red dashes: chance. Rows over "
            f"fewer than {MIN_RELIABLE_N} cases are faded and marked.")
    body = (box + _table(headers, rows, classes)
            + _chart(charts().headline_chart, leaderboard,
                     "Bar chart of VQA accuracy per model on the common cases")
            + _answered(leaderboard, coverage))
    return _section("headline", f"Headline: VQA accuracy on {n:,} common cases", lead, body)


def _coverage(coverage: Coverage) -> str:
    """The coverage matrix: recordings x models, each cell ok (n cases), missing or stale."""
    lead = ("Every expected recording (rows) and configured model (columns). <b>ok</b>: a "
            "result on the current dataset, with its number of scored cases (and the most any "
            "model answered on that dataset, when fewer); <b>missing</b>: no result yet; "
            "<b>stale</b>: a result for another version of the recording's dataset, or marked "
            "stale. Missing and stale cells are in no number of this report. <b>Common</b>: the "
            "recording's cases in the ranking.")
    if not coverage.cells:
        return _section("coverage", "Coverage", lead,
                        '<p class="empty">No expected recording or model.</p>')
    headers = [("Recording", False)] + [(m, False) for m in coverage.models] + [
        ("Common", True)]
    rows = []
    for rec in coverage.recordings:
        cells = [c for c in coverage.cells if c.recording == rec]
        most = {sha: max(c.n_cases for c in cells if c.status == "ok"
                         and c.dataset_sha256 == sha)
                for sha in {c.dataset_sha256 for c in cells if c.status == "ok"}}
        row = [f"<b>{_e(rec)}</b>"]
        for c in cells:
            if c.status == "ok":
                top = most[c.dataset_sha256]
                of = f" of {top:,}" if c.n_cases < top else ""
                text = f"ok ({c.n_cases:,}{of} case{'' if c.n_cases == 1 and not of else 's'})"
            elif c.status == "stale":
                text = f'stale <span class="ci">({_e(c.reason)})</span>'
            else:
                text = "missing"
            row.append(f'<span title="dataset {_e(short_sha(c.dataset_sha256))}" '
                       f'class="cov-{c.status}">{text}</span>')
        row.append(_int(coverage.common_by_recording.get(rec, 0)))
        rows.append(row)
    return _section("coverage", "Coverage", lead, _coverage_box(coverage, link=False)
                    + _table(headers, rows))


def _p_value(p: float) -> str:
    return "&lt;0.0001" if p < 1e-4 else f"{p:.4f}"


def _signed_pts(value: Any) -> str:
    return _NA if _missing(value) else f"{float(value) * 100:+.1f}"


def _comparisons(comparisons: Sequence[PairedComparison]) -> str:
    lead = ("Every two models on the cases both answered (failed calls and parse failures count "
            "as wrong). <b>McNemar p</b>: exact two-sided test on the discordant cases (only "
            "one model right); it treats cases as independent. <b>Difference</b>: accuracy of "
            "the first minus the second, in points, with a 95% paired cluster-bootstrap "
            "interval (frames resampled, fixed seed). <b>Significant</b> when p &lt; 0.05 "
            "<i>and</i> the interval excludes 0. <b>MDD</b>: the smallest true difference these "
            "cases would detect with 80% power at alpha 0.05 (Connor's formula with the "
            "observed discordance, n divided by the frame design effect); a difference smaller "
            "than the MDD going undetected says little.")
    if not comparisons:
        return _section("comparisons", "Is one model better than another?", lead,
                        '<p class="empty">Fewer than two models: nothing to compare.</p>')
    headers = [("Models (first vs second)", False), ("Common cases / frames", True),
               ("Accuracy", True), ("Only first / only second right", True),
               ("Difference [95% CI], pts", True), ("McNemar p", True), ("MDD, pts", True),
               ("Verdict", False)]
    rows, notes = [], []
    for c in comparisons:
        pair = (f'<span class="model">{_e(c.model_a)}</span> vs '
                f'<span class="model">{_e(c.model_b)}</span>')
        if c.n_common == 0:
            rows.append([pair, "0", _NA, _NA, _NA, _NA, _NA,
                         '<span class="verdict-no">no common cases</span>'])
            continue
        accs = f"{_pct(c.accuracy_a)} / {_pct(c.accuracy_b)}"
        diff = (f"{_signed_pts(c.difference)} <span class=\"ci\">"
                f"[{_signed_pts(c.difference_ci_low)}, {_signed_pts(c.difference_ci_high)}]"
                "</span>")
        mdd = _NA if c.mdd is None else f"{c.mdd * 100:.1f}"
        if c.mdd is not None and c.mdd_discordance_assumed:
            mdd += "*"
        if c.significant and c.better is not None:
            verdict = (f'<span class="verdict-yes">{_e(c.better)} is significantly better'
                       "</span>")
        elif c.mdd is not None and c.difference is not None and abs(c.difference) < c.mdd:
            verdict = ('<span class="verdict-no">no significant difference; the observed '
                       "difference is below what these cases can detect</span>")
        else:
            verdict = '<span class="verdict-no">no significant difference</span>'
        rows.append([pair, f"{_int(c.n_common)} / {_int(c.n_frames)}", accs,
                     f"{_int(c.a_only)} / {_int(c.b_only)}", diff, _p_value(c.mcnemar_p), mdd,
                     verdict])
    if any(c.mdd_discordance_assumed for c in comparisons):
        notes.append('<p class="summary">* Fewer discordant cases were observed than such a '
                     "difference needs, so the MDD assumes the least possible discordance: it "
                     "is a lower bound.</p>")
    return _section("comparisons", "Is one model better than another?", lead,
                    _table(headers, rows) + "".join(notes))


def _bias_test(bias: PositionBias) -> str:
    if bias.chi2 is None or bias.p_value is None:
        return _NA
    return f"{bias.chi2:.1f} ({bias.df}), p {_p_value(bias.p_value)}"


def _shares(bias: PositionBias) -> str:
    """Per displayed position: share of answers choosing it / share of gold answers there."""
    if not bias.n:
        return _NA
    # One unbroken line per position: "1: 26% / 36%" must not wrap inside.
    return "<br>".join(
        f'<span class="nw">{p}: {_pct(a, 0)} / {_pct(g, 0)}</span>'
        for p, (a, g) in enumerate(zip(bias.answer_share, bias.gold_share, strict=True), 1))


def _circular_cell(stats: CircularGroupStats) -> str:
    return _acc_cell(stats.accuracy, stats.ci_low, stats.ci_high, stats.n)


CIRCULAR_LEAD = (
    "Each case of k choices is also asked with its choices rotated (rotation r shows "
    "choices[r:] + choices[:r]), so over its k rotations the gold answer is shown once at "
    "every position. <b>CircularEval</b>: the share of cases answered correctly under every "
    "rotation (a failed call or unparseable reply in any rotation is a miss; cases with a "
    "rotation never asked are left out and counted); chance k<sup>-k</sup>. <b>Under "
    "rotation</b>: accuracy over all k answers of those cases; <b>rotation 0</b>: the usual "
    "answer on the same cases. <b>Position bias</b>: for each displayed position, the share "
    "of answers choosing it against the share of the same prompts whose gold answer is there "
    "(answer / gold, position 1 shown first); the largest gap, and a chi-square goodness-of-fit "
    "test of chosen against gold positions (df, p; it treats answers as independent) over n "
    "answers that named a choice. A model that answers by content has no gap. ")


def _circular(results: Sequence[BenchmarkResult], coverage: Coverage) -> str:
    """CircularEval and position bias per model, and CircularEval per family."""
    lead = CIRCULAR_LEAD + _INTERVAL_NOTE + (
        f" Cells over fewer than {MIN_RELIABLE_N} cases are faded and marked.")
    title = "Position bias (CircularEval)"
    pooled = circular_by_model(results, coverage=coverage)
    if not pooled:
        return _section("circular", title, lead, '<p class="empty">Not measured: no run asked '
                        "the rotated choices (the <code>vlm</code> resource's "
                        "<code>rotations</code> is off, or <code>eval-assets vqa run</code> "
                        "ran without <code>--circular</code>).</p>")
    unmeasured = sorted({r.model for r in results if coverage.usable(r)} - set(pooled))
    headers = [("Model", False), ("Cases", False), ("CircularEval [95% CI]", False),
               ("n (not asked)", True), ("Chance", True), ("Under rotation [95% CI]", False),
               ("Answers", True), ("Rotation 0", True), ("Largest gap (position)", True),
               ("Chi-square (df), p", True), ("n", True), ("Answer / gold share by position",
                                                         False)]
    rows, classes = [], []
    for model, (case_set, c, _) in pooled.items():
        b = c.bias
        gap = _NA if b.max_gap is None else f"{b.max_gap * 100:.1f} pts ({b.max_gap_position})"
        rows.append([
            f'<span class="model">{_e(model)}</span>',
            "common" if case_set == COMMON else "every answered",
            _circular_cell(c), f"{_int(c.n)} ({_int(c.not_asked)})", _pct(c.chance),
            _acc_cell(c.rotation_accuracy, c.rotation_ci_low, c.rotation_ci_high),
            _int(c.n_answers), _pct(c.original_accuracy), gap, _bias_test(b), _int(b.n),
            _shares(b)])
        classes.append("lown" if _low(c.n) else "")
    body = _table(headers, rows, classes)
    if unmeasured:
        body += (f'<p class="summary">Not measured (no rotations asked): '
                 f"{_e(', '.join(unmeasured))}.</p>")
    families = sorted({f for _, _, by in pooled.values() for f in by},
                      key=lambda f: (FAMILY_NAMES.index(f) if f in FAMILY_NAMES
                                     else len(FAMILY_NAMES), f))
    if families:
        fam_rows = []
        for family in families:
            cells = [f"<b>{_e(family.replace('_', ' '))}</b>"]
            for _, _, by in pooled.values():
                stats = by.get(family)
                if stats is None or not stats.n:
                    cells.append(_NA)
                    continue
                cell = _circular_cell(stats) + f' <span class="ci">n={stats.n}</span>'
                cells.append(f'<span class="lown">{cell}</span>' if _low(stats.n) else cell)
            fam_rows.append(cells)
        body += ("<h3>CircularEval by question family</h3>"
                 + _table([("Family", False)] + [(m, False) for m in pooled], fam_rows))
    return _section("circular", title, lead, body)


def _families(leaderboard: pd.DataFrame) -> str:
    pooled = leaderboard[(leaderboard["recording"] == ALL_RECORDINGS)
                         & (leaderboard["case_set"] == COMMON)]
    families = leaderboard_families(leaderboard)
    if not families or pooled.empty:
        why = ("No VQA cases were scored." if not families or leaderboard.empty else
               "No ranking (no case is common to every model), so no family comparison.")
        return _section("families", "By question family", "", f'<p class="empty">{why}</p>')
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
                cells.append(_NA)
                continue
            cell = (_acc_cell(sel[family_column(family, "accuracy")],
                              sel[family_column(family, "ci_low")],
                              sel[family_column(family, "ci_high")], n)
                    + f' <span class="ci">n={n}</span>')
            cells.append(f'<span class="lown">{cell}</span>' if _low(n) else cell)
        rows.append(cells)
    lead = ("The common cases (those every ranked model answered), pooled over recordings. "
            "Dashed marks in the chart are each family's chance level; "
            "a family near chance is one the models have not learned from the image. "
            f"{_INTERVAL_NOTE} Families with fewer than {MIN_RELIABLE_N} cases are faded, "
            f"hatched and marked n&lt;{MIN_RELIABLE_N}: read them as anecdotes.")
    body = _chart(charts().family_chart, leaderboard,
                  "Grouped bar chart of accuracy per family") + _table(headers, rows)
    return _section("families", "By question family", lead, body)


def _recordings(leaderboard: pd.DataFrame) -> str:
    per = leaderboard[leaderboard["recording"] != ALL_RECORDINGS]
    answered = per[per["case_set"] == ANSWERED].sort_values(["recording", "model"],
                                                           kind="stable")
    if answered.empty:
        return _section("recordings", "By recording", "",
                        '<p class="empty">No per-recording rows.</p>')
    common = {(r.recording, r.model): r
              for r in per[per["case_set"] == COMMON].itertuples(index=False)}
    headers = [("Recording", False), ("Model", False), ("On common cases [95% CI]", False),
               ("n common", True), ("All answered [95% CI]", False), ("n answered", True),
               ("Frames", True), ("Parse failures", True), ("Failed calls", True),
               ("Chance", True)]
    rows, classes = [], []
    for r in answered.itertuples(index=False):
        c = common.get((r.recording, r.model))
        on_common = (_acc_cell(c.vqa_accuracy, c.vqa_ci_low, c.vqa_ci_high, c.n_cases)
                     if c is not None else '<span class="na">not in the ranking</span>')
        all_cell = _acc_cell(r.vqa_accuracy, r.vqa_ci_low, r.vqa_ci_high, r.n_cases)
        if not r.comparable:
            all_cell += ' <span class="flag">not comparable</span>'
        rows.append([_e(r.recording), f'<span class="model">{_e(r.model)}</span>', on_common,
                     _int(c.n_cases) if c is not None else _int(0), all_cell, _int(r.n_cases),
                     _int(r.n_frames), _int(r.parse_failures), _int(r.failed_calls),
                     _pct(r.chance)])
        classes.append("lown" if _low(r.n_cases) else "")
    lead = ("The chart and the first accuracy column are on the common cases, the same for "
            "every ranked model. The second is on every case the model answered on that "
            "recording; <i>not comparable</i> marks a case set that differs from the common "
            "one.")
    body = _chart(charts().recording_chart, leaderboard,
                  "Grouped bar chart of accuracy per recording on the common cases") \
        + _table(headers, rows, classes)
    return _section("recordings", "By recording", lead, body)


def _ordered(results: Sequence[BenchmarkResult]) -> list[BenchmarkResult]:
    return sorted(results, key=lambda r: (r.model, r.recording))


def _who(r: BenchmarkResult) -> list[str]:
    return [f'<span class="model">{_e(r.model)}</span>', _e(r.recording)]


def _not_computed(results: Sequence[BenchmarkResult]) -> str:
    """What could not be computed for want of human annotations, and why, per recording."""
    lead = ("VisionSimilarity, the LLM judge and CHAIR compare free-text frame descriptions "
            "with human annotations (<code>data/annotations/&lt;recording&gt;.jsonl</code>). "
            "Where a recording has none, this is what could not be computed, and why.")
    rows = []
    for recording in sorted({r.recording for r in results}):
        mine = [r for r in _ordered(results) if r.recording == recording]
        described = sum(r.predictions.descriptions for r in mine)
        if not described:
            rows.append([_e(recording), "all three",
                         "not computed: no frame descriptions were collected"])
            continue
        no_vision = [r.model for r in mine if r.vision is None]
        if no_vision:
            rows.append([_e(recording), "VisionSimilarity / VisionHallucination",
                         "not computed: no human annotations for this recording, so there is "
                         "no reference description to compare with"])
        missing_gt = {r.model: r.judge.failure_counts.get("missing_gt", 0)
                      for r in mine if r.judge is not None}
        if any(missing_gt.values()) or (missing_gt and no_vision):
            counts = ", ".join(f"{m}: {n:,}" for m, n in missing_gt.items() if n)
            rows.append([_e(recording), "LLM judge reference",
                         "no reference answer: a description without a human annotation has "
                         "nothing to be judged against, so the judge records it as a failure "
                         "(missing_gt), never a score"
                         + (f" (missing_gt rows: {_e(counts)})" if counts else "")])
        audit = [r.model for r in mine if r.chair is not None
                 and r.chair.ground_truth_source == "audit"]
        if audit:
            rows.append([_e(recording), "CHAIR truth source",
                         "computed against the detector evidence (audit), not human "
                         "annotations: only the objects the detector was asked about and found "
                         "count as present, so a correctly named object it was not asked about "
                         "counts as a hallucination; read CHAIR here as an upper bound"])
        if any(r.chair is None for r in mine):
            rows.append([_e(recording), "CHAIR", "not computed: no description was scored"])
    if not rows:
        return _section("not-computed", "Not computed", lead,
                        '<p class="summary">Every recording has human annotations: nothing was '
                        "left out.</p>")
    return _section("not-computed", "Not computed, and why", lead, _table(
        [("Recording", False), ("Metric", False), ("Status", False)], rows))


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def _pope_rates(tp: int, fp: int, tn: int, fn: int) -> dict[str, float | None]:
    """POPE's rates from its confusion counts; an empty denominator gives None (n/a)."""
    n = tp + fp + tn + fn
    precision, recall = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
    f1 = None
    if precision is not None and recall is not None:
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"accuracy": _ratio(tp + tn, n), "precision": precision, "recall": recall,
            "f1": f1, "yes_ratio": _ratio(tp + fp, n)}


def _pope(results: Sequence[BenchmarkResult]) -> str:
    have = [r for r in _ordered(results) if r.pope is not None]
    lead = ("Presence questions scored with the POPE rule (RUCAIBox/POPE): first sentence, "
            "\"no\"/\"not\"/\"No\" means no. Positive class: yes. A rate whose denominator is "
            "empty (precision with no \"yes\" answers, recall with no \"yes\" labels) is n/a, "
            "not 0.")
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
        # Rates from the confusion counts, so results stored before the n/a rule show n/a too.
        rates = _pope_rates(p.tp, p.fp, p.tn, p.fn)
        rows.append([*_who(r), _int(p.n), _pct(rates["accuracy"]), _pct(rates["precision"]),
                     _pct(rates["recall"]), _num(rates["f1"], 3), _pct(rates["yes_ratio"]),
                     f"{p.tp} / {p.fp} / {p.tn} / {p.fn}"])
    return _section("pope", "POPE (presence)", lead, _table(headers, rows))


def _mcq(results: Sequence[BenchmarkResult]) -> str:
    lead = ("AVLM MCQ scoring counts an answer only when it opens with a lettered option "
            "\u201c(X)\u201d, so it measures a model only on cases prompted with lettered "
            "\u201c(A) \u2026\u201d choices. The strict number is the headline, comparable with "
            "AVLM; the lenient number also accepts a bare letter, an answer line or the exact "
            "choice text.")
    scored = [r for r in _ordered(results) if int(r.mcq.get("total_mcq_questions", 0) or 0) > 0]
    have = [r for r in scored if mcq_measured(r)]
    notes = []
    not_measured = [r for r in _ordered(results) if not mcq_measured(r)]
    if not_measured:
        lettered = sum(1 for r in not_measured for row in r.vqa.rows if row.lettered)
        total = sum(len(r.vqa.rows) for r in not_measured)
        extra = (f" ({lettered:,} of {total:,} cases were lettered: a mixed prompt format is "
                 "not scored either.)" if lettered else "")
        who = ", ".join(sorted({f"{r.model} on {r.recording}" for r in not_measured}))
        notes.append(f'<p class="notice"><b>{_e(MCQ_NOT_MEASURED)}</b>{_e(extra)} '
                     f'<span class="meta">Affects: {_e(who)}.</span></p>')
    if not have:
        return _section("mcq", "MCQ accuracy (AVLM)", lead, "".join(notes))
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
    return _section("mcq", "MCQ accuracy (AVLM)", lead, "".join(notes) + _table(headers, rows))


def _judge_status(j: JudgeScores) -> str:
    """Why a judge summary has no mean: the judge's own status, else what the counts say."""
    if j.status and j.status != "scored":
        return j.status
    if j.num_success == 0 and j.num_failed:
        return f"not scored: all {j.num_failed:,} judgements failed"
    return "not scored"


def _failures(j: JudgeScores) -> str:
    if not j.failure_counts:
        return _int(j.num_failed)
    parts = ", ".join(f"{_e(k)} {v:,}" for k, v in sorted(j.failure_counts.items()))
    return f'{_int(j.num_failed)} <span class="ci">({parts})</span>'


def _judge(results: Sequence[BenchmarkResult]) -> str:
    have = [r for r in _ordered(results) if r.judge is not None]
    lead = ("Open-ended answers scored 1–10 by an LLM judge with the AVLM rubric. Failed "
            "judgements are counted by category, never averaged in as zeros; a judge whose "
            "scores are withheld (for example because it failed calibration) shows its status "
            "instead of a number.")
    if not have:
        return _section("judge", "LLM judge", lead, '<p class="empty">No judged rows.</p>')
    headers = [("Model", False), ("Recording", False), ("Judge", False), ("Judged", True),
               ("Scored", True), ("Failed", True), ("Mean", True), ("Median", True),
               ("Min–max", True), ("9–10 / 8 / 7 / 6 / 1–5", True)]
    rows, notes = [], []
    for r in have:
        j = r.judge
        assert j is not None
        d = j.score_distribution
        dist = " / ".join(str(d.get(k, 0)) for k in
                          ("excellent_9_10", "good_8", "fair_7", "poor_6", "very_poor_1_5"))
        judge_name = _e(j.judge_model)
        # The schema's flag, or the plain case of a model judging its own answers.
        if j.self_judging or j.judge_model == r.model:
            judge_name += (' <span class="flag" title="the judge is also a model under test">'
                           "self-judging</span>")
            if j.judge_model == r.model:
                why = f"was judged by itself ({_e(j.judge_model)})"
            else:
                under_test = ", ".join(j.self_judging_models) or j.judge_model
                why = (f"was judged by {_e(j.judge_model)}, which is also under test "
                       f"(as {_e(under_test)}) and so judged a competitor")
            notes.append(f'<p class="notice"><b>{_e(r.model)}</b> on {_e(r.recording)} {why}: '
                         "these scores are not independent evidence of quality.</p>")
        if j.withheld or _missing(j.mean_score):
            mean = f'<span class="na">{_e(_judge_status(j))}</span>'
            median, span = _NA, _NA
        else:
            mean, median = _num(j.mean_score), _num(j.median_score, 1)
            span = (_NA if _missing(j.min_score)
                    else f"{_num(j.min_score, 0)}–{_num(j.max_score, 0)}")
            if j.status and j.status != "scored":
                notes.append(f'<p class="summary"><b>{_e(r.model)}</b> on {_e(r.recording)}: '
                             f"judge status: {_e(j.status)}</p>")
        if j.scoring_mode == "avlm_compat" and j.coerced_rows:
            kinds = ", ".join(f"{k} {v:,}" for k, v in sorted(j.coercions.items()))
            notes.append(f'<p class="summary"><b>{_e(r.model)}</b> on {_e(r.recording)}: AVLM '
                         f"compatibility scoring coerced {j.coerced_rows:,} replies into scores"
                         f"{_e(f' ({kinds})' if kinds else '')}.</p>")
        rows.append([*_who(r), judge_name, _int(j.total_judged), _int(j.num_success),
                     _failures(j), mean, median, span, dist])
    return _section("judge", "LLM judge", lead, _table(headers, rows) + "".join(notes))


def _vision(results: Sequence[BenchmarkResult]) -> str:
    have = [r for r in _ordered(results) if r.vision is not None]
    lead = ("VisionSimilarity / VisionHallucination (Fair Forge): cosine similarity of sentence "
            "embeddings of the model's frame description and the human annotation; a frame is a "
            "hallucination when its similarity is below the threshold.")
    if not have:
        return _section("vision", "VisionSimilarity and VisionHallucination", lead,
                        '<p class="empty">No descriptions were scored: see '
                        '<a href="#not-computed">Not computed</a>.</p>')
    headers = [("Model", False), ("Recording", False), ("Embedder", False), ("Frames", True),
               ("Mean similarity", True), ("Min", True), ("Max", True), ("Threshold", True),
               ("Hallucination rate", True), ("Hallucinated", True)]
    rows, notes = [], []
    for r in have:
        v = r.vision
        assert v is not None
        rows.append([*_who(r), _e(v.embedder), _int(v.n_frames), _num(v.mean_similarity, 4),
                     _num(v.min_similarity, 4), _num(v.max_similarity, 4),
                     _num(v.threshold, 2),
                     _pct(v.hallucination_rate) if v.n_frames else _NA,
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
                     _e(_GT_SOURCES.get(c.ground_truth_source, c.ground_truth_source))])
    return _section("chair", "CHAIR", lead, _table(headers, rows))


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


def _answer_json(card: CaseCard) -> dict[str, Any]:
    raw, cut = _raw(card.raw_response)
    judge = None
    if card.judge is not None:
        j = card.judge
        judge = {"score": j.score, "reasoning": j.reasoning, "error": j.error,
                 "category": j.error_category, "model": j.judge_model}
    return {"model": card.model, "status": card.status, "choice": card.predicted_choice,
            "tier": card.tier, "raw": raw, "cut": cut, "error": card.error,
            "latency": card.latency_s, "judge": judge}


def _case_data(cards: Sequence[CaseCard]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str], list[CaseCard]] = {}
    for card in cards:
        groups.setdefault((card.recording, card.case_id), []).append(card)
    out = []
    for group in groups.values():
        first = group[0]
        out.append({
            "id": first.case_id, "recording": first.recording, "frame": first.frame_index,
            "frame_key": frame_key(first.recording, first.frame_index), "kind": first.kind,
            "family": first.family, "question": first.question, "choices": first.choices,
            "gold": first.gold, "objects": first.object_names,
            "evidence": first.evidence or None,
            "answers": [_answer_json(c) for c in sorted(group, key=lambda c: c.model)],
        })
    return out


def _jpeg_uri(jpeg: bytes) -> str:
    return "data:image/jpeg;base64," + base64.b64encode(jpeg).decode("ascii")


def _options(name: str, label: str, values: Sequence[tuple[str, str]]) -> str:
    opts = "".join(f'<option value="{_e(v)}">{_e(text)}</option>' for v, text in values)
    return (f'<label>{_e(label)}<select id="f-{name}"><option value="">all</option>{opts}'
            "</select></label>")


def _cases(cards: Sequence[CaseCard], frames: Sequence[FrameImage]) -> str:
    lead = ("Every case, with the ground truth drawn on the frame the model saw: each "
            "detection's box (label: median LiDAR range, or detector score) and mask outline "
            "(outlines only, so object colours stay as the model saw them), and LiDAR points "
            "projected with the rectified intrinsics. Each model's raw reply is shown as "
            "received. Filter by model, family, recording and outcome; the filter is kept in "
            "the address (#cases?model=\u2026&amp;outcome=\u2026), so a view can be linked.")
    if not cards:
        return _section("cases", "Cases", lead, '<p class="empty">No case cards.</p>')
    badges = "".join(f'<span class="badge b-{k}">{_e(v)}</span> ' for k, v in _BADGES.items())
    legend = f'<div class="legend">{_ramp()}<span>{badges}</span></div>'
    cases = _case_data(cards)
    counts: dict[str, int] = {}
    for card in cards:
        counts[card.status] = counts.get(card.status, 0) + 1
    models = sorted({c.model for c in cards})
    families = sorted({c.family for c in cards})
    recordings = sorted({c.recording for c in cards})
    filters = "".join([
        _options("model", "Model", [(m, m) for m in models]),
        _options("family", "Family", [(f, f.replace("_", " ")) for f in families]),
        _options("recording", "Recording", [(r, r) for r in recordings]),
        _options("outcome", "Outcome", [(k, f"{v} ({counts[k]:,} in all)")
                                        for k, v in _BADGES.items() if k in counts]),
    ])
    pager = ('<div class="pager"><button type="button" data-step="-1">\u2190 previous'
             '</button><span class="page-info"></span><button type="button" data-step="1">'
             "next \u2192</button></div>")
    data = {"page_size": CASES_PER_PAGE, "labels": _BADGES, "cases": cases}
    frame_data = {
        f.key: {"src": _jpeg_uri(f.overlay_jpeg), "plain": _jpeg_uri(f.plain_jpeg),
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
    return _section("cases", f"Cases ({len(cases):,})", lead, body)


def _night_cell(score: NightScore | None) -> str:
    if score is None or score.accuracy is None:
        return _NA
    return (f"{_acc_cell(score.accuracy, score.ci_low, score.ci_high, score.n)} "
            f'<span class="ci">n={score.n:,}</span>')


def _nights(history: Sequence[NightResult]) -> str:
    """Each model's accuracy per night: a chart and a table with n and interval per night."""
    lead = ("The nightly schedule re-queries every configured model (hosted models change "
            "without notice) and keeps each night's results. Two case sets per night: <b>on "
            "the night's common cases</b>, those every model run that night answered (compare "
            "models within a night); <b>on this model's every-night cases</b>, those this model "
            "answered on every night it ran, the same cases each night (so a change is the "
            "model's, not the questions'); the chart shows this one. A regenerated dataset "
            f"shares no case with the old one. {_INTERVAL_NOTE}")
    if not history:
        return _section("nights", "Across nights", lead, f'<p class="empty">{NO_NIGHTS}</p>')
    scores = night_scores(history)
    by = {(s.model, s.night, s.case_set): s for s in scores}
    headers = [("Model", False), ("Night", False), ("Models that night", True),
               ("On the night's common cases", False), ("On this model's every-night cases",
                                                       False), ("Answered", True)]
    rows = []
    for model in sorted({s.model for s in scores}):
        for night in sorted({s.night for s in scores if s.model == model}):
            answered = by[(model, night, "answered")]
            rows.append([f'<span class="model">{_e(model)}</span>', _e(night),
                         f'<span title="{_e(", ".join(answered.night_models))}">'
                         f"{len(answered.night_models)}</span>",
                         _night_cell(by.get((model, night, "night_common"))),
                         _night_cell(by.get((model, night, "model_trend"))),
                         _int(answered.n)])
    nights = sorted({s.night for s in scores})
    summary = (f'<p class="summary">{len(nights)} night{"s" if len(nights) != 1 else ""}: '
               f"{_e(nights[0])} to {_e(nights[-1])}.</p>")
    try:
        chart = _img(charts().history_chart(scores),
                     "Line chart of each model's accuracy per night", "chart")
    except ValueError as exc:
        chart = f'<p class="empty">{_e(f"No chart: {exc}")}</p>'

    return _section("nights", "Across nights", lead, summary + chart + _table(headers, rows))


def _methods() -> str:
    items = "".join(f"<li><b>{_e(k.replace('_', ' '))}</b>: {_e(v)}</li>"
                    for k, v in METHODS.items())
    return _section("methods", "Methods", "How every number above is computed (the same text is "
                    "in leaderboard.json).", f"<ul>{items}</ul>")


def render_report(leaderboard: pd.DataFrame, results: Sequence[BenchmarkResult],
                  cards: Sequence[CaseCard], title: str, *,
                  frames: Sequence[FrameImage] = (),
                  comparisons: Sequence[PairedComparison] | None = None,
                  coverage: Coverage | None = None,
                  history: Sequence[NightResult] = (),
                  generated_at: str | None = None) -> str:
    """The whole report as one self-contained HTML document.

    ``coverage`` comes from ``build_coverage(results, ...)`` (default: from ``results`` alone,
    every result usable); ``leaderboard`` from ``build_leaderboard(results,
    coverage=coverage)``. Only usable results and their cards are shown; missing and stale
    cells are listed. ``cards`` come from ``build_case_cards`` (cards of several models on one
    case are shown together, once) and ``frames`` from ``build_frame_images`` (a card whose frame
    is missing shows a note instead). ``comparisons`` default to ``paired_comparisons(results,
    coverage=coverage)``. ``history`` is ``load_history(...)`` for the "Across nights" section.
    ``generated_at`` is printed verbatim when given; nothing is read from the clock.
    """
    if coverage is None:
        coverage = build_coverage(results)
    results = [r for r in results if coverage.usable(r)]
    usable = {(r.recording, r.model) for r in results}
    cards = [c for c in cards if (c.recording, c.model) in usable]
    if comparisons is None:
        comparisons = paired_comparisons(results)
    models = sorted({r.model for r in results})
    recordings = sorted({r.recording for r in results})
    sub = [f"{len(models)} model{'s' if len(models) != 1 else ''}",
           f"{len(recordings)} recording{'s' if len(recordings) != 1 else ''}",
           f"{sum(r.vqa.overall.n for r in results):,} scored answers",
           f"ranked on {coverage.n_common:,} common cases" if coverage.ranked else "no ranking"]
    if generated_at:
        sub.append(f"generated {generated_at}")
    nav = "".join(f'<a href="#{a}">{_e(t)}</a>' for a, t in (
        ("headline", "Headline"), ("coverage", "Coverage"), ("comparisons", "Comparisons"),
        ("circular", "Position bias"), ("families", "Families"), ("recordings", "Recordings"),
        ("nights", "Across nights"),
        ("not-computed", "Not computed"), ("pope", "POPE"), ("mcq", "MCQ"), ("judge", "Judge"),
        ("vision", "Vision"), ("chair", "CHAIR"), ("cases", "Cases"), ("methods", "Methods")))
    body = "".join([
        _headline(leaderboard, coverage), _coverage(coverage), _comparisons(comparisons),
        _circular(results, coverage), _families(leaderboard), _recordings(leaderboard),
        _nights(history),
        _not_computed(results), _pope(results), _mcq(results), _judge(results),
        _vision(results), _chair(results), _cases(cards, frames), _methods(),
    ])
    footer = ("Models are ranked only on the cases every ranked model answered. Leaderboard "
              "rows for all recordings are recomputed from pooled cases, never averaged from "
              "per-recording percentages. This report shows private ground truth: do not share "
              "it with models under test.")
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>"
        f'<header class="top"><div class="wrap"><h1>{_e(title)}</h1>'
        f'<p class="sub">{_e(" · ".join(sub))}</p><nav>{nav}</nav></div></header>'
        f'<main class="wrap">{body}</main>'
        f'<footer class="wrap">{_e(footer)}</footer>'
        f"<script>{_BROWSER_JS}</script></body></html>\n"
    )


def write_report(html_text: str, path: Path) -> Path:
    """Write the report atomically (UTF-8) and return its path."""
    return write_text_atomic(Path(path), html_text)
