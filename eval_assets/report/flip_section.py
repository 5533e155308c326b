"""The report's FlipEval section, beside CircularEval: per model (pooled per case over its usable
cells) and per left/right family, the consistency of its answers when the image is mirrored."""

from __future__ import annotations

from collections.abc import Sequence

from eval_assets.metrics.paired import PairedStats, paired_stats
from eval_assets.metrics.stats import MIN_RELIABLE_N
from eval_assets.report.markup import INTERVAL_NOTE, NA, acc_cell, count, esc, pct, section, table
from eval_assets.schemas.results import CellScores
from eval_assets.scoring.flip import FLIP
from eval_assets.scoring.paired import rows_by_model

LEAD = (
    "Each left/right case (dimOS's horizontal direction; the spatial relative direction) is "
    "also asked about its image mirrored horizontally, with left and right swapped in the "
    "question; its gold answer is the original one with left and right swapped, and the "
    "choices are shown in the same order. <b>Consistency</b>: the share of cases answered "
    "correctly both ways (a failed call or unparseable reply is a miss; cases whose mirror was "
    "never asked are left out and counted). <b>Original / mirrored</b>: each side alone on the "
    "same cases. <b>Agreement</b>: of the cases where both replies named a choice, the share "
    "whose mirrored answer is the mirror of the original one, right or wrong: a model that "
    "answers from the wording or a favourite side has a low agreement. ")


def _cell(s: PairedStats) -> str:
    return acc_cell(s.consistency, s.ci_low, s.ci_high, s.n)


def flip_section(results: Sequence[CellScores]) -> str:
    """FlipEval per model and per left/right family; a note when nothing was measured."""
    title = "Mirror consistency (FlipEval)"
    lead = LEAD + INTERVAL_NOTE + f" Cells over fewer than {MIN_RELIABLE_N} cases are marked."
    by_model = rows_by_model(FLIP, results)
    if not by_model:
        return section("flip", title, lead, '<p class="empty">Not measured: no run asked the '
                        "mirrored cases (they are asked with the rotated choices), or the "
                        "datasets have no left/right case.</p>")
    headers = [("Model", False), ("Consistency [95% CI]", False), ("n (not asked)", True),
               ("Original", True), ("Mirrored", True), ("Agreement", True), ("n both named", True)]
    rows = []
    for model, model_rows in by_model.items():
        s = paired_stats(model_rows)
        rows.append([f'<span class="model">{esc(model)}</span>', _cell(s),
                     f"{count(s.n)} ({count(s.not_asked)})", pct(s.original_accuracy),
                     pct(s.variant_accuracy), pct(s.agreement), count(s.n_compared)])
    body = table(headers, rows)
    families = sorted({r.family for rs in by_model.values() for r in rs})
    if families:
        fam_rows = []
        for family in families:
            cells = [f"<b>{esc(family.replace('_', ' '))}</b>"]
            for model_rows in by_model.values():
                mine = [r for r in model_rows if r.family == family]
                s = paired_stats(mine)
                cells.append(NA if not s.n else _cell(s) + f' <span class="ci">n={s.n}</span>')
            fam_rows.append(cells)
        body += ("<h3>FlipEval by question family</h3>"
                 + table([("Family", False)] + [(m, False) for m in by_model], fam_rows))
    return section("flip", title, lead, body)
