"""Small real inputs for the report tests: results from the real metric functions, a dataset
folder written with the real schemas, and stage folders written with the real writers."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from eval_assets.frames.pointclouds import encode_points
from eval_assets.metrics.circular import CircularReport
from eval_assets.metrics.judge import summarize_judge_results
from eval_assets.metrics.pope import ZeroDenominatorWarning, pope_metrics
from eval_assets.metrics.vqa import vqa_accuracy
from eval_assets.perception.evidence_io import write_detections_table, write_frame_detections
from eval_assets.schemas.frames import PointCloudFrame, points_relpath, write_pointcloud_frames
from eval_assets.schemas.perception import Detection, FrameDetections
from eval_assets.schemas.predictions import AnswerRecord
from eval_assets.schemas.results import CellScores, NotMeasured, PredictionCounts, ScoredInputs
from eval_assets.schemas.vqa import (
    Case,
    DetectionAudit,
    EvidenceAudit,
    FrameAudit,
    Label,
    RangeSummary,
    asset_relpath,
    audit_frame_relpath,
    dumps_document,
    dumps_line,
)
from eval_assets.scoring.chair import CHAIR, ChairScores
from eval_assets.scoring.circular import CIRCULAR
from eval_assets.scoring.judge import JUDGE, JudgeScores
from eval_assets.scoring.mcq import MCQ, McqScores
from eval_assets.scoring.pope import POPE
from eval_assets.scoring.vision import VISION, VisionScores
from eval_assets.scoring.vqa import VQA
from eval_assets.vqa.dataset import mask_rle

YES_NO = ["yes", "no"]
THIRDS = ["left", "center", "right"]
WIDTH, HEIGHT = 64, 48
K = [50.0, 0.0, 32.0, 0.0, 50.0, 24.0, 0.0, 0.0, 1.0]
BOX = (8.0, 10.0, 24.0, 30.0)  # pixel edges: columns 8..23, rows 10..29
POINTS = np.array([[0.0, 0.0, 2.0], [0.4, 0.2, 1.0], [-0.2, -0.1, 3.5]], dtype=np.float32)


def row(case_id: str, family: str, answer: str, prediction: str | None, recording: str,
        choices: Sequence[str] = YES_NO, frame_index: int = 0) -> dict[str, Any]:
    """One VQA row as vqa_accuracy reads it."""
    return {"case_id": case_id, "family": family, "recording": recording,
            "frame_index": frame_index, "choices": list(choices), "answer": answer,
            "prediction": prediction}


def result(recording: str, model: str, rows: Sequence[dict[str, Any]], *,
           mcq: dict[str, Any] | None = None, lenient: float | None = None,
           judge: JudgeScores | None = None, vision: VisionScores | None = None,
           chair: ChairScores | None = None, circular: CircularReport | None = None,
           sha: str = "0" * 64, inputs: ScoredInputs | None = None) -> CellScores:
    """A cell's scores whose VQA and POPE parts come from the real metric functions (a metric
    given as None is a not-measured record); ``sha`` is the dataset fingerprint it answered,
    ``inputs`` what it was scored from."""
    vqa = vqa_accuracy(rows)
    presence = [r for r in rows if r["family"] == "presence" and r["prediction"] is not None]
    with warnings.catch_warnings():
        # Tiny fixtures often have no "yes" at all; the 0.0 it then reports is what we want.
        warnings.simplefilter("ignore", ZeroDenominatorWarning)
        pope = (pope_metrics([r["prediction"] for r in presence],
                             [r["answer"] for r in presence]) if presence else None)
    failed = sum(1 for r in rows if r["prediction"] is None)
    outcomes = {VQA.name: vqa, CIRCULAR.name: circular, POPE.name: pope,
                MCQ.name: McqScores(strict=mcq or {}, lenient_pct_correct=lenient),
                JUDGE.name: judge, VISION.name: vision, CHAIR.name: chair}
    return CellScores(
        recording=recording, model=model, dataset_sha256=sha,
        predictions=PredictionCounts(cases=len(rows), succeeded=len(rows) - failed,
                                     failed=failed, parse_failures=vqa.overall.parse_failures,
                                     descriptions=0, descriptions_failed=0),
        scores={name: (NotMeasured(reason="not in this fixture") if outcome is None
                       else outcome).model_dump(mode="json")
                for name, outcome in outcomes.items()},
        inputs=inputs)


def judge_scores(results: Sequence[dict[str, Any]], model: str = "judge-1") -> JudgeScores:
    """JudgeScores from the real summary of judge result records."""
    s = summarize_judge_results(results)
    return JudgeScores(judge_model=model, total_judged=s["total_judged"],
                       num_success=s["num_success"], num_failed=s["num_failed"],
                       mean_score=s["mean_score"], median_score=s["median_score"],
                       min_score=s["min_score"], max_score=s["max_score"],
                       score_distribution=s["score_distribution"])


def vision_scores(n: int, mean: float, n_h: int) -> VisionScores:
    """VisionScores with summaries in the metrics.md wording."""
    return VisionScores(
        embedder="all-MiniLM-L6-v2", n_frames=n, mean_similarity=mean, min_similarity=mean,
        max_similarity=mean, threshold=0.75, hallucination_rate=round(n_h / n, 4),
        n_hallucinations=n_h,
        similarity_summary=f"The model's descriptions have an average similarity of {mean:.0%} "
                           f"with the ground truth (min: {mean:.0%}, max: {mean:.0%}) across "
                           f"{n} frames.",
        hallucination_summary=f"The model hallucinated in {n_h} of {n} frames.")


def frame_image() -> np.ndarray:
    """RGB test frame: grey background, a green rectangle where the box is."""
    img = np.full((HEIGHT, WIDTH, 3), 90, dtype=np.uint8)
    x0, y0, x1, y1 = (int(c) for c in BOX)
    img[y0:y1, x0:x1] = (40, 160, 60)
    return img


def box_mask() -> np.ndarray:
    """The mask of the green rectangle, a little inside the box."""
    mask = np.zeros((HEIGHT, WIDTH), dtype=bool)
    mask[12:28, 10:22] = True
    return mask


def write_dataset(root: Path, *, rle: bool = True,
                  mask_source: str | None = None) -> dict[str, Path]:
    """A one-frame dataset (dimOS layout) with three cases, plus point-cloud and detections dirs.

    Returns the paths: dataset, pointclouds, detections.
    """
    dataset, clouds, dets = root / "dataset", root / "pointclouds", root / "detections"
    (dataset / "assets").mkdir(parents=True)
    ok, png = cv2.imencode(".png", cv2.cvtColor(frame_image(), cv2.COLOR_RGB2BGR))
    assert ok
    (dataset / asset_relpath(0)).write_bytes(png.tobytes())
    cases = [
        Case(id="frame-000000-green-box-presence", image=asset_relpath(0),
             question="Does the image contain any green box?", choices=YES_NO),
        Case(id="frame-000000-green-box-horizontal_direction", image=asset_relpath(0),
             question="Which horizontal region contains the visible green box?", choices=THIRDS),
        Case(id="frame-000000-red-ball-presence", image=asset_relpath(0),
             question="Does the image contain any red ball?", choices=YES_NO),
    ]
    labels = [
        Label(id=cases[0].id, answer="yes", family="presence", frame_index=0,
              object_names=["green box"], choices=YES_NO, evidence={"detections": 1}),
        Label(id=cases[1].id, answer="left", family="horizontal_direction",
              frame_index=0, object_names=["green box"], choices=THIRDS,
              evidence={"centre_x": 16.0, "width": WIDTH}),
        Label(id=cases[2].id, answer="no", family="presence", frame_index=0,
              object_names=["red ball"], choices=YES_NO, evidence={"detections": 0}),
    ]
    (dataset / "cases.jsonl").write_text("".join(dumps_line(c) + "\n" for c in cases))
    (dataset / "labels.jsonl").write_text(
        "".join(dumps_line(lab.public()) + "\n" for lab in labels))
    audit = dataset / audit_frame_relpath(0)
    audit.mkdir(parents=True)
    (dataset / "audit" / "labels.jsonl").write_text(
        "".join(dumps_line(lab) + "\n" for lab in labels))
    frame = FrameAudit(
        frame_index=0, image=asset_relpath(0), timestamp=1.0, question_count=3,
        rejected_question_count=0, width=WIDTH, height=HEIGHT,
        camera_frame_id="camera", distortion_model="plumb_bob", K_rect=K, pointcloud_status="ok",
        pointcloud_reason=None, lidar_dt=0.01, n_points_in_front=3, num_proposals=3)
    mask = box_mask()
    detection = DetectionAudit(
        name="green box", box_xyxy=list(BOX), score=0.9, mask_area=int(mask.sum()),
        mask_rle=mask_rle(mask) if rle else None, mask_source=mask_source,
        detector="color", detector_version="1", segmenter="box_region", segmenter_version="1",
        range=RangeSummary(count=1, median=2.0, q1=2.0, q3=2.0, min=2.0))
    truth = EvidenceAudit(frame_index=0, queried_names=["green box", "red ball"],
                          detections=[detection])
    (audit / "frame.json").write_text(dumps_document(frame))
    (audit / "evidence.json").write_text(dumps_document(truth))
    # Point-cloud stage: identity camera_from_cloud, points straight in the camera frame.
    (clouds / "points").mkdir(parents=True)
    (clouds / points_relpath(0)).write_bytes(encode_points(POINTS))
    identity = [1.0, 0, 0, 0, 0, 1.0, 0, 0, 0, 0, 1.0, 0, 0, 0, 0, 1.0]
    write_pointcloud_frames(clouds, [PointCloudFrame(
        frame_index=0, image_ts=1.0, status="ok", reason=None, lidar_stream="lidar",
        lidar_ts=1.01, lidar_dt=0.01, cloud_frame_id="camera", camera_from_cloud=identity,
        points_path=points_relpath(0), n_points=3, n_points_in_front=3)])
    # Detections stage, written by the perception writer.
    stored = write_frame_detections(dets, FrameDetections(
        frame_index=0, width=WIDTH, height=HEIGHT, queried_names=["green box", "red ball"],
        detections=[Detection(name="green box", label_index=0, box_xyxy=BOX, score=0.9,
                              mask_area=int(mask.sum()), mask_path=None, detector="color",
                              detector_version="1", segmenter="box_region",
                              segmenter_version="1")]), [mask])
    write_detections_table(dets, [stored])
    return {"dataset": dataset, "pointclouds": clouds, "detections": dets}


def answer(model: str, case_id: str, text: str | None, latency: float = 0.5) -> AnswerRecord:
    """A stored answer record: success with ``text``, or a timeout when ``text`` is None."""
    if text is None:
        return AnswerRecord(model=model, config_hash="h", status="failed", attempts=3,
                            case_id=case_id, error_category="timeout",
                            error_message="no response within 60 s")
    return AnswerRecord(model=model, config_hash="h", status="success", raw_response=text,
                        latency_s=latency, attempts=1, case_id=case_id)
