"""The range primitive: LiDAR points + camera intrinsics + object masks -> range statistics.

Pure geometry on arrays (no dataset access), following dimOS 0.0.15 exactly: points in front of
the camera are projected with the rectified intrinsics, pixel coordinates are truncated, each pixel
keeps only its smallest camera z (z-buffer), and a mask's statistics are taken over the Euclidean
camera-frame range of the surviving points whose pixel lies in the mask.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

QUANTILES = (0.25, 0.5, 0.75)


@dataclass(frozen=True)
class RangeStats:
    """Range statistics (metres) of the points that fell inside one mask."""

    count: int
    median: float
    q1: float
    q3: float
    min: float


def camera_points(points: np.ndarray, camera_from_cloud: np.ndarray) -> np.ndarray:
    """``(N, 3)`` cloud-frame points mapped into the camera frame (float64)."""
    pts = np.asarray(points, dtype=np.float64)
    if pts.ndim != 2 or pts.shape[1] != 3:
        raise ValueError(f"points must have shape (N, 3), got {pts.shape}")
    m = np.asarray(camera_from_cloud, dtype=np.float64)
    if m.shape != (4, 4):
        raise ValueError(f"camera_from_cloud must be a 4x4 matrix, got shape {m.shape}")
    return pts @ m[:3, :3].T + m[:3, 3]


def zbuffer_projection(
    points_cam: np.ndarray, K: np.ndarray, width: int, height: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Project camera-frame points and keep the nearest one per pixel.

    Returns ``(u, v, z, rng)`` for the kept points, ordered by pixel (row-major): integer pixel
    column and row, camera z, and Euclidean range. Points with ``z <= 0`` or non-finite values are
    dropped; pixel coordinates are truncated after dropping those outside ``[0, width) x [0,
    height)``; among points sharing a pixel the smallest z wins (ties: the earlier point).
    """
    pts = np.asarray(points_cam, dtype=np.float64)
    if pts.ndim != 2 or pts.shape[1] != 3:
        raise ValueError(f"points_cam must have shape (N, 3), got {pts.shape}")
    k = np.asarray(K, dtype=np.float64).reshape(3, 3)
    pts = pts[np.all(np.isfinite(pts), axis=1) & (pts[:, 2] > 0)]
    proj = pts @ k.T
    uf = proj[:, 0] / proj[:, 2]
    vf = proj[:, 1] / proj[:, 2]
    # Test the float coordinates before truncating, so (-1, 0) does not land on column 0.
    inside = (uf >= 0) & (uf < width) & (vf >= 0) & (vf < height)
    pts, uf, vf = pts[inside], uf[inside], vf[inside]
    u = uf.astype(np.int64)
    v = vf.astype(np.int64)
    z = pts[:, 2]
    pixel = v * width + u
    # Sort by pixel, then z, then original position; the first of each pixel run is kept.
    order = np.lexsort((np.arange(len(z)), z, pixel))
    first = np.ones(len(order), dtype=bool)
    first[1:] = pixel[order][1:] != pixel[order][:-1]
    keep = order[first]
    rng = np.linalg.norm(pts[keep], axis=1)
    return u[keep], v[keep], z[keep], rng


def stats_of(ranges: np.ndarray) -> RangeStats | None:
    """Count, quartiles (linear interpolation) and minimum of ranges; ``None`` when empty."""
    r = np.asarray(ranges, dtype=np.float64)
    if r.size == 0:
        return None
    q1, med, q3 = np.quantile(r, QUANTILES, method="linear")
    return RangeStats(count=int(r.size), median=float(med), q1=float(q1), q3=float(q3),
                      min=float(r.min()))


def range_statistics(
    points: np.ndarray,
    camera_from_cloud: np.ndarray,
    K: np.ndarray,
    width: int,
    height: int,
    masks: np.ndarray,
) -> list[RangeStats | None]:
    """Range statistics per mask of the z-buffered LiDAR points projected into the image.

    ``masks`` is ``(M, height, width)`` boolean; entry ``i`` of the result is ``None`` when no
    point falls inside mask ``i``.
    """
    m = np.asarray(masks)
    if m.ndim != 3 or m.shape[1:] != (height, width):
        raise ValueError(
            f"masks must have shape (M, {height}, {width}) to match the image, got {m.shape}"
        )
    m = m.astype(bool, copy=False)
    u, v, _, rng = zbuffer_projection(camera_points(points, camera_from_cloud), K, width, height)
    selected = m[:, v, u]  # (M, kept points)
    return [stats_of(rng[row]) for row in selected]
