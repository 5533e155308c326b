"""Generate a VQA dataset: load stored evidence, answer proposals, publish the dataset.

Two entry points share one core:

- :func:`build_dataset` reads the stored stage folders (rectified frames, point clouds,
  detections) and the proposals; the Dagster multi-asset and the CLI both call it.
- :func:`generate_from_recording` runs every stage directly on a recording, without Dagster
  (frames -> perception -> proposals -> dataset), as ``eval-assets vqa generate`` does.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

from eval_assets.frames import (
    build_pointcloud_frames,
    build_rectified_frames,
    load_points,
    read_pointcloud_frames,
    read_rectified_frames,
)
from eval_assets.geometry.ranging import RangeStats, range_statistics
from eval_assets.perception.evidence_io import build_detections, load_mask, read_detections
from eval_assets.perception.protocols import Detector, Segmenter
from eval_assets.recording import Recording
from eval_assets.recording.watch import sha256_file
from eval_assets.schemas.perception import FrameDetections
from eval_assets.schemas.vqa import Proposal, RunAudit, SourceRecording
from eval_assets.vqa.authors import AuthorConfig, build_author
from eval_assets.vqa.dataset import (
    DatasetSummary,
    FrameInputs,
    answer_frame,
    check_destination,
    publish_dataset,
    summarize,
)
from eval_assets.vqa.families import (
    AREA_MARGIN,
    COVERAGE_SCHEMES,
    DISTANCE_BOUNDARIES_M,
    MIN_RANGE_POINTS,
)
from eval_assets.vqa.proposals import propose_frames

GENERATOR = "eval_assets.vqa"


def generator_version() -> str:
    """The installed eval_assets version (recorded in ``audit/run.json``)."""
    try:
        return version("eval_assets")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


def rules_config() -> dict[str, Any]:
    """The evidence thresholds in force, recorded in the audit so a dataset explains itself."""
    return {
        "min_range_points": MIN_RANGE_POINTS,
        "area_margin": float(AREA_MARGIN),
        "distance_boundaries_m": [float(b) for b in DISTANCE_BOUNDARIES_M],
        "coverage_schemes_percent": {k: list(v) for k, v in COVERAGE_SCHEMES.items()},
    }


def perception_summary(detections: Sequence[FrameDetections]) -> dict[str, Any]:
    """The queried names and the models behind the detections, for ``audit/run.json``."""
    names: dict[str, None] = {}
    models: set[tuple[str, str, str, str]] = set()
    for frame in detections:
        names.update(dict.fromkeys(frame.queried_names))
        models.update((d.detector, d.detector_version, d.segmenter, d.segmenter_version)
                      for d in frame.detections)
    return {"names": list(names),
            "models": [{"detector": m[0], "detector_version": m[1], "segmenter": m[2],
                        "segmenter_version": m[3]} for m in sorted(models)]}


def default_output_dir(recording: Path) -> Path:
    """``$XDG_STATE_HOME`` (or ``~/.local/state``) ``/eval_assets/<recording-stem>-frames``."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "eval_assets" / f"{Path(recording).stem}-frames"


def frame_selection(image_index: int | None, start: int | None, stop: int | None,
                    stride: int, count: int) -> list[int]:
    """Frame indices from ``image_index`` or ``start``/``stop`` (exclusive)/``stride``.

    ``stop`` defaults to the number of images; giving both forms is an error.
    """
    if stride < 1:
        raise ValueError(f"--stride must be at least 1, got {stride}")
    if image_index is not None:
        if start is not None or stop is not None:
            raise ValueError("give either --image-index or --start/--stop/--stride, not both")
        return [image_index]
    first = 0 if start is None else start
    end = count if stop is None else stop
    chosen = list(range(first, end, stride))
    if not chosen:
        raise ValueError(
            f"--start {first} --stop {end} --stride {stride} selects no frame of the {count} "
            "images; pick a non-empty range")
    return chosen


def iter_frame_inputs(frames_dir: Path, clouds_dir: Path, detections_dir: Path,
                      frame_indices: Sequence[int] | None = None) -> Iterator[FrameInputs]:
    """Each selected frame's stored evidence, with LiDAR range statistics per detection mask.

    Frames are loaded one at a time (masks are large). ``frame_indices`` defaults to every
    rectified frame. A frame absent from the point-cloud or detections tables is kept with no
    evidence of that kind (its proposals are then rejected).
    """
    frames = {f.frame_index: f for f in read_rectified_frames(frames_dir)}
    clouds = {c.frame_index: c for c in read_pointcloud_frames(clouds_dir)}
    detections = {d.frame_index: d for d in read_detections(detections_dir)}
    wanted = sorted(frames) if frame_indices is None else sorted(set(frame_indices))
    missing = [i for i in wanted if i not in frames]
    if missing:
        raise ValueError(
            f"{frames_dir}: frames {missing[:5]} were not rectified; rebuild the rectified frames "
            "with these frames selected")
    for index in wanted:
        frame, cloud, dets = frames[index], clouds.get(index), detections.get(index)
        masks = [load_mask(detections_dir, d) for d in dets.detections] if dets else []
        ranges: list[RangeStats | None] = [None] * len(masks)
        if cloud is not None and cloud.status == "ok" and masks:
            ranges = range_statistics(
                load_points(clouds_dir, cloud),
                np.asarray(cloud.camera_from_cloud, dtype=np.float64).reshape(4, 4),
                np.asarray(frame.K_rect, dtype=np.float64).reshape(3, 3),
                frame.width, frame.height, np.stack(masks),
            )
        yield FrameInputs(frame=frame, image_file=Path(frames_dir) / frame.image_path,
                          cloud=cloud, detections=dets, masks=masks, ranges=ranges)


def build_dataset(frames_dir: Path, clouds_dir: Path, detections_dir: Path,
                  proposals: Sequence[Proposal], output: Path, source: SourceRecording,
                  config: dict[str, Any], frame_indices: Sequence[int] | None = None,
                  replace: bool = False) -> DatasetSummary:
    """Answer the proposals of the selected frames from stored evidence and publish the dataset.

    ``config`` is recorded in ``audit/run.json`` next to the evidence thresholds. Raises
    ``NothingAnswerableError`` (nothing published) when no proposal can be answered and
    ``DatasetExistsError`` when ``output`` holds files and ``replace`` is False.
    """
    if not replace:
        check_destination(output)
    by_frame: dict[int, list[Proposal]] = {}
    for p in proposals:
        by_frame.setdefault(p.frame_index, []).append(p)
    results = [answer_frame(i, by_frame.get(i.frame.frame_index, []))
               for i in iter_frame_inputs(frames_dir, clouds_dir, detections_dir, frame_indices)]
    summary = summarize(results, Path(output))
    run = RunAudit(
        generator=GENERATOR, generator_version=generator_version(),
        config={**config, "rules": rules_config()}, source=source,
        frame_indices=[r.frame.frame_index for r in results],
        frames_with_cases=[r.frame.frame_index for r in results if r.cases],
        num_proposals=summary.num_proposals, num_cases=summary.num_cases,
        cases_per_family=summary.cases_per_family,
        rejections_per_reason=summary.rejections_per_reason,
    )
    return publish_dataset(output, results, run, replace=replace)


def generate_from_recording(recording: Path, output: Path, frame_indices: Sequence[int],
                            author_config: AuthorConfig, detector: Detector,
                            segmenter: Segmenter, perception_names: Sequence[str] | None = None,
                            allow_pickle: bool = False) -> DatasetSummary:
    """Run frames -> perception -> proposals -> dataset on one recording, without Dagster.

    Intermediate stage folders live in a temporary folder that is removed afterwards; only the
    dataset is kept. The detector is asked about ``perception_names`` (default: the author's
    vocabulary), so presence questions about absent names get real "no" answers.
    """
    recording = Path(recording)
    check_destination(output)
    names = list(perception_names or author_config.vocabulary)
    with tempfile.TemporaryDirectory(prefix="eval_assets-vqa-") as work:
        work_dir = Path(work)
        frames_dir, clouds_dir, dets_dir = (work_dir / "frames", work_dir / "pointclouds",
                                            work_dir / "detections")
        with Recording.open(recording, allow_pickle=allow_pickle) as rec:
            frames = build_rectified_frames(rec, frames_dir, frame_indices)
            build_pointcloud_frames(rec, frames, clouds_dir)
        detections = build_detections(frames_dir, frames, dets_dir, names, detector, segmenter)
        author = build_author(author_config)
        proposals = propose_frames(author, frames_dir, frames,
                                   author_config.max_proposals_per_frame)
        source = SourceRecording(name=recording.name, sha256=sha256_file(recording))
        config = {"author": author_config.model_dump(mode="json"),
                  "perception": perception_summary(detections)}
        return build_dataset(frames_dir, clouds_dir, dets_dir, proposals, output, source,
                             config, [f.frame_index for f in frames])
