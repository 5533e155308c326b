"""VisionSimilarity and VisionHallucination (Fair Forge) of the frame descriptions.

Cosine similarity of sentence embeddings of each described, annotated frame's description and
its human annotation; a frame is a hallucination when its similarity is below the threshold.
Not measured on a recording without human annotations.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from eval_assets.metrics.vision import (
    Batch,
    Dataset,
    SimilarityScorer,
    hallucination_metrics,
    score_sessions,
    similarity_metrics,
    validate_threshold,
)
from eval_assets.schemas.annotations import FrameAnnotation
from eval_assets.schemas.results import CellScores, NotMeasured
from eval_assets.scoring.inputs import ModelRun
from eval_assets.scoring.spec import (
    Column,
    Int,
    MetricSpec,
    Note,
    Num,
    Pct,
    ReportTable,
    ScoringInputs,
    Section,
    Text,
    ordered,
    who,
)

NAME = "vision_similarity"


class VisionScores(BaseModel):
    """VisionSimilarity + VisionHallucination of the model's descriptions vs human annotations."""

    model_config = ConfigDict(frozen=True)

    embedder: str
    n_frames: int
    mean_similarity: float | None
    min_similarity: float | None
    max_similarity: float | None
    threshold: float
    hallucination_rate: float
    n_hallucinations: int
    similarity_summary: str
    hallucination_summary: str


def score_vision(
    run: ModelRun, annotations: Mapping[int, FrameAnnotation] | None, *, recording: str,
    model: str, scorer: SimilarityScorer, embedder: str, threshold: float,
) -> VisionScores | NotMeasured:
    """VisionSimilarity and VisionHallucination of the described, annotated frames (one pass)."""
    validate_threshold(threshold)
    if not annotations:
        return NotMeasured(reason="no annotations")
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


def _score(inputs: ScoringInputs) -> VisionScores | NotMeasured:
    s = inputs.similarity
    if s is None:
        raise ValueError(f"{NAME} needs a similarity scorer (ScoringInputs.similarity)")
    return score_vision(inputs.run, inputs.annotations, recording=inputs.recording,
                        model=inputs.model, scorer=s.scorer, embedder=s.embedder,
                        threshold=s.threshold)


def _metadata(v: VisionScores) -> dict[str, Any]:
    return {"mean_similarity": v.mean_similarity, "hallucination_rate": v.hallucination_rate,
            "n_frames": v.n_frames, "summary": v.similarity_summary}


def _pool(cells: Sequence[CellScores]) -> dict[str, Any]:
    visions = [v for _, v in VISION.results(cells)]
    frames = sum(v.n_frames for v in visions)
    if not frames:
        return {"vision_mean_similarity": math.nan, "vision_hallucination_rate": math.nan,
                "vision_n_frames": 0}
    with_mean = [(v.mean_similarity, v.n_frames) for v in visions
                 if v.n_frames and v.mean_similarity is not None]
    mean = (math.fsum(float(m) * n for m, n in with_mean) / sum(n for _, n in with_mean)
            if with_mean else math.nan)
    return {"vision_mean_similarity": mean,
            "vision_hallucination_rate": sum(v.n_hallucinations for v in visions) / frames,
            "vision_n_frames": frames}


LEAD = ("VisionSimilarity / VisionHallucination (Fair Forge): cosine similarity of sentence "
        "embeddings of the model's frame description and the human annotation; a frame is a "
        "hallucination when its similarity is below the threshold.")


def _table(cells: Sequence[CellScores]) -> ReportTable:
    rows, notes = [], []
    for cell, v in VISION.results(ordered(cells)):
        rows.append((*who(cell), Text(v.embedder), Int(v.n_frames), Num(v.mean_similarity, 4),
                     Num(v.min_similarity, 4), Num(v.max_similarity, 4), Num(v.threshold, 2),
                     Pct(v.hallucination_rate if v.n_frames else None),
                     Int(v.n_hallucinations)))
        notes.append(Note("summary", (Text(cell.model, "b"), Text(
            f" on {cell.recording}: {v.similarity_summary} {v.hallucination_summary}"))))
    return ReportTable(
        anchor="vision", title="VisionSimilarity and VisionHallucination", lead=LEAD,
        rows=tuple(rows), notes=tuple(notes),
        empty='No descriptions were scored: see <a href="#not-computed">Not computed</a>.',
        headers=(("Model", False), ("Recording", False), ("Embedder", False), ("Frames", True),
                 ("Mean similarity", True), ("Min", True), ("Max", True), ("Threshold", True),
                 ("Hallucination rate", True), ("Hallucinated", True)))


def _not_computed(cells: Sequence[CellScores]) -> list[tuple[str, str]]:
    if all(VISION.result(c) is not None for c in cells):
        return []
    return [("VisionSimilarity / VisionHallucination",
             "not computed: no human annotations for this recording, so there is no reference "
             "description to compare with")]


VISION: MetricSpec[VisionScores] = MetricSpec(
    order=70,
    name=NAME, description=__doc__ or "", file="vision.json", version="2",
    result_model=VisionScores, score=_score, metadata=_metadata,
    needs=frozenset({"annotations", "similarity"}), describes_frames=True,
    label="VisionSimilarity",
    columns=(Column("vision_mean_similarity"), Column("vision_hallucination_rate"),
             Column("vision_n_frames", integer=True)),
    pool=_pool, section=Section("vision", "Vision", _table), not_computed=_not_computed,
)
