"""Answer proposals from evidence and publish the public/private VQA dataset (dimOS layout).

::

    dataset/
      cases.jsonl        public: case_id, image, question, choices, one case per line
      assets/frame-000100.png
      labels.jsonl       private: case id -> answer, family, evidence summary
      audit/run.json     private: generator version, config, source recording + sha256, frames
      audit/frame-000100/{frame.json, ground_truth.json, cases.json, labels.json}

``cases.jsonl`` and ``assets/`` are the only files a model under test may see. The dataset is
written into a temporary folder beside the destination and renamed into place when complete, so
readers never see a partial dataset; the destination must be absent or empty.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from eval_assets.frames import PointCloudFrame, RectifiedFrame
from eval_assets.geometry.ranging import RangeStats
from eval_assets.schemas.perception import FrameDetections
from eval_assets.schemas.vqa import (
    AUDIT_RUN,
    DATASET_ASSETS,
    DATASET_CASES,
    DATASET_LABELS,
    Case,
    DetectionAudit,
    FrameAudit,
    GroundTruthAudit,
    Label,
    Proposal,
    RangeSummary,
    Rejection,
    RunAudit,
    asset_relpath,
    audit_frame_relpath,
    dumps_document,
    dumps_line,
)
from eval_assets.vqa.families import (
    FAMILIES,
    Answered,
    DetectionEvidence,
    FrameEvidence,
    RangeEvidence,
    Rejected,
    canonical_names,
    case_id_base,
    check_shape,
    normalize_name,
)


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


def frame_evidence(inputs: FrameInputs) -> FrameEvidence:
    """The plain evidence records the family rules read, built from one frame's inputs."""
    frame = inputs.frame
    lidar_ok = inputs.cloud is not None and inputs.cloud.status == "ok"
    reason = (None if lidar_ok else
              (inputs.cloud.reason if inputs.cloud is not None else "no point-cloud frame"))
    dets = inputs.detections
    by_name: dict[str, list[DetectionEvidence]] = {}
    queried: frozenset[str] = frozenset()
    if dets is not None:
        queried = frozenset(normalize_name(n) for n in dets.queried_names)
        for i, d in enumerate(dets.detections):
            stats = inputs.ranges[i] if i < len(inputs.ranges) and lidar_ok else None
            rng = (None if stats is None else
                   RangeEvidence(stats.count, stats.median, stats.q1, stats.q3, stats.min))
            by_name.setdefault(normalize_name(d.name), []).append(
                DetectionEvidence(tuple(d.box_xyxy), d.score, d.mask_area, rng))
    return FrameEvidence(
        frame_index=frame.frame_index, width=frame.width, height=frame.height, queried=queried,
        detections={k: tuple(v) for k, v in by_name.items()}, lidar_ok=lidar_ok,
        lidar_reason=reason,
    )


def answer_frame(inputs: FrameInputs, proposals: Sequence[Proposal]) -> FrameResult:
    """Answer or reject each proposal of one frame, in ordinal order, and assign case ids.

    Author errors, shape errors and repeats of an earlier (family, names) are rejected before
    the evidence is consulted. Ids are ``frame-{index:06d}-{slug}-{family}``; a later case with
    the same id (distinct names that slug alike) gets ``-2``, ``-3``, ...
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

    for p in result.proposals:
        if p.error is not None:
            reject(p, p.error, p.error_detail or "")
            continue
        shape = check_shape(p.family, p.object_names)
        if shape is not None:
            reject(p, shape.reason, shape.detail)
            continue
        family = FAMILIES[p.family]
        names = canonical_names(family, p.object_names)
        if (p.family, names) in seen_questions:
            reject(p, "duplicate_proposal", f"{p.family} about {list(names)} was already proposed")
            continue
        seen_questions.add((p.family, names))
        decision = family.decide(names, evidence)
        if isinstance(decision, Rejected):
            reject(p, decision.reason, decision.detail)
            continue
        assert isinstance(decision, Answered)
        base = case_id_base(index, names, p.family)
        id_uses[base] += 1
        case_id = base if id_uses[base] == 1 else f"{base}-{id_uses[base]}"
        result.cases.append(Case(case_id=case_id, image=image, question=decision.question,
                                 choices=list(decision.choices)))
        result.labels.append(Label(case_id=case_id, answer=decision.answer, family=p.family,
                                   frame_index=index, object_names=list(names),
                                   choices=list(decision.choices), evidence=decision.evidence))
    return result


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


def _ground_truth(result: FrameResult) -> GroundTruthAudit:
    return GroundTruthAudit(
        frame_index=result.frame.frame_index, queried_names=result.queried_names,
        detections=result.detections, proposals=result.proposals, rejections=result.rejections,
    )


def _frame_audit(result: FrameResult) -> FrameAudit:
    frame, cloud = result.frame, result.cloud
    return FrameAudit(
        frame_index=frame.frame_index, image_ts=frame.image_ts,
        image=asset_relpath(frame.frame_index) if result.cases else None,
        width=frame.width, height=frame.height, camera_frame_id=frame.camera_frame_id,
        distortion_model=frame.distortion_model, K_rect=list(frame.K_rect),
        pointcloud_status=cloud.status if cloud is not None else "image_only",
        pointcloud_reason=(cloud.reason if cloud is not None else "no point-cloud frame"),
        lidar_dt=cloud.lidar_dt if cloud is not None else None,
        n_points_in_front=cloud.n_points_in_front if cloud is not None else 0,
        num_proposals=len(result.proposals), num_cases=len(result.cases),
        num_rejections=len(result.rejections),
    )


def check_destination(dest: Path) -> Path:
    """Raise :class:`DatasetExistsError` unless ``dest`` is absent or an empty folder."""
    dest = Path(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise DatasetExistsError(
            f"{dest} already exists and is not an empty folder; choose another --output folder "
            "or remove it first (a dataset is never written over another)")
    return dest


def summarize(results: Sequence[FrameResult], path: Path) -> DatasetSummary:
    """Counts per family and per rejection reason (sorted by name) over all frames."""
    labels = [lab for r in results for lab in r.labels]
    reasons = Counter(rej.reason for r in results for rej in r.rejections)
    cases = [c for r in results for c in r.cases]
    return DatasetSummary(
        path=path, num_frames=len(results),
        num_proposals=sum(len(r.proposals) for r in results), num_cases=len(cases),
        cases_per_family=dict(sorted(Counter(lab.family for lab in labels).items())),
        rejections_per_reason=dict(sorted(reasons.items())),
        example_case=cases[0] if cases else None,
    )


def _write(root: Path, relpath: str, text: str) -> None:
    path = root / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _populate(root: Path, results: Sequence[FrameResult], run: RunAudit) -> None:
    """Write every dataset file under ``root`` (a private temporary folder)."""
    cases = [c for r in results for c in r.cases]
    labels = [lab for r in results for lab in r.labels]
    _write(root, DATASET_CASES, "".join(dumps_line(c) + "\n" for c in cases))
    _write(root, DATASET_LABELS, "".join(dumps_line(lab) + "\n" for lab in labels))
    _write(root, f"audit/{AUDIT_RUN}", dumps_document(run))
    for r in results:
        index = r.frame.frame_index
        if r.cases:
            target = root / asset_relpath(index)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(r.image_file, target)
        folder = audit_frame_relpath(index)
        _write(root, f"{folder}/frame.json", dumps_document(_frame_audit(r)))
        _write(root, f"{folder}/ground_truth.json", dumps_document(_ground_truth(r)))
        _write(root, f"{folder}/cases.json", dumps_document(r.cases))
        _write(root, f"{folder}/labels.json", dumps_document(r.labels))


def publish_dataset(dest: Path, results: Sequence[FrameResult], run: RunAudit,
                    replace: bool = False) -> DatasetSummary:
    """Write the dataset beside ``dest`` and rename it into place.

    Raises :class:`NothingAnswerableError` (publishing nothing) when no frame has a case, and
    :class:`DatasetExistsError` when ``dest`` holds files, unless ``replace`` is set (the asset
    layer's rematerialisation): then the old folder is swapped out after the new one is complete.
    """
    dest = Path(dest).absolute()
    summary = summarize(results, dest)
    if summary.num_cases == 0:
        raise NothingAnswerableError(
            f"no proposal of the {len(results)} selected frames could be answered "
            f"(rejections: {summary.rejections_per_reason or 'none, no proposals'}); nothing was "
            f"written to {dest}. Select other frames or widen the author's vocabulary")
    if not replace:
        check_destination(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.tmp-", dir=dest.parent))
    try:
        _populate(tmp, results, run)
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


def dataset_fingerprint(dataset_dir: Path) -> str | None:
    """Identity of a published dataset: SHA-256 over its cases, its labels and every image asset
    (names and bytes); None when no dataset is published there.

    Two datasets with the same folder name but any other content get other fingerprints, so
    results computed on one are never taken for results on the other.
    """
    root = Path(dataset_dir)
    if not (root / DATASET_CASES).is_file():
        return None
    digest = hashlib.sha256()
    for name in (DATASET_CASES, DATASET_LABELS):
        path = root / name
        digest.update(name.encode("utf-8") + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest() if path.is_file() else b"")
    assets = root / DATASET_ASSETS
    for image in sorted(assets.rglob("*")) if assets.is_dir() else []:
        if image.is_file():
            digest.update(image.relative_to(root).as_posix().encode("utf-8") + b"\0")
            digest.update(hashlib.sha256(image.read_bytes()).digest())
    return digest.hexdigest()
