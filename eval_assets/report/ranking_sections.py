"""The report's ranking sections: headline, coverage matrix, paired comparisons, families and
recordings. They read the leaderboard table (VQA accuracy pooled per case over case sets).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from eval_assets.metrics.headline import HEADLINE_METHOD, MIN_FAMILY_N
from eval_assets.metrics.stats import MIN_RELIABLE_N, PairedComparison
from eval_assets.report.coverage import Coverage, short_sha
from eval_assets.report.leaderboard import (
    ALL_RECORDINGS,
    ANSWERED,
    COMMON,
    family_column,
    leaderboard_families,
    ranked_rows,
)
from eval_assets.report.markup import (
    INTERVAL_NOTE,
    NA,
    acc_cell,
    chart,
    charts,
    count,
    esc,
    flag,
    low_n,
    meter,
    missing,
    p_text,
    pct,
    section,
    table,
)


def _deff(estimate: Any) -> str:
    """The design effect the interval used (the estimate floored at 1), the estimate on hover."""
    if missing(estimate):
        return '<span class="na" title="not estimable; taken as 1">1 (n/a)</span>'
    used = max(1.0, float(estimate))
    return f'<span title="estimated {float(estimate):.2f}, floored at 1">{used:.2f}</span>'


def _coverage_box(coverage: Coverage, link: bool = True) -> str:
    """What the ranking is on, in a warning box when anything is missing, stale or left out."""
    if coverage.needs_warning:
        more = ' <a href="#coverage">Coverage matrix</a>.' if link else ""
        return (f'<div class="warnbox" role="note"><b>Not every result is in the ranking.</b> '
                f"{esc(coverage.summary())}{more}</div>")
    return f'<p class="summary">{esc(coverage.summary())}</p>'


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
        rows.append([f'<span class="model">{esc(r.model)}</span>',
                     acc_cell(r.vqa_accuracy, r.vqa_ci_low, r.vqa_ci_high, r.n_cases),
                     count(r.n_cases), count(outside),
                     "yes" if r.comparable else
                     '<span class="flag">not comparable: different cases</span>'])
    return ("<h3>Every case each model answered: not a ranking</h3>"
            '<p class="summary">Each model on all of its usable cases. Where these case sets '
            "differ, a higher number can mean easier questions rather than a better model: "
            "compare models only in the table above.</p>" + table(headers, rows))


def _family_ns(pooled: pd.DataFrame, families: Sequence[str]) -> str:
    """Each family's n on the common cases: the sample of the mean over families. A family's
    score is n/a in every row when its gold answers leave nothing to measure (uninformative):
    that depends on the labels alone, so the first row says it for all."""
    first = pooled.iloc[0]
    parts = []
    for family in families:
        n = int(first[family_column(family, "n")])
        name = esc(family.replace("_", " "))
        if n >= MIN_FAMILY_N and missing(first.get(family_column(family, "score"))):
            parts.append(f'{name} {n:,} <span class="flag">not in the mean: uninformative'
                         "</span>")
        elif n >= MIN_FAMILY_N:
            parts.append(f"{name} {n:,}")
        elif n > 0:
            parts.append(f'{name} {n:,}{flag(n)} <span class="flag">not in the mean</span>')
    if not parts:
        return ""
    return ('<p class="summary" id="headline-families"><b>Families (n common cases):</b> '
            + " · ".join(parts) + "</p>")


def _caa(value: Any) -> str:
    """A chance-adjusted score in points: 0 the chance level, 100 all right."""
    return NA if missing(value) else f"{float(value) * 100:+.1f}"


def _model_cell(r: Any) -> str:
    """The model's name, and which blind baseline it is when it is one."""
    name = f'<span class="model">{esc(r.model)}</span>'
    kind = getattr(r, "baseline", "")
    return name if missing(kind) or not kind else \
        f'{name} <span class="ci">baseline ({esc(kind)})</span>'


def _over_blind(r: Any) -> str:
    """The row's headline minus the best blind baseline's, in points, with its interval."""
    value = getattr(r, "over_blind", math.nan)
    if missing(value):
        return NA
    return (f"{_signed_pts(value)} <span class=\"ci\">[{_signed_pts(r.over_blind_ci_low)}, "
            f"{_signed_pts(r.over_blind_ci_high)}] vs {esc(r.best_blind)}</span>")


HEADLINE_LEAD = (
    "Every ranked model on the same {n:,} common cases (the cases each of them answered; a "
    "case is a recording, dataset version and case id), pooled over recordings. "
    "<b>Mean over families</b> (the headline, as VSI-Bench's overall; models are ranked on "
    "it): " + esc(HEADLINE_METHOD.removeprefix("Headline: ")) + " "
    "Every family weighs the same however many cases it has: a family of 3 cases would "
    "move the headline by a coin flip (two copies of one random guesser with different seeds "
    "scored 10 points apart before the minimum n); with no family in the mean the headline "
    "is n/a and the raw pooled accuracy ranks. "
    "The spatial families (questions across frames; numeric answers scored by "
    "mean relative accuracy) join the mean from each model's own answers to them, which the "
    "common cases do not restrict; their n are in the Spatial and Numeric sections, and "
    "<i>Families</i> counts every family in the mean. "
    "<b>Chance</b>: the mean of those families' chances, what every answer prior (a "
    "constant, each family's most common answer, its median number, no answer) scores "
    "exactly and a random guess in expectation. <b>Chance-adjusted (CAA)</b>: (mean over "
    "families &minus; chance) / (1 &minus; chance), in points: 0 any answer that ignores the "
    "image, 100 all right, below 0 worse than chance. <b>Over best blind</b>: the headline "
    "minus that of the best blind baseline other than the row itself (the random guesser, "
    "a blind local model or the frequency baseline, marked <i>baseline</i> and ranked among "
    "the models), on the cases both answered, with a paired 95% interval (delta method, "
    "clustered by frame). "
    "<b>Pooled accuracy</b> beside it is raw: correct / n over dimOS's single-image cases, "
    "where the largest family and its answer mix weigh most, so a guesser of each family's "
    "most common answer scores high on it; <b>Raw chance</b> is the mean of 1 / "
    "n<sub>i</sub> over those cases (n<sub>i</sub> the number of choices) and <b>Raw CAA</b> "
    "SITE's (correct &minus; &Sigma; 1/n<sub>i</sub>) / (N &minus; &Sigma; 1/n<sub>i</sub>) "
    "of it: 0 is a uniform guess, but an answer-frequency prior scores above 0. Parse "
    "failures and failed calls count as wrong in both, except that a numeric reply without "
    "a number scores what its family's median would. ")


def headline_section(leaderboard: pd.DataFrame, coverage: Coverage) -> str:
    title = "Headline: mean over question families"
    if leaderboard.empty:
        return section("headline", title, "",
                        '<p class="empty">No results.</p>' + _coverage_box(coverage))
    pooled = ranked_rows(leaderboard)
    box = _coverage_box(coverage)
    if pooled.empty:
        body = (box + '<p class="empty">No ranking: no case is common to every model, so no '
                "two models can be compared on the same questions.</p>"
                + _answered(leaderboard, coverage))
        return section("headline", title, "", body)
    headers = [("#", True), ("Model", False), ("Mean over families [95% CI]", False),
               ("Families", True), ("Chance", True), ("Chance-adjusted (CAA), pts", True),
               ("Over best blind [95% CI], pts", True), ("Pooled accuracy [95% CI]", False),
               ("", False), ("n (common)", True), ("Frames", True), ("Design effect", True),
               ("Correct", True), ("Parse failures", True), ("Failed calls", True),
               ("Raw chance", True), ("Raw CAA, pts", True)]
    rows, classes = [], []
    for rank, r in enumerate(pooled.itertuples(index=False), start=1):
        rows.append([
            str(rank), _model_cell(r),
            "<b>" + acc_cell(r.family_mean, r.family_mean_ci_low, r.family_mean_ci_high)
            + "</b>", count(r.n_families), pct(r.headline_chance), _caa(r.caa),
            _over_blind(r),
            acc_cell(r.vqa_accuracy, r.vqa_ci_low, r.vqa_ci_high, r.n_cases),
            meter(r.vqa_accuracy, r.vqa_ci_low, r.vqa_ci_high, r.chance, r.n_cases),
            count(r.n_cases), count(r.n_frames), _deff(r.design_effect), count(r.correct),
            count(r.parse_failures), count(r.failed_calls), pct(r.chance), _caa(r.raw_caa),
        ])
        classes.append("lown" if low_n(r.n_cases) else "")
    n = int(pooled["n_cases"].iloc[0])
    lead = (HEADLINE_LEAD.format(n=n) + f"{INTERVAL_NOTE} Design effect n/a: not estimable "
            "(fewer than 2 frames, or accuracy 0 or 1), taken as 1. Bar: raw pooled accuracy; "
            "black brackets: interval; red dashes: raw chance. Rows over fewer than "
            f"{MIN_RELIABLE_N} cases are faded and marked.")
    body = (box + table(headers, rows, classes)
            + _family_ns(pooled, leaderboard_families(leaderboard))
            + chart(charts().headline_chart, leaderboard,
                     "Bar chart of raw pooled VQA accuracy per model on the common cases")
            + _answered(leaderboard, coverage))
    return section("headline", f"{title} on {n:,} common cases", lead, body)


def coverage_section(coverage: Coverage) -> str:
    """The coverage matrix: recordings x models, each cell ok (n cases), missing or stale."""
    lead = ("Every expected recording (rows) and configured model (columns). <b>ok</b>: a "
            "result on the current dataset, with its number of scored cases (and the most any "
            "model answered on that dataset, when fewer); <b>missing</b>: no result yet; "
            "<b>stale</b>: a result for another version of the recording's dataset, or scored "
            "on answers or label overrides that changed since (the reason is in the cell; it "
            "is recomputed). Missing and stale cells are in no number of this report. "
            "<b>Common</b>: the recording's cases in the ranking.")
    if not coverage.cells:
        return section("coverage", "Coverage", lead,
                        '<p class="empty">No expected recording or model.</p>')
    headers = [("Recording", False)] + [(m, False) for m in coverage.models] + [
        ("Common", True)]
    rows = []
    for rec in coverage.recordings:
        cells = [c for c in coverage.cells if c.recording == rec]
        most = {sha: max(c.n_cases for c in cells if c.status == "ok"
                         and c.dataset_sha256 == sha)
                for sha in {c.dataset_sha256 for c in cells if c.status == "ok"}}
        row = [f"<b>{esc(rec)}</b>"]
        for c in cells:
            if c.status == "ok":
                top = most[c.dataset_sha256]
                of = f" of {top:,}" if c.n_cases < top else ""
                text = f"ok ({c.n_cases:,}{of} case{'' if c.n_cases == 1 and not of else 's'})"
            elif c.status == "stale":
                text = f'stale <span class="ci">({esc(c.reason)})</span>'
            else:
                text = "missing"
            row.append(f'<span title="dataset {esc(short_sha(c.dataset_sha256))}" '
                       f'class="cov-{c.status}">{text}</span>')
        row.append(count(coverage.common_by_recording.get(rec, 0)))
        rows.append(row)
    return section("coverage", "Coverage", lead, _coverage_box(coverage, link=False)
                    + table(headers, rows))


def _signed_pts(value: Any) -> str:
    return NA if missing(value) else f"{float(value) * 100:+.1f}"


def _adjusted(c: PairedComparison) -> str:
    return NA if c.mcnemar_p_adjusted is None else p_text(c.mcnemar_p_adjusted)


def _family_comparisons(comparisons: Sequence[PairedComparison]) -> str:
    """Per-family comparisons: a count, and the rows a reader could misread (raw p < 0.05)."""
    if not comparisons:
        return ""
    shown = [c for c in comparisons if c.n_common and c.mcnemar_p < 0.05]
    significant = sum(1 for c in comparisons if c.significant)
    text = (f'<h3 id="family-comparisons">Per family</h3><p class="summary">'
            f"{len(comparisons):,} comparisons of a pair of models within one family, in the "
            f"same Holm adjustment as the table above: {significant:,} significant, "
            f"{len(shown) - sum(1 for c in shown if c.significant):,} more with a raw p below "
            "0.05 that does not survive the adjustment. Listed: those with a raw p below "
            "0.05.</p>")
    if not shown:
        return text
    headers = [("Family", False), ("Models (first vs second)", False),
               ("Common cases / frames", True), ("Difference [95% CI], pts", True),
               ("McNemar p (raw)", True), ("Holm p", True), ("Verdict", False)]
    rows = []
    for c in shown:
        verdict = (f'<span class="verdict-yes">{esc(c.better)} is significantly better</span>'
                   if c.significant and c.better is not None else
                   '<span class="verdict-no">not significant after adjustment</span>')
        rows.append([esc((c.family or "").replace("_", " ")),
                     f'<span class="model">{esc(c.model_a)}</span> vs '
                     f'<span class="model">{esc(c.model_b)}</span>',
                     f"{count(c.n_common)} / {count(c.n_frames)}",
                     f"{_signed_pts(c.difference)} <span class=\"ci\">"
                     f"[{_signed_pts(c.difference_ci_low)}, {_signed_pts(c.difference_ci_high)}]"
                     "</span>", p_text(c.mcnemar_p), _adjusted(c), verdict])
    return text + table(headers, rows)


def comparisons_section(comparisons: Sequence[PairedComparison]) -> str:
    """Every pair overall, then the per-family comparisons (``family`` set) of the same table."""
    by_family = [c for c in comparisons if c.family is not None]
    comparisons = [c for c in comparisons if c.family is None]
    lead = ("Every two models on the cases both answered (failed calls and parse failures count "
            "as wrong). <b>McNemar p</b>: exact two-sided test on the discordant cases (only "
            "one model right); it treats cases as independent. <b>Holm p</b>: McNemar's p "
            "adjusted for every comparison of this table, overall and per family (Holm's "
            "step-down method), since among many comparisons some reach p &lt; 0.05 by chance "
            "alone. <b>Difference</b>: accuracy of "
            "the first minus the second, in points, with a 95% paired cluster-bootstrap "
            "interval (frames resampled, fixed seed). <b>Significant</b> when the Holm p "
            "&lt; 0.05 <i>and</i> the interval excludes 0. <b>MDD</b>: the smallest true "
            "difference these "
            "cases would detect with 80% power at alpha 0.05 (Connor's formula with the "
            "observed discordance, n divided by the frame design effect); a difference smaller "
            "than the MDD going undetected says little.")
    if not comparisons:
        return section("comparisons", "Is one model better than another?", lead,
                        '<p class="empty">Fewer than two models: nothing to compare.</p>')
    headers = [("Models (first vs second)", False), ("Common cases / frames", True),
               ("Accuracy", True), ("Only first / only second right", True),
               ("Difference [95% CI], pts", True), ("McNemar p (raw)", True), ("Holm p", True),
               ("MDD, pts", True), ("Verdict", False)]
    rows, notes = [], []
    for c in comparisons:
        pair = (f'<span class="model">{esc(c.model_a)}</span> vs '
                f'<span class="model">{esc(c.model_b)}</span>')
        if c.n_common == 0:
            rows.append([pair, "0", NA, NA, NA, NA, NA, NA,
                         '<span class="verdict-no">no common cases</span>'])
            continue
        accs = f"{pct(c.accuracy_a)} / {pct(c.accuracy_b)}"
        diff = (f"{_signed_pts(c.difference)} <span class=\"ci\">"
                f"[{_signed_pts(c.difference_ci_low)}, {_signed_pts(c.difference_ci_high)}]"
                "</span>")
        mdd = NA if c.mdd is None else f"{c.mdd * 100:.1f}"
        if c.mdd is not None and c.mdd_discordance_assumed:
            mdd += "*"
        if c.significant and c.better is not None:
            verdict = (f'<span class="verdict-yes">{esc(c.better)} is significantly better'
                       "</span>")
        elif (c.mcnemar_p < 0.05 and c.mcnemar_p_adjusted is not None
              and c.mcnemar_p_adjusted >= 0.05):
            verdict = ('<span class="verdict-no">no significant difference after adjusting '
                       "for the table's other comparisons (raw p &lt; 0.05)</span>")
        elif c.mdd is not None and c.difference is not None and abs(c.difference) < c.mdd:
            verdict = ('<span class="verdict-no">no significant difference; the observed '
                       "difference is below what these cases can detect</span>")
        else:
            verdict = '<span class="verdict-no">no significant difference</span>'
        rows.append([pair, f"{count(c.n_common)} / {count(c.n_frames)}", accs,
                     f"{count(c.a_only)} / {count(c.b_only)}", diff, p_text(c.mcnemar_p),
                     _adjusted(c), mdd, verdict])
    if any(c.mdd_discordance_assumed for c in comparisons):
        notes.append('<p class="summary">* Fewer discordant cases were observed than such a '
                     "difference needs, so the MDD assumes the least possible discordance: it "
                     "is a lower bound.</p>")
    return section("comparisons", "Is one model better than another?", lead,
                    table(headers, rows) + "".join(notes) + _family_comparisons(by_family))


def families_section(leaderboard: pd.DataFrame) -> str:
    pooled = leaderboard[(leaderboard["recording"] == ALL_RECORDINGS)
                         & (leaderboard["case_set"] == COMMON)]
    families = leaderboard_families(leaderboard)
    if not families or pooled.empty:
        why = ("No VQA cases were scored." if not families or leaderboard.empty else
               "No ranking (no case is common to every model), so no family comparison.")
        return section("families", "By question family", "", f'<p class="empty">{why}</p>')
    models = list(pooled["model"])
    headers = [("Family", False), ("Chance", True)] + [(m, False) for m in models]
    rows = []
    for family in families:
        ns = pooled[family_column(family, "n")]
        with_cases = pooled[ns > 0]
        chance = (with_cases[family_column(family, "chance")].iloc[0]
                  if not with_cases.empty else math.nan)
        cells = [f"<b>{esc(family.replace('_', ' '))}</b>", pct(chance)]
        for _, sel in pooled.iterrows():
            n = int(sel[family_column(family, "n")])
            if n == 0:
                cells.append(NA)
                continue
            caa = sel.get(family_column(family, "caa"))
            cell = (acc_cell(sel[family_column(family, "accuracy")],
                              sel[family_column(family, "ci_low")],
                              sel[family_column(family, "ci_high")], n)
                    + f' <span class="ci">n={n}</span>'
                    + ("" if missing(caa) else f' <span class="ci">CAA {_caa(caa)}</span>'))
            cells.append(f'<span class="lown">{cell}</span>' if low_n(n) else cell)
        rows.append(cells)
    lead = ("The common cases (those every ranked model answered), pooled over recordings. "
            "Dashed marks in the chart are each family's chance level; "
            "a family near chance is one the models have not learned from the image. "
            "Each cell is the family's raw accuracy; CAA beside it is the headline's "
            "chance-adjusted score of the family, in points: (score &minus; chance) / (1 "
            "&minus; chance), for a choice family its J (the mean over its gold answers of "
            "recall minus false-alarm rate), 0 for any answer that ignores the image (a "
            "constant, the most common answer, a random pick), 100 all right, comparable "
            "across families with different numbers of choices and answer mixes; absent "
            "where the family is uninformative (one gold answer, or too few cases of each). "
            f"{INTERVAL_NOTE} Families with fewer than {MIN_RELIABLE_N} cases are faded, "
            f"hatched and marked n&lt;{MIN_RELIABLE_N}: read them as anecdotes.")
    body = chart(charts().family_chart, leaderboard,
                  "Grouped bar chart of accuracy per family") + table(headers, rows)
    return section("families", "By question family", lead, body)


def recordings_section(leaderboard: pd.DataFrame) -> str:
    per = leaderboard[leaderboard["recording"] != ALL_RECORDINGS]
    answered = per[per["case_set"] == ANSWERED].sort_values(["recording", "model"],
                                                           kind="stable")
    if answered.empty:
        return section("recordings", "By recording", "",
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
        on_common = (acc_cell(c.vqa_accuracy, c.vqa_ci_low, c.vqa_ci_high, c.n_cases)
                     if c is not None else '<span class="na">not in the ranking</span>')
        all_cell = acc_cell(r.vqa_accuracy, r.vqa_ci_low, r.vqa_ci_high, r.n_cases)
        if not r.comparable:
            all_cell += ' <span class="flag">not comparable</span>'
        rows.append([esc(r.recording), f'<span class="model">{esc(r.model)}</span>', on_common,
                     count(c.n_cases) if c is not None else count(0), all_cell, count(r.n_cases),
                     count(r.n_frames), count(r.parse_failures), count(r.failed_calls),
                     pct(r.chance)])
        classes.append("lown" if low_n(r.n_cases) else "")
    lead = ("The chart and the first accuracy column are on the common cases, the same for "
            "every ranked model. The second is on every case the model answered on that "
            "recording; <i>not comparable</i> marks a case set that differs from the common "
            "one.")
    body = chart(charts().recording_chart, leaderboard,
                  "Grouped bar chart of accuracy per recording on the common cases") \
        + table(headers, rows, classes)
    return section("recordings", "By recording", lead, body)
