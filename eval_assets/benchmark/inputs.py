"""Load a model run and the private side of a dataset, keyed for joining."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from eval_assets.schemas.annotations import FrameAnnotation, read_annotations
from eval_assets.schemas.predictions import (
    RUN_ANSWERS,
    RUN_DESCRIPTIONS,
    AnswerRecord,
    DescriptionRecord,
)
from eval_assets.schemas.vqa import (
    DATASET_CASES,
    DATASET_LABELS,
    Case,
    GroundTruthAudit,
    Label,
    audit_frame_relpath,
    read_jsonl,
)

_FRAME_ID = re.compile(r"^frame-(\d+)$")


def frame_index_of(frame_id: str) -> int:
    """``frame-000100`` → 100; anything else is an error naming the id."""
    match = _FRAME_ID.match(frame_id)
    if match is None:
        raise ValueError(f"{frame_id!r} is not a frame id of the form frame-NNNNNN")
    return int(match.group(1))


@dataclass(frozen=True)
class ModelRun:
    """One model's recorded calls on one dataset."""

    answers: dict[str, AnswerRecord]
    descriptions: dict[int, DescriptionRecord]


def load_run(run_dir: Path) -> ModelRun:
    """The final ``answers.jsonl`` / ``descriptions.jsonl`` of a predictions run folder."""
    answers = {r.case_id: r for r in read_jsonl(run_dir / RUN_ANSWERS, AnswerRecord)}
    described = run_dir / RUN_DESCRIPTIONS
    descriptions = (
        {frame_index_of(r.frame): r for r in read_jsonl(described, DescriptionRecord)}
        if described.is_file() else {}
    )
    return ModelRun(answers=answers, descriptions=descriptions)


@dataclass(frozen=True)
class PrivateDataset:
    """Public cases with their private labels, and audit evidence per frame."""

    root: Path
    cases: dict[str, Case]
    labels: list[Label]

    def ground_truth(self, frame_index: int) -> GroundTruthAudit | None:
        """The frame's audit evidence, or ``None`` for a frame the generator did not audit."""
        path = self.root / audit_frame_relpath(frame_index) / "ground_truth.json"
        if not path.is_file():
            return None
        return GroundTruthAudit.model_validate_json(path.read_text(encoding="utf-8"))


def load_private_dataset(dataset_dir: Path) -> PrivateDataset:
    """Cases and labels of a published dataset; every label must name a public case."""
    cases = {c.case_id: c for c in read_jsonl(dataset_dir / DATASET_CASES, Case)}
    labels = read_jsonl(dataset_dir / DATASET_LABELS, Label)
    unknown = [label.case_id for label in labels if label.case_id not in cases]
    if unknown:
        raise ValueError(f"{dataset_dir / DATASET_LABELS}: labels for unknown cases {unknown[:3]}; "
                         "the dataset folder is inconsistent, regenerate it")
    return PrivateDataset(root=dataset_dir, cases=cases, labels=labels)


def load_annotations(annotations_dir: Path, recording: str) -> dict[int, FrameAnnotation] | None:
    """``<annotations_dir>/<recording>.jsonl`` by frame, or ``None`` when the file is absent."""
    path = annotations_dir / f"{recording}.jsonl"
    return read_annotations(path) if path.is_file() else None
