"""Detections and their masks against the truth's instance masks (id maps).

Each detection's mask is matched to at most one truth object and each truth object to at most one
detection, by mask IoU ≥ the threshold, highest IoU first (ties: detection order, then object
id): with a threshold of 0.5 a mask can overlap only one of the disjoint truth masks that much,
so this greedy matching is the best one. A match counts for a name when the detection and the
truth object carry that name; a match under another name is a naming error (``confusions``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from eval_assets.evidence_quality.truth import NONE_ID, FrameTruth
from eval_assets.schemas.evidence_quality import DetectionQuality, NameDetectionQuality
from eval_assets.vqa.families import MIN_MASK_PIXELS

IOU_THRESHOLD = 0.5
MIN_TRUTH_PIXELS = MIN_MASK_PIXELS
"""A truth object showing fewer pixels (a sliver at the border, a corner behind another) is not
expected to be found: it is left out of recall unless a detection matches it, and a question
about "the visible X" is undefined for it. The families refuse to ask about a detection that
small, by the same constant (:data:`eval_assets.vqa.families.MIN_MASK_PIXELS`)."""


def _norm(name: str) -> str:
    return " ".join(name.split()).lower()


@dataclass(frozen=True)
class FrameDetectionMasks:
    """One frame's detections: normalised names and boolean masks (rectified pixels)."""

    frame_index: int
    queried: frozenset[str]
    names: Sequence[str]
    masks: Sequence[np.ndarray]


@dataclass(frozen=True)
class _Pair:
    detection: int
    truth_id: int
    iou: float


def match_frame(truth: FrameTruth, masks: Sequence[np.ndarray],
                iou_threshold: float = IOU_THRESHOLD) -> list[_Pair]:
    """One-to-one matches of ``masks`` to the frame's truth objects at IoU ≥ the threshold."""
    candidates: list[_Pair] = []
    for k, mask in enumerate(masks):
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != truth.id_map.shape:
            raise ValueError(f"frame {truth.index}: mask {k} is {mask.shape}, the truth map "
                             f"{truth.id_map.shape}; both must be rectified pixels")
        area = int(mask.sum())
        if area == 0:
            continue
        inter = np.bincount(truth.id_map[mask], minlength=256)
        for obj_id in np.flatnonzero(inter[:NONE_ID]).tolist():
            if obj_id not in truth.pixels:
                continue
            iou = float(inter[obj_id]) / float(area + truth.pixels[obj_id] - inter[obj_id])
            if iou >= iou_threshold:
                candidates.append(_Pair(k, obj_id, iou))
    candidates.sort(key=lambda p: (-p.iou, p.detection, p.truth_id))
    used_d: set[int] = set()
    used_t: set[int] = set()
    pairs = []
    for p in candidates:
        if p.detection in used_d or p.truth_id in used_t:
            continue
        used_d.add(p.detection)
        used_t.add(p.truth_id)
        pairs.append(p)
    return sorted(pairs, key=lambda p: p.detection)


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def detection_quality(frames: Iterable[tuple[FrameDetectionMasks, FrameTruth]],
                      object_names: dict[int, str], *,
                      frames_not_checked: dict[str, int] | None = None,
                      iou_threshold: float = IOU_THRESHOLD,
                      min_truth_pixels: int = MIN_TRUTH_PIXELS) -> DetectionQuality:
    """Precision and recall per name, naming accuracy and mean mask IoU over ``frames``.

    ``object_names`` maps each truth id to its name; ``frames_not_checked`` (reason → frames
    left out by the caller) is carried into the record as given.
    """
    dets: Counter[str] = Counter()
    tp: Counter[str] = Counter()
    expected: Counter[str] = Counter()
    ious: dict[str, list[float]] = {}
    queried: set[str] = set()
    confusions: Counter[str] = Counter()
    every_iou: list[float] = []
    checked = matched = named = 0
    for det, truth in frames:
        checked += 1
        queried |= det.queried
        names = [_norm(n) for n in det.names]
        dets.update(names)
        pairs = match_frame(truth, det.masks, iou_threshold)
        hit = {p.truth_id for p in pairs}
        for obj_id, px in truth.pixels.items():
            if px >= min_truth_pixels or obj_id in hit:
                expected[_norm(object_names[obj_id])] += 1
        for p in pairs:
            matched += 1
            every_iou.append(p.iou)
            truth_name = _norm(object_names[p.truth_id])
            if names[p.detection] == truth_name:
                named += 1
                tp[truth_name] += 1
                ious.setdefault(truth_name, []).append(p.iou)
            else:
                confusions[f"{names[p.detection]} -> {truth_name}"] += 1
    per_name = []
    for name in sorted(set(dets) | set(expected) | queried):
        per_name.append(NameDetectionQuality(
            name=name, queried=name in queried, detections=dets[name],
            truth_instances=expected[name], true_positives=tp[name],
            precision=_ratio(tp[name], dets[name]),
            recall=_ratio(tp[name], expected[name]) if name in queried else None,
            mean_iou=float(np.mean(ious[name])) if ious.get(name) else None))
    total = sum(dets.values())
    found = sum(tp[n] for n in expected if n in queried)
    wanted = sum(expected[n] for n in expected if n in queried)
    return DetectionQuality(
        iou_threshold=iou_threshold, min_truth_pixels=min_truth_pixels, frames_checked=checked,
        frames_not_checked=dict(sorted((frames_not_checked or {}).items())), detections=total,
        matched=matched, correctly_named=named, naming_accuracy=_ratio(named, matched),
        mean_mask_iou=float(np.mean(every_iou)) if every_iou else None,
        precision=_ratio(sum(tp.values()), total), recall=_ratio(found, wanted),
        per_name=per_name, confusions=dict(sorted(confusions.items())))
