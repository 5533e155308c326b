"""Lift one frame's detections to 3D: the LiDAR points inside each mask, in the TF world frame.

Pure geometry on arrays plus the recording's TF (no Dagster). The points are the frame's matched
LiDAR sweep in the rectified camera frame, z-buffered as :mod:`eval_assets.geometry.ranging` does
(the nearest point per pixel), so a mask keeps only what it sees, not what is behind it. Points
of a mask whose range is far from the mask's median range (background seen through the mask's
rim, the floor at its foot) are left out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from eval_assets.frames.camera_poses import CameraPoses, unrectify_matrix
from eval_assets.frames.pointclouds import TF_TOLERANCE
from eval_assets.geometry.transforms import TransformGraph, TransformUnavailable
from eval_assets.recording import Recording
from eval_assets.recording.names import TF_STREAM
from eval_assets.schemas.frames import RectifiedFrame
from eval_assets.schemas.spatial import CameraSample

# A mask's points farther than this from its median range belong to something else.
RANGE_GATE_M = 0.35
# Fewer points than this in a mask: no 3-D evidence for the detection.
MIN_POINTS = 5
# A mask touching the image border within this many pixels is cut off: its extent is partial.
BORDER_PX = 2
# Occlusion: LiDAR points within a ring around a mask that are nearer than the mask's nearest
# point by OCCLUDER_GAP_M and above the floor band (not the floor in front of the object) are
# something standing in front of it; OCCLUDER_MIN_POINTS of them mean the mask is cut. The ring
# is OCCLUDER_RING_PX wide, or OCCLUDER_RING_SPACINGS times the LiDAR's point spacing around the
# mask where that is wider: a sparse scan can put the occluder's nearest point 7-8 px from the
# cut edge (scene seed 706: a ball behind a post, 8 px between points, called "whole").
OCCLUDER_RING_PX = 6
OCCLUDER_RING_SPACINGS = 1.5
OCCLUDER_RING_MAX_PX = 24
SPACING_WINDOW_PX = 32
OCCLUDER_GAP_M = 0.1
OCCLUDER_MIN_POINTS = 2
FLOOR_BAND_M = 0.05


@dataclass(frozen=True)
class Sighting:
    """One detection lifted to 3-D.

    ``center_world`` is the object's estimated centre (the points' centroid pushed back along the
    line of sight by half the object's width, since LiDAR sees only the near surface);
    ``size_m`` is the mask's (width, height) at that depth, None when the mask is cut by the
    image border; ``surface_range_m`` is the median camera-to-point range. ``whole`` is False
    when the mask is cut by the image border or by something in front of it: its outline (and so
    the detector's shape word) and its extent are partial.
    """

    frame_index: int
    name: str
    pixels: int
    points_world: np.ndarray
    center_world: np.ndarray
    size_m: tuple[float, float] | None
    surface_range_m: float
    whole: bool = True
    # The camera's position in the world frame: where the object was seen from (view spread).
    camera_world: np.ndarray | None = None
    # The mask's outline, pixel edges (x0, y0, x1, y1) in the rectified image, and the camera
    # that saw it (world_from_camera 4x4, K 3x3): whether a fitted box explains the outline.
    outline_px: tuple[float, float, float, float] | None = None
    world_from_camera: np.ndarray | None = None
    K: np.ndarray | None = None
    # The camera-frame points whose median range is ``surface_range_m`` (those above the floor
    # band): where the LiDAR's rings crossed the object, which the fused box's visible-surface
    # correction (tracks.fuse.visible_surface_range) compares with the mask's whole outline.
    range_points_cam: np.ndarray | None = None
    # The median range to the visible surface over the mask when it was measured directly (a
    # LiDAR object's whole cloud seen through its mask, eval_assets.objects.masks.
    # surface_range); None: the fused box corrects surface_range_m (tracks.fuse).
    visible_range_m: float | None = None


@dataclass(frozen=True)
class Skipped:
    """A detection left out of the tracks, with the reason."""

    frame_index: int
    name: str
    reason: str
    detail: str


def camera_poses(recording: Recording, frames: Sequence[RectifiedFrame],
                 poses_at: CameraPoses | None = None
                 ) -> tuple[str, dict[int, np.ndarray], dict[int, str]]:
    """``(world frame, world_from_camera per frame, reason per frame without a pose)``.

    The world frame is the root of the first camera's TF tree (``world``, ``map``, ...).
    ``world_from_camera`` maps the RECTIFIED camera frame (the one the point clouds are stored
    in) into the world at the image's time (:class:`CameraPoses`). A frame whose pose the TF
    cannot give is left out with the reason, never guessed.
    """
    world, poses, missing, _ = camera_poses_and_trajectory(recording, frames, poses_at)
    return world, poses, missing


def camera_poses_and_trajectory(recording: Recording, frames: Sequence[RectifiedFrame],
                                poses_at: CameraPoses | None = None
                                ) -> tuple[str, dict[int, np.ndarray], dict[int, str],
                                           list[CameraSample]]:
    """:func:`camera_poses` and the camera's trajectory (:func:`camera_trajectory`), from one
    pass over the TF stream."""
    tf = poses_at or CameraPoses.of(recording)
    if not tf.ok:
        return "", {}, {f.frame_index: f"the recording has no {TF_STREAM!r} stream"
                        for f in frames}, []
    world = tf.world_of(frames[0].camera_frame_id) if frames else ""
    poses: dict[int, np.ndarray] = {}
    missing: dict[int, str] = {}
    for frame in frames:
        try:
            poses[frame.frame_index] = tf.rectified(world, frame, frame.image_ts)
        except TransformUnavailable as exc:
            missing[frame.frame_index] = f"no camera pose in {world!r}: {exc}"
    return world, poses, missing, camera_trajectory(tf.graph, world, frames)


def heading_deg(world_from_camera: np.ndarray) -> float:
    """Yaw of the camera's optical axis (its z) on the floor plane, counter-clockwise from world
    +x, in (-180, 180] degrees."""
    axis = world_from_camera[:3, 2]
    yaw = math.degrees(math.atan2(float(axis[1]), float(axis[0])))
    return 180.0 if yaw <= -180.0 else yaw


TRAJECTORY_MARGIN = 2
"""TF samples kept before the first image and after the last: the motion families use a frame
only where the TF steps on both sides of it agree (``Motion.steady``: the sample before the one
holding it, and two after), so with one sample each side the first and the last selected frame
were never usable (a 24 s rig recording: 2 of its 5 frames, 3 cases per family instead of 8)."""


def camera_trajectory(graph: TransformGraph, world: str, frames: Sequence[RectifiedFrame]
                      ) -> list[CameraSample]:
    """The rectified camera's pose at every TF sample on its chain to ``world``, from
    :data:`TRAJECTORY_MARGIN` samples before the first image to as many after the last one.

    Path length and total turn between two images sum over these samples, not only over the
    images shown (``shared/specs/motion.md``). A stamp the chain cannot give (an edge without a
    sample within the TF tolerance) is left out.
    """
    if not frames or not world:
        return []
    first = min(frames, key=lambda f: f.image_ts)
    stamps = graph.chain_stamps(world, first.camera_frame_id)
    if not len(stamps):
        return []
    lo = max(int(np.searchsorted(stamps, first.image_ts)) - TRAJECTORY_MARGIN, 0)
    hi = int(np.searchsorted(stamps, max(f.image_ts for f in frames), side="right")
             ) + TRAJECTORY_MARGIN
    unrectify = unrectify_matrix(first)
    out = []
    for t in stamps[lo:hi]:
        try:
            pose = graph.lookup(world, first.camera_frame_id, float(t),
                                tolerance=TF_TOLERANCE) @ unrectify
        except TransformUnavailable:
            continue
        # Rounded (micrometres, microdegrees) so the tracks file is the same bytes on rerun.
        out.append(CameraSample(t=float(t),
                                position=[round(float(x), 6) + 0.0 for x in pose[:3, 3]],
                                yaw_deg=round(heading_deg(pose), 6) + 0.0))
    return out


def floor_heights(xyz: np.ndarray, world_from_camera: np.ndarray) -> np.ndarray:
    """Each camera-frame point's height (world z) above the frame's floor: the 1st percentile
    of the visible points' heights (the LiDAR is pitched to see the floor in front)."""
    z = xyz @ world_from_camera[2, :3] + world_from_camera[2, 3]
    return np.asarray(z - np.percentile(z, 1.0)) if len(z) else z


def visible_points(points_cam: np.ndarray, K: np.ndarray, width: int, height: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(u, v, xyz)``: the nearest camera-frame point of each pixel any point projects to."""
    pts = np.asarray(points_cam, dtype=np.float64)
    pts = pts[np.all(np.isfinite(pts), axis=1) & (pts[:, 2] > 0)]
    proj = pts @ np.asarray(K, dtype=np.float64).reshape(3, 3).T
    uf, vf = proj[:, 0] / proj[:, 2], proj[:, 1] / proj[:, 2]
    inside = (uf >= 0) & (uf < width) & (vf >= 0) & (vf < height)
    pts, u, v = pts[inside], uf[inside].astype(np.int64), vf[inside].astype(np.int64)
    pixel = v * width + u
    order = np.lexsort((np.arange(len(pts)), pts[:, 2], pixel))
    first = np.ones(len(order), dtype=bool)
    first[1:] = pixel[order][1:] != pixel[order][:-1]
    keep = order[first]
    return u[keep], v[keep], pts[keep]


def _mask_span(mask: np.ndarray) -> tuple[int, int] | None:
    """Columns and rows the mask spans, or None when it touches the image border."""
    cols, rows = np.flatnonzero(mask.any(axis=0)), np.flatnonzero(mask.any(axis=1))
    h, w = mask.shape
    if (cols[0] < BORDER_PX or rows[0] < BORDER_PX or cols[-1] >= w - BORDER_PX
            or rows[-1] >= h - BORDER_PX):
        return None
    return int(cols[-1] - cols[0] + 1), int(rows[-1] - rows[0] + 1)


def _mask_size(span: tuple[int, int] | None, depth: float, K: np.ndarray
               ) -> tuple[float, float] | None:
    if span is None:
        return None
    return span[0] * depth / float(K[0, 0]), span[1] * depth / float(K[1, 1])


def occluded(mask: np.ndarray, u: np.ndarray, v: np.ndarray, xyz: np.ndarray,
             nearest_m: float, floor_z: np.ndarray | None) -> bool:
    """Whether something stands in front of the mask's object at its outline.

    ``floor_z`` (per visible point, its height above the frame's floor) leaves out the floor
    between the camera and the object, which is nearer but hides nothing. Without it (no floor
    estimate) no point is left out.
    """
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    h, w = mask.shape
    r = _ring_px(u, v, (int(cols[0]), int(rows[0]), int(cols[-1]), int(rows[-1])))
    y0, y1 = max(int(rows[0]) - r, 0), min(int(rows[-1]) + r + 1, h)
    x0, x1 = max(int(cols[0]) - r, 0), min(int(cols[-1]) + r + 1, w)
    crop = mask[y0:y1, x0:x1].astype(np.uint8)
    ring = (cv2.dilate(crop, np.ones((2 * r + 1, 2 * r + 1), np.uint8)) > 0) & (crop == 0)
    near = (u >= x0) & (u < x1) & (v >= y0) & (v < y1)
    idx = np.flatnonzero(near)
    idx = idx[ring[v[idx] - y0, u[idx] - x0]]
    if floor_z is not None:
        idx = idx[floor_z[idx] > FLOOR_BAND_M]
    closer = np.linalg.norm(xyz[idx], axis=1) < nearest_m - OCCLUDER_GAP_M
    return int(np.count_nonzero(closer)) >= OCCLUDER_MIN_POINTS


def _ring_px(u: np.ndarray, v: np.ndarray, box: tuple[int, int, int, int]) -> int:
    """Width of the occluder ring around a mask's ``box`` (x0, y0, x1, y1): at least
    :data:`OCCLUDER_RING_PX`, else 1.5 × the median distance between neighbouring LiDAR points
    (in pixels) around the box, so that a point on an occluder next to the cut edge falls in it."""
    x0, y0, x1, y1 = box
    m = SPACING_WINDOW_PX
    near = (u >= x0 - m) & (u <= x1 + m) & (v >= y0 - m) & (v <= y1 + m)
    uv = np.unique(np.column_stack([u[near], v[near]]), axis=0).astype(np.float64)
    if len(uv) < 3:
        return OCCLUDER_RING_PX
    from scipy.spatial import cKDTree  # (not at the top: see CameraPoses.at)

    # k=2: the nearest neighbour other than the point itself.
    spacing = float(np.median(cKDTree(uv).query(uv, k=2)[0][:, 1]))
    return int(min(max(OCCLUDER_RING_PX, math.ceil(OCCLUDER_RING_SPACINGS * spacing)),
                   OCCLUDER_RING_MAX_PX))


def lift_detection(frame_index: int, name: str, mask: np.ndarray, u: np.ndarray, v: np.ndarray,
                   xyz: np.ndarray, K: np.ndarray, world_from_camera: np.ndarray,
                   floor_z: np.ndarray | None = None) -> Sighting | Skipped:
    """One detection's sighting from the frame's visible points, or why it has none.

    ``floor_z`` is each visible point's height above the frame's floor (see :func:`occluded`).
    """
    inside = mask[v, u]
    pts = xyz[inside]
    if len(pts) < MIN_POINTS:
        return Skipped(frame_index, name, "too_few_points",
                       f"{len(pts)} LiDAR points in the mask (at least {MIN_POINTS} needed)")
    ranges = np.linalg.norm(pts, axis=1)
    # The object is what stands above the floor: the range it lies at is the median of those
    # points. Floor seen through the mask (between a table's legs, behind a thin object) can
    # outnumber them, and its median would place the object metres away (scene seed 912).
    above = floor_z[inside] > FLOOR_BAND_M if floor_z is not None else np.ones(len(pts), bool)
    if np.count_nonzero(above) < MIN_POINTS:
        return Skipped(frame_index, name, "floor_only",
                       f"{np.count_nonzero(above)} of the mask's {len(pts)} LiDAR points lie "
                       f"more than {FLOOR_BAND_M} m above the floor (at least {MIN_POINTS} "
                       "needed): the points are the floor, not the object")
    median = float(np.median(ranges[above]))
    gate = np.abs(ranges - median) <= RANGE_GATE_M
    pts = pts[gate]
    if len(pts) < MIN_POINTS:
        return Skipped(frame_index, name, "too_few_points",
                       f"{len(pts)} LiDAR points near the mask's median range")
    K = np.asarray(K, dtype=np.float64).reshape(3, 3)
    surface = pts.mean(axis=0)
    # The silhouette's edges lie about half a width behind the near surface (round objects).
    span = _mask_span(mask)
    first = _mask_size(span, float(surface[2]), K)
    half = first[0] / 2 if first is not None else 0.0
    size = _mask_size(span, float(surface[2]) + half, K)
    sight = surface / np.linalg.norm(surface)
    half = size[0] / 2 if size is not None else float(np.ptp(pts[:, 0])) / 2
    center_cam = surface + sight * half
    rot, shift = world_from_camera[:3, :3], world_from_camera[:3, 3]
    whole = span is not None and not occluded(mask, u, v, xyz, float(ranges[gate].min()),
                                              floor_z)
    cols, rows = np.flatnonzero(mask.any(axis=0)), np.flatnonzero(mask.any(axis=1))
    # Pixel centres sit on whole coordinates: the outline runs half a pixel beyond them.
    outline = (cols[0] - 0.5, rows[0] - 0.5, cols[-1] + 0.5, rows[-1] + 0.5)
    return Sighting(frame_index=frame_index, name=name, pixels=int(np.count_nonzero(mask)),
                    points_world=pts @ rot.T + shift, center_world=rot @ center_cam + shift,
                    size_m=size, surface_range_m=median, whole=whole, camera_world=shift.copy(),
                    outline_px=tuple(float(x) for x in outline),  # type: ignore[arg-type]
                    world_from_camera=np.array(world_from_camera, dtype=np.float64), K=K,
                    range_points_cam=np.array(xyz[inside][above], dtype=np.float64))
