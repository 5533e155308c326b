"""The report's "Baselines" section: per family, the frequency and blind baselines beside every
model, and a flag on the families where no model beats the better baseline by more than the
minimum detectable difference (:mod:`eval_assets.report.baselines`)."""

from __future__ import annotations

from collections.abc import Sequence

from eval_assets.report.baselines import FamilyBaselines
from eval_assets.report.markup import NA, esc, flag, pct, section, table

LEAD = (
    "Per question family, on the common cases (for the spatial families, the cases every "
    "ranked model was scored on): the <b>frequency baseline</b> always gives the "
    "family's most common gold answer (the median for numeric families, scored by mean "
    "relative accuracy), computed from the labels alone; the <b>blind baseline</b> is a model "
    "that never sees the image (the local SmolLM2 answering from the question text). Each "
    "model's cell: its score, and in grey its difference from the better baseline with the "
    "minimum detectable difference (MDD: 80% power, alpha 0.05, the frame design effect "
    "included). The spatial families compare on the spatial cases every ranked model answered; "
    "their numeric cases count one each (no frame design effect). A model <b>beats</b> the "
    "baseline when the difference exceeds the MDD. "
    "<span class=\"flag\">no model beats the baselines</span> marks a family whose scores do "
    "not show that any model reads the image: read its accuracies as the language prior.")


def _pts(value: float | None) -> str:
    return NA if value is None else f"{value * 100:+.1f}"


def _model_cell(b: FamilyBaselines, model: str) -> str:
    c = b.models.get(model)
    if c is None or c.score is None:
        return NA
    mdd = NA if c.mdd is None else f"{c.mdd * 100:.1f}"
    mark = " <b>beats</b>" if c.beats else ""
    return (f"{pct(c.score)} <span class=\"ci\">{_pts(c.difference)} pts vs {esc(b.better)}, "
            f"MDD {mdd}</span>{mark}")


def baselines_section(baselines: Sequence[FamilyBaselines]) -> str:
    """The section's HTML; a note when there is no ranking (no common cases)."""
    title = "Baselines by question family"
    if not baselines:
        return section("baselines", title, LEAD, '<p class="empty">No ranking (no case is '
                        "common to every model), so no baseline comparison.</p>")
    models = sorted({m for b in baselines for m in b.models})
    headers = [("Family", False), ("n", True), ("Frequency (answer)", False),
               ("Blind (model)", False)] + [(m, False) for m in models]
    rows, classes = [], []
    for b in baselines:
        name = f"<b>{esc(b.family.replace('_', ' '))}</b>{flag(b.n)}"
        if b.flagged:
            name += ' <span class="flag">no model beats the baselines</span>'
        blind = (NA if b.blind is None else
                 f"{pct(b.blind)} <span class=\"ci\">({esc(b.blind_model)})</span>")
        freq = f"{pct(b.frequency)} <span class=\"ci\">({esc(b.frequency_answer)})</span>"
        rows.append([name, f"{b.n:,}", freq, blind, *(_model_cell(b, m) for m in models)])
        classes.append("flagged" if b.flagged else "")
    flagged = [b.family for b in baselines if b.flagged]
    summary = (f'<p class="summary">{len(flagged)} of {len(baselines)} families flagged: '
               f"{esc(', '.join(f.replace('_', ' ') for f in flagged))}.</p>" if flagged else
               '<p class="summary">In every family some model beats the better baseline.</p>')
    if not any(b.blind_model for b in baselines):
        summary += ('<p class="summary">No blind model among the ranked models: only the '
                    "frequency baseline is shown (add <code>blind-smollm2</code> to the "
                    "models file).</p>")
    return section("baselines", title, LEAD, table(headers, rows, classes) + summary)
