"""The report's "Across nights" section: each model's accuracy per kept nightly run."""

from __future__ import annotations

from collections.abc import Sequence

from eval_assets.report.history import NightResult, NightScore, night_scores
from eval_assets.report.markup import (
    INTERVAL_NOTE,
    NA,
    acc_cell,
    charts,
    count,
    esc,
    img,
    section,
    table,
)

NO_NIGHTS = "No nightly runs yet."


def _night_cell(score: NightScore | None) -> str:
    if score is None or score.accuracy is None:
        return NA
    return (f"{acc_cell(score.accuracy, score.ci_low, score.ci_high, score.n)} "
            f'<span class="ci">n={score.n:,}</span>')


def nights_section(history: Sequence[NightResult]) -> str:
    """Each model's accuracy per night: a chart and a table with n and interval per night."""
    lead = ("The nightly schedule re-queries every configured model (hosted models change "
            "without notice) and keeps each night's results. Two case sets per night: <b>on "
            "the night's common cases</b>, those every model run that night answered (compare "
            "models within a night); <b>on this model's every-night cases</b>, those this model "
            "answered on every night it ran, the same cases each night (so a change is the "
            "model's, not the questions'); the chart shows this one. A regenerated dataset "
            f"shares no case with the old one. {INTERVAL_NOTE}")
    if not history:
        return section("nights", "Across nights", lead, f'<p class="empty">{NO_NIGHTS}</p>')
    scores = night_scores(history)
    by = {(s.model, s.night, s.case_set): s for s in scores}
    headers = [("Model", False), ("Night", False), ("Models that night", True),
               ("On the night's common cases", False), ("On this model's every-night cases",
                                                       False), ("Answered", True)]
    rows = []
    for model in sorted({s.model for s in scores}):
        for night in sorted({s.night for s in scores if s.model == model}):
            answered = by[(model, night, "answered")]
            rows.append([f'<span class="model">{esc(model)}</span>', esc(night),
                         f'<span title="{esc(", ".join(answered.night_models))}">'
                         f"{len(answered.night_models)}</span>",
                         _night_cell(by.get((model, night, "night_common"))),
                         _night_cell(by.get((model, night, "model_trend"))),
                         count(answered.n)])
    nights = sorted({s.night for s in scores})
    summary = (f'<p class="summary">{len(nights)} night{"s" if len(nights) != 1 else ""}: '
               f"{esc(nights[0])} to {esc(nights[-1])}.</p>")
    try:
        chart = img(charts().history_chart(scores),
                     "Line chart of each model's accuracy per night", "chart")
    except ValueError as exc:
        chart = f'<p class="empty">{esc(f"No chart: {exc}")}</p>'

    return section("nights", "Across nights", lead, summary + chart + table(headers, rows))
