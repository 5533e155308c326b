"""The report's "Drift" section: did a model really change from one night to the next?

Each model's latest night against its previous night, overall and per family (paired on their
common cases; :mod:`eval_assets.metrics.drift`), and every flagged change of any earlier night.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eval_assets.metrics.drift import NightDrift
from eval_assets.report.markup import NA, count, esc, missing, p_text, pct, section, table

DRIFT_ANCHOR = "drift"
# Nights compared per model in the report: two weeks back is what a reader acts on, and every
# comparison costs a bootstrap, so a long history does not slow the report down.
REPORT_DRIFT_NIGHTS = 14
NO_DRIFT = "Fewer than two nights of any model: nothing to compare yet."
_HEADERS = [("Model", False), ("Family", False), ("Nights compared", False),
            ("Common cases / frames", True), ("Accuracy before → after", True),
            ("Difference [95% CI], pts", True), ("McNemar p (raw)", True), ("BH p", True),
            ("MDD, pts", True), ("Drift", False)]


def _pts(value: Any) -> str:
    return NA if missing(value) else f"{float(value) * 100:+.1f}"


def _verdict(d: NightDrift) -> str:
    if d.n_common == 0:
        return '<span class="verdict-no">no common cases</span>'
    if d.flagged:
        word = "drop" if (d.difference or 0.0) < 0 else "rise"
        return f'<span class="drift-flag">flagged: {word}</span>'
    if d.mdd is None:
        return '<span class="verdict-no">too few cases to detect any change</span>'
    if d.significant:
        return '<span class="verdict-no">significant but below the MDD: not flagged</span>'
    if (d.mcnemar_p < 0.05 and d.mcnemar_p_adjusted is not None
            and d.mcnemar_p_adjusted >= 0.05):
        return ('<span class="verdict-no">raw p &lt; 0.05, not after adjusting for the '
                "night's other comparisons: not flagged</span>")
    return '<span class="verdict-no">no real change</span>'


def _mdd(d: NightDrift) -> str:
    """The MDD the flag used, its level and the single-test MDD on hover."""
    if d.mdd is None:
        return NA
    single = NA if d.mdd_unadjusted is None else f"{d.mdd_unadjusted * 100:.1f}"
    return (f'<span title="at level {d.mdd_alpha:.4g}; at 0.05 alone: {single}">'
            f"{d.mdd * 100:.1f}</span>")


def _adjusted(d: NightDrift) -> str:
    return NA if d.mcnemar_p_adjusted is None else p_text(d.mcnemar_p_adjusted)


def _row(d: NightDrift) -> list[str]:
    nights = f"{esc(d.night_before)} → {esc(d.night_after)}"
    if d.n_common == 0:
        return [f'<span class="model">{esc(d.model)}</span>', esc(d.family), nights, "0",
                NA, NA, NA, NA, NA, _verdict(d)]
    diff = (f'{_pts(d.difference)} <span class="ci">[{_pts(d.ci_low)}, {_pts(d.ci_high)}]'
            "</span>")
    return [f'<span class="model">{esc(d.model)}</span>', esc(d.family), nights,
            f"{count(d.n_common)} / {count(d.n_frames)}",
            f"{pct(d.accuracy_before)} → {pct(d.accuracy_after)}", diff, p_text(d.mcnemar_p),
            _adjusted(d), _mdd(d), _verdict(d)]


def drift_section(drift: Sequence[NightDrift]) -> str:
    """Latest night vs the previous one per model and family; earlier flagged changes below.

    ``drift`` is ``night_drift(history, latest=REPORT_DRIFT_NIGHTS)``, sorted by model and night.
    """
    lead = ("Each model's night against the previous night it ran, on the cases both nights "
            "answered (paired), pooled over recordings, overall and per family. "
            "<b>Difference</b>: later minus earlier accuracy, in points, with a 95% paired "
            "cluster-bootstrap interval (frames resampled, fixed seed). <b>McNemar p</b>: exact "
            "two-sided test on the cases only one night got right. <b>BH p</b>: McNemar's "
            "p adjusted for every model and family compared that night (Benjamini-Hochberg, false "
            "discovery rate): with many comparisons a night some raw p fall under 0.05 by "
            "chance. <b>MDD</b>: the smallest "
            "true change these cases detect with 80% power at the level the adjustment "
            "tested at (0.05 &times; rejections / comparisons; the MDD at 0.05 on hover). "
            "A change is "
            "<b>flagged</b> only when the BH p &lt; 0.05, the interval excludes 0 <i>and</i> the "
            "change is at least the MDD, so noise does not raise alarms. The nightly results' "
            "asset check <code>nightly_drift</code> applies the same rule per recording, "
            "adjusting over the night's families x recordings x models.")
    if not drift:
        return section(DRIFT_ANCHOR, "Drift between nights", lead,
                       f'<p class="empty">{NO_DRIFT}</p>')
    latest = {d.model: d.night_after for d in drift}  # drift is sorted by model, night
    current = [d for d in drift if d.night_after == latest[d.model]]
    earlier = [d for d in drift if d.night_after != latest[d.model] and d.flagged]
    earlier_title = (f"Flagged on earlier nights (each model's last {REPORT_DRIFT_NIGHTS} "
                     "comparisons)")
    flagged = [d for d in current if d.flagged]
    summary = (f'<p class="summary">{len(flagged)} flagged change'
               f'{"s" if len(flagged) != 1 else ""} on the latest nights '
               f"({len(current)} comparisons).</p>")
    body = summary + table(_HEADERS, [_row(d) for d in current],
                           ["drift-row" if d.flagged else "" for d in current])
    if earlier:
        body += (f"<h3>{esc(earlier_title)}</h3>"
                 + table(_HEADERS, [_row(d) for d in earlier]))
    return section(DRIFT_ANCHOR, "Drift between nights", lead, body)
