"""The numeric metric over a run: MRA and absolute relative error of numeric-answer cases,
unparseable replies scored 0 and counted, and a visible not-measured record without any."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from eval_assets.layout import (
    AUDIT_SPATIAL_LABELS,
    DATASET_AUDIT,
    SPATIAL_CASES,
    SPATIAL_LABELS,
)
from eval_assets.metrics.angular import mean_angular_accuracy
from eval_assets.metrics.numeric import mean_relative_accuracy
from eval_assets.schemas.results import CellScores, NotMeasured, PredictionCounts
from eval_assets.schemas.spatial import SpatialLabel
from eval_assets.schemas.vqa import Label
from eval_assets.scoring import METRICS
from eval_assets.scoring.inputs import ModelRun, PrivateDataset, load_private_dataset, load_run
from eval_assets.scoring.numeric import (
    NUMERIC,
    NumericScores,
    case_score,
    numeric_cases,
    score_numeric,
    scored_by,
)
from eval_assets.scoring.spec import ReportTable
from eval_assets_tests.metrics.test_numeric_reply import random_reply
from eval_assets_tests.scoring.conftest import answer, labels_of, write_run


def numeric_label(case_id: str, answer_value: str, unit: str | None = None,
                  family: str = "distance_m") -> Label:
    evidence = {"unit": unit} if unit else {}
    return Label(id=case_id, answer=answer_value, family=family, frame_index=0,
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


def test_each_unit_is_scored_by_its_rule() -> None:
    assert scored_by("egocentric_direction_deg", "deg") == "angular"
    assert scored_by("camera_displacement_m", "m") == "mra_zero_rule"
    assert scored_by("path_length_m", "m") == "mra_zero_rule"
    assert scored_by("camera_distance_m", "m") == "mra"  # truths never 0: plain MRA
    assert scored_by("object_count_across_frames", None) == "mra"
    assert case_score(350.0, -10.0, "egocentric_direction_deg", "deg") == 1.0
    assert case_score(30.0, 0.0, "egocentric_direction_deg", "deg") == 0.5
    assert case_score(0.2, 0.0, "camera_displacement_m", "m") == 1.0
    assert case_score(0.6, 0.0, "path_length_m", "m") == mean_relative_accuracy(0.6, 0.3)
    # The same near-zero reply on a family without the rule is plain MRA (its truth is > 0).
    assert case_score(0.2, 0.25, "camera_distance_m", "m") == mean_relative_accuracy(0.2, 0.25)


def test_angles_and_zero_truths_score_by_their_rules_and_rows_keep_the_replies(
        tmp_path: Path) -> None:
    labels = [numeric_label("ego", "-90", "deg", "egocentric_direction_deg"),
              numeric_label("ego2", "30", "deg", "egocentric_direction_deg"),
              numeric_label("turn", "45", "deg", "turn_angle_deg"),
              numeric_label("still", "0", "m", "camera_displacement_m"),
              numeric_label("moved", "0", "m", "path_length_m"),
              numeric_label("far", "2.0", "m", "camera_displacement_m"),
              numeric_label("hedge", "2.0", "m", "camera_distance_m")]
    data = PrivateDataset(root=tmp_path, cases={}, labels=labels)
    replies = {"ego": "The chair is at 9 o'clock.", "ego2": "about 40° right",
               "turn": "It turned left by 45 degrees", "still": "It stayed put: 0.2 m",
               "moved": "0.6 m", "far": "1.5 m", "hedge": "2 or 3 m"}
    run = ModelRun(answers={i: answer(i, text) for i, text in replies.items()}, descriptions={})
    scores = score_numeric(data, run)
    assert isinstance(scores, NumericScores)
    rows = {r.case_id: r for r in scores.rows}
    assert (rows["ego"].predicted, rows["ego"].mra, rows["ego"].scored_by) == (-90.0, 1.0,
                                                                               "angular")
    assert rows["ego2"].mra == mean_angular_accuracy(40.0, 30.0) == 0.9
    # A magnitude family: "left by 45" is 45 degrees turned, not -45.
    assert (rows["turn"].predicted, rows["turn"].mra) == (45.0, 1.0)
    assert (rows["still"].mra, rows["still"].scored_by) == (1.0, "mra_zero_rule")
    assert rows["moved"].mra == mean_relative_accuracy(0.6, 0.3) == 0.0
    assert rows["far"].mra == mean_relative_accuracy(1.5, 2.0)
    hedge = rows["hedge"]
    assert (hedge.predicted, hedge.mra, hedge.reply) == (None, 0.0, "2 or 3 m")
    assert hedge.parse_error is not None and "several values" in hedge.parse_error
    assert rows["ego"].reply == "The chair is at 9 o'clock." and rows["ego"].parse_error is None
    assert (scores.n, scores.unparseable) == (7, 1)
    # Relative error only where it is defined: not on angles, not on a truth of 0.
    assert scores.mean_absolute_relative_error == 0.25  # "far" alone
    assert scores.by_family["egocentric_direction_deg"].mean_absolute_error_deg == 5.0
    assert scores.by_family["egocentric_direction_deg"].mean_absolute_relative_error is None
    assert scores.by_family["camera_displacement_m"].mean_relative_accuracy == pytest.approx(
        (1.0 + mean_relative_accuracy(1.5, 2.0)) / 2)
    pooled = NUMERIC.pool([_cell(scores)]) if NUMERIC.pool else {}
    assert pooled["numeric_abs_rel_error"] == 0.25
    assert pooled["numeric_mra"] == pytest.approx(scores.mean_relative_accuracy)


def test_a_failed_call_keeps_no_reply_and_says_so(tmp_path: Path) -> None:
    data = PrivateDataset(root=tmp_path, cases={}, labels=[numeric_label("a", "2.0")])
    scores = score_numeric(data, ModelRun(answers={"a": answer("a", None, "failed")},
                                          descriptions={}))
    assert isinstance(scores, NumericScores)
    assert (scores.rows[0].reply, scores.rows[0].parse_error) == (None, "failed call")


def test_a_truth_its_rule_cannot_score_is_refused_or_not_numeric(tmp_path: Path) -> None:
    # dimOS-file labels: a number the rule cannot score is no numeric case (as "yes" is not).
    data = PrivateDataset(root=tmp_path, cases={}, labels=[
        numeric_label("zero", "0", "m", "camera_distance_m"),
        numeric_label("neg", "-30", "deg", "egocentric_direction_deg")])
    assert [c[0] for c in numeric_cases(data)] == ["neg"]
    with pytest.raises(ValueError, match=r"evidence\.unit is 'ft'"):
        numeric_cases(PrivateDataset(root=tmp_path, cases={},
                                     labels=[numeric_label("a", "2", "ft")]))
    # A spatial label is generated numeric: a truth MRA cannot score is an error, never skipped.
    spatial = SpatialLabel(id="s", answer="0", family="camera_distance_m", answer_type="number",
                           unit="m", object_names=["chair"], frame_index=0,
                           evidence={"tracks": [{"name": "chair",
                                                 "center_world": [0.0, 0.0, 0.0]}]})
    with pytest.raises(ValueError, match=r"cannot be scored by mra.*regenerate the dataset"):
        numeric_cases(PrivateDataset(root=tmp_path, cases={}, labels=[],
                                     spatial_labels=[spatial]))


def _cell(scores: NumericScores) -> CellScores:
    return CellScores(recording="r", model="m", dataset_sha256="0" * 64,
                      predictions=PredictionCounts(cases=scores.n, succeeded=scores.n, failed=0,
                                                   parse_failures=0, descriptions=0,
                                                   descriptions_failed=0),
                      scores={NUMERIC.name: scores.model_dump(mode="json")})


# The replies (issue 42, item 5) and their reasons in a distance case.
NEVER_GUESSED = {"3 units": "unknown unit 'units'", "3 cm³": "volume unit 'cm³' for a length",
                 "2+ m": "not a single value: '2+'", "1e-400 m": "out of range: '1e-400 m'",
                 "1e400 m": "out of range: '1e400 m'",
                 "3 m, no wait, 4 m": "self-correction: '3 m', then '4 m'"}


def test_no_reply_fails_numeric_scoring(tmp_path: Path) -> None:
    # Every rule (MRA, the zero rule, angles, a magnitude) over the replies and seeded
    # random ones: each case is scored or is a parse failure with its reason, never an error.
    rules = [("distance_m", "2.0", "m"), ("camera_displacement_m", "0", "m"),
             ("egocentric_direction_deg", "-90", "deg"), ("turn_angle_deg", "45", "deg"),
             ("distance_m", "50", "cm")]
    rng = random.Random(0)
    replies = [*NEVER_GUESSED, "1" * 400 + "°", "1.7e308 km", *["1e15 m"] * 3, "-1e15°",
               *(random_reply(rng) for _ in range(150))]
    labels = [numeric_label(f"{i}-{j}", truth, unit, family)
              for i in range(len(replies)) for j, (family, truth, unit) in enumerate(rules)]
    run = ModelRun(answers={lab.id: answer(lab.id, replies[int(lab.id.split("-")[0])])
                            for lab in labels}, descriptions={})
    scores = score_numeric(PrivateDataset(root=tmp_path, cases={}, labels=labels), run)
    assert isinstance(scores, NumericScores) and scores.n == len(labels)
    for row in scores.rows:
        assert (row.predicted is None) == (row.parse_error is not None), row
        assert 0.0 <= row.mra <= 1.0
    reasons = {r.reply: r.parse_error for r in scores.rows if r.case_id.endswith("-0")}
    assert {reply: reasons[reply] for reply in NEVER_GUESSED} == NEVER_GUESSED
