"""The report reads the leaderboard asset's output back: the same coverage, comparisons,
baselines and table as the board's, and a cell changed since the board is stale."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from eval_assets.layout import RUN_ANSWERS, StorageLayout, overrides_file_for
from eval_assets.report.board import CHANGED_SINCE_BOARD, read_board
from eval_assets.report.leaderboard import build_leaderboard, paired_comparisons
from eval_assets.report.publish import publish_leaderboard, report_coverage
from eval_assets.schemas.results import CellScores
from eval_assets.schemas.vqa import dumps_line
from eval_assets.scoring.collect import load_results
from eval_assets.scoring.provenance import current_inputs
from eval_assets.vqa.dataset import dataset_fingerprint
from eval_assets_tests.report.builders import THIRDS, YES_NO, answer, result, row, write_dataset

CASES = [("frame-000000-green-box-presence", "presence", "yes", YES_NO),
         ("frame-000000-green-box-horizontal_direction", "horizontal_direction", "left", THIRDS),
         ("frame-000000-red-ball-presence", "presence", "no", YES_NO)]
RECORDINGS = ["hall", "kitchen"]
MODELS = ["a", "b", "old"]
OLD = "f" * 64


def _tree(tmp_path: Path) -> tuple[StorageLayout, list[CellScores]]:
    """Two recordings x three models: "old" on kitchen scored an older dataset, "b" on
    kitchen has no result; the others are current, "a" answers all right, "b" one wrong."""
    layout = StorageLayout(tmp_path / "storage")
    template = write_dataset(tmp_path / "template")
    for rec in RECORDINGS:
        shutil.copytree(template["dataset"], layout.dataset_dir(rec))
        sha = dataset_fingerprint(layout.dataset_dir(rec))
        assert sha is not None
        for model in MODELS:
            if (rec, model) == ("kitchen", "b"):
                continue
            replies = [gold if model != "b" or k else choices[1 - choices.index(gold)]
                       for k, (_, _, gold, choices) in enumerate(CASES)]
            run_dir = layout.predictions_dir(rec, model)
            run_dir.mkdir(parents=True)
            (run_dir / RUN_ANSWERS).write_text("".join(
                dumps_line(answer(model, cid, reply)) + "\n"
                for (cid, _, _, _), reply in zip(CASES, replies, strict=True)))
            used = OLD if (rec, model) == ("kitchen", "old") else sha
            cell = result(rec, model, [row(cid, fam, gold, reply, rec, choices) for
                                       (cid, fam, gold, choices), reply in
                                       zip(CASES, replies, strict=True)],
                          sha=used, inputs=current_inputs(layout.dataset_dir(rec), run_dir, None,
                                                          dataset_sha256=used))
            path = layout.results_file(rec, model)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(cell.model_dump_json())
    results = load_results(layout, RECORDINGS, MODELS)
    publish_leaderboard(layout, results, recordings=RECORDINGS, models=MODELS)
    return layout, results


def test_the_board_read_back_is_the_board_built(tmp_path: Path) -> None:
    layout, results = _tree(tmp_path)
    board = read_board(layout, results)
    built = report_coverage(layout, results, recordings=RECORDINGS, models=MODELS)
    assert board.coverage == built
    # common_cases is left out of the JSON: the report rebuilds it from the results.
    assert board.coverage.common_cases == built.common_cases and built.common_cases
    assert board.coverage.cell("kitchen", "old").status == "stale"  # type: ignore[union-attr]
    assert board.coverage.cell("kitchen", "b").status == "missing"  # type: ignore[union-attr]
    pd.testing.assert_frame_equal(board.table, build_leaderboard(results, coverage=built))
    assert board.comparisons == paired_comparisons(results, coverage=built)


def _board_cell(layout: StorageLayout, labels: Path) -> tuple[str, str]:
    results = load_results(layout, RECORDINGS, MODELS)
    cell = read_board(layout, results, labels).coverage.cell("hall", "a")
    assert cell is not None
    return cell.status, cell.reason


def _keep_mtime(path: Path, edit: Callable[[], object]) -> None:
    """``edit`` the file at ``path`` and give it back its timestamps: only content changed."""
    before = path.stat()
    edit()
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


@pytest.mark.parametrize("touched", ["results", "answers", "dataset"])
def test_a_cell_touched_after_the_board_is_not_stale(tmp_path: Path, touched: str) -> None:
    layout, _ = _tree(tmp_path)
    path = {"results": layout.results_file("hall", "a"),
            "answers": layout.predictions_dir("hall", "a") / RUN_ANSWERS,
            "dataset": layout.dataset_dir("hall")}[touched]
    later = (layout.leaderboard_dir() / "leaderboard.json").stat().st_mtime_ns + 10**9
    os.utime(path, ns=(later, later))  # newer than the board, same content
    assert _board_cell(layout, tmp_path / "labels") == ("ok", "")


@pytest.mark.parametrize("changed", ["results", "answers", "overrides"])
def test_a_cell_changed_after_the_board_is_stale_under_its_old_mtime(tmp_path: Path,
                                                                     changed: str) -> None:
    layout, _ = _tree(tmp_path)
    labels = tmp_path / "labels"
    answers = layout.predictions_dir("hall", "a") / RUN_ANSWERS
    if changed == "answers":
        first, *rest = answers.read_text().splitlines(keepends=True)
        record = json.loads(first) | {"raw_response": "no"}  # the first case's gold is "yes"
        _keep_mtime(answers, lambda: answers.write_text(json.dumps(record) + "\n" + "".join(rest)))
    elif changed == "results":  # rescored from other answers than the board checked
        path = layout.results_file("hall", "a")
        scored = CellScores.model_validate_json(path.read_text())
        assert scored.inputs is not None
        other = scored.inputs.model_copy(update={"predictions_sha256": "0" * 64})
        _keep_mtime(path, lambda: path.write_text(
            scored.model_copy(update={"inputs": other}).model_dump_json()))
    else:  # an overrides file under a timestamp older than the board's
        overrides = overrides_file_for(labels, "hall")
        overrides.parent.mkdir()
        overrides.write_text("[]\n")
        old = answers.stat().st_mtime_ns
        os.utime(overrides, ns=(old, old))
        assert _board_cell(layout, tmp_path / "elsewhere") == ("ok", "")  # not read: no change
    assert _board_cell(layout, labels) == ("stale", CHANGED_SINCE_BOARD)
    # The other recording's cells are as the board left them.
    kitchen = read_board(layout, load_results(layout, RECORDINGS, MODELS), labels).coverage.cell(
        "kitchen", "a")
    assert kitchen is not None and kitchen.status == "ok"


def test_a_result_the_board_did_not_see_is_stale(tmp_path: Path) -> None:
    layout, results = _tree(tmp_path)
    extra = results[0].model_copy(update={"recording": "kitchen", "model": "b"})
    cell = read_board(layout, [*results, extra]).coverage.cell("kitchen", "b")
    assert cell is not None and (cell.status, cell.reason) == ("stale", CHANGED_SINCE_BOARD)


def test_no_leaderboard_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="materialize the leaderboard asset"):
        read_board(StorageLayout(tmp_path), [])
