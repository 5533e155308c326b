"""Instance masks of the LiDAR's objects in each image, in depth order.

``shared/specs/evidence.md``: a pixel belongs to the nearest object whose points cover it; a mask
never takes the pixels of a nearer object. Each object's silhouette is the convex hull of ALL its
points over the recording projected into the frame (one sweep's rings are a decimetre apart; the
recording's sweeps, taken from many places, fill the object in), and the silhouettes are painted
from the farthest object to the nearest. What a nearer object covers stays the nearer object's:
the farther object's occluded share is kept per frame.

Structure (a wall, a shelf run: :attr:`LidarObject.structure`) is not one silhouette: the convex
hull of a wall's L spans the room's corner and, painted at the wall's median depth, it covered the
objects standing in front of its far end (the sample: two of three blue boxes never drawn, so
their count read 1). It is painted per pixel instead, each pixel at the depth of its own nearest
points (:func:`_structure_depth`), and takes only the pixels where it is nearer than the object
painted there.

An object is *in* a frame only when the frame's own sweep sees it: at least
:data:`MIN_FRAME_POINTS` of the frame's visible LiDAR points (the nearest point of each pixel) fall
on it. An object hidden behind another, or outside the sweep, is not drawn from the other frames'
points alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from eval_assets.objects.lidar import LidarObjects

MIN_FRAME_POINTS = 5
"""An object is in a frame when this many of the frame's own visible points fall on it."""
MAX_HULL_POINTS = 6000
"""Points projected per object and frame at most (an even stride): the hull does not change."""
STRUCTURE_SPLAT_PX = 7
"""Side of the square over which a structure's projected points spread their depth (a min
filter): its rings and sweeps fill its face; a gap left between them only lets a farther object
show through where the LiDAR would not have seen it anyway."""
NEAR_Z_M = 0.1
"""Points nearer the camera plane than this are left out of the projection (they would project
to infinity; an object that close fills the image anyway)."""


@dataclass(frozen=True)
class FrameObject:
    """One object in one frame: its depth-ordered mask and how much of it is hidden."""

    index: int
    mask: np.ndarray
    depth_m: float
    occluded_share: float
    touches_border: bool
    frame_points: int
    surface_range_m: float | None = None


def surface_range(points_cam: np.ndarray, uv: np.ndarray, mask: np.ndarray) -> float | None:
    """The median range from the camera to the object's visible surface over its mask: per
    pixel of the mask some point falls in, the nearest point's range (the surface the camera
    sees there), and the median of those (None when no point falls in the mask).

    The points are the object's whole cloud over the recording, so the surface is sampled
    wherever any sweep crossed it, not only along the rows this frame's rings crossed (a tray's
    rim alone put one frame's median 15 % beyond the truth's median over its pixels, simulated
    seed 6262).
    """
    height, width = mask.shape
    u, v = np.floor(uv[:, 0]).astype(np.int64), np.floor(uv[:, 1]).astype(np.int64)
    inside = (u >= 0) & (u < width) & (v >= 0) & (v < height)
    u, v, pts = u[inside], v[inside], points_cam[inside]
    on = mask[v, u]
    if not np.any(on):
        return None
    pixel = v[on] * width + u[on]
    ranges = np.linalg.norm(pts[on], axis=1)
    order = np.lexsort((ranges, pixel))
    first = np.ones(len(order), dtype=bool)
    first[1:] = pixel[order][1:] != pixel[order][:-1]
    return float(np.median(ranges[order][first]))


def _project(points_world: np.ndarray, camera_from_world: np.ndarray, K: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    """Pixel coordinates (N, 2) and camera-frame coordinates (N, 3) of the points in front of
    the camera."""
    stride = max(len(points_world) // MAX_HULL_POINTS, 1)
    pts = points_world[::stride] @ camera_from_world[:3, :3].T + camera_from_world[:3, 3]
    pts = pts[pts[:, 2] > NEAR_Z_M]
    uv = pts @ K.T
    return uv[:, :2] / uv[:, 2:3], pts


def _silhouette(uv: np.ndarray, width: int, height: int) -> np.ndarray:
    """The filled convex hull of ``uv`` (pixel coordinates) as a boolean (H, W) mask."""
    mask = np.zeros((height, width), dtype=np.uint8)
    if len(uv) < 3:
        return mask.astype(bool)
    # Far outside the image a hull's corners are clipped to a frame around it: fillConvexPoly
    # takes int32 coordinates, and the hull's part inside the image is unchanged by the clip.
    pad = 4 * max(width, height)
    pts = np.clip(np.round(uv), -pad, pad).astype(np.int32)
    hull = cv2.convexHull(pts)
    cv2.fillConvexPoly(mask, hull, 1)
    return mask.astype(bool)


def frame_objects(objects: LidarObjects, visible_world: np.ndarray, world_from_camera: np.ndarray,
                  K: np.ndarray, width: int, height: int, floor_z: float
                  ) -> list[FrameObject]:
    """The objects the frame's sweep sees, each with its mask in depth order.

    ``visible_world``: the frame's visible points (the nearest of each pixel) in the world
    frame. Structure (walls) is painted too, so it can cover what stands behind it, but the
    caller decides what to ask about.
    """
    counts = np.bincount(objects.object_index(visible_world, floor_z),
                         minlength=len(objects.objects) + 1)
    camera_from_world = np.linalg.inv(world_from_camera)
    present: list[tuple[float, int, np.ndarray]] = []
    structures: list[tuple[float, int, np.ndarray, np.ndarray]] = []
    projected: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for i, obj in enumerate(objects.objects):
        if counts[i + 1] < MIN_FRAME_POINTS:
            continue
        uv, pts = _project(obj.points_world, camera_from_world, K)
        if len(pts) < 3:
            continue
        projected[i] = (uv, pts)
        if obj.structure:
            depth = _structure_depth(uv, pts[:, 2], width, height)
            structures.append((float(np.median(pts[:, 2])), i, np.isfinite(depth), depth))
        else:
            present.append((float(np.median(pts[:, 2])), i, _silhouette(uv, width, height)))
    # Far to near: a nearer object's silhouette is painted last and keeps its pixels.
    present.sort(key=lambda p: (-p[0], p[1]))
    owner = np.zeros((height, width), dtype=np.int32)
    owner_depth = np.full((height, width), np.inf, dtype=np.float32)
    for depth_m, i, silhouette in present:
        owner[silhouette] = i + 1
        owner_depth[silhouette] = depth_m
    for _, i, _, depth in structures:
        nearer = depth < owner_depth
        owner[nearer] = i + 1
        owner_depth[nearer] = depth[nearer]
    present.extend((d, i, s) for d, i, s, _ in structures)
    out = []
    for depth_m, i, silhouette in sorted(present, key=lambda p: p[1]):
        full = int(np.count_nonzero(silhouette))
        if not full:
            continue
        mask = owner == i + 1
        shown = int(np.count_nonzero(mask))
        if not shown:
            continue
        out.append(FrameObject(index=i, mask=mask, depth_m=depth_m,
                               occluded_share=1.0 - shown / full,
                               touches_border=_touches_border(silhouette),
                               frame_points=int(counts[i + 1]),
                               surface_range_m=surface_range(projected[i][1], projected[i][0],
                                                             mask)))
    return out


def _structure_depth(uv: np.ndarray, z: np.ndarray, width: int, height: int) -> np.ndarray:
    """Per pixel, the depth of a structure's nearest projected point within
    :data:`STRUCTURE_SPLAT_PX`; inf where none falls."""
    depth = np.full((height, width), np.inf, dtype=np.float32)
    u, v = np.round(uv[:, 0]).astype(np.int64), np.round(uv[:, 1]).astype(np.int64)
    inside = (u >= 0) & (u < width) & (v >= 0) & (v < height)
    np.minimum.at(depth, (v[inside], u[inside]), z[inside].astype(np.float32))
    kernel = np.ones((STRUCTURE_SPLAT_PX, STRUCTURE_SPLAT_PX), np.uint8)
    return cv2.erode(depth, kernel, borderType=cv2.BORDER_CONSTANT, borderValue=np.inf)


def _touches_border(mask: np.ndarray) -> bool:
    return bool(mask[0].any() or mask[-1].any() or mask[:, 0].any() or mask[:, -1].any())


def label_image(frame_objects_: list[FrameObject], numbers: dict[int, int], height: int,
                width: int) -> np.ndarray:
    """A uint16 (H, W) image of the objects' numbers (``numbers[index]``), 0 where none."""
    out = np.zeros((height, width), dtype=np.uint16)
    for fo in frame_objects_:
        number = numbers.get(fo.index)
        if number:
            out[fo.mask] = number
    return out
