"""The range primitive on synthetic clouds whose answers are known by construction."""

from __future__ import annotations

import math

import numpy as np
import pytest

from eval_assets.geometry.ranging import (
    RangeStats,
    camera_points,
    range_statistics,
    stats_of,
    zbuffer_projection,
)

W, H = 64, 48
K = np.array([[50.0, 0.0, 32.0], [0.0, 50.0, 24.0], [0.0, 0.0, 1.0]])
# LiDAR convention (x forward, y left, z up) to optical (z forward, x right, y down).
CAM_FROM_LIDAR = np.array([[0, -1, 0, 0.0], [0, 0, -1, 0.1], [1, 0, 0, -0.05], [0, 0, 0, 1.0]])


def _pixel_of(k: np.ndarray, p: np.ndarray) -> tuple[float, float]:
    return float(k[0, 0] * p[0] / p[2] + k[0, 2]), float(k[1, 1] * p[1] / p[2] + k[1, 2])


def _reference_ranges(points_cam: np.ndarray, mask: np.ndarray) -> list[float]:
    """Plain-loop reference: per pixel the smallest z wins, then the mask selects."""
    best: dict[tuple[int, int], np.ndarray] = {}
    for p in points_cam:
        if not p[2] > 0:
            continue
        u, v = _pixel_of(K, p)
        if not (0 <= u < W and 0 <= v < H):
            continue
        key = (math.floor(u), math.floor(v))
        if key not in best or p[2] < best[key][2]:
            best[key] = p
    return sorted(float(np.linalg.norm(p)) for (u, v), p in best.items() if mask[v, u])


def test_plane_at_known_depth() -> None:
    # A wall 3 m ahead of the LiDAR, sampled densely enough that most pixels get several points.
    ys, zs = np.meshgrid(np.linspace(-2, 2, 301), np.linspace(-1.5, 1.5, 201))
    cloud = np.stack([np.full(ys.size, 3.0), ys.ravel(), zs.ravel()], axis=1)
    cam = camera_points(cloud, CAM_FROM_LIDAR)
    np.testing.assert_allclose(cam[:, 2], 2.95)

    mask = np.zeros((H, W), dtype=bool)
    mask[20:28, 28:36] = True
    (stats,) = range_statistics(cloud, CAM_FROM_LIDAR, K, W, H, mask[None])
    assert stats is not None
    assert stats.count == 64  # one point per masked pixel survives the z-buffer
    ref = _reference_ranges(cam, mask)
    assert len(ref) == 64
    assert stats.median == pytest.approx(float(np.median(ref)), abs=1e-12)
    assert stats.min == pytest.approx(ref[0], abs=1e-12)
    # Every range is the plane depth stretched by the ray angle, which is small near the centre.
    assert 2.95 <= stats.min <= stats.q1 <= stats.median <= stats.q3 < 2.95 * 1.01


def test_zbuffer_keeps_nearer_point_in_shared_pixel() -> None:
    ray = np.array([0.1, -0.05, 1.0])
    far, near = ray * 4.0, ray * 1.5
    u, v, z, rng = zbuffer_projection(np.stack([far, near]), K, W, H)
    assert (u.tolist(), v.tolist()) == ([37], [21])
    assert z.tolist() == [1.5]
    assert rng[0] == pytest.approx(np.linalg.norm(near))
    mask = np.zeros((1, H, W), dtype=bool)
    mask[0, 21, 37] = True
    (stats,) = range_statistics(np.stack([far, near]), np.eye(4), K, W, H, mask)
    assert stats == RangeStats(1, float(np.linalg.norm(near)), float(np.linalg.norm(near)),
                               float(np.linalg.norm(near)), float(np.linalg.norm(near)))


def test_points_behind_outside_or_invalid_are_dropped() -> None:
    pts = np.array([
        [0.0, 0.0, 2.0],      # centre: kept
        [0.0, 0.0, -2.0],     # behind the camera
        [0.0, 0.0, 0.0],      # on the camera plane
        [5.0, 0.0, 1.0],      # right of the image
        [-0.65, 0.0, 1.0],    # u = -0.5: truncation would say column 0, but it is outside
        [np.nan, 0.0, 1.0],   # invalid
        [0.63, 0.47, 1.0],    # u = 63.5, v = 47.5: the last pixel, kept
    ])
    u, v, _, _ = zbuffer_projection(pts, K, W, H)
    assert sorted(zip(u.tolist(), v.tolist(), strict=True)) == [(32, 24), (63, 47)]


def test_pixel_coordinates_are_truncated() -> None:
    # u = 10.99 and v = 5.01 belong to pixel (10, 5), not the nearest (11, 5).
    p = np.array([[(10.99 - 32) / 50, (5.01 - 24) / 50, 1.0]])
    u, v, _, _ = zbuffer_projection(p, K, W, H)
    assert (int(u[0]), int(v[0])) == (10, 5)


def _points_in_distinct_pixels(ranges: list[float]) -> np.ndarray:
    """Points straight along distinct pixel centres' rays at the given Euclidean ranges."""
    out = []
    for i, r in enumerate(ranges):
        d = np.array([(10.5 + 3 * i - 32) / 50, (20.5 - 24) / 50, 1.0])
        out.append(d / np.linalg.norm(d) * r)
    return np.array(out)


def test_quartiles_are_linear_interpolation_and_counts_are_exact() -> None:
    mask = np.ones((1, H, W), dtype=bool)
    (five,) = range_statistics(_points_in_distinct_pixels([4.0, 1.0, 10.0, 3.0, 2.0]),
                               np.eye(4), K, W, H, mask)
    assert five is not None and five.count == 5
    assert (five.q1, five.median, five.q3, five.min) == pytest.approx((2.0, 3.0, 4.0, 1.0))
    (four,) = range_statistics(_points_in_distinct_pixels([4.0, 1.0, 3.0, 2.0]),
                               np.eye(4), K, W, H, mask)
    assert four is not None and four.count == 4
    # numpy "linear": position (n-1)*q -> 0.75, 1.5, 2.25 between sorted 1, 2, 3, 4.
    assert (four.q1, four.median, four.q3) == pytest.approx((1.75, 2.5, 3.25))
    rng = np.random.default_rng(3).uniform(0.5, 9.0, 101)
    s = stats_of(rng)
    assert s is not None
    assert (s.q1, s.median, s.q3) == tuple(float(x) for x in np.quantile(rng, [0.25, 0.5, 0.75]))


def test_several_masks_and_an_empty_one() -> None:
    pts = _points_in_distinct_pixels([1.0, 2.0, 3.0])  # pixels (10,20), (13,20), (16,20)
    masks = np.zeros((3, H, W), dtype=bool)
    masks[0, 20, 9:14] = True
    masks[1, :, 15:] = True
    masks[2, 0:5, :] = True
    a, b, c = range_statistics(pts, np.eye(4), K, W, H, masks)
    assert a is not None and a.count == 2 and a.median == pytest.approx(1.5)
    assert b is not None and b.count == 1 and b.min == pytest.approx(3.0)
    assert c is None


def test_bad_shapes_are_rejected() -> None:
    with pytest.raises(ValueError, match=r"masks must have shape \(M, 48, 64\)"):
        range_statistics(np.zeros((1, 3)), np.eye(4), K, W, H, np.zeros((H, W), dtype=bool))
    with pytest.raises(ValueError, match=r"points must have shape \(N, 3\)"):
        camera_points(np.zeros((4, 4)), np.eye(4))
    with pytest.raises(ValueError, match="4x4"):
        camera_points(np.zeros((4, 3)), np.eye(3))
