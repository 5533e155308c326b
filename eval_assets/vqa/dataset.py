"""Answer proposals from evidence and publish the public/private VQA dataset (dimOS layout).

::

    dataset/
      cases.jsonl        public: id, image, question, choices (dimOS's PublicCase), one per line
      assets/frame-000100.png   one per selected frame, as dimOS writes them
      labels.jsonl       private: id, answer (dimOS's PrivateLabel)
      audit/run.json     private: dimOS's keys, then generator version, config, source + sha256
      audit/labels.jsonl private, ours: every case's full Label (family, frame, names, evidence)
      audit/frame-000100/{frame.json, ground_truth.json, cases.json, labels.json}  dimOS's keys
                         first, ours beside them; evidence.json (ours): detections and masks
      audit/bias.jsonl, audit/bias.json  private, ours: each case's blind-solvability score
                         (:mod:`eval_assets.vqa.bias`), per family, and what pruning dropped

``cases.jsonl`` and ``assets/`` are the only files a model under test may see. The dataset is
written into a temporary folder beside the destination and renamed into place when complete, so
readers never see a partial dataset; the destination must be absent or empty.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from dataclasses import replace as replace_fields
from pathlib import Path
from typing import TypeVar

import numpy as np
from pydantic import BaseModel

from eval_assets.frames import PointCloudFrame, RectifiedFrame
from eval_assets.geometry.ranging import RangeStats
from eval_assets.hashing import bytes_sha256, file_digest
from eval_assets.schemas.perception import FrameDetections
from eval_assets.schemas.spatial import AUDIT_SPATIAL_LABELS, SPATIAL_CASES, SPATIAL_LABELS
from eval_assets.schemas.vqa import (
    AUDIT_FRAME_EVIDENCE,
    AUDIT_LABELS,
    AUDIT_RUN,
    DATASET_ASSETS,
    DATASET_AUDIT,
    DATASET_CASES,
    DATASET_LABELS,
    MARKED_ASSETS,
    AnswerAudit,
    AnswerBalance,
    Case,
    DetectionAudit,
    EvidenceAudit,
    FrameAudit,
    GroundTruthRow,
    Label,
    Proposal,
    ProposalAudit,
    RangeSummary,
    Rejection,
    RunAudit,
    asset_relpath,
    audit_frame_relpath,
    dumps_document,
    dumps_line,
    marked_asset_relpath,
)
from eval_assets.vqa.background import BackgroundSplit
from eval_assets.vqa.balance import answer_balance
from eval_assets.vqa.bias import (
    AUDIT_BIAS_CASES,
    AUDIT_BIAS_SUMMARY,
    BiasCase,
    BiasConfig,
    PrunedCase,
    audit_cases,
    case_of_label,
    case_of_spatial,
    write_bias_audit,
)
from eval_assets.vqa.families import (
    Answered,
    DetectionEvidence,
    FrameEvidence,
    RangeEvidence,
    Rejected,
    case_id_base,
    check_shape,
    id_names,
    normalize_name,
    rule_of,
)
from eval_assets.vqa.spatial import SpatialSet, write_spatial

M = TypeVar("M", bound=BaseModel)


class DatasetExistsError(FileExistsError):
    """The destination folder already holds files; a dataset is only published into an empty one."""


class NothingAnswerableError(RuntimeError):
    """No proposal of any selected frame could be answered; nothing was published."""


@dataclass(frozen=True)
class FrameInputs:
    """Everything known about one selected frame before answering.

    ``masks[i]`` and ``ranges[i]`` belong to ``detections.detections[i]``; ``image_file`` is the
    rectified PNG that becomes the public asset.
    """

    frame: RectifiedFrame
    image_file: Path
    cloud: PointCloudFrame | None
    detections: FrameDetections | None
    masks: Sequence[np.ndarray] = ()
    ranges: Sequence[RangeStats | None] = ()
    # Per mask, its points split into floor seen beyond the object and the rest; empty where
    # the frame has no camera pose (no tracks) to find the floor by.
    backgrounds: Sequence[BackgroundSplit] = ()


@dataclass
class FrameResult:
    """What one frame produced: cases with their labels, the rejected proposals and the audit
    of its evidence (masks as run lengths, so the full masks need not be kept in memory)."""

    frame: RectifiedFrame
    image_file: Path
    cloud: PointCloudFrame | None
    proposals: list[Proposal]
    queried_names: list[str] = field(default_factory=list)
    detections: list[DetectionAudit] = field(default_factory=list)
    cases: list[Case] = field(default_factory=list)
    labels: list[Label] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)
    ground_truth: list[GroundTruthRow] = field(default_factory=list)


@dataclass(frozen=True)
class DatasetSummary:
    """Counts of a published (or attempted) dataset, for asset metadata and the CLI."""

    path: Path
    num_frames: int
    num_proposals: int
    num_cases: int
    cases_per_family: dict[str, int]
    rejections_per_reason: dict[str, int]
    example_case: Case | None
    # The spatial families' second public file (spatial_cases.jsonl), counted apart from
    # dimOS's cases above.
    spatial_cases_per_family: dict[str, int] = field(default_factory=dict)
    spatial_rejections_per_reason: dict[str, int] = field(default_factory=dict)
    # Per family, the gold answers' distribution and the most common one's share (what always
    # giving it scores): dimOS's families, then the spatial ones a guess could win.
    answers_per_family: dict[str, AnswerBalance] = field(default_factory=dict)
    spatial_answers_per_family: dict[str, AnswerBalance] = field(default_factory=dict)


def frame_evidence(inputs: FrameInputs) -> FrameEvidence:
    """The plain evidence records the family rules read, built from one frame's inputs."""
    frame = inputs.frame
    lidar_ok = inputs.cloud is not None and inputs.cloud.status == "ok"
    reason = (None if lidar_ok else
              (inputs.cloud.reason if inputs.cloud is not None else "no point-cloud frame"))
    dets = inputs.detections
    by_name: dict[str, list[DetectionEvidence]] = {}
    queried: frozenset[str] = frozenset()
    unsure: frozenset[str] = frozenset()
    if dets is not None:
        queried = frozenset(normalize_name(n) for n in dets.queried_names)
        unsure = frozenset(normalize_name(n) for n in dets.unsure_names)
        for i, d in enumerate(dets.detections):
            stats = inputs.ranges[i] if i < len(inputs.ranges) and lidar_ok else None
            split = inputs.backgrounds[i] if i < len(inputs.backgrounds) else None
            rng = None
            if stats is not None:
                rest = split.rest if split is not None and split.background else None
                rng = RangeEvidence(
                    stats.count, stats.median, stats.q1, stats.q3, stats.min,
                    background=split.background if split is not None else 0,
                    without_background=None if rest is None else RangeEvidence(
                        rest.count, rest.median, rest.q1, rest.q3, rest.min))
            by_name.setdefault(normalize_name(d.name), []).append(
                DetectionEvidence(d.box_xyxy, d.score, d.mask_area, rng))
    return FrameEvidence(
        frame_index=frame.frame_index, width=frame.width, height=frame.height, queried=queried,
        detections={k: tuple(v) for k, v in by_name.items()}, lidar_ok=lidar_ok,
        lidar_reason=reason, unsure=unsure,
    )


def answer_frame(inputs: FrameInputs, proposals: Sequence[Proposal]) -> FrameResult:
    """Answer or reject each proposal of one frame, in ordinal order, and assign case ids.

    Author errors, shape errors and repeats of an earlier (family, names) are rejected before
    the evidence is consulted. Choices keep the proposal's name order (as dimOS); ids are
    ``frame-{index:06d}-{slug}-{family}`` with the names sorted for order-free families; a later
    case with the same id (distinct names that slug alike) gets ``-2``, ``-3``, ...
    """
    index = inputs.frame.frame_index
    evidence = frame_evidence(inputs)
    result = FrameResult(
        frame=inputs.frame, image_file=inputs.image_file, cloud=inputs.cloud,
        proposals=sorted(proposals, key=lambda p: p.ordinal),
        queried_names=list(inputs.detections.queried_names) if inputs.detections else [],
        detections=detection_audits(inputs))
    seen_questions: set[tuple[str, tuple[str, ...]]] = set()
    id_uses: Counter[str] = Counter()
    image = asset_relpath(index)

    def reject(p: Proposal, reason: str, detail: str) -> None:
        result.rejections.append(Rejection(frame_index=index, ordinal=p.ordinal, family=p.family,
                                           object_names=list(p.object_names), reason=reason,
                                           detail=detail))
        result.ground_truth.append(GroundTruthRow(
            proposal=_proposal_audit(p), status="rejected", reason=detail, ordinal=p.ordinal,
            author=p.author, reason_code=reason))

    for p in result.proposals:
        if p.error is not None:
            reject(p, p.error, p.error_detail or "")
            continue
        shape = check_shape(p.family, p.object_names)
        if shape is not None:
            reject(p, shape.reason, shape.detail)
            continue
        family = rule_of(p.family)
        assert family is not None  # check_shape rejected any other name
        names = tuple(normalize_name(n) for n in p.object_names)
        sorted_names = id_names(family, names)
        if (p.family, sorted_names) in seen_questions:
            reject(p, "duplicate_proposal", f"{p.family} about {list(names)} was already proposed")
            continue
        seen_questions.add((p.family, sorted_names))
        decision = family.decide(names, evidence)
        if isinstance(decision, Rejected):
            reject(p, decision.reason, decision.detail)
            continue
        assert isinstance(decision, Answered)
        base = case_id_base(index, sorted_names, p.family)
        id_uses[base] += 1
        case_id = base if id_uses[base] == 1 else f"{base}-{id_uses[base]}"
        result.cases.append(Case(id=case_id, image=image, question=decision.question,
                                 choices=list(decision.choices)))
        result.labels.append(Label(id=case_id, answer=decision.answer, family=p.family,
                                   frame_index=index, object_names=list(names),
                                   choices=list(decision.choices), evidence=decision.evidence))
        result.ground_truth.append(GroundTruthRow(
            proposal=_proposal_audit(p), status="answered",
            answer=AnswerAudit(question=decision.question, choices=list(decision.choices),
                               answer=decision.answer, evidence=decision.evidence),
            ordinal=p.ordinal, author=p.author, id=case_id))
    return result


def _proposal_audit(p: Proposal) -> ProposalAudit:
    return ProposalAudit(family=p.family, object_names=[str(n) for n in p.object_names])


def mask_rle(mask: np.ndarray) -> dict[str, list[int]]:
    """Row-major run lengths of a boolean mask, starting with a (possibly empty) run of False."""
    flat = np.asarray(mask, dtype=bool).reshape(-1)
    change = np.flatnonzero(flat[1:] != flat[:-1]) + 1
    bounds = np.concatenate([[0], change, [flat.size]])
    counts = np.diff(bounds).tolist()
    if flat.size and flat[0]:
        counts = [0, *counts]
    return {"size": [int(mask.shape[0]), int(mask.shape[1])], "counts": [int(c) for c in counts]}


def detection_audits(inputs: FrameInputs) -> list[DetectionAudit]:
    """Every detection of a frame as audit evidence: box, score, mask RLE, range, models."""
    dets = inputs.detections
    lidar_ok = inputs.cloud is not None and inputs.cloud.status == "ok"
    audits: list[DetectionAudit] = []
    for i, d in enumerate(dets.detections if dets is not None else []):
        stats = inputs.ranges[i] if i < len(inputs.ranges) and lidar_ok else None
        audits.append(DetectionAudit(
            name=d.name, box_xyxy=list(d.box_xyxy), score=d.score, mask_area=d.mask_area,
            mask_rle=mask_rle(inputs.masks[i]) if i < len(inputs.masks) else None,
            mask_source=d.mask_path, detector=d.detector, detector_version=d.detector_version,
            segmenter=d.segmenter, segmenter_version=d.segmenter_version,
            range=None if stats is None else RangeSummary(
                count=stats.count, median=stats.median, q1=stats.q1, q3=stats.q3, min=stats.min),
        ))
    return audits


def _evidence(result: FrameResult) -> EvidenceAudit:
    return EvidenceAudit(frame_index=result.frame.frame_index,
                         queried_names=result.queried_names, detections=result.detections)


def _frame_audit(result: FrameResult) -> FrameAudit:
    frame, cloud = result.frame, result.cloud
    return FrameAudit(
        frame_index=frame.frame_index, image=asset_relpath(frame.frame_index),
        timestamp=frame.image_ts, question_count=len(result.cases),
        rejected_question_count=len(result.rejections), width=frame.width,
        height=frame.height, camera_frame_id=frame.camera_frame_id,
        distortion_model=frame.distortion_model, K_rect=list(frame.K_rect),
        pointcloud_status=cloud.status if cloud is not None else "image_only",
        pointcloud_reason=(cloud.reason if cloud is not None else "no point-cloud frame"),
        lidar_dt=cloud.lidar_dt if cloud is not None else None,
        n_points_in_front=cloud.n_points_in_front if cloud is not None else 0,
        num_proposals=len(result.proposals),
    )


def check_destination(dest: Path) -> Path:
    """Raise :class:`DatasetExistsError` unless ``dest`` is absent or an empty folder."""
    dest = Path(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise DatasetExistsError(
            f"{dest} already exists and is not an empty folder; choose another --output folder "
            "or remove it first (a dataset is never written over another)")
    return dest


@dataclass
class DatasetTally:
    """What remains of the frames once each is written: counts and indices, no evidence, so a
    long recording's dataset is published in memory that does not grow with its length."""

    frame_indices: list[int] = field(default_factory=list)
    frames_with_cases: list[int] = field(default_factory=list)
    any_lidar: bool = False
    num_proposals: int = 0
    num_cases: int = 0
    cases_per_family: Counter[str] = field(default_factory=Counter)
    rejections_per_reason: Counter[str] = field(default_factory=Counter)
    example_case: Case | None = None
    # Gold answers per family (a few short strings per case: small beside the frames' evidence).
    answers: dict[str, Counter[str]] = field(default_factory=dict)

    def add(self, result: FrameResult) -> None:
        """Count one written frame."""
        self.frame_indices.append(result.frame.frame_index)
        if result.cases:
            self.frames_with_cases.append(result.frame.frame_index)
        self.any_lidar |= result.cloud is not None and result.cloud.status == "ok"
        self.num_proposals += len(result.proposals)
        self.num_cases += len(result.cases)
        self.cases_per_family.update(lab.family for lab in result.labels)
        self.rejections_per_reason.update(rej.reason for rej in result.rejections)
        for lab in result.labels:
            self.answers.setdefault(lab.family, Counter())[lab.answer] += 1
        if self.example_case is None and result.cases:
            self.example_case = result.cases[0]

    def summary(self, path: Path) -> DatasetSummary:
        """Counts per family and per rejection reason, sorted by name."""
        return DatasetSummary(
            path=path, num_frames=len(self.frame_indices), num_proposals=self.num_proposals,
            num_cases=self.num_cases, cases_per_family=dict(sorted(self.cases_per_family.items())),
            rejections_per_reason=dict(sorted(self.rejections_per_reason.items())),
            example_case=self.example_case,
            answers_per_family={
                family: balance for family, answers in sorted(self.answers.items())
                if (balance := answer_balance(answers.elements(), chosen=False)) is not None})


def _write(root: Path, relpath: str, text: str) -> None:
    path = root / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _write_frames(root: Path, results: Iterable[FrameResult]) -> DatasetTally:
    """Write each frame's asset, audit and lines as it comes, under ``root`` (a private temporary
    folder), and keep only the tally; the frames are consumed one at a time."""
    tally = DatasetTally()
    (root / DATASET_AUDIT).mkdir(parents=True, exist_ok=True)
    with (open(root / DATASET_CASES, "w", encoding="utf-8") as cases,
          open(root / DATASET_LABELS, "w", encoding="utf-8") as labels,
          open(root / DATASET_AUDIT / AUDIT_LABELS, "w", encoding="utf-8") as full_labels):
        for r in results:
            cases.writelines(dumps_line(c) + "\n" for c in r.cases)
            labels.writelines(dumps_line(lab.public()) + "\n" for lab in r.labels)
            full_labels.writelines(dumps_line(lab) + "\n" for lab in r.labels)
            index = r.frame.frame_index
            # Every selected frame's image, answered or not, as dimOS publishes them.
            target = root / asset_relpath(index)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(r.image_file, target)
            folder = audit_frame_relpath(index)
            _write(root, f"{folder}/frame.json", dumps_document(_frame_audit(r)))
            _write(root, f"{folder}/ground_truth.json",
                   dumps_document(r.ground_truth, exclude_none=True))
            _write(root, f"{folder}/cases.json", dumps_document(r.cases))
            _write(root, f"{folder}/labels.json", dumps_document(r.labels))
            _write(root, f"{folder}/{AUDIT_FRAME_EVIDENCE}", dumps_document(_evidence(r)))
            tally.add(r)
    return tally


def publish_dataset(dest: Path, results: Iterable[FrameResult],
                    make_run: Callable[[DatasetSummary, DatasetTally], RunAudit],
                    replace: bool = False, spatial: SpatialSet | None = None,
                    bias: BiasConfig | None = None) -> DatasetSummary:
    """Write the dataset beside ``dest``, frame by frame, and rename it into place.

    ``spatial`` (the spatial families' cases) is written beside dimOS's files: its images are
    frames of the same ``assets/``; a case showing a frame that was not published is an error.

    ``bias`` (default :class:`~eval_assets.vqa.bias.BiasConfig`: on, no pruning) scores every
    case's blind solvability into ``audit/bias.jsonl`` and ``audit/bias.json``; with
    ``bias.prune`` the cases Iterative Bias Pruning drops are left out of every file (their
    ground-truth rows say ``bias_pruned`` and why) before the dataset is renamed into place.

    ``make_run`` builds ``audit/run.json`` from the counts once every frame is written. Raises
    :class:`NothingAnswerableError` (publishing nothing) when no frame has a case, and
    :class:`DatasetExistsError` when ``dest`` holds files, unless ``replace`` is set (the asset
    layer's rematerialisation): then the old folder is swapped out after the new one is complete.
    """
    dest = Path(dest).absolute()
    if not replace:
        check_destination(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.tmp-", dir=dest.parent))
    try:
        tally = _write_frames(tmp, results)
        summary = tally.summary(dest)
        if spatial is not None:
            _check_spatial_images(spatial, tally.frame_indices)
        if summary.num_cases == 0:
            raise NothingAnswerableError(
                f"no proposal of the {summary.num_frames} selected frames could be answered "
                f"(rejections: {summary.rejections_per_reason or 'none, no proposals'}); nothing "
                f"was written to {dest}. Select other frames or widen the author's vocabulary")
        audit = audit_cases(_written_cases(tmp, spatial), bias or BiasConfig())
        pruning = audit.summary.pruning
        if pruning is not None and pruning.pruned:
            pruned = {p.id: p for p in pruning.pruned}
            _prune_written(tmp, pruned, tally)
            summary = tally.summary(dest)
            if spatial is not None:
                spatial = _prune_spatial(spatial, pruned)
        write_bias_audit(tmp, audit)
        if spatial is not None:
            write_spatial(tmp, spatial)
            summary = replace_fields(
                summary, spatial_cases_per_family=spatial.cases_per_family(),
                spatial_rejections_per_reason=spatial.rejections_per_reason(),
                spatial_answers_per_family=spatial.answers_per_family())
        _write(tmp, f"{DATASET_AUDIT}/{AUDIT_RUN}", dumps_document(make_run(summary, tally)))
        tmp.chmod(0o755)  # mkdtemp makes it owner-only; a published dataset is world-readable
        if replace and dest.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{dest.name}.old-", dir=dest.parent))
            os.replace(dest, old / "dataset")
            os.replace(tmp, dest)
            shutil.rmtree(old)
        else:
            # rename() onto an empty folder replaces it atomically; a non-empty one fails.
            check_destination(dest)
            os.rename(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return summary


def _written_cases(root: Path, spatial: SpatialSet | None) -> list[BiasCase]:
    """The cases written so far under ``root`` (dimOS's, from its files) and the spatial ones,
    as the blind-solvability audit sees them."""
    cases = _read_lines(root / DATASET_CASES, Case)
    labels = {lab.id: lab for lab in _read_lines(root / DATASET_AUDIT / AUDIT_LABELS, Label)}
    out = [case_of_label(case, labels[case.id]) for case in cases]
    if spatial is not None:
        out += [case_of_spatial(case, label)
                for case, label in zip(spatial.cases, spatial.labels, strict=True)]
    return out


def _read_lines(path: Path, model: type[M]) -> list[M]:
    return [model.model_validate_json(line)
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _keep_lines(path: Path, pruned: Mapping[str, object]) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(line for line in lines
                            if line.strip() and json.loads(line)["id"] not in pruned),
                    encoding="utf-8")


def _prune_written(root: Path, pruned: Mapping[str, PrunedCase], tally: DatasetTally) -> None:
    """Take the ``pruned`` dimOS cases out of the files written under ``root`` and out of
    ``tally``: the case and label files lose their lines, each frame's audit its case and label,
    and its ground-truth row turns ``rejected`` (``bias_pruned``, with why; the answer kept for
    the reviewer); ``frame.json`` counts follow. Spatial ids are left to :func:`_prune_spatial`."""
    labels = {lab.id: lab for lab in _read_lines(root / DATASET_AUDIT / AUDIT_LABELS, Label)}
    mine = {case_id: labels[case_id] for case_id in pruned if case_id in labels}
    if not mine:
        return
    for name in (DATASET_CASES, DATASET_LABELS, f"{DATASET_AUDIT}/{AUDIT_LABELS}"):
        _keep_lines(root / name, mine)
    for index in sorted({lab.frame_index for lab in mine.values()}):
        folder = root / audit_frame_relpath(index)
        gone = {i for i, lab in mine.items() if lab.frame_index == index}
        for name in ("cases.json", "labels.json"):
            rows = json.loads((folder / name).read_text(encoding="utf-8"))
            (folder / name).write_text(dumps_document([r for r in rows if r["id"] not in gone]),
                                       encoding="utf-8")
        truth = [GroundTruthRow.model_validate(r) for r in
                 json.loads((folder / "ground_truth.json").read_text(encoding="utf-8"))]
        truth = [r.model_copy(update={"status": "rejected", "reason": pruned[r.id].why,
                                      "reason_code": "bias_pruned"})
                 if r.id in gone and r.status == "answered" else r for r in truth]
        (folder / "ground_truth.json").write_text(dumps_document(truth, exclude_none=True),
                                                  encoding="utf-8")
        frame = FrameAudit.model_validate_json((folder / "frame.json").read_text("utf-8"))
        frame = frame.model_copy(update={
            "question_count": frame.question_count - len(gone),
            "rejected_question_count": frame.rejected_question_count + len(gone)})
        (folder / "frame.json").write_text(dumps_document(frame), encoding="utf-8")
    tally.num_cases -= len(mine)
    tally.cases_per_family.subtract(lab.family for lab in mine.values())
    tally.cases_per_family = +tally.cases_per_family  # a family pruned away is not listed
    tally.rejections_per_reason["bias_pruned"] += len(mine)
    for lab in mine.values():
        tally.answers[lab.family][lab.answer] -= 1
    tally.answers = {f: +answers for f, answers in tally.answers.items() if +answers}
    left = {lab.frame_index for i, lab in labels.items() if i not in mine}
    tally.frames_with_cases = [i for i in tally.frame_indices if i in left]
    if tally.example_case is not None and tally.example_case.id in mine:
        first = _read_lines(root / DATASET_CASES, Case)
        tally.example_case = first[0] if first else None


def _prune_spatial(spatial: SpatialSet, pruned: Mapping[str, PrunedCase]) -> SpatialSet:
    """``spatial`` without the pruned cases (``audit/bias.json`` says which and why)."""
    keep = [i for i, case in enumerate(spatial.cases) if case.id not in pruned]
    return SpatialSet(tuple(spatial.cases[i] for i in keep),
                      tuple(spatial.labels[i] for i in keep), spatial.rejections)


def _check_spatial_images(spatial: SpatialSet, published: Sequence[int]) -> None:
    images = {asset_relpath(i) for i in published} | {marked_asset_relpath(i) for i in published}
    for case in spatial.cases:
        missing = [image for image in case.images if image not in images]
        if missing:
            raise ValueError(f"spatial case {case.id} shows {missing}, which are not published "
                             "frames; build its tracks from the selected frames only")


def dataset_fingerprint(dataset_dir: Path) -> str | None:
    """Identity of a published dataset: SHA-256 over its cases, its labels (public and audit), its
    blind-solvability audit (where published) and every image asset (names and bytes); None when
    no dataset is published there.

    Two datasets with the same folder name but any other content get other fingerprints, so
    results computed on one are never taken for results on the other.
    """
    root = Path(dataset_dir)
    if not (root / DATASET_CASES).is_file():
        return None
    # The hash of, per file, its name, a NUL and its raw digest (nothing for a missing label file).
    parts: list[bytes] = []
    # The audit's labels carry each case's family and frame, which the metrics group by.
    for name in (DATASET_CASES, DATASET_LABELS, f"{DATASET_AUDIT}/{AUDIT_LABELS}"):
        path = root / name
        parts += [name.encode("utf-8") + b"\0", file_digest(path) if path.is_file() else b""]
    # The spatial files only where published, so a dataset without them keeps its identity.
    # The blind-solvability audit too (which cases are flagged decides the "unflagged" scores),
    # where published.
    for name in (SPATIAL_CASES, SPATIAL_LABELS, f"{DATASET_AUDIT}/{AUDIT_SPATIAL_LABELS}",
                 f"{DATASET_AUDIT}/{AUDIT_BIAS_CASES}", f"{DATASET_AUDIT}/{AUDIT_BIAS_SUMMARY}"):
        path = root / name
        if path.is_file():
            parts += [name.encode("utf-8") + b"\0", file_digest(path)]
    images = [p for folder in (root / DATASET_ASSETS, root / MARKED_ASSETS) if folder.is_dir()
              for p in folder.rglob("*") if p.is_file()]
    for image in sorted(images, key=lambda p: p.relative_to(root).as_posix()):
        parts += [image.relative_to(root).as_posix().encode("utf-8") + b"\0",
                  file_digest(image)]
    return bytes_sha256(b"".join(parts))
