"""Load a model run and the private side of a dataset, keyed for joining.

A dataset's spatial cases (``spatial_cases.jsonl``, ``spatial_labels.jsonl`` and
``audit/spatial_labels.jsonl``: :mod:`eval_assets.schemas.spatial`) are loaded beside dimOS's
cases when the public file exists; without it a dataset has none. Their answers share the run's
``answers.jsonl`` (by case id).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from eval_assets.atomic import write_text_atomic
from eval_assets.errors import InputError
from eval_assets.hashing import file_sha256
from eval_assets.jsonio import dumps_json, read_jsonl, read_model
from eval_assets.layout import StorageLayout
from eval_assets.schemas.annotations import (
    FrameAnnotation,
    read_annotation_rows,
    read_annotations,
)
from eval_assets.schemas.predictions import (
    RUN_ANSWERS,
    RUN_DESCRIPTIONS,
    AnswerRecord,
    DescriptionRecord,
)
from eval_assets.schemas.spatial import (
    AUDIT_SPATIAL_LABELS,
    SPATIAL_CASES,
    SPATIAL_LABELS,
    SpatialCase,
    SpatialLabel,
    SpatialPrivateLabel,
)
from eval_assets.schemas.vqa import (
    AUDIT_FRAME_EVIDENCE,
    DATASET_ASSETS,
    DATASET_AUDIT,
    DATASET_CASES,
    Case,
    EvidenceAudit,
    Label,
    asset_relpath,
    audit_frame_relpath,
)
from eval_assets.vqa.labels import read_labels
from eval_assets.vqa.overrides import (
    OverrideResolution,
    apply_overrides,
    read_overrides,
    resolve_overrides,
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
    """Public cases with their private labels, and audit evidence per frame.

    ``labels`` are dimOS's single-image multiple-choice cases only, the answers in force: the
    sensor's, with the applicable human overrides in place; ``overrides`` says what became of
    each override (None: no overrides file was given). The spatial cases and their full labels
    (audit) are ``spatial_cases`` and ``spatial_labels`` (empty without them).
    """

    root: Path
    cases: dict[str, Case]
    labels: list[Label]
    spatial_cases: dict[str, SpatialCase] = field(default_factory=dict)
    spatial_labels: list[SpatialLabel] = field(default_factory=list)
    overrides: OverrideResolution | None = field(default=None)

    def evidence(self, frame_index: int) -> EvidenceAudit | None:
        """The frame's detections from the audit, or ``None`` when the generator recorded none
        (a frame it did not audit, or a dataset written by dimOS, which has no such file)."""
        path = self.root / audit_frame_relpath(frame_index) / AUDIT_FRAME_EVIDENCE
        if not path.is_file():
            return None
        return read_model(path, EvidenceAudit, fix="regenerate the dataset")


def load_private_dataset(dataset_dir: Path, overrides_file: Path | None = None) -> PrivateDataset:
    """Cases and full labels of a published dataset, ours or dimOS's (see
    :func:`eval_assets.vqa.labels.read_labels`); every label must name a public case.

    With ``overrides_file`` (the recording's ``<recording>.overrides.jsonl``, absent or not), the
    overrides that match their case's content replace the sensor's answers
    (:mod:`eval_assets.vqa.overrides`); the others are reported in ``overrides``, not applied.
    """
    cases = read_jsonl(dataset_dir / DATASET_CASES, Case)
    labels = read_labels(dataset_dir, cases)
    resolution = None
    if overrides_file is not None:
        resolution = resolve_overrides(dataset_dir, cases, labels,
                                       read_overrides(overrides_file), overrides_file)
        labels = apply_overrides(labels, resolution)
    spatial_cases, spatial_labels = load_spatial_labels(dataset_dir)
    return PrivateDataset(root=dataset_dir, cases={c.id: c for c in cases}, labels=labels,
                          spatial_cases={c.id: c for c in spatial_cases},
                          spatial_labels=spatial_labels, overrides=resolution)


def load_spatial_labels(dataset_dir: Path) -> tuple[list[SpatialCase], list[SpatialLabel]]:
    """The spatial cases and their full labels in case order; none without
    ``spatial_cases.jsonl``.

    The audit's labels carry the family, unit and evidence the scorer needs; the public
    ``spatial_labels.jsonl`` is the authority on answers: every case needs both, with the same
    answer, and every label must name a case.
    """
    cases_path = dataset_dir / SPATIAL_CASES
    if not cases_path.is_file():
        return [], []
    fix = "regenerate the dataset (eval-assets vqa generate)"
    cases = read_jsonl(cases_path, SpatialCase, fix)
    public_path = dataset_dir / SPATIAL_LABELS
    audit_path = dataset_dir / DATASET_AUDIT / AUDIT_SPATIAL_LABELS
    for path in (public_path, audit_path):
        if not path.is_file():
            raise FileNotFoundError(f"{path} does not exist, but {cases_path} does: the spatial "
                                    f"cases cannot be scored without it; {fix}")
    answers = {r.id: r.answer for r in read_jsonl(public_path, SpatialPrivateLabel, fix)}
    audit = {r.id: r for r in read_jsonl(audit_path, SpatialLabel, fix)}
    ids = [c.id for c in cases]
    for path, keyed in ((public_path, answers), (audit_path, audit)):
        unknown = sorted(set(keyed) - set(ids))
        missing = [i for i in ids if i not in keyed]
        if unknown or missing:
            raise ValueError(f"{path}: labels of unknown cases {unknown[:5]} or cases without a "
                             f"label {missing[:5]} (compared with {cases_path}); {fix}")
    for case_id in ids:
        if audit[case_id].answer != answers[case_id]:
            raise ValueError(f"{audit_path}: the answer of {case_id!r} is "
                             f"{audit[case_id].answer!r} but {public_path} says "
                             f"{answers[case_id]!r}; {fix}")
    return cases, [audit[i] for i in ids]


@dataclass(frozen=True)
class Annotations:
    """A recording's annotations attached to the frames of its dataset by image content."""

    by_frame: dict[int, FrameAnnotation]
    """The annotations whose image is one of the dataset's frames, by that frame's index."""
    unmatched: list[FrameAnnotation]
    """The annotations whose image is none of the dataset's frames: reported, never attached."""
    source: Path


def frame_image_hashes(dataset_dir: Path) -> dict[str, int]:
    """SHA-256 of each frame image of a published dataset (``assets/frame-NNNNNN.png``) to the
    frame's index."""
    assets = Path(dataset_dir) / DATASET_ASSETS
    hashes: dict[str, int] = {}
    for image in sorted(assets.glob("frame-*.png")) if assets.is_dir() else []:
        if _FRAME_ID.match(image.stem):
            hashes.setdefault(file_sha256(image), frame_index_of(image.stem))
    return hashes


def load_annotations(annotations_dir: Path, recording: str,
                     dataset_dir: Path) -> Annotations | None:
    """``<annotations_dir>/<recording>.jsonl`` attached to ``dataset_dir``'s frames by image hash
    (:mod:`eval_assets.schemas.annotations`), or ``None`` when the file is absent."""
    path = annotations_dir / f"{recording}.jsonl"
    if not path.is_file():
        return None
    frames = frame_image_hashes(dataset_dir)
    by_frame: dict[int, FrameAnnotation] = {}
    unmatched = []
    for image_sha, row in read_annotations(path).items():
        if image_sha in frames:
            by_frame[frames[image_sha]] = row
        else:
            unmatched.append(row)
    return Annotations(by_frame=dict(sorted(by_frame.items())), unmatched=unmatched, source=path)


def unmatched_annotations(annotations_dir: Path, recordings: Sequence[str],
                          layout: StorageLayout) -> dict[str, Annotations]:
    """The annotations of each of ``recordings`` that match no frame of its published dataset
    (dropped, never attached to another image), by recording; recordings with none, without an
    annotations file or without a dataset are left out. For the report: a reviewer sees what
    the description metrics did not use."""
    out: dict[str, Annotations] = {}
    for recording in recordings:
        dataset = layout.dataset_dir(recording)
        if not dataset.is_dir():
            continue
        found = load_annotations(Path(annotations_dir), recording, dataset)
        if found is not None and found.unmatched:
            out[recording] = found
    return out


def migrate_annotations(path: Path, dataset_dir: Path) -> int:
    """Give every line of an annotations file keyed by frame index the ``image_sha256`` of that
    frame in ``dataset_dir`` (``assets/frame-NNNNNN.png``); returns how many lines changed.

    Run once, after checking that the dataset's frames are the ones annotated. Atomic: the file
    is rewritten whole. A frame the dataset does not have is an :class:`InputError`.
    """
    rows = read_annotation_rows(path)
    changed = 0
    out = []
    for row in rows:
        if row.image_sha256 is None:
            image = Path(dataset_dir) / asset_relpath(row.frame_index)
            if not image.is_file():
                raise InputError(f"{path}: frame_index {row.frame_index} has no image {image} in "
                                 "the published dataset. Fix: publish the dataset the "
                                 "annotations were written for (eval-assets run), or remove "
                                 "that line")
            row = row.model_copy(update={"image_sha256": file_sha256(image)})
            changed += 1
        out.append(row)
    write_text_atomic(path, "".join(
        dumps_json(r.model_dump(mode="json"), indent=None, sort_keys=True, newline=False) + "\n"
        for r in out))
    return changed
