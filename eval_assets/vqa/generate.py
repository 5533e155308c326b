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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

from eval_assets.frames import (
    FrameSelectionConfig,
    FrameSelectionRecord,
    PreparedFrames,
    build_pointcloud_frames,
    load_points,
    load_selection_config,
    plan_indices,
    plan_selection,
    prepare_rectified_frames,
    read_pointcloud_frames,
    read_rectified_frames,
)
from eval_assets.frames.image_motion import IMAGE_MOTION_REASONS
from eval_assets.frames.pointclouds import MAX_LIDAR_DT
from eval_assets.frames.selection import selection_from
from eval_assets.geometry.ranging import RangeStats, camera_points, range_statistics
from eval_assets.hashing import file_sha256
from eval_assets.layout import selection_file_for
from eval_assets.perception.evidence_io import build_detections, load_mask, read_detections
from eval_assets.perception.protocols import Detector, Segmenter
from eval_assets.recording import Recording
from eval_assets.schemas.perception import FrameDetections
from eval_assets.schemas.spatial import FrameCamera, ObjectTracks
from eval_assets.schemas.vqa import (
    GenerationAudit,
    Proposal,
    RunAudit,
    SourceRecording,
)
from eval_assets.tracks import build_tracks
from eval_assets.tracks.lidar_objects import Namer
from eval_assets.tracks.lift import FLOOR_BAND_M, RANGE_GATE_M, visible_points
from eval_assets.vqa.authors import AuthorConfig, build_author
from eval_assets.vqa.background import BackgroundSplit, background_splits
from eval_assets.vqa.bias import BiasConfig
from eval_assets.vqa.dataset import (
    DatasetSummary,
    DatasetTally,
    FrameInputs,
    answer_frame,
    check_destination,
    publish_dataset,
)
from eval_assets.vqa.declarations import families as declared_families
from eval_assets.vqa.declarations import family_names
from eval_assets.vqa.families import (
    AREA_MARGIN,
    COVERAGE_SCHEMES,
    DISTANCE_BOUNDARIES_M,
    MIN_RANGE_POINTS,
)
from eval_assets.vqa.proposals import iter_frame_proposals
from eval_assets.vqa.spatial import build_spatial
from eval_assets.vqa.spatial.marked import MarkSource

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
        # object_distance / closest_object: floor seen beyond the object (vqa.background).
        "background_floor_band_m": FLOOR_BAND_M,
        "background_gate_m": RANGE_GATE_M,
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


def generation_audit(selection: FrameSelectionRecord) -> GenerationAudit:
    """dimOS's ``generation`` block of ``run.json`` from the frame stage's selection record:
    dimOS's request fields (the range as it was resolved), then our mode and reason."""
    config = selection.config
    ranged = config.image_index is None
    return GenerationAudit(
        dataset=Path(selection.recording).name, image_index=config.image_index,
        start=selection.start if ranged else None, stop=selection.stop if ranged else None,
        stride=config.stride, quality_window=config.quality_window,
        min_brightness=config.min_brightness, time_step=config.time_step,
        mode=selection.mode, why=selection.why)


def model_names(config: dict[str, Any]) -> dict[str, str]:
    """dimOS's ``models`` block of ``run.json`` (author and detector names) from our config."""
    author = config.get("author", {})
    names = {"author": (f"vlm:{author.get('vlm_model')}" if author.get("author") == "vlm"
                        else str(author.get("author", "vocabulary")))}
    detectors = sorted({m["detector"] for m in config.get("perception", {}).get("models", [])})
    if detectors:
        names["detector"] = ", ".join(detectors)
    return names


def default_output_dir(recording: Path) -> Path:
    """``$XDG_STATE_HOME`` (or ``~/.local/state``) ``/eval_assets/<recording-stem>-frames``."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "eval_assets" / f"{Path(recording).stem}-frames"


def frame_selection(recording: Path, image_index: int | None = None, start: int | None = None,
                    stop: int | None = None, stride: int | None = None,
                    time_step: float | None = None, quality_window: float | None = None,
                    min_brightness: float | None = None, max_bad_fraction: float | None = None
                    ) -> tuple[FrameSelectionConfig, Path | None]:
    """The frame selection of ``eval-assets vqa generate`` and the file it came from, if any.

    Any selection option given replaces the recording's ``<name>.selection.yaml`` (dimOS's
    options: ``image_index``, or ``start``/``stop``/``stride``, ``time_step``,
    ``quality_window`` with ``min_brightness``); with none, that file is used, or the default
    policy when there is no file. ``max_bad_fraction`` overrides the file's either way. Raises
    :class:`~eval_assets.frames.FrameSelectionError` naming the option or file and the fix.
    """
    options = {"image_index": image_index, "start": start, "stop": stop, "stride": stride,
               "time_step": time_step, "quality_window": quality_window,
               "min_brightness": min_brightness}
    given = {k: v for k, v in options.items() if v is not None}
    path = selection_file_for(Path(recording))
    from_file = load_selection_config(path)
    if given:
        values = {**given, "max_bad_fraction": from_file.max_bad_fraction}
        source, config_file = "the --image-index/--start/--stop/... options", None
    else:
        values = from_file.model_dump(exclude_none=True)
        source, config_file = str(path), (path if path.is_file() else None)
    if max_bad_fraction is not None:
        values["max_bad_fraction"] = max_bad_fraction
    return selection_from(values, source=source), config_file


def iter_frame_inputs(frames_dir: Path, clouds_dir: Path, detections_dir: Path,
                      frame_indices: Sequence[int] | None = None,
                      cameras: Mapping[int, FrameCamera] | None = None) -> Iterator[FrameInputs]:
    """Each selected frame's stored evidence, with LiDAR range statistics per detection mask.

    Frames are loaded one at a time (masks are large). ``frame_indices`` defaults to every
    rectified frame. A frame absent from the point-cloud or detections tables is kept with no
    evidence of that kind (its proposals are then rejected). Where ``cameras`` (the object
    tracks' camera poses) has the frame, each mask's points are also split into floor seen
    beyond the object and the rest (:mod:`eval_assets.vqa.background`).
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
        backgrounds: list[BackgroundSplit] = []
        if cloud is not None and cloud.status == "ok" and masks:
            points = load_points(clouds_dir, cloud)
            camera_from_cloud = np.asarray(cloud.camera_from_cloud,
                                           dtype=np.float64).reshape(4, 4)
            K = np.asarray(frame.K_rect, dtype=np.float64).reshape(3, 3)
            ranges = range_statistics(points, camera_from_cloud, K, frame.width, frame.height,
                                      np.stack(masks))
            camera = cameras.get(index) if cameras is not None else None
            if camera is not None:
                u, v, xyz = visible_points(camera_points(points, camera_from_cloud), K,
                                           frame.width, frame.height)
                backgrounds = background_splits(
                    u, v, xyz, masks, K,
                    np.asarray(camera.world_from_camera, dtype=np.float64).reshape(4, 4))
        yield FrameInputs(frame=frame, image_file=Path(frames_dir) / frame.image_path,
                          cloud=cloud, detections=dets, masks=masks, ranges=ranges,
                          backgrounds=backgrounds)


def _with_proposals(frames: Iterator[FrameInputs], proposals: Iterable[Proposal]
                    ) -> Iterator[tuple[FrameInputs, list[Proposal]]]:
    """Each frame with its proposals, walking both in frame order (one frame's worth at a time).

    Proposals of frames that were not selected are passed over; proposals out of frame order
    are an error naming the frame (``proposals.jsonl`` is written in frame order).
    """
    pending = iter(proposals)
    head = next(pending, None)
    last = -1
    for inputs in frames:
        index = inputs.frame.frame_index
        mine: list[Proposal] = []
        while head is not None and head.frame_index <= index:
            if head.frame_index < last:
                raise ValueError(f"proposals are not in frame order (frame {head.frame_index} "
                                 f"after {last}); regenerate the proposals")
            last = head.frame_index
            if head.frame_index == index:
                mine.append(head)
            head = next(pending, None)
        yield inputs, mine


def build_dataset(frames_dir: Path, clouds_dir: Path, detections_dir: Path,
                  proposals: Iterable[Proposal], output: Path, source: SourceRecording,
                  config: dict[str, Any], frame_indices: Sequence[int] | None = None,
                  replace: bool = False, generation: GenerationAudit | None = None,
                  models: dict[str, str] | None = None,
                  skipped_frames: Sequence[dict[str, Any]] = (),
                  tracks: ObjectTracks | None = None,
                  bias: BiasConfig | None = None,
                  tracks_dir: Path | None = None) -> DatasetSummary:
    """Answer the proposals of the selected frames from stored evidence and publish the dataset.

    ``proposals`` may be a stream in frame order (:func:`~eval_assets.vqa.proposals.
    iter_proposals`), so that neither they nor the frames' evidence are all held in memory.

    ``config`` is recorded in ``audit/run.json`` next to the evidence thresholds, with dimOS's
    ``generation`` (the selection; default: the recording's name only), ``models`` (author and
    detector names) and the ``skipped_frames`` the frame stage could not use. With ``tracks``
    (the recording's object tracks) the spatial families are published beside dimOS's files,
    about the selected frames only (cases about marked objects show frames with the marks drawn
    from ``tracks_dir``'s object-number images; without it they are not asked), and no motion
    case spans a stretch where ``skipped_frames`` show images and TF disagreeing
    (:func:`image_tf_breaks`). ``bias``
    configures the blind-solvability audit (default:
    scored, nothing pruned; recorded in ``audit/run.json``'s config). Raises
    ``NothingAnswerableError`` (nothing published) when no proposal can be answered and
    ``DatasetExistsError`` when ``output`` holds files and ``replace`` is False.
    """
    if not replace:
        check_destination(output)
    if isinstance(proposals, Sequence):
        proposals = sorted(proposals, key=lambda p: p.frame_index)
    results = (answer_frame(inputs, frame_proposals) for inputs, frame_proposals in _with_proposals(
        iter_frame_inputs(frames_dir, clouds_dir, detections_dir, frame_indices,
                          tracks.cameras if tracks is not None else None), proposals))
    offered = set(config.get("author", {}).get("families", family_names("dimos")))
    needs_lidar = {s.name for s in declared_families("dimos") if "lidar" in s.needs}
    bias = bias or BiasConfig()

    def make_run(summary: DatasetSummary, tally: DatasetTally) -> RunAudit:
        # dimOS lists the families offered to the author on some frame (those needing LiDAR
        # only where a frame had a point cloud), not the families that produced a case.
        families = offered if tally.any_lidar else offered - needs_lidar
        return RunAudit(
            generation=generation or GenerationAudit(dataset=source.name),
            configuration={"synchronization_tolerance_s": MAX_LIDAR_DT},
            families=[f for f in family_names("dimos") if f in families],
            models=models if models is not None else model_names(config),
            frame_count=summary.num_frames, question_count=summary.num_cases,
            rejected_question_count=sum(summary.rejections_per_reason.values()),
            generator=GENERATOR, generator_version=generator_version(),
            config={**config, "rules": rules_config(), "bias": bias.model_dump(mode="json")},
            source=source,
            frame_indices=tally.frame_indices, frames_with_cases=tally.frames_with_cases,
            num_proposals=summary.num_proposals, cases_per_family=summary.cases_per_family,
            rejections_per_reason=summary.rejections_per_reason,
            skipped_frames=list(skipped_frames), answers_per_family=summary.answers_per_family,
            spatial_answers_per_family=summary.spatial_answers_per_family,
        )

    spatial = None
    if tracks is not None:
        published = (frame_indices if frame_indices is not None
                     else [f.frame_index for f in read_rectified_frames(frames_dir)])
        marks = MarkSource(frames_dir, tracks_dir) if tracks_dir is not None else None
        spatial = build_spatial(tracks, published, marks, image_tf_breaks(skipped_frames))
    return publish_dataset(output, results, make_run, replace=replace, spatial=spatial,
                           bias=bias)


def image_tf_breaks(skipped_frames: Sequence[dict[str, Any]]) -> list[tuple[float, float]]:
    """The stretches ``(since_ts, image_ts)`` of the skipped frames whose image and TF disagreed
    (``frozen_image``, ``image_moved_tf_still``): no motion case may cross them."""
    return sorted((float(s["since_ts"]), float(s["image_ts"])) for s in skipped_frames
                  if s.get("reason") in IMAGE_MOTION_REASONS and s.get("since_ts") is not None)


def generate_from_recording(recording: Path, output: Path,
                            frame_indices: Sequence[int] | FrameSelectionConfig,
                            author_config: AuthorConfig, detector: Detector,
                            segmenter: Segmenter, perception_names: Sequence[str] | None = None,
                            allow_pickle: bool = False, selection_file: Path | None = None,
                            on_frames: Callable[[PreparedFrames], None] | None = None,
                            spatial: bool = True,
                            bias: BiasConfig | None = None, objects: str = "lidar",
                            namer: Namer | None = None) -> DatasetSummary:
    """Run frames -> perception -> tracks -> proposals -> dataset on one recording, without Dagster.

    ``frame_indices`` is a list of frames or a selection (see :func:`frame_selection`; read from
    ``selection_file``, if any). Bad frames are skipped as in the pipeline; ``on_frames`` gets
    what was selected and skipped; ``spatial=False`` leaves out the object tracks and the
    spatial families; ``bias`` configures the blind-solvability audit and its pruning
    (:mod:`eval_assets.vqa.bias`); ``objects`` and ``namer``: the tracks' object source and
    taught names (:func:`~eval_assets.tracks.build_tracks`). Intermediate stage folders live
    in a temporary folder that is removed afterwards; only the dataset is kept. The detector is
    asked about ``perception_names`` (default: the author's vocabulary), so presence questions
    about absent names get real "no" answers.
    """
    recording = Path(recording)
    check_destination(output)
    names = list(perception_names or author_config.vocabulary)
    with tempfile.TemporaryDirectory(prefix="eval_assets-vqa-") as work:
        work_dir = Path(work)
        frames_dir, clouds_dir, dets_dir, tracks_dir = (
            work_dir / "frames", work_dir / "pointclouds", work_dir / "detections",
            work_dir / "tracks")
        with Recording.open(recording, allow_pickle=allow_pickle) as rec:
            plan = (plan_selection(rec, frame_indices, selection_file)
                    if isinstance(frame_indices, FrameSelectionConfig)
                    else plan_indices(rec, frame_indices))
            prepared = prepare_rectified_frames(rec, frames_dir, plan)
            frames = prepared.frames
            build_pointcloud_frames(rec, frames, clouds_dir)
        if on_frames is not None:
            on_frames(prepared)
        detections = build_detections(frames_dir, frames, dets_dir, names, detector, segmenter)
        tracks = None
        if spatial:  # object tracks and the spatial families (off: dimOS's families only)
            with Recording.open(recording, allow_pickle=allow_pickle) as rec:
                tracks = build_tracks(rec, frames_dir, clouds_dir, dets_dir, objects=objects,
                                      tracks_dir=tracks_dir, namer=namer)
        author = build_author(author_config)
        proposals = iter_frame_proposals(author, frames_dir, frames,
                                   author_config.max_proposals_per_frame)
        source = SourceRecording(name=recording.name, sha256=file_sha256(recording))
        config = {"author": author_config.model_dump(mode="json"),
                  "perception": perception_summary(detections)}
        return build_dataset(
            frames_dir, clouds_dir, dets_dir, proposals, output, source, config,
            [f.frame_index for f in frames], generation=generation_audit(prepared.selection),
            skipped_frames=[s.model_dump(mode="json") for s in prepared.skipped], tracks=tracks,
            bias=bias, tracks_dir=tracks_dir)
