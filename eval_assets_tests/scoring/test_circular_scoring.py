"""CircularEval joined from a run folder's answers and rotations with a real dataset's labels."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval_assets.atomic import write_text_atomic
from eval_assets.metrics.circular import CircularReport
from eval_assets.schemas.predictions import RUN_ROTATIONS, RotationRecord, rotate_choices
from eval_assets.schemas.results import NotMeasured
from eval_assets.scoring.circular import load_rotations, score_circular
from eval_assets.scoring.inputs import load_private_dataset, load_run
from eval_assets_tests.scoring.conftest import answer, write_run


def rotation(case_id: str, r: int, choices: list[str], text: str | None) -> RotationRecord:
    return RotationRecord(model="m", config_hash="h", attempts=1, case_id=case_id, rotation=r,
                          choices=choices, status="success" if text is not None else "failed",
                          raw_response=text,
                          error_category=None if text is not None else "server_error")


def write_rotations(run_dir: Path, records: list[RotationRecord]) -> None:
    write_text_atomic(run_dir / RUN_ROTATIONS, "".join(r.model_dump_json() + "\n"
                                                       for r in records))


def run_with(sample_dataset: Path, tmp_path: Path, reply) -> tuple:
    """A run folder whose every rotation is answered by ``reply(shown, gold)``."""
    data = load_private_dataset(sample_dataset)
    run_dir = tmp_path / "run"
    write_run(run_dir, [answer(lab.id, reply(lab.choices, lab.answer)) for lab in data.labels],
              [])
    write_rotations(run_dir, [
        rotation(lab.id, r, rotate_choices(lab.choices, r),
                 reply(rotate_choices(lab.choices, r), lab.answer))
        for lab in data.labels for r in range(1, len(lab.choices))])
    return data, run_dir


def test_a_first_choice_model_scores_zero_and_a_content_model_one(sample_dataset: Path,
                                                                   tmp_path: Path) -> None:
    data, run_dir = run_with(sample_dataset, tmp_path / "first", lambda shown, gold: shown[0])
    report = score_circular(data, load_run(run_dir), load_rotations(run_dir), "sample")
    assert isinstance(report, CircularReport)
    n = len(data.labels)
    answers = sum(len(lab.choices) for lab in data.labels)
    assert report.overall.n == n > 20 and report.overall.accuracy == 0.0
    assert report.overall.rotation_accuracy == pytest.approx(n / answers)
    gold_first = sum(1 for lab in data.labels if lab.choices[0] == lab.answer)
    assert report.overall.original_accuracy == pytest.approx(gold_first / n)
    assert report.overall.bias.max_gap_position == 1 and report.overall.bias.p_value < 1e-6
    assert set(report.by_family) == {lab.family for lab in data.labels}

    data, run_dir = run_with(sample_dataset, tmp_path / "content", lambda shown, gold: gold)
    report = score_circular(data, load_run(run_dir), load_rotations(run_dir), "sample")
    assert isinstance(report, CircularReport) and report.overall.accuracy == 1.0
    assert report.overall.bias.max_gap == 0.0


def test_missing_stale_and_failed_rotations(sample_dataset: Path, tmp_path: Path) -> None:
    data, run_dir = run_with(sample_dataset, tmp_path, lambda shown, gold: gold)
    records = [RotationRecord.model_validate_json(line) for line in
               (run_dir / RUN_ROTATIONS).read_text().splitlines()]
    several = [lab for lab in data.labels if len(lab.choices) > 2]
    dropped, stale, failed = several[0].id, several[1].id, several[2].id
    kept = []
    for rec in records:
        if rec.case_id == dropped and rec.rotation == 1:
            continue  # never asked
        if rec.case_id == stale and rec.rotation == 1:
            rec = rec.model_copy(update={"choices": list(reversed(rec.choices))})
        if rec.case_id == failed and rec.rotation == 2:
            rec = rotation(rec.case_id, 2, rec.choices, None)
        kept.append(rec)
    write_rotations(run_dir, kept)
    report = score_circular(data, load_run(run_dir), load_rotations(run_dir), "sample")
    assert isinstance(report, CircularReport)
    o = report.overall
    assert o.not_asked == 2 and o.n == len(data.labels) - 2  # dropped and stale are left out
    assert o.robust == o.n - 1 and o.failed_calls == 1  # the failed rotation is a miss
    rows = {r.case_id: r for r in report.rows}
    assert rows[stale].statuses[1] is None and rows[failed].statuses[2] == "failed_call"


def test_a_run_without_rotations_is_not_measured(sample_dataset: Path, tmp_path: Path) -> None:
    data = load_private_dataset(sample_dataset)
    run_dir = write_run(tmp_path / "run", [answer(lab.id, lab.answer) for lab in data.labels],
                        [])
    assert load_rotations(run_dir) is None
    assert score_circular(data, load_run(run_dir), None, "sample") == NotMeasured(
        reason="no rotations asked")
