"""Objects from the LiDAR without weights: floor, clustering, depth-ordered masks, names."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from eval_assets.objects.lidar import (
    MAX_OBJECT_M,
    TOP_SLACK_M,
    FrameSweep,
    SweepRays,
    cloud_top_z,
    discover_objects,
    floor_height,
    join_gap_m,
    lowest_pass,
    top_ceiling,
)
from eval_assets.objects.masks import frame_objects
from eval_assets.objects.naming import NAME_MIN_FRAMES, NameVotes, decide, decide_all

FLOOR = 0.1


def _box(center: tuple[float, float], size: tuple[float, float, float], n: int,
         rng: np.random.Generator) -> np.ndarray:
    """Points on a box's surface standing on the floor."""
    lo = np.array([center[0] - size[0] / 2, center[1] - size[1] / 2, FLOOR])
    pts = lo + rng.random((n, 3)) * np.array(size)
    face = rng.integers(0, 3, n)
    far = lo[face] + np.array(size)[face]
    pts[np.arange(n), face] = np.where(rng.random(n) < 0.5, lo[face], far)
    return pts


def _sweeps(frames: int = 6, stray: bool = True) -> list[FrameSweep]:
    rng = np.random.default_rng(0)
    out = []
    for f in range(frames):
        floor = np.column_stack([rng.uniform(-3, 3, 4000), rng.uniform(-3, 3, 4000),
                                 FLOOR + rng.normal(0, 0.003, 4000)])
        parts = [floor, _box((1.0, 0.0), (0.3, 0.2, 0.25), 400, rng),
                 _box((1.0, 0.55), (0.2, 0.2, 0.4), 400, rng),  # 25 cm from the first
                 _box((-2.0, 0.0), (0.1, 4.0, 1.0), 800, rng)]  # a wall
        if stray and f == 0:
            parts.append(np.array([[-1.0, -1.0, 0.5]]))
        out.append(FrameSweep(f, np.concatenate(parts), np.array([0.0, -1.0 + 0.1 * f, 0.6])))
    return out


def test_the_floor_is_the_densest_band_near_the_sensor() -> None:
    sweep = _sweeps(1)[0]
    assert floor_height(sweep.points_world, sweep.sensor_world) == pytest.approx(FLOOR, abs=0.005)
    assert floor_height(np.zeros((3, 3)), np.zeros(3)) is None  # too few points to say


def test_objects_are_found_apart_and_the_wall_is_structure() -> None:
    found = discover_objects(_sweeps())
    assert found.floor_z == pytest.approx(FLOOR, abs=0.005)
    askable = [o for o in found.objects if o.askable]
    centres = sorted(tuple(np.round(o.center_world[:2], 1)) for o in askable)
    assert centres == [(1.0, 0.0), (1.0, 0.6)] or centres == [(1.0, 0.0), (1.0, 0.5)]
    walls = [o for o in found.objects if not o.askable]
    assert len(walls) == 1 and walls[0].reason.startswith("structure")
    assert f"> {MAX_OBJECT_M} m" in walls[0].reason
    heights = sorted(round(o.height_m, 2) for o in askable)
    assert heights == pytest.approx([0.25, 0.4], abs=0.02)
    # One sweep's stray return is no object: every object was hit in several frames.
    assert all(len(o.frames) >= 2 for o in found.objects)
    assert [o.number for o in found.objects] == list(range(1, len(found.objects) + 1))


def test_the_same_sweeps_give_the_same_numbers() -> None:
    a, b = discover_objects(_sweeps()), discover_objects(_sweeps())
    assert [(o.number, tuple(o.frames), len(o.points_world)) for o in a.objects] == \
        [(o.number, tuple(o.frames), len(o.points_world)) for o in b.objects]


def test_the_join_gap_follows_the_column_spacing_within_bounds() -> None:
    assert join_gap_m(1024) == pytest.approx(3 * 4.0 * 2 * np.pi / 1024)
    assert join_gap_m(100000) == 0.04 and join_gap_m(64) == 0.10


def _camera() -> tuple[np.ndarray, np.ndarray]:
    """A camera at the origin 0.35 m up looking along world +x (camera z = world x)."""
    world_from_camera = np.eye(4)
    world_from_camera[:3, :3] = np.array([[0, 0, 1], [-1, 0, 0], [0, -1, 0]], dtype=float)
    world_from_camera[:3, 3] = [0.0, 0.0, 0.35]
    K = np.array([[300.0, 0, 160], [0, 300.0, 120], [0, 0, 1]])
    return world_from_camera, K


def test_a_mask_never_takes_a_nearer_objects_pixels() -> None:
    rng = np.random.default_rng(1)
    sweeps = []
    for f in range(3):
        near = _box((1.5, 0.0), (0.2, 0.2, 0.3), 600, rng)
        far = _box((3.0, 0.1), (0.4, 0.4, 0.5), 900, rng)
        floor = np.column_stack([rng.uniform(0, 4, 3000), rng.uniform(-2, 2, 3000),
                                 np.full(3000, FLOOR)])
        sweeps.append(FrameSweep(f, np.concatenate([floor, near, far]), np.array([0, 0, 0.5])))
    found = discover_objects(sweeps)
    world_from_camera, K = _camera()
    visible = np.concatenate([o.points_world for o in found.objects])
    seen = frame_objects(found, visible, world_from_camera, K, 320, 240, FLOOR)
    assert len(seen) == 2
    near_o, far_o = sorted(seen, key=lambda s: s.depth_m)
    assert not np.any(near_o.mask & far_o.mask)
    assert near_o.occluded_share == 0.0 and far_o.occluded_share > 0.0
    # The far object's mask has a hole exactly where the near one stands in front of it.
    hole = near_o.mask & ~far_o.mask
    assert hole.sum() == near_o.mask.sum()


def _votes(clean: int, **names: int) -> NameVotes:
    v = NameVotes(clean_frames=clean)
    for name, n in names.items():
        for _ in range(n):
            v.add(name.replace("_", " "), "detector")
    return v


def test_a_name_needs_enough_votes_share_and_no_rival() -> None:
    assert decide(_votes(6, red_box=5)).name == "red box"
    assert decide(_votes(6, red_box=NAME_MIN_FRAMES - 1)).name is None  # too few
    assert decide(_votes(20, red_box=5)).name is None  # a quarter of the clean frames
    unsure = decide(_votes(8, red_box=5, green_ball=2))  # 2 * 3 > 5: a rival
    assert unsure.name is None and "other names" in unsure.reason
    assert decide(_votes(5)).name is None


def test_a_name_certain_for_two_objects_names_neither() -> None:
    decisions = decide_all({0: _votes(5, mug=5), 1: _votes(4, mug=4), 2: _votes(4, duck=4)})
    assert decisions[0].name is None and decisions[1].name is None
    assert "certain for 2 objects" in decisions[0].reason
    assert decisions[2].name == "duck"
    assert Counter(d.name for d in decisions.values())[None] == 2


def test_a_lidar_clouds_size_from_one_side_needs_a_near_whole_l() -> None:
    """A LiDAR object's cloud seen from one side is sized only when its points show an end and
    a side of its footprint nearly whole (a box); an irregular outline touching a rectangle's
    sides for most of their length (a teddy bear, 0.84) is not, nor a detector track's L
    without the camera's outline check."""
    from eval_assets.vqa.spatial.evidence import CLOUD_SIDE_SEEN_SHARE, narrow_view
    from eval_assets_tests.vqa.spatial_tracks import track

    def one_sided(seen: float, source: str, spread: float = 60.0) -> object:
        t = track("object marked 3", [1.0, 0.0, 0.1], [0, 1], view_spread_deg=spread)
        return narrow_view("object_size_cm", t.model_copy(update={
            "footprint_seen": seen, "source": source, "outline_overhang": None}))

    assert one_sided(CLOUD_SIDE_SEEN_SHARE, "lidar") is None
    assert one_sided(0.84, "lidar") is not None
    assert one_sided(1.0, "detections") is not None  # no outline to check it against
    # Seen all round, a mug's handle still lies between the rings: a cloud needs its L.
    assert one_sided(0.6, "lidar", spread=240.0) is not None
    assert one_sided(0.6, "detections", spread=240.0) is None


def test_a_turned_boxs_cloud_measures_its_own_sides_not_the_floor_plan_square() -> None:
    """The cloud's oriented box (what the taught names' size gate and the tracks use) is the
    box's own length and width; the floor-plan grid's box of a box turned 45 degrees is about
    1.4 times longer (a lego brick's 30 cm for its 19 refused its taught name)."""
    from eval_assets.tracks.fuse import cloud_box

    rng = np.random.default_rng(3)
    pts = _box((0.0, 0.0), (0.3, 0.2, 0.15), 3000, rng)
    turn = np.radians(45.0)
    rot = np.array([[np.cos(turn), -np.sin(turn), 0], [np.sin(turn), np.cos(turn), 0],
                    [0, 0, 1]])
    pts = pts @ rot.T
    found = discover_objects([FrameSweep(f, pts, np.array([2.0, 0.0, 0.5])) for f in range(3)])
    (obj,) = found.objects
    assert obj.footprint_m[0] > 0.33  # the grid's square round the turned box
    along, across, _, _, low, top = cloud_box(pts, FLOOR)
    assert along == pytest.approx(0.3, abs=0.02) and across == pytest.approx(0.2, abs=0.02)
    assert top - low == pytest.approx(0.15, abs=0.01)


def test_a_mugs_handle_of_few_returns_is_in_its_cloud_box_and_two_strays_are_not() -> None:
    """The cloud's footprint spans all but CLOUD_TRIM_POINTS returns either side: a handle of
    a few dozen returns among thousands reaches the length (the 1st-99th percentile cut it off:
    simulated mugs measured 32.6 cm of 36.5), and two stray returns beyond it do not."""
    from eval_assets.tracks.fuse import CLOUD_TRIM_POINTS, cloud_box

    rng = np.random.default_rng(5)
    turn = rng.uniform(0.0, 2 * np.pi, 4000)
    body = np.column_stack([0.12 * np.cos(turn), 0.12 * np.sin(turn),
                            FLOOR + rng.uniform(0.0, 0.3, 4000)])
    handle = np.column_stack([rng.uniform(0.12, 0.24, 40), rng.uniform(-0.01, 0.01, 40),
                              FLOOR + rng.uniform(0.08, 0.22, 40)])
    strays = np.array([[0.40, 0.0, FLOOR + 0.1], [0.45, 0.01, FLOOR + 0.1]])
    assert len(strays) <= CLOUD_TRIM_POINTS
    along, across, _, centre, _, _ = cloud_box(np.vstack([body, handle, strays]), FLOOR)
    assert along == pytest.approx(0.36, abs=0.01)
    assert across == pytest.approx(0.24, abs=0.01)
    assert centre[0] == pytest.approx(0.06, abs=0.02)


def test_a_walls_l_does_not_cover_what_stands_in_front_of_its_far_end() -> None:
    """A wall's convex hull spans the room's corner; painted at the wall's median depth it hid a
    box standing in front of the wall's far arm (the sample's blue boxes). Painted per pixel, the
    wall keeps only the pixels where it is nearer than the box."""
    rng = np.random.default_rng(2)
    sweeps = []
    for f in range(3):
        box = _box((3.6, 1.0), (0.3, 0.3, 0.3), 600, rng)
        # An L: a side wall running away from the camera on its left and a back wall at 4 m.
        side = _box((2.5, 1.6), (5.0, 0.05, 1.0), 3000, rng)
        back = _box((4.0, 0.0), (0.05, 3.2, 1.0), 3000, rng)
        floor = np.column_stack([rng.uniform(0, 4, 3000), rng.uniform(-2, 2, 3000),
                                 np.full(3000, FLOOR)])
        sweeps.append(FrameSweep(f, np.concatenate([floor, box, side, back]),
                                 np.array([0, 0, 0.5])))
    found = discover_objects(sweeps)
    walls = [o for o in found.objects if o.structure]
    boxes = [o for o in found.objects if o.askable]
    assert len(walls) == 1 and len(boxes) == 1
    world_from_camera, K = _camera()
    visible = np.concatenate([o.points_world for o in found.objects])
    seen = {found.objects[s.index].number: s for s in
            frame_objects(found, visible, world_from_camera, K, 320, 240, FLOOR)}
    box_seen = seen[boxes[0].number]
    assert box_seen.occluded_share < 0.05
    assert not np.any(box_seen.mask & seen[walls[0].number].mask)


def _cast(sensor: np.ndarray, pitch_deg: float, box_lo: np.ndarray, box_hi: np.ndarray,
          wall_x: float | None) -> np.ndarray:
    """One sweep of a 32-ring LiDAR pitched ``pitch_deg`` nose down (rings 1.25 degrees apart,
    -7 to +32, columns 0.5 degree apart), ray-cast at a box, the floor and, when given, a wall
    at x = ``wall_x``: each ray's nearest hit (no return where it hits nothing)."""
    az, el = np.meshgrid(np.radians(np.arange(-60.0, 60.0, 0.5)),
                         np.radians(np.linspace(-7.0, 32.0, 32)), indexing="ij")
    d = np.stack([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)], -1).reshape(-1, 3)
    p = np.radians(pitch_deg)
    d = d @ np.array([[np.cos(p), 0, np.sin(p)], [0, 1, 0], [-np.sin(p), 0, np.cos(p)]]).T
    with np.errstate(divide="ignore", invalid="ignore"):
        t1, t2 = (box_lo - sensor) / d, (box_hi - sensor) / d
        near = np.nanmax(np.minimum(t1, t2), axis=1)
        far = np.nanmin(np.maximum(t1, t2), axis=1)
        t_box = np.where((near <= far) & (near > 0), near, np.inf)
        t_floor = np.where(d[:, 2] < 0, (FLOOR - sensor[2]) / d[:, 2], np.inf)
        t_wall = (np.where(d[:, 0] > 0, (wall_x - sensor[0]) / d[:, 0], np.inf)
                  if wall_x is not None else np.full(len(d), np.inf))
    t = np.minimum(np.minimum(t_box, t_floor), t_wall)
    hit = np.isfinite(t) & (t < 12.0)
    return sensor + d[hit] * t[hit, None]


def _box_sweeps(pitch_deg: float, wall_x: float | None) -> tuple[list[FrameSweep], float]:
    """Sweeps of a 50 cm tall box (its top 0.60 m up, above the sensor) from a robot driving
    towards it, and the true top."""
    lo, hi = np.array([3.0, -0.2, FLOOR]), np.array([3.4, 0.2, FLOOR + 0.5])
    sweeps = [FrameSweep(f, _cast(np.array([0.1 * f, 0.05 * f, 0.42]), pitch_deg, lo, hi,
                                  wall_x), np.array([0.1 * f, 0.05 * f, 0.42]))
              for f in range(12)]
    return sweeps, float(hi[2])


@pytest.mark.parametrize("pitch_deg", [0.0, 28.0])
def test_rays_that_passed_over_every_top_return_bound_the_top_closely(pitch_deg: float) -> None:
    # Level, or tilted like the synthesizer's Mid-360 (its rings are then not level in the
    # world, and no "ring above the highest return" has one elevation).
    sweeps, true_top = _box_sweeps(pitch_deg, wall_x=6.0)
    (box,) = [o for o in discover_objects(sweeps).objects if o.askable]
    measured = cloud_top_z(box.points_world)
    assert box.top_ceiling_z is not None
    assert measured <= true_top + 1e-6 <= box.top_ceiling_z + TOP_SLACK_M
    assert box.top_ceiling_z - measured < 0.03  # many ranges: a ray passed close above


def test_a_top_no_returning_ray_passed_over_is_not_bounded() -> None:
    # Nothing behind the box: the rays above it never came back, so none says it passed.
    sweeps, _ = _box_sweeps(0.0, wall_x=None)
    (box,) = [o for o in discover_objects(sweeps).objects if o.askable]
    assert box.top_ceiling_z is None


def _rays(points: list[list[float]], labels: list[int]) -> SweepRays:
    return SweepRays.of(np.array(points, dtype=float), np.array([0.0, 0.0, 0.4]),
                        np.array(labels))


def test_a_ray_bounds_a_top_return_only_when_it_passed_over_it_and_came_back_from_beyond() -> None:
    top = np.array([[2.0, 0.0, 0.5]])  # seen from (0, 0, 0.4)
    over = [4.0, 0.0, 0.7]  # 0.55 m high at the top return's range, came back from 4 m
    assert lowest_pass(top, 1, _rays([over], [0]))[0] == pytest.approx(0.55)
    assert lowest_pass(top, 1, _rays([over, [4.0, 0.0, 0.64]], [0, 0]))[0] == \
        pytest.approx(0.52)  # the lowest that passed
    for ray, label in [([4.0, 0.0, 0.7], 1),  # came back from the object itself
                       ([1.5, 0.0, 0.6], 0),  # stopped in front of it
                       ([4.0, 0.2, 0.7], 0),  # went by 10 cm aside
                       ([4.0, 0.0, 0.4], 0)]:  # 10 cm below the return: beside, not over
        assert lowest_pass(top, 1, _rays([ray], [label]))[0] == np.inf
    assert top_ceiling(top, 1, [_rays([over], [0])]) == pytest.approx(0.55)
    # Every top return needs a ray: one no ray passed over leaves the top unbounded.
    two = np.array([[2.0, 0.0, 0.5], [2.0, 0.5, 0.5]])
    assert top_ceiling(two, 1, [_rays([over], [0])]) is None
