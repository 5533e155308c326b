"""The sample scene's geometry: rig conventions, quaternions, the path and the object layout."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from eval_assets.recording.messages import Transform
from eval_assets.synth.scene import (
    PALETTE,
    ROOM_HI,
    ROOM_LO,
    quaternion_xyzw,
    rot_x,
    rot_y,
    rot_z,
    sample_scene,
)


def _random_rotations(n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    out = []
    for _ in range(n):
        q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        out.append(q * np.sign(np.linalg.det(q)))
    # Rotations by ~180° exercise every branch of Shepperd's method (trace ≤ 0).
    out += [rot_x(math.pi), rot_y(math.pi), rot_z(math.pi), rot_x(3.0) @ rot_y(0.2)]
    return out


@pytest.mark.parametrize("rotation", _random_rotations(12))
def test_quaternion_round_trips_through_transform_matrix(rotation: np.ndarray) -> None:
    q = quaternion_xyzw(rotation)
    assert q[3] >= 0.0
    assert math.isclose(sum(c * c for c in q), 1.0, rel_tol=1e-12)
    back = Transform((0.0, 0.0, 0.0), q).matrix()[:3, :3]
    np.testing.assert_allclose(back, rotation, atol=1e-12)


def test_camera_is_optical_and_looks_forward_slightly_down() -> None:
    scene = sample_scene()
    r = scene.base_from_camera[:3, :3]
    forward, right, down = r[:, 2], r[:, 0], r[:, 1]
    assert forward[0] > 0.99 and forward[2] < -0.05  # along base +x, pitched a little down
    np.testing.assert_allclose(right, [0.0, -1.0, 0.0], atol=1e-12)  # optical x = base −y
    assert down[2] < -0.99
    camera_height = (scene.path.world_from_base(scene.path.t_start) @ scene.base_from_camera)[2, 3]
    assert camera_height == pytest.approx(0.40)
    lidar_offset = np.linalg.norm(scene.base_from_lidar[:3, 3])
    assert 0.1 <= lidar_offset <= 0.2


def test_path_is_slow_smooth_and_clear_of_objects() -> None:
    scene = sample_scene(frames=24)
    path = scene.path
    ts = np.linspace(path.t_start, path.t_end, 501)
    xy = np.array([path.world_from_base(t)[:2, 3] for t in ts])
    speed = np.linalg.norm(np.diff(xy, axis=0), axis=1) / np.diff(ts)
    assert np.all(np.abs(speed - 0.192) < 0.001)
    # Before and after the arc the robot stands still.
    np.testing.assert_array_equal(path.world_from_base(path.t_start - 5.0),
                                  path.world_from_base(path.t_start))
    for obj in scene.objects:
        # Clearance between base_link's track and the object's footprint circle (Go2 half-width
        # is ≈ 0.16 m).
        reach = np.hypot(obj.size[0], obj.size[1]) / 2
        gap = np.min(np.linalg.norm(xy - np.array(obj.center[:2]), axis=1)) - reach
        assert gap > 0.2, f"{obj.name} is {gap:.2f} m from the robot's path"


def test_objects_are_in_the_room_with_one_shape_per_colour() -> None:
    scene = sample_scene()
    assert 8 <= len(scene.objects) <= 10
    assert [o.id for o in scene.objects] == list(range(len(scene.objects)))
    shape_of: dict[str, str] = {}
    for obj in scene.objects:
        assert obj.rgb == PALETTE[obj.color]
        assert shape_of.setdefault(obj.color, obj.shape) == obj.shape
        lo = np.array(obj.center) - np.array(obj.size) / 2
        hi = np.array(obj.center) + np.array(obj.size) / 2
        assert lo[2] == pytest.approx(0.0)  # rests on the floor
        assert np.all(lo > np.array(ROOM_LO) - 1e-9) and np.all(hi < np.array(ROOM_HI))
    counts = Counter(o.name for o in scene.objects)
    assert set(counts.values()) == {1, 2, 3}


def test_frames_must_be_positive() -> None:
    with pytest.raises(ValueError, match="--frames"):
        sample_scene(frames=0)
