"""Scoring the spatial cases: numeric families by MRA with unit conversion from the label's unit,
choice families by accuracy, and every family's score in one shape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval_assets.metrics.headline import family_mean
from eval_assets.metrics.numeric import absolute_relative_error, mean_relative_accuracy
from eval_assets.schemas.results import CellScores, NotMeasured, PredictionCounts
from eval_assets.scoring import METRICS
from eval_assets.scoring.families import FamilyScore, family_scores, pooled_spatial_families
from eval_assets.scoring.inputs import ModelRun, load_private_dataset
from eval_assets.scoring.numeric import NUMERIC, NumericScores, score_numeric
from eval_assets.scoring.spatial import SPATIAL, score_spatial
from eval_assets.scoring.vqa import VQA, score_vqa
from eval_assets_tests.model_runs.helpers import make_dataset, make_spatial_dataset
from eval_assets_tests.scoring.conftest import answer

# The helper's spatial cases: size 45 cm, pair 2.5 m, camera 1.8 m, order "chair, table",
# count 3, direction "front-left".
REPLIES = {"spatial-size-object_size_cm": "0.5 m",  # converted: 50 cm
           "spatial-pair-pair_distance_m": "about 2,5 metres",
           "spatial-camera-camera_distance_m": "I cannot tell",  # unparseable
           "spatial-order-appearance_order": "table, chair",  # wrong
           "spatial-count-object_count_across_frames": "4 chairs",
           "spatial-direction-relative_direction": "Front-left."}


def _dataset(tmp_path: Path):
    dataset = make_spatial_dataset(tmp_path / "ds")
    (dataset.root / "labels.jsonl").write_text("".join(
        json.dumps({"id": c["id"], "answer": "yes"}) + "\n" for c in dataset.cases))
    return load_private_dataset(dataset.root), dataset


def _run(dataset, replies: dict[str, str | None]) -> ModelRun:
    answers = {c["id"]: answer(c["id"], "yes") for c in dataset.cases}
    answers.update({i: answer(i, text) if text is not None else answer(i, None, "failed")
                    for i, text in replies.items()})
    return ModelRun(answers=answers, descriptions={})


def test_numeric_spatial_families_score_mra_per_family_in_the_labels_unit(
        tmp_path: Path) -> None:
    data, dataset = _dataset(tmp_path)
    scores = score_numeric(data, _run(dataset, REPLIES))
    assert isinstance(scores, NumericScores)
    assert list(scores.by_family) == ["camera_distance_m", "object_count_across_frames",
                                      "object_size_cm", "pair_distance_m"]
    size = scores.by_family["object_size_cm"]
    assert size.n == 1 and size.unparseable == 0
    assert size.mean_relative_accuracy == mean_relative_accuracy(50.0, 45.0) == 0.8
    assert size.mean_absolute_relative_error == pytest.approx(5 / 45)
    assert scores.by_family["pair_distance_m"].mean_relative_accuracy == 1.0
    camera = scores.by_family["camera_distance_m"]
    assert (camera.n, camera.unparseable, camera.mean_relative_accuracy) == (1, 1, 0.0)
    assert camera.mean_absolute_relative_error is None
    count = scores.by_family["object_count_across_frames"]
    assert count.mean_relative_accuracy == mean_relative_accuracy(4.0, 3.0) == 0.4
    assert (scores.n, scores.unparseable) == (4, 1)
    assert scores.mean_relative_accuracy == pytest.approx((0.8 + 1.0 + 0.0 + 0.4) / 4)
    assert scores.mean_absolute_relative_error == pytest.approx(
        (5 / 45 + 0 + absolute_relative_error(4, 3)) / 3)
    rows = {r.case_id: r for r in scores.rows}
    assert (rows["spatial-size-object_size_cm"].unit, rows["spatial-size-object_size_cm"]
            .predicted) == ("cm", pytest.approx(50.0))
    assert rows["spatial-camera-camera_distance_m"].predicted is None


def test_a_failed_call_scores_zero_and_counts_as_unparseable(tmp_path: Path) -> None:
    data, dataset = _dataset(tmp_path)
    scores = score_numeric(data, _run(dataset, {**REPLIES,
                                                "spatial-pair-pair_distance_m": None}))
    assert isinstance(scores, NumericScores)
    pair = scores.by_family["pair_distance_m"]
    assert (pair.n, pair.unparseable, pair.mean_relative_accuracy) == (1, 1, 0.0)


def test_choice_spatial_families_score_accuracy_per_family(tmp_path: Path) -> None:
    data, dataset = _dataset(tmp_path)
    report = score_spatial(data, _run(dataset, REPLIES), "rec")
    assert not isinstance(report, NotMeasured)
    assert list(report.by_family) == ["appearance_order", "relative_direction"]
    assert report.by_family["appearance_order"].accuracy == 0.0
    assert report.by_family["relative_direction"].accuracy == 1.0
    assert report.by_family["relative_direction"].chance == 0.25
    assert (report.overall.n, report.overall.correct) == (2, 1)
    unanswered = score_spatial(data, _run(dataset, {
        "spatial-order-appearance_order": "the chair came first",
        "spatial-direction-relative_direction": None}), "rec")
    assert not isinstance(unanswered, NotMeasured)
    assert (unanswered.overall.parse_failures, unanswered.overall.failed_calls) == (1, 1)
    # The dimOS cases are VQA accuracy's alone: no spatial case there.
    vqa = score_vqa(data, _run(dataset, REPLIES), "rec")
    assert vqa.overall.n == len(dataset.cases) and list(vqa.by_family) == ["presence"]


def test_without_spatial_cases_neither_is_measured(tmp_path: Path) -> None:
    tiny = make_dataset(tmp_path / "ds")
    (tiny.root / "labels.jsonl").write_text("".join(
        json.dumps({"id": c["id"], "answer": "yes"}) + "\n" for c in tiny.cases))
    data = load_private_dataset(tiny.root)
    run = ModelRun(answers={c["id"]: answer(c["id"], "yes") for c in tiny.cases},
                   descriptions={})
    assert score_spatial(data, run, "rec") == NotMeasured(reason="no spatial choice cases")
    assert score_numeric(data, run) == NotMeasured(reason="no numeric cases")


def _cell(data, run) -> CellScores:
    scores = {spec.name: outcome.model_dump(mode="json") for spec, outcome in (
        (VQA, score_vqa(data, run, "rec")), (SPATIAL, score_spatial(data, run, "rec")),
        (NUMERIC, score_numeric(data, run)))}
    return CellScores(recording="rec", model="m", dataset_sha256="0" * 64,
                      predictions=PredictionCounts(cases=2, succeeded=2, failed=0,
                                                   parse_failures=0, descriptions=0,
                                                   descriptions_failed=0),
                      scores=scores)


def test_every_family_has_n_and_a_score_in_one_shape(tmp_path: Path) -> None:
    data, dataset = _dataset(tmp_path)
    cell = _cell(data, _run(dataset, REPLIES))
    families = family_scores(cell)
    assert list(families) == ["presence", "appearance_order", "relative_direction",
                              "camera_distance_m", "object_count_across_frames",
                              "object_size_cm", "pair_distance_m"]
    assert families["presence"] == FamilyScore(family="presence", metric="vqa_accuracy",
                                               measure="accuracy", n=2, score=1.0)
    assert families["relative_direction"].score == 1.0
    assert families["relative_direction"].metric == "spatial_accuracy"
    assert families["object_size_cm"] == FamilyScore(
        family="object_size_cm", metric="numeric_accuracy", measure="mra", n=1, score=0.8)
    # The metrics' own report sections and leaderboard columns show them.
    assert SPATIAL in METRICS and NUMERIC in METRICS
    assert SPATIAL.pool is not None and SPATIAL.pool([cell]) == {"spatial_accuracy": 0.5,
                                                                 "spatial_n": 2}
    assert SPATIAL.section is not None and NUMERIC.section is not None
    spatial_rows = SPATIAL.section.build([cell]).rows
    assert [r[2].text for r in spatial_rows] == [  # type: ignore[union-attr]
        "all spatial choice", "appearance_order", "relative_direction"]
    assert len(NUMERIC.section.build([cell]).rows) == 1 + 4


def test_the_headline_pools_the_spatial_families_across_a_models_cells(tmp_path: Path) -> None:
    data, dataset = _dataset(tmp_path)
    cells = [_cell(data, _run(dataset, REPLIES)),
             _cell(data, _run(dataset, {**REPLIES, "spatial-order-appearance_order":
                                        "chair, table"}))]
    pooled = {f.family: f for f in pooled_spatial_families(cells)}
    assert sorted(pooled) == ["appearance_order", "camera_distance_m",
                              "object_count_across_frames", "object_size_cm",
                              "pair_distance_m", "relative_direction"]
    order = pooled["appearance_order"]
    assert (order.kind, order.n, order.score) == ("accuracy", 2, 0.5)
    assert order.ci_low is not None and order.ci_low < 0.5 < (order.ci_high or 0)
    size = pooled["object_size_cm"]
    assert (size.kind, size.n) == ("mra", 2) and size.score == pytest.approx(0.8)
    # Every family weighs the same in the headline, numbers and choices alike (these tiny
    # families are under the headline's minimum n, which would leave every one of them out).
    assert family_mean(list(pooled.values())) is None
    mean = family_mean(list(pooled.values()), min_n=1)
    assert mean is not None and mean.n_families == 6
    assert mean.mean == pytest.approx(sum(f.score or 0 for f in pooled.values()) / 6)
