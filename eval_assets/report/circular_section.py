"""The report's CircularEval and position-bias section: each model pooled over its case set
(the leaderboard's pooling, so the numbers agree), and CircularEval per family.
"""

from __future__ import annotations

from collections.abc import Sequence

from eval_assets.metrics.circular import CircularGroupStats, PositionBias
from eval_assets.metrics.stats import MIN_RELIABLE_N
from eval_assets.report.coverage import Coverage
from eval_assets.report.leaderboard import COMMON, circular_by_model
from eval_assets.report.markup import (
    INTERVAL_NOTE,
    NA,
    acc_cell,
    count,
    esc,
    low_n,
    p_text,
    pct,
    section,
    table,
)
from eval_assets.schemas.results import CellScores
from eval_assets.vqa.declarations import family_names


def _bias_test(bias: PositionBias) -> str:
    if bias.chi2 is None or bias.p_value is None:
        return NA
    return f"{bias.chi2:.1f} ({bias.df}), p {p_text(bias.p_value)}"


def _shares(bias: PositionBias) -> str:
    """Per displayed position: share of answers choosing it / share of gold answers there."""
    if not bias.n:
        return NA
    # One unbroken line per position: "1: 26% / 36%" must not wrap inside.
    return "<br>".join(
        f'<span class="nw">{p}: {pct(a, 0)} / {pct(g, 0)}</span>'
        for p, (a, g) in enumerate(zip(bias.answer_share, bias.gold_share, strict=True), 1))


def _circular_cell(stats: CircularGroupStats) -> str:
    return acc_cell(stats.accuracy, stats.ci_low, stats.ci_high, stats.n)


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


def circular_section(results: Sequence[CellScores], coverage: Coverage) -> str:
    """CircularEval and position bias per model, and CircularEval per family."""
    lead = CIRCULAR_LEAD + INTERVAL_NOTE + (
        f" Cells over fewer than {MIN_RELIABLE_N} cases are faded and marked.")
    title = "Position bias (CircularEval)"
    pooled = circular_by_model(results, coverage=coverage)
    if not pooled:
        return section("circular", title, lead, '<p class="empty">Not measured: no run asked '
                        "the rotated choices (the <code>vlm</code> resource's "
                        "<code>rotations</code> is off, or <code>eval-assets vqa run</code> "
                        "ran with <code>--no-circular</code>).</p>")
    unmeasured = sorted({r.model for r in results if coverage.usable(r)} - set(pooled))
    headers = [("Model", False), ("Cases", False), ("CircularEval [95% CI]", False),
               ("n (not asked)", True), ("Chance", True), ("Under rotation [95% CI]", False),
               ("Answers", True), ("Rotation 0", True), ("Largest gap (position)", True),
               ("Chi-square (df), p", True), ("n", True), ("Answer / gold share by position",
                                                         False)]
    rows, classes = [], []
    for model, (case_set, c, _) in pooled.items():
        b = c.bias
        gap = NA if b.max_gap is None else f"{b.max_gap * 100:.1f} pts ({b.max_gap_position})"
        rows.append([
            f'<span class="model">{esc(model)}</span>',
            "common" if case_set == COMMON else "every answered",
            _circular_cell(c), f"{count(c.n)} ({count(c.not_asked)})", pct(c.chance),
            acc_cell(c.rotation_accuracy, c.rotation_ci_low, c.rotation_ci_high),
            count(c.n_answers), pct(c.original_accuracy), gap, _bias_test(b), count(b.n),
            _shares(b)])
        classes.append("lown" if low_n(c.n) else "")
    body = table(headers, rows, classes)
    if unmeasured:
        body += (f'<p class="summary">Not measured (no rotations asked): '
                 f"{esc(', '.join(unmeasured))}.</p>")
    known = family_names("dimos")
    families = sorted({f for _, _, by in pooled.values() for f in by},
                      key=lambda f: (known.index(f) if f in known else len(known), f))
    if families:
        fam_rows = []
        for family in families:
            cells = [f"<b>{esc(family.replace('_', ' '))}</b>"]
            for _, _, by in pooled.values():
                stats = by.get(family)
                if stats is None or not stats.n:
                    cells.append(NA)
                    continue
                cell = _circular_cell(stats) + f' <span class="ci">n={stats.n}</span>'
                cells.append(f'<span class="lown">{cell}</span>' if low_n(stats.n) else cell)
            fam_rows.append(cells)
        body += ("<h3>CircularEval by question family</h3>"
                 + table([("Family", False)] + [(m, False) for m in pooled], fam_rows))
    return section("circular", title, lead, body)
