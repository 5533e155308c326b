"""Seeded scenes, the robot's tour of its loop, the Mid-360-like pattern and the streamed truth
writers."""

from __future__ import annotations

import colorsys
import io
import json
import math
from collections import Counter

import numpy as np
import pytest

from eval_assets.synth.render import MID360_ELEVATION_DEG, mid360_directions
from eval_assets.synth.scene import (
    PALETTE,
    SHAPES,
    Scene,
    TourPath,
    rig_camera,
    sample_camera,
)
from eval_assets.synth.seeded import SAME_NAME_APART_M, seeded_scene
from eval_assets.synth.stream import (
    PROFILES,
    IdMapsWriter,
    JsonFramesWriter,
    SynthConfigError,
    frames_for,
    timeline,
)

SEEDS = range(12)


def _hue_deg(rgb: tuple[int, int, int]) -> float:
    return colorsys.rgb_to_hsv(*(np.array(rgb) / 255.0))[0] * 360.0


def _saturation(rgb: tuple[int, int, int]) -> float:
    return colorsys.rgb_to_hsv(*(np.array(rgb) / 255.0))[1]


def _room_box(scene: Scene) -> tuple[np.ndarray, np.ndarray]:
    slab = {s.name: s for s in scene.room}
    lo = np.array([slab["wall_back"].hi[0], slab["wall_right"].hi[1], 0.0])
    hi = np.array([slab["wall_front"].lo[0], slab["wall_left"].lo[1], slab["ceiling"].lo[2]])
    return lo, hi


@pytest.mark.parametrize("seed", SEEDS)
def test_seeded_objects_are_detectable_vocabulary_objects_on_free_floor(seed: int) -> None:
    scene = seeded_scene(seed, sample_camera())
    lo, hi = _room_box(scene)
    assert [o.id for o in scene.objects] == list(range(len(scene.objects)))
    shape_of: dict[str, str] = {}
    for obj in scene.objects:
        # The palette's exact albedo: the detector's reference hue for the colour word.
        assert obj.rgb == PALETTE[obj.color] and obj.shape in SHAPES
        assert shape_of.setdefault(obj.color, obj.shape) == obj.shape  # one shape per colour
        assert obj.center[2] == pytest.approx(obj.size[2] / 2)  # on the floor
        reach = math.hypot(obj.size[0], obj.size[1]) / 2
        assert np.all(np.array(obj.center[:2]) - reach > lo[:2])
        assert np.all(np.array(obj.center[:2]) + reach < hi[:2])
    assert 4 <= len(shape_of) <= 6
    assert {1, 2, 3} <= set(Counter(o.name for o in scene.objects).values())
    # Footprints (and distractors on the floor) do not overlap, and leave the robot's loop free.
    floor = [(np.array(o.center[:2]), math.hypot(*o.size[:2]) / 2) for o in scene.objects]
    floor += [(np.array(d.center[:2]), math.hypot(*d.size[:2]) / 2) for d in scene.distractors
              if d.kind != "panel"]
    for i, (a, ra) in enumerate(floor):
        for b, rb in floor[i + 1:]:
            assert np.linalg.norm(a - b) > ra + rb
    track = scene.path.samples(4096)
    for center, reach in floor:
        assert np.min(np.linalg.norm(track - center, axis=1)) - reach > 0.16 + 0.25


@pytest.mark.parametrize("seed", SEEDS)
def test_most_names_are_unique_and_namesakes_stand_apart(seed: int) -> None:
    scene = seeded_scene(seed, sample_camera())
    counts = Counter(o.name for o in scene.objects)
    assert sum(c == 1 for c in counts.values()) > len(counts) / 2
    for i, a in enumerate(scene.objects):
        for b in scene.objects[i + 1:]:
            if a.name == b.name:
                gap = math.dist(a.center[:2], b.center[:2])
                assert gap >= SAME_NAME_APART_M, (a.name, gap)


@pytest.mark.parametrize("seed", SEEDS)
def test_room_and_distractors_cannot_pass_for_vocabulary_objects(seed: int) -> None:
    scene = seeded_scene(seed, sample_camera())
    palette_hues = [_hue_deg(rgb) for rgb in PALETTE.values()]
    for slab in scene.room:
        assert _saturation(slab.rgb) <= 0.15, slab
    kinds = set()
    for item in scene.distractors:
        kinds.add(item.kind.split()[0])
        for rgb in (item.rgb, item.rgb2) if item.texture != "plain" else (item.rgb,):
            if _saturation(rgb) > 0.15:
                hue = _hue_deg(rgb)
                gap = min(min(abs(hue - h), 360.0 - abs(hue - h)) for h in palette_hues)
                assert gap >= 40.0, (item, gap)  # the detector accepts 22°
    assert 3 <= len(scene.distractors) <= 7 and "panel" in kinds


def test_the_scene_seed_changes_room_layout_colours_and_distractors() -> None:
    scenes = [seeded_scene(s, sample_camera()) for s in SEEDS]
    assert len({tuple(o.name for o in s.objects) for s in scenes}) >= 10
    assert len({s.room[0].rgb for s in scenes}) == len(scenes)  # floor colour
    assert len({_room_box(s)[1].round(3).tobytes() for s in scenes}) == len(scenes)
    assert len({tuple(d.kind for d in s.distractors) for s in scenes}) >= 6
    assert {s.path.loop.lobes for s in scenes} == {1, 2}  # ellipses and figures of eight
    again = seeded_scene(3, sample_camera())
    assert again.objects == scenes[3].objects and again.distractors == scenes[3].distractors
    assert again.room == scenes[3].room
    # The camera does not change the world.
    assert seeded_scene(3, rig_camera()).objects == scenes[3].objects


@pytest.mark.parametrize("seed", [0, 5])
def test_the_tour_drives_straight_turns_both_ways_stops_and_closes(seed: int) -> None:
    """The seeded path is a tour of the loop (the motion families need it): straight runs at the
    loop's speed, turns on the spot both ways at a Go2's rate, a stop, and a lap that ends where
    and facing the way it began, all inside the room and driving forwards."""
    scene = seeded_scene(seed, rig_camera())
    path = scene.path
    assert isinstance(path, TourPath)
    lo, hi = _room_box(scene)
    turns, stops, runs = [], [], []
    for leg in path.legs:
        inside = leg.t0 + leg.duration * np.linspace(0.05, 0.95, 10)
        poses = [path.world_from_base(float(t)) for t in inside]
        xy = np.array([p[:2, 3] for p in poses])
        yaw = np.unwrap([math.atan2(p[1, 0], p[0, 0]) for p in poses])
        step = np.diff(inside)[0]
        if leg.xy0 != leg.xy1:  # a straight run: the loop's speed, heading fixed, forwards
            speed = np.linalg.norm(np.diff(xy, axis=0), axis=1) / step
            np.testing.assert_allclose(speed, path.speed, rtol=1e-4)  # epoch-time rounding
            assert np.ptp(yaw) < 1e-9
            forward = np.array([math.cos(yaw[0]), math.sin(yaw[0])])
            assert np.all(np.diff(xy, axis=0) @ forward > 0.0)
            runs.append(math.dist(leg.xy0, leg.xy1))
        elif leg.yaw0 != leg.yaw1:  # a turn on the spot
            assert np.ptp(xy, axis=0).max() < 1e-9
            rate = np.abs(np.diff(yaw)) / step
            np.testing.assert_allclose(rate, path.turn_rate, rtol=1e-4)
            assert path.turn_rate < 1.2  # rad/s: a Go2 turns this fast on the spot
            turns.append(math.degrees(leg.yaw1 - leg.yaw0))
        else:
            assert np.ptp(xy, axis=0).max() < 1e-9 and np.ptp(yaw) < 1e-9
            stops.append(leg.duration)
    assert max(turns) >= 45.0 and min(turns) <= -45.0  # left and right turns every lap
    assert min(runs) >= 1.0 and stops == [4.0]
    ts = path.t_start + np.arange(0.0, 2.5 * path.lap_duration_s, 0.05)
    xy = np.array([path.world_from_base(t)[:2, 3] for t in ts])
    assert np.all(xy > lo[:2] + 0.8) and np.all(xy < hi[:2] - 0.8)
    # Continuous: no jump between legs or laps.
    assert np.max(np.linalg.norm(np.diff(xy, axis=0), axis=1)) <= path.speed * 0.05 * (1 + 1e-4)
    start = path.world_from_base(path.t_start)
    assert start[2, 3] == pytest.approx(0.30)
    np.testing.assert_allclose(path.world_from_base(path.t_start + path.lap_duration_s), start,
                               atol=1e-9)


def test_mid360_pattern_covers_its_field_without_repeating() -> None:
    a, b = mid360_directions(0, 20_000), mid360_directions(1, 20_000)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-12)
    elevation = np.degrees(np.arcsin(a[:, 2]))
    lo, hi = MID360_ELEVATION_DEG
    assert lo <= elevation.min() < lo + 0.5 and hi - 0.5 < elevation.max() <= hi
    azimuth = np.degrees(np.arctan2(a[:, 1], a[:, 0])) % 360.0
    counts, _ = np.histogram(azimuth, bins=36, range=(0.0, 360.0))
    assert counts.min() > 0.9 * counts.mean()  # even around
    assert not np.any(np.all(np.isclose(a[:100, None], b[None, :100]), axis=2))
    np.testing.assert_array_equal(mid360_directions(7, 50), mid360_directions(7, 50))


def test_streamed_json_is_the_same_text_as_one_dump() -> None:
    header = {"seed": 3, "objects": [{"id": 0, "size": [0.3, 0.2]}], "zeta": {"a": 1.5}}
    frames = [{"index": i, "objects": [{"bbox_xyxy": [i, 2, 3, 4]}], "image_ts": 1.25 * i}
              for i in range(3)]
    for subset in (frames, frames[:1], []):
        buf = io.BytesIO()
        writer = JsonFramesWriter(buf, header)
        for frame in subset:
            writer.add(frame)
        writer.close()
        expected = json.dumps({**header, "frames": subset}, sort_keys=True, indent=2) + "\n"
        assert buf.getvalue().decode() == expected


def test_streamed_id_maps_load_with_numpy() -> None:
    maps = np.random.default_rng(0).integers(0, 256, (3, 5, 7), dtype=np.uint8)
    buf = io.BytesIO()
    writer = IdMapsWriter(buf, [0, 15, 30], 5, 7)
    for m in maps:
        writer.add(m)
    writer.close()
    with np.load(io.BytesIO(buf.getvalue())) as npz:
        assert list(npz.keys()) == ["id_maps", "frame_index"]
        np.testing.assert_array_equal(npz["id_maps"], maps)
        np.testing.assert_array_equal(npz["frame_index"], [0, 15, 30])
    short = IdMapsWriter(io.BytesIO(), [0, 1], 5, 7)
    short.add(maps[0])
    with pytest.raises(RuntimeError, match="1 id maps written, 2 announced"):
        short.close()


def test_rig_timeline_rates_and_order() -> None:
    spec = PROFILES["rig"]
    events = list(timeline(spec, 150, seed=4))  # 10 s
    assert [(e.ts, e.order) for e in events] == sorted((e.ts, e.order) for e in events)
    by_kind: dict[str, list[float]] = {}
    for e in events:
        by_kind.setdefault(e.kind, []).append(e.ts)
    image, lidar = np.array(by_kind["image"]), np.array(by_kind["lidar"])
    assert len(image) == 150
    assert np.all(np.abs(np.diff(image) - 1 / 15) <= 0.006 + 1e-6)
    assert 96 <= len(lidar) <= 101 and np.median(np.diff(lidar)) == pytest.approx(0.1, abs=0.003)
    assert np.allclose(np.diff(by_kind["tf"]), 0.05) and np.allclose(np.diff(by_kind["tf_static"]),
                                                                     0.2)
    assert by_kind["tf"][0] <= image[0] and by_kind["tf"][-1] >= max(image[-1], lidar[-1])
    # Every image has a scan within the pipeline's 0.1 s, unless that scan was dropped.
    nearest = np.array([np.min(np.abs(lidar - t)) for t in image])
    assert np.mean(nearest <= 0.055) > 0.95 and np.all(nearest <= 0.16)
    assert list(timeline(spec, 150, seed=4)) == events
    assert [e.ts for e in timeline(spec, 150, seed=5) if e.kind == "image"] != list(image)


def test_frame_counts_and_bad_options() -> None:
    rig = PROFILES["rig"]
    assert frames_for(rig, None, None) == 1800
    assert frames_for(rig, None, 300.0) == 4500
    assert frames_for(rig, 4, None) == 4
    assert frames_for(PROFILES["sample"], None, None) == 24
    with pytest.raises(SynthConfigError, match="not both"):
        frames_for(rig, 4, 1.0)
    with pytest.raises(SynthConfigError, match="--duration-s"):
        frames_for(rig, None, -1.0)
    with pytest.raises(SynthConfigError, match="at least 1"):
        frames_for(rig, 0, None)
