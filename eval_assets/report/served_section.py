"""The "Answered by another model" warning, right under the headline: each model some of whose
replies named another model than the one declared, and each such cell, marked.

Read from the results (``CellScores.served_models`` and ``served_mismatch``, counted by the
runs from each reply's ``model`` field under the match rule of :mod:`eval_assets.served_model`);
nothing is recomputed. No such cell: no section.
"""

from __future__ import annotations

from collections.abc import Sequence

from eval_assets.report.markup import esc, section, table
from eval_assets.schemas.results import CellScores


def answered_by_another(results: Sequence[CellScores]) -> dict[str, list[CellScores]]:
    """The cells some of whose replies came from another model, by model (sorted)."""
    marked: dict[str, list[CellScores]] = {}
    for cell in sorted(results, key=lambda r: (r.model, r.recording)):
        if cell.served_mismatch:
            marked.setdefault(cell.model, []).append(cell)
    return marked


def served_note(model: str, results: Sequence[CellScores]) -> str:
    """The flag to show beside ``model``'s name wherever the board lists it ('' when its
    replies all came from the declared model)."""
    cells = answered_by_another(results).get(model, [])
    if not cells:
        return ""
    return (f' <span class="flag" title="replies from another model than declared on '
            f'{esc(", ".join(c.recording for c in cells))}">answered by another model</span>')


def served_section(results: Sequence[CellScores]) -> str:
    """The warning section's HTML ('' when every reply came from its declared model)."""
    marked = answered_by_another(results)
    if not marked:
        return ""
    rows = [[f'<span class="model">{esc(model)}</span>{served_note(model, results)}',
             esc(cell.recording),
             esc(", ".join(f"{name} ({n:,})" for name, n in (cell.served_models or {}).items()))]
            for model, cells in marked.items() for cell in cells]
    box = ('<div class="warnbox" role="note"><b>Not every answer is its model\'s.</b> The '
           f"replies of {len(marked)} model{'s' if len(marked) != 1 else ''} named another model "
           "than the one declared (a proxy's fallback, a router, another deployment behind the "
           "name): their numbers in this report are credited to the declared model though "
           "another one gave some of them. Check the endpoint, then run those cells again.</div>")
    lead = ("Each reply names the model that produced it (its <code>model</code> field). A name "
            "matches the declared model when it is the same, the same with a provider path "
            "(<code>openai/gpt-4o</code>), or the same with a date or version suffix "
            "(<code>gpt-4o-2024-08-06</code>); an alias the endpoint's /v1/models lists and "
            "the weights file of a one-model server match too. Anything else is another model.")
    return section("served", "Answered by another model", lead, box + table(
        [("Model", False), ("Recording", False), ("Replies by the model named", False)], rows))
