"""The report's "Answered by another model" warning, from the cells' results."""

from __future__ import annotations

import re

from eval_assets.report.html import render_report
from eval_assets.report.leaderboard import build_leaderboard
from eval_assets.report.served_section import served_note, served_section
from eval_assets.schemas.results import CellScores
from eval_assets_tests.report.builders import result, row


def _cell(recording: str, model: str, served: dict[str, int] | None,
          mismatch: bool | None) -> CellScores:
    rows = [row(f"{recording}-c{i}", "presence", "yes", "yes", recording) for i in range(3)]
    return result(recording, model, rows).model_copy(
        update={"served_models": served, "served_mismatch": mismatch})


def test_a_cell_answered_by_another_model_is_marked_at_the_top() -> None:
    cells = [_cell("rec-a", "vlm", {"vlm": 2, "some-other-model": 1}, True),
             _cell("rec-b", "vlm", {"vlm-2024-08-06": 3}, False),
             _cell("rec-a", "random", {"random": 3}, False),
             _cell("rec-b", "random", None, None)]  # results older than the check
    html = render_report(build_leaderboard(cells), cells, [], "t")
    sections = re.findall(r'<section[^>]* id="([^"]+)"', html)
    assert "served" in sections[:3]  # at the top, beside the answer and the headline
    served = html.split('<section id="served">')[1].split("</section>")[0]
    assert "Not every answer is its model" in served and "replies of 1 model named" in served
    assert "<td>rec-a</td>" in served and "some-other-model (1)" in served
    assert "rec-b" not in served and "random" not in served  # only the marked cell
    assert "answered by another model" in served_note("vlm", cells)
    assert served_note("random", cells) == ""


def test_no_section_when_every_reply_came_from_the_declared_model() -> None:
    cells = [_cell("rec-a", "random", {"random": 3}, False)]
    assert served_section(cells) == ""
    assert 'id="served"' not in render_report(build_leaderboard(cells), cells, [], "t")
