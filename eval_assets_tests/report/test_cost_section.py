"""The report's "Cost" section: per model, per 1,000 cases, per correct answer; no price is
never $0."""

from __future__ import annotations

import json
from pathlib import Path

from eval_assets.layout import AVLM_JUDGE_RESULTS, StorageLayout
from eval_assets.report.cost_section import cell_costs, cost_section, judge_costs
from eval_assets.report.html import render_report
from eval_assets.report.leaderboard import build_leaderboard
from eval_assets.schemas.results import CellScores
from eval_assets.scoring.judge import JUDGE
from eval_assets_tests.report.builders import result, row


def _cell(model: str, correct: int, wrong: int) -> CellScores:
    rows = ([row(f"c{i}", "count", "yes", "yes", "rec") for i in range(correct)]
            + [row(f"w{i}", "count", "yes", "no", "rec") for i in range(wrong)])
    return result("rec", model, rows)


def _run_dir(tmp_path: Path, model: str, cost: float | None) -> Path:
    folder = tmp_path / model
    folder.mkdir()
    summary = {"cost": None if cost is None else {"total_usd": cost}}
    (folder / "summary.json").write_text(json.dumps(summary))
    return folder


def test_cost_per_model_per_thousand_cases_and_per_correct_answer(tmp_path: Path) -> None:
    paid, free = _cell("paid", correct=3, wrong=1), _cell("local", correct=2, wrong=2)
    dirs = {("rec", "paid"): _run_dir(tmp_path, "paid", 0.02),
            ("rec", "local"): _run_dir(tmp_path, "local", None)}
    costs = cell_costs([paid, free], dirs)
    assert [(c.model, c.model_usd, c.cases, c.correct) for c in costs] == [
        ("paid", 0.02, 4, 3), ("local", None, 4, 2)]
    html = cost_section(costs)
    paid_row = html.split("<td>paid</td>")[1].split("</tr>")[0]
    assert "$0.0200" in paid_row and "$5.0000" in paid_row  # $0.02 / 4 cases × 1,000
    assert "$0.0067" in paid_row  # $0.02 / 3 correct answers
    local_row = html.split("<td>local</td>")[1].split("</tr>")[0]
    assert "no price set" in local_row and "$" not in local_row


def test_a_priced_judge_is_added_to_the_model(tmp_path: Path) -> None:
    cell = _cell("paid", correct=2, wrong=2)
    costs = cell_costs([cell], {("rec", "paid"): _run_dir(tmp_path, "paid", 0.004)},
                       judge_usd={("rec", "paid"): 0.001})
    html = cost_section(costs)
    assert "$0.0010" in html and "$0.0050" in html  # judge, together
    assert "$1.2500" in html and "$0.0025" in html  # per 1,000 cases, per correct answer


def test_the_report_shows_the_section_only_when_costs_are_given(tmp_path: Path) -> None:
    cell = _cell("local", correct=1, wrong=1)
    board = build_leaderboard([cell])
    without = render_report(board, [cell], [], "t")
    with_costs = render_report(board, [cell], [], "t", costs=cell_costs([cell], {}))
    assert 'id="cost"' not in without and 'id="cost"' in with_costs
    assert "no price set" in with_costs


def test_judge_costs_come_from_the_priced_judges_results_summary(tmp_path: Path) -> None:
    layout = StorageLayout(tmp_path)
    priced, unpriced = _cell("paid", 1, 1), _cell("local", 1, 1)
    for cell, summary in ((priced, {"cost_usd": 0.003}), (unpriced, {"mean_score": 5})):
        path = layout.metric_dir(JUDGE.name, cell.recording, cell.model) / AVLM_JUDGE_RESULTS
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(summary))
    assert judge_costs(layout, [priced, unpriced]) == {("rec", "paid"): 0.003}
