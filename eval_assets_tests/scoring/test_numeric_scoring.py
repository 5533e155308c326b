"""The numeric metric over a run: MRA and absolute relative error of numeric-answer cases,
unparseable replies scored 0 and counted, and a visible not-measured record without any."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from eval_assets.layout import (
    AUDIT_SPATIAL_LABELS,
    DATASET_AUDIT,
    SPATIAL_CASES,
    SPATIAL_LABELS,
)
from eval_assets.metrics.numeric import mean_relative_accuracy
from eval_assets.schemas.results import CellScores, NotMeasured, PredictionCounts
from eval_assets.schemas.vqa import Label
from eval_assets.scoring import METRICS
from eval_assets.scoring.inputs import ModelRun, PrivateDataset, load_private_dataset, load_run
from eval_assets.scoring.numeric import NUMERIC, NumericScores, score_numeric
from eval_assets.scoring.spec import ReportTable
from eval_assets_tests.scoring.conftest import answer, labels_of, write_run


def numeric_label(case_id: str, answer_value: str, unit: str | None = None) -> Label:
    evidence = {"unit": unit} if unit else {}
    return Label(id=case_id, answer=answer_value, family="distance_m", frame_index=0,
                 object_names=["chair"], choices=[], evidence=evidence)


def test_numeric_cases_score_mra_and_count_unparseable_replies(tmp_path: Path) -> None:
    labels = [numeric_label("a", "2.0"), numeric_label("b", "4"), numeric_label("c", "1.5"),
              numeric_label("d", "50", unit="cm"), numeric_label("e", "3")]
    data = PrivateDataset(root=tmp_path, cases={}, labels=labels)
    run = ModelRun(answers={"a": answer("a", "2,0 m"), "b": answer("b", "about 5"),
                            "c": answer("c", "I cannot tell"), "d": answer("d", "0.6 m"),
                            "e": answer("e", None, status="failed")},
                   descriptions={})
    scores = score_numeric(data, run)
    assert isinstance(scores, NumericScores)
    assert (scores.n, scores.unparseable) == (5, 2)
    parsed = [mean_relative_accuracy(2.0, 2.0), mean_relative_accuracy(5.0, 4.0),
              mean_relative_accuracy(60.0, 50.0)]
    assert scores.mean_relative_accuracy == pytest.approx(sum(parsed) / 5)
    assert scores.mean_absolute_relative_error == pytest.approx((0 + 0.25 + 0.2) / 3)


def test_a_dataset_of_dimos_families_only_has_no_numeric_case(sample_dataset: Path,
                                                              tmp_path: Path) -> None:
    dimos_only = tmp_path / "dimos_only"
    shutil.copytree(sample_dataset, dimos_only)
    for name in (SPATIAL_CASES, SPATIAL_LABELS, f"{DATASET_AUDIT}/{AUDIT_SPATIAL_LABELS}"):
        (dimos_only / name).unlink(missing_ok=True)
    run_dir = write_run(tmp_path / "run", [answer(lab.id, lab.answer)
                                           for lab in labels_of(dimos_only)], [])
    outcome = score_numeric(load_private_dataset(dimos_only), load_run(run_dir))
    assert outcome == NotMeasured(reason="no numeric cases")


def test_not_measured_shows_in_the_leaderboard_columns_and_the_report_table() -> None:
    cell = CellScores(recording="r", model="m", dataset_sha256="0" * 64,
                      predictions=PredictionCounts(cases=0, succeeded=0, failed=0,
                                                   parse_failures=0, descriptions=0,
                                                   descriptions_failed=0),
                      scores={NUMERIC.name: {"reason": "no numeric cases"}})
    assert NUMERIC.result(cell) is None
    assert NUMERIC.pool is not None and NUMERIC.section is not None
    pooled = NUMERIC.pool([cell])
    assert pooled["numeric_n"] is None and pooled["numeric_mra"] != pooled["numeric_mra"]
    table = NUMERIC.section.build([cell])
    assert isinstance(table, ReportTable) and not table.rows
    assert table.empty == "Not measured: no numeric cases."
    assert NUMERIC in METRICS
