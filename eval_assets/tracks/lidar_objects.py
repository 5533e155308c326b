"""Sightings of the objects the LiDAR found, named only when certain (``shared/specs/evidence.md``).

Two passes over the frames. The first places each sweep in the world and finds the objects
(:func:`eval_assets.objects.lidar.discover_objects`). The second projects them into each image in
depth order (:func:`eval_assets.objects.masks.frame_objects`), lifts each mask as a sighting (the
same lifting as a detector's masks), writes the frame's object-number image (the marks are drawn
from it when a dataset is published) and collects name votes: the detector's masks that match an
object's, and the taught references'. After both, each object is named or marked
(:mod:`eval_assets.objects.naming`) and its sightings carry that name into the tracks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import cv2
import numpy as np

from eval_assets.atomic import in_flight, write_bytes_atomic
from eval_assets.frames import load_points, load_rectified_image
from eval_assets.geometry.ranging import camera_points
from eval_assets.objects.lidar import FrameSweep, LidarObjects, discover_objects
from eval_assets.objects.masks import FrameObject, frame_objects, label_image
from eval_assets.objects.naming import (
    MAX_OCCLUDED_SHARE,
    NAME_IOU,
    NameDecision,
    NameVotes,
    best_overlap,
    decide_all,
)
from eval_assets.perception.evidence_io import load_mask
from eval_assets.schemas.frames import PointCloudFrame, RectifiedFrame
from eval_assets.schemas.objects import (
    MARKS_DIR,
    LidarObjectRecord,
    LidarObjectsRecord,
    marks_relpath,
)
from eval_assets.schemas.perception import FrameDetections
from eval_assets.schemas.spatial import mark_number, marked_name
from eval_assets.tracks.fuse import ObjectCloud, bearing_spread_deg, cloud_box
from eval_assets.tracks.lift import Sighting, Skipped, floor_heights, lift_detection, visible_points

_PNG16 = [cv2.IMWRITE_PNG_COMPRESSION, 3]


class Namer(Protocol):
    """Taught names (:class:`eval_assets.perception.taught_names.TaughtNames`): a name for an
    object's pixels, or none."""

    def name(self, image: np.ndarray, mask: np.ndarray,
             extent_m: Sequence[float] | None = None) -> object:
        """A verdict whose ``name`` attribute is the name or None."""
        ...

    def fingerprint(self) -> str:
        """Identity of the references (their bytes and names)."""
        ...


@dataclass(frozen=True)
class FrameView:
    """One frame ready to be looked at: its camera, pose and LiDAR points."""

    frame: RectifiedFrame
    K: np.ndarray
    world_from_camera: np.ndarray
    points_cam: np.ndarray
    sensor_cam: np.ndarray


@dataclass
class LidarEvidence:
    """What the LiDAR path gives the tracks: sightings, skips and the objects' record."""

    sightings: list[Sighting]
    skipped: list[Skipped]
    record: LidarObjectsRecord
    clouds: dict[str, ObjectCloud]


def lidar_sightings(views: Callable[[], Iterator[FrameView]], detections_dir: Path | None,
                    detections: Mapping[int, FrameDetections], frames_dir: Path,
                    tracks_dir: Path | None, namer: Namer | None = None,
                    frames: Sequence[RectifiedFrame] = ()) -> LidarEvidence:
    """The LiDAR objects' sightings named (or marked), and their record.

    ``views`` is called twice (one pass each). ``tracks_dir`` receives each frame's
    object-number image (:func:`~eval_assets.schemas.objects.marks_relpath`): every one of
    ``frames``, those without a view (no pose or point cloud) showing no object.
    """
    found = discover_objects(FrameSweep(v.frame.frame_index, _world(v, v.points_cam),
                                        _world(v, v.sensor_cam[None, :])[0]) for v in views())
    floor_z = found.floor_z if found.floor_z is not None else 0.0
    votes = {i: NameVotes() for i, o in enumerate(found.objects) if o.askable}
    occluded: dict[int, dict[int, float]] = {i: {} for i in votes}
    # The oriented extent the taught names' size gate compares (the floor plan's grid box is
    # a turned object's bounding square: a lego brick's 30 cm for its 19).
    extents = {i: _extent(found.objects[i].points_world, floor_z) for i in votes}
    sightings: list[Sighting] = []
    skipped: list[Skipped] = []
    written: set[str] = set()
    for view in views():
        index = view.frame.frame_index
        u, v, xyz = visible_points(view.points_cam, view.K, view.frame.width, view.frame.height)
        seen = [fo for fo in frame_objects(found, _world(view, xyz), view.world_from_camera,
                                           view.K, view.frame.width, view.frame.height, floor_z)
                if fo.index in votes]
        if tracks_dir is not None:
            _write_marks(tracks_dir, index, seen, found, view.frame)
            written.add(marks_relpath(index))
        floor_rel = floor_heights(xyz, view.world_from_camera)
        for fo in seen:
            occluded[fo.index][index] = round(fo.occluded_share, 4)
            # Lifted under its mark; renamed below once the votes have decided its name.
            lifted = lift_detection(index, marked_name(found.objects[fo.index].number), fo.mask,
                                    u, v, xyz, view.K, view.world_from_camera, floor_rel)
            if isinstance(lifted, Sighting):
                sightings.append(dataclasses.replace(lifted, visible_range_m=fo.surface_range_m))
            else:
                skipped.append(lifted)
        _vote(seen, votes, detections.get(index), detections_dir, frames_dir, view.frame,
              extents, namer)
    if tracks_dir is not None:
        for frame in frames:
            if marks_relpath(frame.frame_index) not in written:
                _write_marks(tracks_dir, frame.frame_index, [], found, frame)
                written.add(marks_relpath(frame.frame_index))
        _prune_marks(Path(tracks_dir), written)
    decisions = decide_all(votes)
    names = {found.objects[i].number: (d.name or marked_name(found.objects[i].number))
             for i, d in decisions.items()}
    renamed = [dataclasses.replace(s, name=names[mark_number(s.name) or 0]) for s in sightings]
    reskipped = [dataclasses.replace(s, name=names.get(mark_number(s.name) or 0, s.name))
                 for s in skipped]
    record = _record(found, decisions, occluded, namer)
    clouds = {names[found.objects[i].number]: ObjectCloud(
        found.objects[i].points_world, found.objects[i].sensors_world, floor_z,
        found.objects[i].top_ceiling_z) for i in decisions}
    return LidarEvidence(renamed, reskipped, record, clouds)


def _world(view: FrameView, pts_cam: np.ndarray) -> np.ndarray:
    rot, shift = view.world_from_camera[:3, :3], view.world_from_camera[:3, 3]
    return np.asarray(pts_cam @ rot.T + shift)


def _write_marks(marks_dir: Path, index: int, seen: Sequence[FrameObject], found: LidarObjects,
                 frame: RectifiedFrame) -> None:
    numbers = {fo.index: found.objects[fo.index].number for fo in seen}
    image = label_image(list(seen), numbers, frame.height, frame.width)
    ok, buf = cv2.imencode(".png", image, _PNG16)
    if not ok:
        raise ValueError(f"PNG encoding failed for frame {index}'s object numbers")
    write_bytes_atomic(Path(marks_dir) / marks_relpath(index), buf.tobytes())


def _extent(points: np.ndarray, floor_z: float) -> tuple[float, float, float]:
    along, across, _, _, low, top = cloud_box(points, floor_z)
    return (along, across, top - low)


def _prune_marks(tracks_dir: Path, written: set[str]) -> None:
    """Remove the number images of frames no longer in the recording's tracks (an earlier run
    selected more frames); another process's atomic write in flight is left alone."""
    folder = tracks_dir / MARKS_DIR
    if not folder.is_dir():
        return
    for path in folder.iterdir():
        if path.is_file() and f"{MARKS_DIR}/{path.name}" not in written and not in_flight(path):
            path.unlink(missing_ok=True)


def _vote(seen: Sequence[FrameObject], votes: dict[int, NameVotes],
          dets: FrameDetections | None, detections_dir: Path | None, frames_dir: Path,
          frame: RectifiedFrame, extents: Mapping[int, tuple[float, float, float]],
          namer: Namer | None) -> None:
    """One frame's name votes for the objects it sees clean."""
    clean = [fo for fo in seen
             if not fo.touches_border and fo.occluded_share <= MAX_OCCLUDED_SHARE]
    if not clean:
        return
    masks: list[np.ndarray] = []
    names: list[str] = []
    if dets is not None and detections_dir is not None:
        for d in dets.detections:
            masks.append(load_mask(detections_dir, d))
            names.append(" ".join(d.name.split()).lower())
    image = load_rectified_image(frames_dir, frame) if namer is not None else None
    for fo in clean:
        votes[fo.index].clean_frames += 1
        best, iou = best_overlap(fo.mask, masks)
        if best >= 0 and iou >= NAME_IOU:
            votes[fo.index].add(names[best], "detector")
        if namer is not None and image is not None:
            verdict = namer.name(image, fo.mask, extents[fo.index])
            taught = getattr(verdict, "name", None)
            if taught:
                votes[fo.index].add(str(taught), "taught")


def _record(found: LidarObjects, decisions: Mapping[int, NameDecision],
            occluded: Mapping[int, dict[int, float]], namer: Namer | None
            ) -> LidarObjectsRecord:
    objects = []
    for i, obj in enumerate(found.objects):
        d = decisions.get(i)
        objects.append(LidarObjectRecord(
            number=obj.number, center_world=[round(float(c), 4) + 0.0 for c in obj.center_world],
            footprint_m=[round(v, 4) for v in obj.footprint_m], height_m=round(obj.height_m, 4),
            points=len(obj.points_world), frames=list(obj.frames),
            view_spread_deg=round(bearing_spread_deg(obj.sensors_world, obj.center_world), 3),
            askable=obj.askable,
            reason=obj.reason, name=d.name if d else None,
            name_reason=d.reason if d else "not asked about",
            name_votes=d.votes if d else {}, clean_frames=d.clean_frames if d else 0,
            occluded_share=dict(sorted(occluded.get(i, {}).items()))))
    return LidarObjectsRecord(
        floor_z=None if found.floor_z is None else round(found.floor_z, 4), objects=objects,
        references=namer.fingerprint() if namer is not None else None)


def frame_views(frames: Sequence[RectifiedFrame], clouds: Mapping[int, PointCloudFrame],
                clouds_dir: Path, poses: Mapping[int, np.ndarray],
                correct: Callable[[np.ndarray, RectifiedFrame, PointCloudFrame], np.ndarray]
                ) -> Iterator[FrameView]:
    """Each frame with a pose and an ``ok`` point cloud, its points in the camera frame
    (``correct``: the caller's motion correction) and the sensor's position in it, corrected
    alike: the rays keep their directions from the sensor (the top bound follows them,
    :func:`~eval_assets.objects.lidar.top_ceiling`)."""
    for frame in sorted(frames, key=lambda f: f.frame_index):
        cloud = clouds.get(frame.frame_index)
        if cloud is None or cloud.status != "ok" or frame.frame_index not in poses:
            continue
        camera_from_cloud = np.asarray(cloud.camera_from_cloud, dtype=np.float64).reshape(4, 4)
        pts = correct(camera_points(load_points(clouds_dir, cloud), camera_from_cloud), frame,
                      cloud)
        sensor = correct(camera_from_cloud[None, :3, 3].copy(), frame, cloud)[0]
        yield FrameView(frame=frame, K=np.asarray(frame.K_rect, dtype=np.float64).reshape(3, 3),
                        world_from_camera=poses[frame.frame_index], points_cam=pts,
                        sensor_cam=np.asarray(sensor, dtype=np.float64))
