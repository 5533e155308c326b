"""Joining private labels with recorded answers, and each metric over the join."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval_assets.metrics.avlm_rows import rows_from_dicts
from eval_assets.metrics.mcq import score_mcq
from eval_assets.metrics.pope import PopeResult
from eval_assets.schemas.annotations import FrameAnnotation
from eval_assets.schemas.results import NotMeasured
from eval_assets.scoring.chair import ChairScores, score_chair
from eval_assets.scoring.inputs import load_private_dataset, load_run
from eval_assets.scoring.judge import avlm_description_rows
from eval_assets.scoring.mcq import avlm_mcq_rows
from eval_assets.scoring.pope import score_pope
from eval_assets.scoring.vqa import prediction_counts, score_vqa
from eval_assets_tests.scoring.conftest import answer, description, labels_of, write_run


@pytest.fixture
def scored(sample_dataset: Path, tmp_path: Path):
    labels = labels_of(sample_dataset)
    # Every case answered correctly, except: one wrong, one unparseable, one failed call and
    # one never attempted (a crash before it was reached).
    wrong, garbled, failed, missing = labels[0], labels[1], labels[2], labels[3]
    answers = []
    for label in labels:
        if label is missing:
            continue
        if label is wrong:
            other = next(c for c in label.choices if c != label.answer)
            answers.append(answer(label.id, other))
        elif label is garbled:
            answers.append(answer(label.id, "I cannot tell."))
        elif label is failed:
            answers.append(answer(label.id, None, status="failed"))
        else:
            answers.append(answer(label.id, label.answer))
    descriptions = [description(0, "A red ball and a dog on the floor."),
                    description(4, None, status="failed"),
                    description(8, "A yellow box next to a ball.")]
    run = load_run(write_run(tmp_path / "run", answers, descriptions))
    return load_private_dataset(sample_dataset), run, labels


def test_vqa_counts_wrong_parse_failures_and_missing_calls_in_the_denominator(scored) -> None:
    data, run, labels = scored
    report = score_vqa(data, run, "sample")
    n = len(labels)
    assert report.overall.n == n
    assert report.overall.correct == n - 4
    assert report.overall.parse_failures == 1
    assert report.overall.failed_calls == 2  # the failed call and the never-attempted case
    assert report.overall.accuracy == pytest.approx((n - 4) / n)
    counts = prediction_counts(data, run, report)
    assert (counts.cases, counts.failed, counts.parse_failures) == (n, 2, 1)
    assert (counts.descriptions, counts.descriptions_failed) == (2, 1)


def test_pope_scores_only_answered_presence_cases(scored) -> None:
    data, run, labels = scored
    presence = [lab for lab in labels if lab.family == "presence"]
    answered = [lab for lab in presence
                if lab.id in run.answers and run.answers[lab.id].status == "success"]
    assert score_pope(data, run.__class__({}, run.descriptions)) == NotMeasured(
        reason="no presence answers")
    result = score_pope(data, run)
    assert isinstance(result, PopeResult) and result.n == len(answered)
    assert {lab.answer for lab in presence} == {"yes", "no"}


def test_mcq_rows_letter_the_gold_choice_and_score_strict_and_lenient(scored) -> None:
    data, run, labels = scored
    rows = avlm_mcq_rows(data, run)
    assert len(rows) == len(labels)
    first = rows[0]
    gold = labels[0]
    letter = "ABCDEFGH"[gold.choices.index(gold.answer)]
    assert first["ground_truth"] == f"({letter}) {gold.answer}"
    strict = score_mcq(rows_from_dicts(rows))
    # The dimOS prompt asks for the choice text, not "(X)": strict AVLM parsing fails on it.
    assert strict["num_correct"] == 0
    assert strict["num_infer_failed"] == 2
    assert strict["num_parse_failed"] == len(labels) - 2


def test_description_rows_use_annotations_and_carry_private_evidence(scored) -> None:
    data, run, _ = scored
    annotations = {0: FrameAnnotation(frame_index=0, description="A red ball.",
                                      coco_objects=["sports ball"])}
    rows = avlm_description_rows(data, run, annotations, "Describe what you observe.")
    assert [r["id"] for r in rows] == ["frame-000000"]
    assert rows[0]["ground_truth"] == "A red ball."
    assert rows[0]["metadata"]["detections"], "the judge sees the frame's detections"
    # Without annotations every described frame is a row with no reference (missing_gt later).
    bare = avlm_description_rows(data, run, None, "Describe what you observe.")
    assert [r["id"] for r in bare] == ["frame-000000", "frame-000004", "frame-000008"]
    assert all(r["ground_truth"] is None for r in bare)
    assert bare[1]["inference_status"] == "failed"


def test_chair_records_its_ground_truth_source(scored) -> None:
    data, run, _ = scored
    annotations = {0: FrameAnnotation(frame_index=0, description="x", coco_objects=["sports ball"]),
                   8: FrameAnnotation(frame_index=8, description="y", coco_objects=["sports ball"])}
    from_annotations = score_chair(data, run, annotations)
    assert isinstance(from_annotations, ChairScores)
    assert from_annotations.ground_truth_source == "annotations"
    assert from_annotations.hallucinated_objects == ["dog"]
    assert from_annotations.n_captions == 2
    from_audit = score_chair(data, run, None)
    assert isinstance(from_audit, ChairScores) and from_audit.ground_truth_source == "audit"
    # The detector found balls in frame 0, so "ball" is grounded; "dog" is not.
    assert from_audit.hallucinated_objects == ["dog"]


def test_labels_for_unknown_cases_are_rejected(sample_dataset: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "cases.jsonl").write_text("")
    (broken / "labels.jsonl").write_text((sample_dataset / "labels.jsonl").read_text())
    with pytest.raises(ValueError, match="unknown cases"):
        load_private_dataset(broken)
    assert json.loads((sample_dataset / "labels.jsonl").read_text().splitlines()[0])


def test_judge_summary_without_scores_has_no_numbers() -> None:
    from eval_assets.scoring.judge import judge_scores

    avlm = {"total_judged": 3, "num_success": 0, "num_failed": 3, "mean_score": 0,
            "median_score": 0, "min_score": 0, "max_score": 0,
            "score_distribution": {"excellent_9_10": 0, "good_8": 0, "fair_7": 0, "poor_6": 0,
                                   "very_poor_1_5": 0}}
    none_scored = judge_scores(avlm, "j")
    assert none_scored.mean_score is None and none_scored.max_score is None
    scored = judge_scores({**avlm, "num_success": 1, "num_failed": 2, "mean_score": 7,
                           "median_score": 7, "min_score": 7, "max_score": 7}, "j")
    assert (scored.mean_score, scored.min_score) == (7, 7)
