"""CHAIR (Rohrbach et al. 2018) of the frame descriptions, with the MSCOCO synonym list.

With annotations, only annotated frames count and their ``coco_objects`` are the truth. Without,
every described frame counts and the truth is the audit's detected object names mapped through
the MSCOCO synonyms ("red ball" → "sports ball"); the result says which.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from eval_assets.metrics.chair import chair_from_texts, load_coco_synonyms, tokenize_caption
from eval_assets.schemas.annotations import FrameAnnotation
from eval_assets.schemas.results import CellScores, NotMeasured
from eval_assets.scoring.inputs import ModelRun, PrivateDataset
from eval_assets.scoring.spec import (
    Column,
    Int,
    MetricSpec,
    Num,
    ReportTable,
    ScoringInputs,
    Section,
    Text,
    ordered,
    who,
)

NAME = "chair_hallucination"
GROUND_TRUTH_SOURCES = {"annotations": "human annotations", "audit": "detector evidence (audit)"}


class ChairScores(BaseModel):
    """CHAIR of the descriptions; ``ground_truth_source`` says which objects counted as present."""

    model_config = ConfigDict(frozen=True)

    chair_i: float
    chair_s: float
    hallucinated_objects: list[str]
    n_captions: int
    ground_truth_source: Literal["annotations", "audit"]


def _truth(data: PrivateDataset, frame_index: int, synonyms: Mapping[str, str]) -> list[str]:
    audit = data.evidence(frame_index)
    names = sorted({d.name for d in audit.detections}) if audit else []
    return sorted({synonyms[t] for name in names
                   for t in tokenize_caption(name, synonyms) if t in synonyms})


def score_chair(
    data: PrivateDataset, run: ModelRun, annotations: Mapping[int, FrameAnnotation] | None,
) -> ChairScores | NotMeasured:
    """CHAIR of the descriptions against the annotated objects, else the detector evidence;
    not measured when no description was scored."""
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
            truth = _truth(data, frame_index, synonyms)
        texts.append(record.raw_response or "")
        truths.append(truth)
    if not texts:
        return NotMeasured(reason="no described frames")
    report = chair_from_texts(texts, truths, synonyms)
    return ChairScores(chair_i=report.chair_i, chair_s=report.chair_s,
                       hallucinated_objects=report.objects, n_captions=report.n_captions,
                       ground_truth_source="annotations" if annotations is not None else "audit")


def _score(inputs: ScoringInputs) -> ChairScores | NotMeasured:
    return score_chair(inputs.data, inputs.run, inputs.annotations)


def _metadata(c: ChairScores) -> dict[str, Any]:
    return {"chair_i": c.chair_i, "chair_s": c.chair_s,
            "ground_truth_source": c.ground_truth_source}


def _pool(cells: Sequence[CellScores]) -> dict[str, Any]:
    chairs = [c for _, c in CHAIR.results(cells)]
    captions = sum(c.n_captions for c in chairs)
    if not chairs:
        return {"chair_i": math.nan, "chair_s": math.nan, "chair_n_captions": 0}
    if len(chairs) == 1:
        c = chairs[0]
        return {"chair_i": c.chair_i, "chair_s": c.chair_s, "chair_n_captions": c.n_captions}
    # CHAIR_s is a per-caption rate, so rate * captions is a count; CHAIR_i needs mention counts,
    # which ChairScores does not keep, so it is not pooled rather than averaged wrongly.
    bad = sum(round(c.chair_s * c.n_captions) for c in chairs)
    return {"chair_i": math.nan, "chair_s": bad / captions if captions else math.nan,
            "chair_n_captions": captions}


LEAD = ("CHAIR (Rohrbach et al. 2018) of the descriptions with the MSCOCO synonym list: "
        "CHAIR<sub>i</sub> = hallucinated object mentions / all mentions, CHAIR<sub>s</sub> "
        "= descriptions with a hallucination / all descriptions. The ground-truth source "
        "says which objects counted as present.")


def _table(cells: Sequence[CellScores]) -> ReportTable:
    rows = []
    for cell, c in CHAIR.results(ordered(cells)):
        objects = ", ".join(c.hallucinated_objects) or "none"
        rows.append((*who(cell), Int(c.n_captions), Num(c.chair_i, 4), Num(c.chair_s, 4),
                     Text(objects),
                     Text(GROUND_TRUTH_SOURCES.get(c.ground_truth_source,
                                                   c.ground_truth_source))))
    return ReportTable(
        anchor="chair", title="CHAIR", lead=LEAD, rows=tuple(rows), empty="No CHAIR results.",
        headers=(("Model", False), ("Recording", False), ("Descriptions", True),
                 ("CHAIR_i", True), ("CHAIR_s", True), ("Hallucinated objects", False),
                 ("Ground truth from", False)))


def _not_computed(cells: Sequence[CellScores]) -> list[tuple[str, str]]:
    lines = []
    if any(c.ground_truth_source == "audit" for _, c in CHAIR.results(cells)):
        lines.append(("CHAIR truth source",
                      "computed against the detector evidence (audit), not human annotations: "
                      "only the objects the detector was asked about and found count as "
                      "present, so a correctly named object it was not asked about counts as a "
                      "hallucination; read CHAIR here as an upper bound"))
    if any(CHAIR.result(c) is None for c in cells):
        lines.append(("CHAIR", "not computed: no description was scored"))
    return lines


CHAIR: MetricSpec[ChairScores] = MetricSpec(
    order=80,
    name=NAME, description=__doc__ or "", file="chair.json", version="2", result_model=ChairScores,
    score=_score, metadata=_metadata, needs=frozenset({"annotations"}), describes_frames=True,
    label="CHAIR",
    columns=(Column("chair_i"), Column("chair_s"), Column("chair_n_captions", integer=True)),
    pool=_pool, section=Section("chair", "CHAIR", _table), not_computed=_not_computed,
)
