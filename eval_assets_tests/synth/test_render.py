"""Ray generation and ray casting of the sample scene."""

from __future__ import annotations

import colorsys

import cv2
import numpy as np
import pytest

from eval_assets.synth.render import (
    BACKGROUND_ID,
    SceneRaycaster,
    fisheye_directions,
    lidar_directions,
    pinhole_directions,
)
from eval_assets.synth.scene import sample_scene


@pytest.fixture(scope="module")
def raycaster() -> SceneRaycaster:
    return SceneRaycaster(sample_scene())


def test_fisheye_rays_reproject_onto_their_pixel_centres() -> None:
    camera = sample_scene().camera
    rays = fisheye_directions(camera)
    assert rays.shape == (camera.height, camera.width, 3)
    np.testing.assert_allclose(np.linalg.norm(rays, axis=2), 1.0, atol=1e-12)
    xy = (rays[..., :2] / rays[..., 2:]).reshape(1, -1, 2)
    px = cv2.fisheye.distortPoints(xy, camera.K, camera.D).reshape(camera.height, camera.width, 2)
    u, v = np.meshgrid(np.arange(camera.width), np.arange(camera.height))
    assert np.max(np.abs(px - np.stack([u, v], axis=2))) < 1e-6
    # The fisheye sees further out than the pinhole with the same focal length.
    corner_angle = np.degrees(np.arccos(rays[0, 0, 2]))
    assert corner_angle > 50.0


def test_pinhole_rays_project_onto_their_pixel_centres() -> None:
    K = sample_scene().camera.K_rect
    rays = pinhole_directions(K, 64, 48)
    px = np.einsum("ij,hwj->hwi", K, rays)
    px = px[..., :2] / px[..., 2:]
    u, v = np.meshgrid(np.arange(64), np.arange(48))
    np.testing.assert_allclose(px, np.stack([u, v], axis=2), atol=1e-9)


def test_ray_at_a_ball_hits_its_surface_in_its_colour(raycaster: SceneRaycaster) -> None:
    scene = sample_scene()
    ball = next(o for o in scene.objects if o.shape == "ball")
    center = np.array(ball.center)
    origin = center + np.array([0.4, -0.3, 1.5])  # from above: nothing in between
    direction = (center - origin) / np.linalg.norm(center - origin)
    hits = raycaster.cast(origin, direction[None, :])
    radius = ball.size[0] / 2
    assert hits.t[0] == pytest.approx(np.linalg.norm(center - origin) - radius, abs=2e-3)
    assert raycaster.ids(hits)[0] == ball.id
    np.testing.assert_allclose(hits.normal[0], -direction, atol=1e-6)  # smooth, not faceted
    rgb = raycaster.shade(hits, direction[None, :])[0] / 255.0
    hue, sat, _ = colorsys.rgb_to_hsv(*rgb)
    ref_hue, ref_sat, _ = colorsys.rgb_to_hsv(*(np.array(ball.rgb) / 255.0))
    assert abs(hue - ref_hue) < 0.01 and abs(sat - ref_sat) < 0.02


def test_room_surfaces_are_background(raycaster: SceneRaycaster) -> None:
    up = np.array([[0.0, 0.0, 1.0], [0.0, 0.0, -1.0]])
    hits = raycaster.cast(np.array([0.0, 0.0, 1.0]), up)
    np.testing.assert_allclose(hits.t, [1.6, 1.0], atol=1e-6)  # ceiling at 2.6 m, floor at 0
    assert list(raycaster.ids(hits)) == [BACKGROUND_ID, BACKGROUND_ID]


def test_lidar_scan_is_closed_room_and_reproducible(raycaster: SceneRaycaster) -> None:
    scene = sample_scene()
    pose = scene.path.world_from_base(scene.path.t_start) @ scene.base_from_lidar
    elev, step = scene.lidar_elevations_deg, scene.lidar_azimuth_step_deg
    a = raycaster.lidar_scan(pose, elev, step, np.random.default_rng(3))
    b = raycaster.lidar_scan(pose, elev, step, np.random.default_rng(3))
    c = raycaster.lidar_scan(pose, elev, step, np.random.default_rng(4))
    assert a.dtype == np.float32 and a.shape == (len(lidar_directions(elev, step)), 4)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    # Noise is a centimetre-level perturbation of the true ranges.
    delta = np.linalg.norm(a[:, :3], axis=1) - np.linalg.norm(c[:, :3], axis=1)
    assert 0.005 < np.std(delta) < 0.03
    assert np.all((a[:, 3] >= 0.0) & (a[:, 3] <= 255.0))
    assert np.max(np.linalg.norm(a[:, :3], axis=1)) < 10.0
