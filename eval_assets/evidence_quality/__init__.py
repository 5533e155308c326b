"""Evidence quality: the configured detector's evidence, and the gold answers made from it,
against a recording's own truth (synthesized or simulated: ``X.scene.json`` + ``X.truth.npz``).

:func:`evidence_quality` is the pure core (detections with masks, tracks, labels, rejections and
the truth in; an :class:`~eval_assets.schemas.evidence_quality.EvidenceQuality` record out);
:func:`measure_stored` reads the stage folders of one recording and calls it; the Dagster asset
``evidence_quality`` is a thin layer over that. No Dagster here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np

from eval_assets.atomic import write_text_atomic
from eval_assets.evidence_quality.detection import (
    IOU_THRESHOLD,
    MIN_TRUTH_PIXELS,
    FrameDetectionMasks,
    detection_quality,
)
from eval_assets.evidence_quality.gold import (
    NUMERIC_TOLERANCE,
    dimos_families,
    dimos_rejections,
    read_dataset_labels,
    spatial_families,
    spatial_rejections,
)
from eval_assets.evidence_quality.tracks import track_quality
from eval_assets.evidence_quality.truth import FrameTruth, SceneTruth, load_truth, sidecar_paths
from eval_assets.frames import read_rectified_frames
from eval_assets.perception.evidence_io import load_mask, read_detections
from eval_assets.schemas.evidence_quality import (
    EVIDENCE_QUALITY_FILE,
    EvidenceQuality,
    TruthSource,
)
from eval_assets.schemas.spatial import ObjectTrack, SpatialLabel
from eval_assets.schemas.vqa import Label
from eval_assets.tracks import read_object_tracks
from eval_assets.vqa.families import normalize_name

__all__ = ["IOU_THRESHOLD", "MIN_TRUTH_PIXELS", "NUMERIC_TOLERANCE", "FrameDetectionMasks",
           "evidence_quality", "load_truth", "measure_stored", "no_truth",
           "read_evidence_quality", "write_evidence_quality"]

_K_TOLERANCE = 1e-3  # relative: the frames' rectified camera must be the truth's


def no_truth(recording: str, db_path: Path) -> EvidenceQuality:
    """The record of a recording without truth sidecars: nothing measured, and why."""
    scene, npz = sidecar_paths(db_path)
    absent = [p.name for p in (scene, npz) if not p.is_file()]
    return EvidenceQuality(
        recording=recording, status="no_truth",
        reason=f"no truth beside {Path(db_path).name}: {' and '.join(absent)} absent (only "
               "synthesized or simulated recordings carry truth)")


def evidence_quality(recording: str, truth: SceneTruth,
                     detections: Iterable[FrameDetectionMasks],
                     tracks: Sequence[ObjectTrack], labels: Sequence[Label],
                     spatial_labels: Sequence[SpatialLabel],
                     dimos_rejected: Mapping[str, Mapping[str, int]],
                     spatial_rejected: Mapping[str, Mapping[str, int]],
                     detector: str | None = None,
                     frame_cameras: Mapping[int, Sequence[float]] | None = None,
                     ) -> EvidenceQuality:
    """Compare one recording's evidence and gold answers with its truth.

    ``detections`` is consumed one frame at a time (masks need not all be in memory);
    ``frame_cameras`` (frame index → the frame's row-major ``K_rect``), when given, leaves out
    frames whose rectified camera is not the truth's (their pixels would not line up).
    """
    not_checked: Counter[str] = Counter()
    seen: set[int] = set()
    names = {i: str(o["name"]) for i, o in truth.objects.items()}

    def pairs() -> Iterator[tuple[FrameDetectionMasks, FrameTruth]]:
        for det in detections:
            if not truth.has_frame(det.frame_index):
                not_checked["no_truth_frame"] += 1
                continue
            if frame_cameras is not None:
                k = np.asarray(frame_cameras.get(det.frame_index, ()), dtype=np.float64)
                if k.size != 9 or not np.allclose(k.reshape(3, 3), truth.K_rect,
                                                  rtol=_K_TOLERANCE, atol=_K_TOLERANCE):
                    not_checked["camera_differs"] += 1
                    continue
            frame = truth.frame(det.frame_index)
            if any(np.shape(m) != frame.id_map.shape for m in det.masks):
                not_checked["frame_size_differs"] += 1
                continue
            seen.update(i for i, px in frame.pixels.items() if px >= MIN_TRUTH_PIXELS)
            yield det, frame

    detection = detection_quality(pairs(), names)
    # detection_quality consumed the generator: ``not_checked`` is complete only now.
    detection = detection.model_copy(
        update={"frames_not_checked": dict(sorted(not_checked.items()))})
    return EvidenceQuality(
        recording=recording, status="measured",
        truth=TruthSource(generator=truth.generator,
                          scene_json_sha256=truth.scene_json_sha256,
                          truth_npz_sha256=truth.truth_npz_sha256,
                          truth_frames=len(truth.frame_indices)),
        detector=detector, detection=detection,
        tracks=track_quality(tracks, truth.objects, seen),
        families=[*dimos_families(labels, truth, dimos_rejected),
                  *spatial_families(spatial_labels, truth.scene, spatial_rejected)])


def _stored_masks(detections_dir: Path) -> Iterator[FrameDetectionMasks]:
    for frame in read_detections(detections_dir):
        yield FrameDetectionMasks(
            frame_index=frame.frame_index,
            queried=frozenset(normalize_name(n) for n in frame.queried_names),
            names=[d.name for d in frame.detections],
            masks=[load_mask(detections_dir, d) for d in frame.detections])


def measure_stored(recording: str, db_path: Path, frames_dir: Path, detections_dir: Path,
                   tracks_dir: Path, dataset_dir: Path) -> EvidenceQuality:
    """:func:`evidence_quality` of one recording from its stored stage folders, or the
    :func:`no_truth` record when the recording has no truth sidecars."""
    truth = load_truth(db_path)
    if truth is None:
        return no_truth(recording, db_path)
    stored = read_detections(detections_dir)
    detector = sorted({f"{d.detector} {d.detector_version} + {d.segmenter} "
                       f"{d.segmenter_version}" for f in stored for d in f.detections})
    labels, spatial = read_dataset_labels(dataset_dir)
    cameras = {f.frame_index: list(f.K_rect) for f in read_rectified_frames(frames_dir)}
    return evidence_quality(
        recording, truth, _stored_masks(detections_dir),
        read_object_tracks(tracks_dir).tracks, labels, spatial,
        dimos_rejections(dataset_dir), spatial_rejections(dataset_dir),
        detector=", ".join(detector) or None, frame_cameras=cameras)


def write_evidence_quality(out_dir: Path, record: EvidenceQuality) -> Path:
    """Write ``evidence_quality.json`` under ``out_dir`` atomically; return its path."""
    return write_text_atomic(Path(out_dir) / EVIDENCE_QUALITY_FILE,
                             record.model_dump_json(indent=2) + "\n")


def read_evidence_quality(out_dir: Path) -> EvidenceQuality | None:
    """The record stored under ``out_dir``, or None when there is none."""
    path = Path(out_dir) / EVIDENCE_QUALITY_FILE
    if not path.is_file():
        return None
    return EvidenceQuality.model_validate_json(path.read_text(encoding="utf-8"))
