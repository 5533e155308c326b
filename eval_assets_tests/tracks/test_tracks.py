"""Object tracks: lifting one detection with LiDAR points, fusing sightings across frames."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from eval_assets.frames.camera_poses import CameraPoses, root_of
from eval_assets.recording.messages import Header, TFMessage, Transform, TransformStamped
from eval_assets.schemas.spatial import ObjectTracks
from eval_assets.tracks import fuse_sightings, read_object_tracks, write_object_tracks
from eval_assets.tracks.fuse import (
    MAX_OUTLINE_OVERHANG,
    SIDE_SEEN_SHARE,
    build_object_tracks,
    outline_overhang,
    sides_seen,
)
from eval_assets.tracks.lift import (
    Sighting,
    Skipped,
    lift_detection,
    visible_points,
)

K = np.array([[400.0, 0.0, 320.0], [0.0, 400.0, 240.0], [0.0, 0.0, 1.0]])
W, H = 640, 480


def _box_surface(center: tuple[float, float, float], size: float, step: float = 0.02
                 ) -> np.ndarray:
    """Points on the camera-facing face (z = centre z − size/2) of a cube in camera coordinates."""
    cx, cy, cz = center
    g = np.arange(-size / 2, size / 2 + 1e-9, step)
    xs, ys = np.meshgrid(g, g)
    return np.column_stack([cx + xs.ravel(), cy + ys.ravel(),
                            np.full(xs.size, cz - size / 2)])


def _mask_of(points: np.ndarray) -> np.ndarray:
    proj = points @ K.T
    u, v = (proj[:, 0] / proj[:, 2]).astype(int), (proj[:, 1] / proj[:, 2]).astype(int)
    mask = np.zeros((H, W), dtype=bool)
    mask[v.min():v.max() + 1, u.min():u.max() + 1] = True
    return mask


def test_a_cube_is_lifted_to_its_centre_and_size_with_the_background_gated_out() -> None:
    face = _box_surface((0.2, 0.1, 3.0), 0.4)
    wall = _box_surface((0.2, 0.1, 6.0), 2.0, 0.05)  # behind it, seen through the mask's rim
    u, v, xyz = visible_points(np.concatenate([face, wall]), K, W, H)
    world_from_camera = np.eye(4)
    world_from_camera[:3, 3] = (10.0, -2.0, 0.5)
    lifted = lift_detection(7, "red box", _mask_of(face), u, v, xyz, K, world_from_camera)
    assert isinstance(lifted, Sighting)
    assert lifted.points_world[:, 2].max() < 0.5 + 3.0  # no wall point kept
    np.testing.assert_allclose(lifted.center_world, (10.2, -1.9, 3.5), atol=0.03)
    # The silhouette is taken half a width behind the face (round objects): 9 % large for a cube.
    assert lifted.size_m is not None and lifted.size_m[0] == pytest.approx(0.42, abs=0.025)
    assert lifted.surface_range_m == pytest.approx(2.8, abs=0.05)


def test_a_mask_without_points_is_skipped_with_the_reason() -> None:
    face = _box_surface((0.2, 0.1, 3.0), 0.4)
    u, v, xyz = visible_points(face, K, W, H)
    mask = np.zeros((H, W), dtype=bool)
    mask[:5, :5] = True
    lifted = lift_detection(3, "red box", mask, u, v, xyz, K, np.eye(4))
    assert isinstance(lifted, Skipped) and lifted.reason == "too_few_points"


def _sighting(frame: int, name: str, center: tuple[float, float, float],
              size: float = 0.3) -> Sighting:
    rng = np.random.default_rng(frame)
    pts = np.array(center) + rng.uniform(-size / 2, size / 2, (40, 3))
    return Sighting(frame, name, 500, pts, np.array(center, dtype=float), (size, size),
                    2.0 + frame / 10)


def test_sightings_of_one_name_fuse_when_close_and_stay_apart_when_far() -> None:
    sightings = [_sighting(0, "red ball", (1.0, 0.0, 0.15)),
                 _sighting(1, "red ball", (1.05, 0.02, 0.15)),
                 _sighting(1, "red ball", (3.0, 1.0, 0.15)),  # a second red ball, 2 m away
                 _sighting(2, "blue box", (1.0, 0.0, 0.15)),  # another name, same place
                 _sighting(3, "red ball", (2.95, 1.0, 0.15))]
    tracks = fuse_sightings(sightings)
    assert [(t.track_id, t.frames) for t in tracks] == [
        ("red ball#0", [0, 1]), ("red ball#1", [1, 3]), ("blue box#0", [2])]
    # The centre of the box fitted to both frames' points (two 30 cm cubes, 5 cm apart).
    assert tracks[0].center_world == pytest.approx([1.025, 0.01, 0.15], abs=0.01)
    assert tracks[1].pixels == {1: 500, 3: 500} and tracks[1].points == 80
    assert tracks[1].ranges_m == {1: 2.1, 3: 2.3}
    assert max(tracks[0].extent_m) == pytest.approx(0.3, abs=0.05)
    # The same input in another order gives the same tracks.
    assert fuse_sightings(sightings[::-1]) == tracks


def test_one_object_is_seen_once_per_frame() -> None:
    tracks = fuse_sightings([_sighting(0, "red ball", (1.0, 0.0, 0.15)),
                             _sighting(0, "red ball", (1.1, 0.0, 0.15))])
    assert len(tracks) == 2


def test_an_oriented_box_gets_its_sides_and_yaw() -> None:
    yaw = math.radians(30.0)
    rot = np.array([[math.cos(yaw), -math.sin(yaw)], [math.sin(yaw), math.cos(yaw)]])
    rng = np.random.default_rng(0)
    local = rng.uniform([-0.3, -0.1, 0.0], [0.3, 0.1, 0.4], (400, 3))
    pts = np.column_stack([local[:, :2] @ rot.T + (2.0, 1.0), local[:, 2]])
    s = Sighting(0, "blue box", 300, pts, np.array([2.0, 1.0, 0.2]), None, 2.0)
    (track,) = fuse_sightings([s])
    assert track.extent_m == pytest.approx([0.6, 0.2, 0.4], abs=0.03)
    assert math.cos(2 * (track.yaw_rad - yaw)) == pytest.approx(1.0, abs=0.01)


def test_tracks_file_round_trips(tmp_path: Path) -> None:
    tracks = build_object_tracks("world", [_sighting(0, "red ball", (1.0, 0.0, 0.15))],
                                 [Skipped(2, "red ball", "too_few_points", "3 points")])
    path = write_object_tracks(tmp_path, tracks)
    assert read_object_tracks(tmp_path) == tracks
    text = path.read_text()
    write_object_tracks(tmp_path, ObjectTracks.model_validate_json(text))
    assert path.read_text() == text  # byte-stable
    with pytest.raises(FileNotFoundError, match="object_tracks"):
        read_object_tracks(tmp_path / "nowhere")


def test_the_world_frame_is_the_top_of_the_cameras_tree() -> None:
    parents = {"camera_optical": "base_link", "base_link": "odom", "odom": "map",
               "mid360_link": "base_link", "other": "elsewhere"}
    assert root_of("camera_optical", parents) == "map"
    assert root_of("map", parents) == "map"
    assert root_of("a", {"a": "b", "b": "a"}) == "b"  # a loop ends, it does not hang


def _post(x: float, z: float, top_y: float = -0.5, bottom_y: float = 0.5) -> np.ndarray:
    """A column of points at camera (x, ·, z) from ``top_y`` down to ``bottom_y``."""
    ys = np.arange(top_y, bottom_y, 0.01)
    return np.column_stack([np.full(ys.size, x), ys, np.full(ys.size, z)])


def test_a_mask_cut_by_something_in_front_or_by_the_border_is_not_whole() -> None:
    face = _box_surface((0.2, 0.1, 3.0), 0.4)
    mask = _mask_of(face)
    # A post 1 m nearer, standing just left of the mask (inside the occluder ring, not the mask).
    left = np.flatnonzero(mask.any(axis=0))[0] - 3
    post = _post((left - 320) / 400 * 2.0, 2.0)
    u, v, xyz = visible_points(np.concatenate([face, post]), K, W, H)
    above_floor = np.full(len(xyz), 1.0)
    cut = lift_detection(0, "orange ball", mask, u, v, xyz, K, np.eye(4), above_floor)
    assert isinstance(cut, Sighting) and not cut.whole
    # The same nearer points as floor (within the floor band) hide nothing.
    floor = lift_detection(0, "orange ball", mask, u, v, xyz, K, np.eye(4),
                           np.where(np.linalg.norm(xyz, axis=1) < 2.5, 0.0, 1.0))
    assert isinstance(floor, Sighting) and floor.whole
    # The mask's outline (pixel edges) and the camera travel with the sighting (outline check).
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    assert floor.outline_px == (cols[0] - 0.5, rows[0] - 0.5, cols[-1] + 0.5, rows[-1] + 0.5)
    assert floor.K is not None and floor.world_from_camera is not None
    u, v, xyz = visible_points(face, K, W, H)
    alone = lift_detection(0, "orange ball", mask, u, v, xyz, K, np.eye(4), above_floor[:len(xyz)])
    assert isinstance(alone, Sighting) and alone.whole
    border = mask.copy()
    border[:, :5] = True  # the mask now reaches the image's left edge
    edge = lift_detection(0, "orange ball", border, u, v, xyz, K, np.eye(4))
    assert isinstance(edge, Sighting) and not edge.whole


def _l_of_box(length: float, width: float, yaw_deg: float, offset: tuple[float, float] = (0, 0),
              frame: int = 0) -> Sighting:
    """The two faces LiDAR sees of a box seen from a corner: an L of points, 30 cm high."""
    yaw = math.radians(yaw_deg)
    rot = np.array([[math.cos(yaw), -math.sin(yaw)], [math.sin(yaw), math.cos(yaw)]])
    a = np.arange(-length / 2, length / 2, 0.01)
    b = np.arange(-width / 2, width / 2, 0.01)
    face = np.concatenate([np.column_stack([a, np.full(a.size, -width / 2)]),
                           np.column_stack([np.full(b.size, -length / 2), b])])
    heights = np.arange(0.0, 0.3, 0.05)
    xy = np.repeat(face @ rot.T + (2.0 + offset[0], 1.0 + offset[1]), heights.size, axis=0)
    pts = np.column_stack([xy, np.tile(heights, len(face))])
    return Sighting(frame, "green box", 800, pts, pts.mean(axis=0), None, 2.0)


def test_a_box_seen_from_a_corner_gets_its_sides_not_its_diagonal() -> None:
    # An L fits as small a rectangle along its diagonal (0.54 m) as along its faces: the
    # footprint follows the faces the points lie on.
    (track,) = fuse_sightings([_l_of_box(0.44, 0.31, 25.0)])
    assert track.extent_m[:2] == pytest.approx([0.44, 0.31], abs=0.02)
    (track,) = fuse_sightings([_l_of_box(0.44, 0.31, 25.0),
                               _l_of_box(0.44, 0.31, 25.0, frame=1)])
    assert track.extent_m[:2] == pytest.approx([0.44, 0.31], abs=0.02)
    assert track.whole_frames == [0, 1]
    # Both arms of the L run end to end: length and width are measured from this one side.
    assert track.footprint_seen >= SIDE_SEEN_SHARE


def test_an_arc_seen_from_one_side_does_not_show_its_footprint_sides() -> None:
    # A round object seen from the west: its arc touches the fitted rectangle's sides at a
    # point or two, its depth is unmeasured (object_size_cm does not ask about it).
    (arc,) = fuse_sightings([_ring(0.15, (90.0, 270.0), 0, (0.0, 1.0)),
                             _ring(0.15, (100.0, 280.0), 1, (0.0, 1.3))])
    assert arc.footprint_seen < SIDE_SEEN_SHARE
    # A box seen face-on (one face, no L): its depth is not seen either.
    face = _l_of_box(0.44, 0.31, 0.0)
    flat = face.points_world[np.abs(face.points_world[:, 1] - (1.0 - 0.155)) < 1e-6]
    one = Sighting(0, "green box", 800, flat, flat.mean(axis=0), None, 2.0)
    (track,) = fuse_sightings([one, Sighting(1, "green box", 800, flat, flat.mean(axis=0),
                                             None, 2.0)])
    assert track.footprint_seen < SIDE_SEEN_SHARE
    # A single sighting is not fused: nothing is claimed.
    (single,) = fuse_sightings([_l_of_box(0.44, 0.31, 25.0)])
    assert single.footprint_seen == 0.0


def test_sides_seen_measures_the_covered_share_of_an_end_and_a_side() -> None:
    # Points on the whole south side (length 0.4) and half the west end (width 0.2).
    side = np.column_stack([np.linspace(-0.2, 0.2, 41), np.full(41, -0.1), np.full(41, 0.2)])
    end = np.column_stack([np.full(11, -0.2), np.linspace(-0.1, 0.0, 11), np.full(11, 0.2)])
    foot = np.array([[0.0, 0.0, 0.0]])  # the floor point the foot band leaves out
    pts = np.concatenate([side, end, foot])
    assert sides_seen(pts, 0.4, 0.2, 0.0, np.zeros(2)) == pytest.approx(0.5, abs=1e-9)
    assert sides_seen(pts[:41], 0.4, 0.2, 0.0, np.zeros(2)) == 0.0  # no end at all


def _ring(radius: float, arc_deg: tuple[float, float], frame: int,
          camera: tuple[float, float] | None) -> Sighting:
    """The arc of a 40 cm high cylinder at (2, 1) that a camera sees, as LiDAR points."""
    a = np.radians(np.arange(*arc_deg, 2.0))
    heights = np.arange(0.0, 0.41, 0.05)
    xy = np.repeat(np.column_stack([2.0 + radius * np.cos(a), 1.0 + radius * np.sin(a)]),
                   heights.size, axis=0)
    pts = np.column_stack([xy, np.tile(heights, a.size)])
    cam = None if camera is None else np.array([*camera, 0.5])
    return Sighting(frame, "red bin", 600, pts, pts.mean(axis=0), None, 2.0,
                    camera_world=cam)


def test_sightings_from_all_round_fuse_to_the_whole_object_and_its_centre() -> None:
    # Seen from the west and from the east: each view sees the half facing it.
    west = _ring(0.15, (90.0, 270.0), 0, (0.0, 1.0))
    east = _ring(0.15, (-90.0, 90.0), 1, (4.0, 1.0))
    (track,) = fuse_sightings([west, east])
    assert track.view_spread_deg == pytest.approx(180.0, abs=0.5)
    assert max(track.extent_m[:2]) == pytest.approx(0.30, abs=0.02)
    assert track.center_world == pytest.approx([2.0, 1.0, 0.2], abs=0.01)
    # From one side only: a narrow view, the depth only half seen (the family does not ask).
    (one_side,) = fuse_sightings([west, _ring(0.15, (100.0, 280.0), 1, (0.0, 1.3))])
    assert one_side.view_spread_deg < 20.0
    assert one_side.center_world[0] < 2.0 - 0.02  # pulled towards the seen side
    # Without camera positions (hand-made sightings) nothing is known of the spread.
    (unknown,) = fuse_sightings([_ring(0.15, (0.0, 360.0), 0, None)])
    assert unknown.view_spread_deg == 0.0


def test_floor_seen_through_a_mask_does_not_place_the_object() -> None:
    # A table top 0.4 m above the floor, 3 m away, seen over far floor that outnumbers it.
    top = _box_surface((0.0, 0.0, 3.0), 0.3, 0.05)
    floor = _box_surface((0.0, 0.0, 9.0), 1.4, 0.04)
    pts = np.concatenate([top, floor])
    u, v, xyz = visible_points(pts, K, W, H)
    height = np.where(xyz[:, 2] < 5.0, 0.4, 0.0)
    mask = _mask_of(top)
    assert np.count_nonzero(mask[v, u] & (height == 0.0)) > np.count_nonzero(
        mask[v, u] & (height > 0))
    lifted = lift_detection(0, "table", mask, u, v, xyz, K, np.eye(4), height)
    assert isinstance(lifted, Sighting)
    assert lifted.surface_range_m == pytest.approx(2.85, abs=0.05)
    # Only floor in the mask: no sighting, and the reason says so.
    only = lift_detection(0, "table", mask, u, v, xyz, K, np.eye(4), np.zeros(len(xyz)))
    assert isinstance(only, Skipped) and only.reason == "floor_only"


def _pose_tf(t: float, x: float, yaw_deg: float) -> TFMessage:
    half = math.radians(yaw_deg) / 2
    return TFMessage((TransformStamped(
        header=Header.at(t, "world"), child_frame_id="base_link",
        transform=Transform(translation=(x, 0.0, 0.0),
                            rotation=(0.0, 0.0, math.sin(half), math.cos(half)))),))


def test_camera_poses_are_interpolated_between_tf_samples() -> None:
    mounts = [TFMessage((TransformStamped(  # a static mount, re-sent (alike) every 0.05 s
        header=Header.at(k * 0.05, "base_link"), child_frame_id="camera",
        transform=Transform(translation=(0.0, 0.0, 0.5), rotation=(0.0, 0.0, 0.0, 1.0))),))
        for k in range(7)]
    poses = CameraPoses([*mounts, _pose_tf(0.0, 0.0, 0.0), _pose_tf(0.1, 1.0, 20.0),
                         _pose_tf(0.3, 9.0, 90.0)])
    assert poses.world_of("camera") == "world"
    mid = poses.at("world", "camera", 0.025)
    assert mid[:3, 3] == pytest.approx([0.25, 0.0, 0.5])
    assert math.degrees(math.atan2(mid[1, 0], mid[0, 0])) == pytest.approx(5.0)
    # At a sample, the sample; between samples farther apart than the TF tolerance, the nearest.
    assert poses.at("world", "camera", 0.1)[:3, 3] == pytest.approx([1.0, 0.0, 0.5])
    assert poses.at("world", "camera", 0.15)[:3, 3] == pytest.approx([1.0, 0.0, 0.5])


def test_the_trajectory_reaches_far_enough_past_the_first_and_last_image_to_use_them() -> None:
    """A robot driving straight at 1 m/s, TF every 0.1 s, images at 1.03 s and 2.03 s: the
    trajectory holds enough samples around both that the motion families may use them
    (``Motion.steady``: the sample before the one holding the image and two after)."""
    from eval_assets.schemas.frames import RectifiedFrame
    from eval_assets.tracks.lift import camera_trajectory
    from eval_assets.vqa.spatial.trajectory import Motion

    mounts = [TFMessage((TransformStamped(
        header=Header.at(k * 0.1, "base_link"), child_frame_id="camera",
        transform=Transform(translation=(0.0, 0.0, 0.5), rotation=(0.0, 0.0, 0.0, 1.0))),))
        for k in range(40)]
    poses = CameraPoses([*mounts, *(_pose_tf(k * 0.1, k * 0.1, 0.0) for k in range(40))])
    frames = [RectifiedFrame(frame_index=i, image_ts=t, image_path=f"f{i}.png", width=W,
                             height=H, camera_frame_id="camera", distortion_model="plumb_bob",
                             K_rect=K.ravel().tolist(), P_rect=[*K[0], 0.0, *K[1], 0.0, *K[2],
                                                                0.0],
                             camera_info_ts=0.0)
              for i, t in enumerate((1.03, 2.03))]
    samples = camera_trajectory(poses.graph, "world", frames)
    motion = Motion(np.array([s.t for s in samples]), np.array([s.position for s in samples]),
                    np.array([s.yaw_deg for s in samples]))
    assert motion.steady(1.03) and motion.steady(2.03)
    assert samples[0].t == pytest.approx(0.9) and samples[-1].t == pytest.approx(2.2)


def _seen_box(width_m: float) -> Sighting:
    """A whole sighting whose mask outline is the image of a ``width_m`` square box 0.3 m high
    at (2, 0), seen from the origin looking along world x (camera 0.5 m up)."""
    world_from_camera = np.eye(4)
    world_from_camera[:3, :3] = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])
    world_from_camera[:3, 3] = [0.0, 0.0, 0.5]
    h = width_m / 2
    corners = np.array([[2 + dx, dy, z] for dx in (-h, h) for dy in (-h, h) for z in (0.0, 0.3)])
    cam = (corners - world_from_camera[:3, 3]) @ world_from_camera[:3, :3]
    uv = cam @ K.T
    u, v = uv[:, 0] / uv[:, 2], uv[:, 1] / uv[:, 2]
    pts = corners[:1]
    return Sighting(0, "green box", 800, pts, pts[0], None, 2.0,
                    camera_world=world_from_camera[:3, 3].copy(),
                    outline_px=(float(u.min()), float(v.min()), float(u.max()), float(v.max())),
                    world_from_camera=world_from_camera, K=K)


def test_outline_overhang_says_when_the_camera_sees_more_than_the_fitted_box() -> None:
    fitted = (0.4, 0.4, 0.0, np.array([2.0, 0.0]), 0.0, 0.3)
    assert outline_overhang([_seen_box(0.4)], *fitted) == pytest.approx(0.0, abs=1e-9)
    # The object is 0.5 m wide, the LiDAR's points made a 0.4 m box: the mask sticks out.
    over = outline_overhang([_seen_box(0.5)], *fitted)
    assert over is not None and over > MAX_OUTLINE_OVERHANG
    # A larger box than the object (a round object's bounding box) explains its outline.
    assert outline_overhang([_seen_box(0.3)], *fitted) == 0.0
    # Only whole sightings with a camera count.
    cut = replace(_seen_box(0.5), whole=False)
    assert outline_overhang([cut, replace(_seen_box(0.5), K=None)], *fitted) is None


def _flat_box_view() -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[float, float, float, float],
                              float]:
    """A camera 0.6 m above the floor looking along world x at a 60 x 60 x 10 cm box whose near
    face is 1.7 m away: ``(world_from_camera, K, the box's surface points, its outline in pixel
    edges, the median range over its visible pixels)``, the last by intersecting each pixel's
    ray with the box's top and near faces directly (not with the code under test)."""
    pose = np.eye(4)
    pose[:3, :3] = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])
    pose[:3, 3] = [0.0, 0.0, 0.6]
    K = np.array([[500.0, 0.0, 320.0], [0.0, 500.0, 240.0], [0.0, 0.0, 1.0]])
    us, vs = np.meshgrid(np.arange(640.0), np.arange(480.0))
    d = np.column_stack([us.ravel(), vs.ravel(), np.ones(us.size)]) @ np.linalg.inv(K).T
    d = d / np.linalg.norm(d, axis=1, keepdims=True) @ pose[:3, :3].T  # world directions
    with np.errstate(divide="ignore", invalid="ignore"):
        t_top = (0.1 - 0.6) / d[:, 2]
        t_front = 1.7 / d[:, 0]
        top, front = pose[:3, 3] + t_top[:, None] * d, pose[:3, 3] + t_front[:, None] * d
    on_top = (t_top > 0) & (top[:, 0] >= 1.7) & (top[:, 0] <= 2.3) & (np.abs(top[:, 1]) <= 0.3)
    on_front = ((t_front > 0) & (front[:, 2] >= 0.0) & (front[:, 2] <= 0.1)
                & (np.abs(front[:, 1]) <= 0.3))
    ranges = np.where(on_top, t_top, np.where(on_front, t_front, np.nan))
    seen = np.isfinite(ranges)
    u, v = us.ravel()[seen], vs.ravel()[seen]
    outline = (u.min() - 0.5, v.min() - 0.5, u.max() + 0.5, v.max() + 0.5)
    g = np.arange(-0.3, 0.301, 0.02)
    surface = np.array([[x, y, 0.1] for x in np.arange(1.7, 2.301, 0.02) for y in g]
                       + [[1.7, y, z] for y in g for z in (0.0, 0.025, 0.05, 0.075)])
    return pose, K, surface, outline, float(np.nanmedian(ranges))


def test_the_range_is_the_median_over_the_visible_surface_not_over_the_rings_rows() -> None:
    """One LiDAR ring crossing a flat box's top near its far edge (a tray seen at 2 m,
    simulated seed 901) measures that edge's range; the camera sees the whole top, nearer."""
    pose, K, surface, outline, truth = _flat_box_view()
    ring = np.array([[2.2, y, 0.1] for y in np.arange(-0.28, 0.29, 0.04)])
    ring_cam = (ring - pose[:3, 3]) @ pose[:3, :3]
    ring_median = float(np.median(np.linalg.norm(ring_cam, axis=1)))
    assert ring_median > 1.05 * truth  # the rings' median alone misses by more than 5 %
    sightings = [Sighting(f, "tray", 4000, surface, np.array([2.0, 0.0, 0.05]), (0.6, 0.1),
                          ring_median, camera_world=pose[:3, 3].copy(), outline_px=outline,
                          world_from_camera=pose, K=K, range_points_cam=ring_cam)
                 for f in (0, 1)]
    (track,) = fuse_sightings(sightings)
    assert track.ranges_m[1] == pytest.approx(truth, rel=0.01)
