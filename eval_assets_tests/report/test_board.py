"""The report reads the leaderboard asset's output back: the same coverage, comparisons,
baselines and table as the board's, and a cell whose results, answers, dataset or label
overrides changed (by content) since the board is stale, naming what changed."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from eval_assets.layout import RUN_ANSWERS, StorageLayout, overrides_file_for
from eval_assets.report.board import (
    CHANGED_SINCE_BOARD,
    changed_since_board,
    read_board,
    results_fingerprint,
)
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


def _labels(layout: StorageLayout) -> Path:
    return layout.root / "labels"


def _score(layout: StorageLayout, rec: str, model: str, replies: list[str],
           sha: str | None = None) -> None:
    """Write ``replies`` as the cell's answers, then its results scored from them (on the
    dataset ``sha``, default the recording's current one) with the label overrides as now."""
    run_dir = layout.predictions_dir(rec, model)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / RUN_ANSWERS).write_text("".join(
        dumps_line(answer(model, cid, reply)) + "\n"
        for (cid, _, _, _), reply in zip(CASES, replies, strict=True)))
    used = sha or dataset_fingerprint(layout.dataset_dir(rec))
    assert used is not None
    inputs = current_inputs(layout.dataset_dir(rec), run_dir,
                            overrides_file_for(_labels(layout), rec), dataset_sha256=used)
    cell = result(rec, model, [row(cid, fam, gold, reply, rec, choices) for
                               (cid, fam, gold, choices), reply in
                               zip(CASES, replies, strict=True)], sha=used, inputs=inputs)
    path = layout.results_file(rec, model)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(cell.model_dump_json())


def _tree(tmp_path: Path) -> tuple[StorageLayout, list[CellScores]]:
    """Two recordings x three models: "old" on kitchen scored an older dataset, "b" on
    kitchen has no result; the others are current, "a" answers all right, "b" one wrong. Hall
    has a label overrides file; the board is built reading the labels folder."""
    layout = StorageLayout(tmp_path / "storage")
    template = write_dataset(tmp_path / "template")
    overrides = overrides_file_for(_labels(layout), "hall")
    overrides.parent.mkdir(parents=True)
    overrides.write_text("")
    for rec in RECORDINGS:
        shutil.copytree(template["dataset"], layout.dataset_dir(rec))
        for model in MODELS:
            if (rec, model) == ("kitchen", "b"):
                continue
            replies = [gold if model != "b" or k else choices[1 - choices.index(gold)]
                       for k, (_, _, gold, choices) in enumerate(CASES)]
            _score(layout, rec, model, replies, OLD if (rec, model) == ("kitchen", "old") else None)
    results = load_results(layout, RECORDINGS, MODELS)
    publish_leaderboard(layout, results, recordings=RECORDINGS, models=MODELS,
                        labels_dir=_labels(layout))
    return layout, results


def test_the_board_read_back_is_the_board_built(tmp_path: Path) -> None:
    layout, results = _tree(tmp_path)
    labels = _labels(layout)
    board = read_board(layout, results, labels)
    built = report_coverage(layout, results, recordings=RECORDINGS, models=MODELS,
                            labels_dir=labels)
    assert board.coverage == built
    # common_cases is left out of the JSON: the report rebuilds it from the results.
    assert board.coverage.common_cases == built.common_cases and built.common_cases
    assert board.coverage.cell("kitchen", "old").status == "stale"  # type: ignore[union-attr]
    assert board.coverage.cell("kitchen", "b").status == "missing"  # type: ignore[union-attr]
    pd.testing.assert_frame_equal(board.table, build_leaderboard(results, coverage=built))
    assert board.comparisons == paired_comparisons(results, coverage=built)
    # Each ok cell's record is its results' fingerprint and the inputs they were scored from.
    document = json.loads((layout.leaderboard_dir() / "leaderboard.json").read_text())
    published = {(p["recording"], p["model"]): p for p in document["published_from"]}
    assert sorted(published) == [(c.recording, c.model) for c in built.with_status("ok")]
    for r in results:
        if (r.recording, r.model) in published:
            assert r.inputs is not None
            assert published[(r.recording, r.model)] == {
                "recording": r.recording, "model": r.model,
                "results_sha256": results_fingerprint(r), **r.inputs.model_dump()}
    assert published[("hall", "a")]["overrides_sha256"] is not None  # the file was read


def _board_cell(layout: StorageLayout, labels: Path | None) -> tuple[str, str]:
    board = read_board(layout, load_results(layout, RECORDINGS, MODELS), labels)
    cell = board.coverage.cell("hall", "a")
    assert cell is not None
    if cell.status == "stale":  # the report's coverage line names the cell and the change
        assert f"(hall, a: {cell.reason})" in board.coverage.summary()
    return cell.status, cell.reason


def _keep_mtime(path: Path, edit: Callable[[], object]) -> None:
    """``edit`` the file at ``path`` and give it back its timestamps: only content changed."""
    before = path.stat()
    edit()
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


@pytest.mark.parametrize("touched", ["results", "answers", "dataset", "overrides"])
def test_a_cell_touched_after_the_board_is_not_stale(tmp_path: Path, touched: str) -> None:
    layout, _ = _tree(tmp_path)
    path = {"results": layout.results_file("hall", "a"),
            "answers": layout.predictions_dir("hall", "a") / RUN_ANSWERS,
            "dataset": layout.dataset_dir("hall") / "assets",
            "overrides": overrides_file_for(_labels(layout), "hall")}[touched]
    later = (layout.leaderboard_dir() / "leaderboard.json").stat().st_mtime_ns + 10**9
    for each in [path, *path.rglob("*")] if path.is_dir() else [path]:
        os.utime(each, ns=(later, later))  # newer than the board, same content
    assert _board_cell(layout, _labels(layout)) == ("ok", "")


def _rerun_answers(layout: StorageLayout) -> None:
    """Hall x "a" answered again, its first case now wrong, under the old file's timestamp."""
    answers = layout.predictions_dir("hall", "a") / RUN_ANSWERS
    first, *rest = answers.read_text().splitlines(keepends=True)
    record = json.loads(first) | {"raw_response": "no"}  # the first case's gold is "yes"
    _keep_mtime(answers, lambda: answers.write_text(json.dumps(record) + "\n" + "".join(rest)))


@pytest.mark.parametrize(("changed", "what"), [
    ("answers", "other answers"),
    # Re-run and rescored: the results agree with their new answers, but the board holds the
    # old numbers (an mtime-free content check of the results against the answers missed it).
    ("rescored", "other results, answers"),
    ("results", "other results"),
    # Re-published without rescoring: only the dataset's content says so.
    ("dataset", "other dataset"),
    ("overrides", "other label overrides"),
])
def test_a_cell_changed_after_the_board_is_stale_under_its_old_mtime(
        tmp_path: Path, changed: str, what: str) -> None:
    layout, _ = _tree(tmp_path)
    labels = _labels(layout)
    if changed == "answers":
        _rerun_answers(layout)
    elif changed == "rescored":
        results_file = layout.results_file("hall", "a")
        before = results_file.stat()
        _rerun_answers(layout)
        _score(layout, "hall", "a", ["no", "left", "no"])
        os.utime(results_file, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert _board_cell(layout, None)[0] == "stale"  # without reading the labels too
    elif changed == "results":  # rewritten as if scored from other answers
        path = layout.results_file("hall", "a")
        scored = CellScores.model_validate_json(path.read_text())
        assert scored.inputs is not None
        other = scored.inputs.model_copy(update={"predictions_sha256": "0" * 64})
        _keep_mtime(path, lambda: path.write_text(
            scored.model_copy(update={"inputs": other}).model_dump_json()))
    elif changed == "dataset":  # the frame rendered again: other image bytes, same names
        image = next((layout.dataset_dir("hall") / "assets").rglob("*.png"))
        _keep_mtime(image, lambda: image.write_bytes(image.read_bytes() + b"\0"))
    else:  # a correction recorded under the old timestamp
        overrides = overrides_file_for(labels, "hall")
        _keep_mtime(overrides, lambda: overrides.write_text('{"case_id": "x"}\n'))
        assert _board_cell(layout, None) == ("ok", "")  # not read: what the results record
    assert _board_cell(layout, labels) == ("stale", changed_since_board(what))
    assert what in changed_since_board(what) and CHANGED_SINCE_BOARD in changed_since_board(what)
    # The other recording's cells are as the board left them.
    kitchen = read_board(layout, load_results(layout, RECORDINGS, MODELS), labels).coverage.cell(
        "kitchen", "a")
    assert kitchen is not None and kitchen.status == "ok"


def test_a_result_the_board_did_not_see_is_stale(tmp_path: Path) -> None:
    layout, results = _tree(tmp_path)
    extra = results[0].model_copy(update={"recording": "kitchen", "model": "b"})
    cell = read_board(layout, [*results, extra]).coverage.cell("kitchen", "b")
    assert cell is not None and (cell.status, cell.reason) == (
        "stale", changed_since_board("a result it did not have"))


def test_a_board_without_its_published_inputs_names_the_fix(tmp_path: Path) -> None:
    layout, results = _tree(tmp_path)
    path = layout.leaderboard_dir() / "leaderboard.json"
    document = json.loads(path.read_text())
    del document["published_from"]  # as written before the board recorded it
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match=r"no 'published_from'.*rematerialize the leaderboard"):
        read_board(layout, results)


def test_no_leaderboard_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="materialize the leaderboard asset"):
        read_board(StorageLayout(tmp_path), [])
