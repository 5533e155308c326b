"""Each metric of a (recording, model) partition, from a loaded run and the private dataset."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from eval_assets.atomic import write_text_atomic
from eval_assets.benchmark.inputs import ModelRun, PrivateDataset
from eval_assets.metrics.chair import chair_from_texts, load_coco_synonyms, tokenize_caption
from eval_assets.metrics.circular import CircularCase, CircularReport, circular_eval
from eval_assets.metrics.judge_calibration import CalibrationReport
from eval_assets.metrics.pope import PopeResult, parse_pope_answer, pope_metrics
from eval_assets.metrics.vision import (
    Batch,
    Dataset,
    SimilarityScorer,
    hallucination_metrics,
    score_sessions,
    similarity_metrics,
    validate_threshold,
)
from eval_assets.metrics.vqa import VqaReport, VqaRow, vqa_accuracy
from eval_assets.schemas.annotations import FrameAnnotation
from eval_assets.schemas.predictions import RUN_ROTATIONS, RotationRecord, rotate_choices
from eval_assets.schemas.results import ChairScores, JudgeScores, PredictionCounts, VisionScores
from eval_assets.schemas.vqa import read_jsonl

DESCRIPTION_CLASS = "frame_description"
PRESENCE = "presence"
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def vqa_rows(data: PrivateDataset, run: ModelRun, recording: str) -> list[VqaRow]:
    """One row per labelled case; a case the model never answered counts as a failed call."""
    rows = []
    for label in data.labels:
        answer = run.answers.get(label.id)
        prediction = answer.raw_response if answer and answer.status == "success" else None
        rows.append(VqaRow(case_id=label.id, family=label.family, recording=recording,
                           frame_index=label.frame_index, choices=label.choices,
                           answer=label.answer, prediction=prediction))
    return rows


def score_vqa(data: PrivateDataset, run: ModelRun, recording: str) -> VqaReport:
    """Accuracy overall / per family with Wilson intervals; failures stay in the denominator."""
    return vqa_accuracy(vqa_rows(data, run, recording))


def load_rotations(run_dir: Path) -> dict[tuple[str, int], RotationRecord] | None:
    """The standing rotated re-asks of a run folder by (case id, rotation); None when the run
    did not ask rotations (no ``rotations.jsonl``)."""
    path = Path(run_dir) / RUN_ROTATIONS
    if not path.is_file():
        return None
    return {(r.case_id, r.rotation): r for r in read_jsonl(path, RotationRecord)}


def circular_cases(data: PrivateDataset, run: ModelRun,
                   rotations: dict[tuple[str, int], RotationRecord],
                   recording: str) -> list[CircularCase]:
    """One CircularEval case per label: rotation 0 from the answers, the others from
    ``rotations``. A rotation without a record, or whose record shows the choices in another
    order than the label's rotated choices (a dataset changed since the run), was not asked."""
    cases = []
    for label in data.labels:
        answer = run.answers.get(label.id)
        replies: dict[int, str | None] = {
            0: answer.raw_response if answer and answer.status == "success" else None}
        for r in range(1, len(label.choices)):
            record = rotations.get((label.id, r))
            if record is None or record.choices != rotate_choices(label.choices, r):
                continue
            replies[r] = record.raw_response if record.status == "success" else None
        cases.append(CircularCase(case_id=label.id, family=label.family, recording=recording,
                                  frame_index=label.frame_index, choices=label.choices,
                                  answer=label.answer, replies=replies))
    return cases


def score_circular(data: PrivateDataset, run: ModelRun,
                   rotations: dict[tuple[str, int], RotationRecord] | None,
                   recording: str) -> CircularReport | None:
    """CircularEval and position bias; None when the run asked no rotations (not measured)."""
    if rotations is None:
        return None
    return circular_eval(circular_cases(data, run, rotations, recording))


def score_pope(data: PrivateDataset, run: ModelRun) -> PopeResult | None:
    """POPE over the presence cases the model answered; ``None`` when there are none.

    POPE has no notion of a failed call, so those cases are left out here (VQA accuracy counts
    them); the number scored is the result's ``n``.
    """
    answers, labels = [], []
    for label in data.labels:
        record = run.answers.get(label.id)
        if label.family != PRESENCE or record is None or record.status != "success":
            continue
        answers.append(parse_pope_answer(record.raw_response or ""))
        labels.append(label.answer)
    return pope_metrics(answers, labels) if answers else None


def prediction_counts(data: PrivateDataset, run: ModelRun, report: VqaReport) -> PredictionCounts:
    """How many calls succeeded or failed, answers and descriptions alike."""
    described = list(run.descriptions.values())
    return PredictionCounts(
        cases=len(data.labels),
        succeeded=sum(1 for r in run.answers.values() if r.status == "success"),
        failed=report.overall.failed_calls,
        parse_failures=report.overall.parse_failures,
        descriptions=sum(1 for r in described if r.status == "success"),
        descriptions_failed=sum(1 for r in described if r.status != "success"),
    )


def _lettered(choices: Sequence[str]) -> list[str]:
    return [f"({LETTERS[i]}) {choice}" for i, choice in enumerate(choices)]


def avlm_mcq_rows(data: PrivateDataset, run: ModelRun) -> list[dict[str, Any]]:
    """The dataset as AVLM ``predictions.jsonl`` MCQ rows (ground truth ``"(B) no"``).

    The model was prompted the dimOS way (choice text, no letters), so AVLM's strict letter regex
    mostly reports parse failures; the lenient tier's exact-choice-text match is the comparable
    number. Both are kept, strict as the AVLM-compatible headline.
    """
    rows = []
    for index, label in enumerate(data.labels):
        case = data.cases[label.id]
        record = run.answers.get(label.id)
        ok = record is not None and record.status == "success"
        question = f"{case.question}\n" + "\n".join(_lettered(case.choices))
        rows.append({
            "index": index,
            "id": label.id,
            "class": label.family,
            "evaluation_type": "mcq",
            "inference_status": "success" if ok else "failed",
            "ground_truth": _lettered(case.choices)[case.choices.index(label.answer)],
            "prediction": record.raw_response if ok and record is not None else None,
            "choices": list(case.choices),
            "conversations": [{"from": "human", "value": f"<image>\n{question}"}],
        })
    return rows


def evidence_metadata(data: PrivateDataset, frame_index: int) -> dict[str, Any]:
    """The frame's private evidence for the judge: what was detected, where, and how far."""
    truth = data.evidence(frame_index)
    if truth is None:
        return {"frame_index": frame_index, "detections": []}
    detections = [
        {"name": d.name, "box_xyxy": [round(v, 1) for v in d.box_xyxy],
         "mask_area_px": d.mask_area,
         "range_m": None if d.range is None else {"median": round(d.range.median, 3),
                                                   "points": d.range.count}}
        for d in truth.detections
    ]
    return {"frame_index": frame_index, "detections": detections}


def avlm_description_rows(
    data: PrivateDataset, run: ModelRun, annotations: Mapping[int, FrameAnnotation] | None,
    prompt: str,
) -> list[dict[str, Any]]:
    """Open-ended AVLM rows: each annotated frame's description vs the human one, with evidence.

    Without annotations the rows carry no reference answer, and the judge records them as
    ``missing_gt`` failures rather than inventing one.
    """
    rows = []
    for index, (frame_index, record) in enumerate(sorted(run.descriptions.items())):
        reference = annotations.get(frame_index) if annotations else None
        if annotations is not None and reference is None:
            continue
        ok = record.status == "success"
        rows.append({
            "index": index,
            "id": record.frame,
            "class": DESCRIPTION_CLASS,
            "evaluation_type": "open_ended",
            "inference_status": "success" if ok else "failed",
            "ground_truth": reference.description if reference else None,
            "prediction": record.raw_response if ok else None,
            "conversations": [{"from": "human", "value": f"<image>\n{prompt}"}],
            "metadata": evidence_metadata(data, frame_index),
        })
    return rows


def score_vision(
    run: ModelRun, annotations: Mapping[int, FrameAnnotation] | None, *, recording: str,
    model: str, scorer: SimilarityScorer, embedder: str, threshold: float,
) -> VisionScores | None:
    """VisionSimilarity and VisionHallucination of the described, annotated frames (one pass)."""
    validate_threshold(threshold)
    if not annotations:
        return None
    batches = [
        Batch(qa_id=record.frame, assistant=record.raw_response or "",
              ground_truth_assistant=annotations[frame_index].description)
        for frame_index, record in sorted(run.descriptions.items())
        if frame_index in annotations and record.status == "success"
    ]
    sessions = score_sessions(
        [Dataset(session_id=recording, assistant_id=model, conversation=batches)], scorer)
    (similarity,) = similarity_metrics(sessions)
    (hallucination,) = hallucination_metrics(sessions, threshold)
    return VisionScores(
        embedder=embedder, n_frames=hallucination.n_frames,
        mean_similarity=similarity.mean_similarity, min_similarity=similarity.min_similarity,
        max_similarity=similarity.max_similarity, threshold=threshold,
        hallucination_rate=hallucination.hallucination_rate,
        n_hallucinations=hallucination.n_hallucinations,
        similarity_summary=similarity.summary, hallucination_summary=hallucination.summary,
    )


def score_chair(
    data: PrivateDataset, run: ModelRun, annotations: Mapping[int, FrameAnnotation] | None,
) -> ChairScores | None:
    """CHAIR of the descriptions against the annotated objects, else the detector evidence.

    With annotations, only annotated frames count and their ``coco_objects`` are the truth.
    Without, every described frame counts and the truth is the audit's detected object names
    mapped through the MSCOCO synonyms ("red ball" → "sports ball"); the result says which.
    """
    synonyms = load_coco_synonyms()
    texts: list[str] = []
    truths: list[list[str]] = []
    for frame_index, record in sorted(run.descriptions.items()):
        if record.status != "success":
            continue
        if annotations is not None:
            if frame_index not in annotations:
                continue
            truth = list(annotations[frame_index].coco_objects)
        else:
            audit = data.evidence(frame_index)
            names = sorted({d.name for d in audit.detections}) if audit else []
            truth = sorted({synonyms[t] for name in names
                            for t in tokenize_caption(name, synonyms) if t in synonyms})
        texts.append(record.raw_response or "")
        truths.append(truth)
    if not texts:
        return None
    report = chair_from_texts(texts, truths, synonyms)
    return ChairScores(chair_i=report.chair_i, chair_s=report.chair_s,
                       hallucinated_objects=report.objects, n_captions=report.n_captions,
                       ground_truth_source="annotations" if annotations is not None else "audit")


def write_jsonl(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """Rows as JSON lines (sorted keys), atomically."""
    write_text_atomic(path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))


def judge_scores(summary: Mapping[str, Any], judge_model: str) -> JudgeScores:
    """Our record of an ``llm_judge_results.json``, with the trust fields the report shows.

    AVLM writes 0 for the mean, median, min and max when nothing was scored (our judge does too
    in AVLM compatibility mode); a 0 is not a score on a 1–10 scale, so ours says ``None`` there.
    Files written before calibration and strict scoring existed read as ``scored`` / ``strict``.
    """
    scored = summary["num_success"] > 0
    stats = {k: summary[k] if scored else None
             for k in ("mean_score", "median_score", "min_score", "max_score")}
    calibration = summary.get("calibration")
    coercions = summary.get("avlm_coercions") or {}
    status = str(summary.get("status", "scored" if scored else "nothing scored"))
    return JudgeScores(
        judge_model=judge_model, total_judged=summary["total_judged"],
        num_success=summary["num_success"], num_failed=summary["num_failed"],
        score_distribution=summary["score_distribution"], **stats,
        status=status, withheld=status.startswith("withheld"),
        num_withheld=summary.get("num_withheld", 0),
        failure_counts=summary.get("failure_counts", {}),
        self_judging=summary.get("self_judging", False),
        self_judging_models=summary.get("self_judging_models", []),
        scoring_mode=summary.get("scoring_mode", "strict"),
        coerced_rows=coercions.get("rows", 0), coercions=coercions.get("by_kind", {}),
        calibration=None if calibration is None else CalibrationReport.model_validate(calibration),
    )
