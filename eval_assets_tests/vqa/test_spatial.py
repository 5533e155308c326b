"""The spatial families on hand-built tracks: answers, rejections, determinism, leaks."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from eval_assets.schemas.spatial import (
    RELATIVE_DIRECTIONS,
    FrameCamera,
    ObjectTrack,
    ObjectTracks,
    SpatialLabel,
)
from eval_assets.tracks.fuse import MAX_OUTLINE_OVERHANG, SIDE_SEEN_SHARE
from eval_assets.vqa.dataset import dataset_fingerprint
from eval_assets.vqa.leakage import find_leaks
from eval_assets.vqa.spatial import build_spatial, write_spatial
from eval_assets.vqa.spatial.evidence import SpatialRejection, spread

STEP_DEG = 50.0  # the camera turns this much about the vertical from one frame to the next


def _camera(frame: int) -> FrameCamera:
    """Frame ``f`` looks along world (sin θ, 0, cos θ), θ = f · 50°; camera axes: x right."""
    t = math.radians(STEP_DEG * frame)
    rot = np.array([[math.cos(t), 0.0, math.sin(t)], [0.0, 1.0, 0.0],
                    [-math.sin(t), 0.0, math.cos(t)]])
    m = np.eye(4)
    m[:3, :3] = rot
    return FrameCamera(world_from_camera=m.reshape(-1).tolist(),
                       K=[400.0, 0.0, 320.0, 0.0, 400.0, 240.0, 0.0, 0.0, 1.0],
                       width=640, height=480, image_ts=float(frame))


def _at(angle_deg: float, distance: float) -> list[float]:
    a = math.radians(angle_deg)
    return [distance * math.sin(a), 0.0, distance * math.cos(a)]


def _track(track_id: str, center: list[float], frames: list[int], points: int = 200,
           extent: tuple[float, float, float] = (0.4, 0.3, 0.5),
           view_spread_deg: float = 200.0, footprint_seen: float = 0.0,
           outline_overhang: float | None = None) -> ObjectTrack:
    return ObjectTrack(track_id=track_id, name=track_id.split("#")[0], center_world=center,
                       extent_m=list(extent), yaw_rad=0.0, frames=frames,
                       pixels={f: 1000 + 10 * f for f in frames}, points=points,
                       ranges_m={f: 2.5 + f / 10 for f in frames}, whole_frames=frames,
                       view_spread_deg=view_spread_deg, footprint_seen=footprint_seen,
                       outline_overhang=outline_overhang)


TRACKS = ObjectTracks(world_frame="world", cameras={f: _camera(f) for f in range(6)}, tracks=[
    _track("red ball#0", _at(0, 3.0), [0, 1]),
    _track("blue box#0", _at(100, 4.0), [2, 3], extent=(0.3, 0.2, 0.62)),
    _track("green cylinder#0", _at(200, 5.0), [4, 5]),
    _track("yellow box#0", _at(60, 2.0), [1]),  # one sighting: too weak to ask about
    _track("purple ball#0", _at(150, 3.0), [3, 4], points=10),
    _track("orange box#0", _at(250, 3.0), [5, 0]),
    _track("orange box#1", _at(-80, 3.0), [4, 5]),
])


def _labels(family: str) -> list[SpatialLabel]:
    return [lab for lab in build_spatial(TRACKS, range(6)).labels if lab.family == family]


def test_numeric_families_answer_from_the_tracks() -> None:
    (size,) = [lab for lab in _labels("object_size_cm") if lab.object_names == ["blue box"]]
    assert (size.answer, size.unit, size.frame_indices) == ("62", "cm", [2, 3])
    pairs = {tuple(lab.object_names): lab for lab in _labels("pair_distance_m")}
    pair = pairs[("blue box", "red ball")]
    expected = math.dist(_at(100, 4.0), _at(0, 3.0))
    assert pair.answer == f"{expected:.2f}" and pair.unit == "m"
    assert [t["name"] for t in pair.evidence["tracks"]] == ["blue box", "red ball"]
    assert pair.evidence["tracks"][1]["center_world"] == pytest.approx(_at(0, 3.0))
    (distance,) = [lab for lab in _labels("camera_distance_m") if lab.object_names == ["red ball"]]
    # The frame with the most pixels (frame 1), its median surface range.
    assert (distance.answer, distance.frame_index, distance.evidence["distance"]) == \
        ("2.60", 1, "surface")


def test_weak_and_ambiguous_names_are_rejected_with_reasons() -> None:
    spatial = build_spatial(TRACKS, range(6))
    asked = {name for lab in spatial.labels for name in lab.object_names
             if lab.family == "object_size_cm"}
    assert asked == {"red ball", "blue box", "green cylinder"}
    reasons = {(r.family, r.object_names, r.reason) for r in spatial.rejections}
    assert ("object_size_cm", ("yellow box",), "too_few_frames") in reasons
    assert ("object_size_cm", ("purple ball",), "too_few_points") in reasons
    assert ("object_size_cm", ("orange box",), "ambiguous_name") in reasons
    assert all(isinstance(r, SpatialRejection) and r.detail for r in spatial.rejections)


def test_a_size_is_asked_only_of_an_object_seen_from_all_round_or_whose_l_was_seen() -> None:
    narrow = TRACKS.model_copy(update={"tracks": [
        _track("red ball#0", _at(0, 3.0), [0, 1]),
        _track("blue box#0", _at(100, 4.0), [2, 3], view_spread_deg=40.0,
               footprint_seen=SIDE_SEEN_SHARE - 0.01),
        # Seen from one side, but its points run along an end and a side (a box's L) and its
        # masks lie inside the fitted box's image.
        _track("green cylinder#0", _at(200, 5.0), [4, 5], view_spread_deg=10.0,
               footprint_seen=SIDE_SEEN_SHARE, outline_overhang=MAX_OUTLINE_OVERHANG),
        # An L, but the camera sees the object reach beyond it: the LiDAR stopped short.
        _track("white box#0", _at(250, 3.0), [4, 5], view_spread_deg=10.0,
               footprint_seen=1.0, outline_overhang=0.21)]})
    spatial = build_spatial(narrow, range(6))
    sizes = [lab.object_names for lab in spatial.labels if lab.family == "object_size_cm"]
    assert sorted(sizes) == [["green cylinder"], ["red ball"]]
    why, short = [r for r in spatial.rejections
                  if r.reason == "narrow_view" and r.family == "object_size_cm"]
    assert why.family == "object_size_cm" and why.object_names == ("blue box",)
    assert "40 degrees" in why.detail and "84%" in why.detail and why.frame_indices == (2, 3)
    assert "no whole sighting's outline" in why.detail
    assert short.object_names == ("white box",) and "by 21%" in short.detail
    # Its centre is still good enough for a distance between centres.
    assert ["blue box", "red ball"] in [
        lab.object_names for lab in spatial.labels if lab.family == "pair_distance_m"]


def test_appearance_order_and_counts_across_frames() -> None:
    orders = {tuple(lab.object_names): lab for lab in _labels("appearance_order")}
    # The triple, then every pair (objects are first seen in frames 0, 2 and 4).
    assert sorted(orders) == [("blue box", "green cylinder"), ("blue box", "green cylinder",
                                                               "red ball"),
                              ("blue box", "red ball"), ("green cylinder", "red ball")]
    assert orders[("blue box", "red ball")].answer == "red ball, blue box"
    order = orders[("blue box", "green cylinder", "red ball")]
    assert order.answer == "red ball, blue box, green cylinder"
    assert order.choices is not None and order.answer in order.choices
    assert 2 <= len(order.choices) <= 4 and len(set(order.choices)) == len(order.choices)
    assert order.frame_indices == [0, 1, 2, 3, 4]
    counts = {lab.object_names[0]: lab for lab in _labels("object_count_across_frames")
              if "namesakes_out_of_view" not in lab.evidence}
    assert counts["orange box"].answer == "2" and counts["blue box"].answer == "1"
    assert len(counts["orange box"].evidence["tracks"]) == 2
    assert "yellow box" not in counts and "purple ball" not in counts  # weak tracks
    # Two "2"s in this scene (the orange boxes over all their frames and over the second half,
    # which still sees both): two "1"s are kept beside them (the first names), the third is
    # left out.
    assert set(counts) == {"orange box", "blue box", "green cylinder"}
    halves = [lab for lab in _labels("object_count_across_frames") if "window" in lab.evidence]
    assert [(h.answer, h.frame_indices, h.evidence["window"]) for h in halves] == [
        ("2", [4, 5], "second half")]
    left_out = [r for r in build_spatial(TRACKS, range(6)).rejections
                if r.family == "object_count_across_frames" and r.reason == "answer_balance"]
    assert [r.object_names[0] for r in left_out] == ["red ball"]


def test_one_of_several_namesakes_alone_in_its_frames_counts_once() -> None:
    # Two orange boxes behind each other's backs; a third name for contrast.
    tracks = ObjectTracks(world_frame="world", cameras={f: _camera(f) for f in range(6)},
                          tracks=[_track("orange box#0", _at(0, 3.0), [0, 1]),
                                  _track("orange box#1", _at(200, 3.0), [3, 4]),
                                  _track("red ball#0", _at(100, 3.0), [2, 3])])
    spatial = build_spatial(tracks, range(6))
    counts = [(lab.answer, lab.frame_indices, [t["track_id"] for t in lab.evidence["tracks"]])
              for lab in spatial.labels if lab.family == "object_count_across_frames"]
    # Every name's full count first, then each namesake over its own frames. Three "1" would be
    # 75 %: the scene gives one other answer, so one "1" is kept beside it and two are left
    # out, the later ones (answer_balance).
    assert counts == [("2", [0, 1, 3, 4], ["orange box#0", "orange box#1"]),
                      ("1", [2, 3], ["red ball#0"])]
    left_out = [r for r in spatial.rejections if r.reason == "answer_balance"]
    assert [(r.object_names, r.frame_indices) for r in left_out] == [
        (("orange box",), (0, 1)), (("orange box",), (3, 4))]
    balance = spatial.answers_per_family()["object_count_across_frames"]
    assert (balance.n, balance.majority_share, balance.left_out) == (2, 0.5, 2)
    assert balance.note is not None and "cannot give more" in balance.note
    # A namesake that may show in all but one of the frames is not asked about alone.
    crowded = ObjectTracks(world_frame="world", cameras={f: _camera(f) for f in range(6)},
                           tracks=[_track("orange box#0", _at(0, 3.0), [0, 1]),
                                   _track("orange box#1", _at(10, 6.0), [0, 1])])
    spatial = build_spatial(crowded, range(6))
    assert [lab.answer for lab in spatial.labels
            if lab.family == "object_count_across_frames"] == ["2"]
    assert {r.reason for r in spatial.rejections
            if r.family == "object_count_across_frames"} == {"namesake_in_view"}


def test_relative_direction_takes_each_object_in_turn() -> None:
    labels = _labels("relative_direction")
    names = [lab.object_names[0] for lab in labels]
    objects = list(dict.fromkeys(names))
    # The first round asks about every object once before any is asked twice.
    assert names[:len(objects)] == objects and len(objects) == 3
    assert max(names.count(n) for n in objects) <= 4 and len(labels) > len(objects)


def test_relative_direction_is_the_quadrant_in_the_reference_camera() -> None:
    labels = _labels("relative_direction")
    assert labels
    for lab in labels:
        assert lab.choices == list(RELATIVE_DIRECTIONS) and lab.reference_frame is not None
        (track,) = [t for t in TRACKS.tracks if t.name == lab.object_names[0]]
        # Object at angle φ seen from frame θ: x = d sin(φ − θ), z = d cos(φ − θ).
        phi = math.degrees(math.atan2(track.center_world[0], track.center_world[2]))
        rel = math.radians(phi - STEP_DEG * lab.reference_frame)
        expected = f"{'front' if math.cos(rel) > 0 else 'back'}-" \
                   f"{'right' if math.sin(rel) > 0 else 'left'}"
        assert lab.answer == expected, lab
        assert lab.frame_indices is not None and lab.reference_frame in lab.frame_indices


def test_spread_keeps_the_frames_that_must_show_and_fills_evenly() -> None:
    assert spread(range(5), [0, 2, 4]) == [0, 1, 2, 3, 4]
    assert spread(range(100), [3, 50], n=4) == [0, 3, 50, 51]
    assert spread(range(3), [], n=8) == [0, 1, 2]


def test_same_tracks_same_cases_and_only_published_frames() -> None:
    assert build_spatial(TRACKS, range(6)) == build_spatial(TRACKS, range(6))
    fewer = build_spatial(TRACKS, [0, 1, 2])
    for lab in fewer.labels:
        assert set(lab.frame_indices or [lab.frame_index]) <= {0, 1, 2}


def _tiny_dataset(root: Path) -> Path:
    """A published-looking folder: one dimOS case, three frames, the spatial files."""
    (root / "assets").mkdir(parents=True)
    for f in range(6):
        (root / "assets" / f"frame-{f:06d}.png").write_bytes(b"png")
    (root / "cases.jsonl").write_text(json.dumps(
        {"id": "frame-000000-red-ball-presence", "image": "assets/frame-000000.png",
         "question": "Is there a red ball?", "choices": ["yes", "no"]}) + "\n")
    (root / "labels.jsonl").write_text(json.dumps(
        {"id": "frame-000000-red-ball-presence", "answer": "yes"}) + "\n")
    (root / "audit").mkdir()
    write_spatial(root, build_spatial(TRACKS, range(6)))
    return root


def test_spatial_files_pass_the_leak_check_and_leaks_are_found(tmp_path: Path) -> None:
    clean = _tiny_dataset(tmp_path / "clean")
    assert find_leaks(clean) == []
    leaky = tmp_path / "leaky"
    shutil.copytree(clean, leaky)
    path = leaky / "spatial_cases.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    labels = [json.loads(line) for line in
              (leaky / "audit" / "spatial_labels.jsonl").read_text().splitlines()]
    rows[0]["answer"] = labels[0]["answer"]
    (centre,) = {json.dumps(lab["evidence"]["tracks"][0]["center_world"][0]) for lab in labels
                 if lab["object_names"] == ["blue box"]}  # 4 sin 100°: a telling fraction
    rows[1]["question"] += f" (it stands at x = {centre})"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    problems = find_leaks(leaky)
    assert any("fields ['answer'] are not public" in p for p in problems), problems
    assert any(centre in p and "spatial_cases.jsonl" in p for p in problems), problems


def test_the_fingerprint_covers_the_spatial_files(tmp_path: Path) -> None:
    root = _tiny_dataset(tmp_path / "ds")
    before = dataset_fingerprint(root)
    labels = root / "spatial_labels.jsonl"
    labels.write_text(labels.read_text().replace('"answer": "62"', '"answer": "63"'))
    assert dataset_fingerprint(root) != before
    changed = dataset_fingerprint(root)
    cases = root / "spatial_cases.jsonl"
    cases.write_text(cases.read_text().replace("centimetres", "cm"))
    assert dataset_fingerprint(root) not in (before, changed)


def test_an_object_that_may_show_before_its_first_sighting_is_not_ordered() -> None:
    tracks = ObjectTracks(world_frame="world", cameras={f: _camera(f) for f in range(6)}, tracks=[
        _track("red ball#0", _at(0, 3.0), [0, 1]),
        _track("blue box#0", _at(10, 4.0), [2, 3]),  # in frame 0's view, but not detected there
    ])
    spatial = build_spatial(tracks, range(6))
    assert not [lab for lab in spatial.labels if lab.family == "appearance_order"]
    (rejection,) = [r for r in spatial.rejections if r.family == "appearance_order"]
    assert rejection.reason == "may_be_visible_earlier" and "frame 0" in rejection.detail


def test_one_object_detected_under_two_names_is_not_asked_about() -> None:
    # A ball near the image edge called a box in some frames: two tracks at one place.
    tracks = ObjectTracks(world_frame="world", cameras={f: _camera(f) for f in range(6)},
                          tracks=[_track("red ball#0", _at(0, 3.0), [0, 1]),
                                  _track("red box#0", [x + 0.05 for x in _at(0, 3.0)], [1, 2]),
                                  _track("blue box#0", _at(100, 4.0), [2, 3])])
    spatial = build_spatial(tracks, list(range(6)))
    asked = {name for label in spatial.labels for name in label.object_names}
    assert "red ball" not in asked and "red box" not in asked and "blue box" in asked
    conflicts = {r.object_names for r in spatial.rejections if r.reason == "name_conflict"}
    assert ("red ball",) in conflicts and ("red box",) in conflicts


def test_an_object_seen_only_partly_is_not_asked_about() -> None:
    # A ball half hidden behind a post in every frame it was detected in: its cut outline made the
    # detector call it a cylinder, a name no other track contradicts (scene seed 401).
    hidden = _track("orange cylinder#0", _at(100, 4.0), [2, 3]).model_copy(
        update={"whole_frames": []})
    tracks = ObjectTracks(world_frame="world", cameras={f: _camera(f) for f in range(6)},
                          tracks=[_track("red ball#0", _at(0, 3.0), [0, 1]), hidden,
                                  _track("green cylinder#0", _at(200, 5.0), [4, 5])])
    spatial = build_spatial(tracks, list(range(6)))
    asked = {name for label in spatial.labels for name in label.object_names}
    assert "orange cylinder" not in asked and {"red ball", "green cylinder"} <= asked
    partly = {r.family for r in spatial.rejections
              if r.reason == "seen_only_partly" and r.object_names == ("orange cylinder",)}
    assert partly == {"object_size_cm", "pair_distance_m", "camera_distance_m",
                      "appearance_order", "object_count_across_frames", "relative_direction",
                      "object_height_cm", "closer_to_camera", "larger_object",
                      "egocentric_direction_deg"}
    # Seen whole once (its name from a full outline): asked about.
    seen = ObjectTracks(world_frame="world", cameras=tracks.cameras, tracks=[
        t.model_copy(update={"whole_frames": [3]}) if t is hidden else t for t in tracks.tracks])
    assert "orange cylinder" in {name for label in build_spatial(seen, list(range(6))).labels
                                 for name in label.object_names}


def test_the_name_seen_whole_far_more_often_wins_a_name_conflict() -> None:
    # A cylinder whose shading fooled the detector in one whole view ("box"), and right in six.
    right = _track("green cylinder#0", _at(0, 3.0), [0, 1, 2, 3, 4, 5])
    wrong = _track("green box#0", [x + 0.03 for x in _at(0, 3.0)], [2, 3]).model_copy(
        update={"whole_frames": [2]})
    tracks = ObjectTracks(world_frame="world", cameras={f: _camera(f) for f in range(6)},
                          tracks=[right, wrong, _track("blue box#0", _at(100, 4.0), [2, 3])])
    spatial = build_spatial(tracks, list(range(6)))
    asked = {name for label in spatial.labels for name in label.object_names}
    assert "green cylinder" in asked and "green box" not in asked
    (detail,) = {r.detail for r in spatial.rejections
                 if r.reason == "name_conflict" and r.object_names == ("green box",)}
    assert "1 whole views against 6" in detail
    # Two whole views against one is no clear vote: neither name is asked about.
    close = right.model_copy(update={"whole_frames": [0, 1]})
    spatial = build_spatial(tracks.model_copy(update={"tracks": [close, wrong]}), list(range(6)))
    assert not spatial.labels


def test_counts_ask_about_fewer_namesakes_so_that_one_count_does_not_dominate() -> None:
    # Three green boxes a third of a turn apart, seen by a camera turning 50° per frame.
    cameras = {f: _camera(f) for f in range(8)}
    boxes = [_track(f"green box#{i}", _at(120 * i, 3.0), frames)
             for i, frames in enumerate([[0, 7], [2, 3], [4, 5]])]
    index_tracks = ObjectTracks(world_frame="world", cameras=cameras, tracks=boxes)
    spatial = build_spatial(index_tracks, range(8))
    counts = [lab for lab in spatial.labels if lab.family == "object_count_across_frames"]
    answers = [lab.answer for lab in counts]
    assert answers[0] == "3" and {"1", "2", "3"} == set(answers)
    for lab in counts:
        shown = lab.frame_indices or []
        counted = set(lab.evidence["track_ids"])
        assert lab.answer == str(len(counted))
        for box in boxes:
            if box.track_id in counted:  # each object counted is seen in a frame shown
                assert set(box.frames) & set(shown), (lab.id, box.track_id)
            else:  # and no other can show in any of them (50° off the axis is out of view)
                angle = 120 * int(box.track_id[-1])
                assert all(abs((angle - 50 * f + 180) % 360 - 180) >= 50 for f in shown), lab.id
    # Seven cases of 2 (the three pairs, and four halves of their frames that still see both)
    # against four others: three halves are left out.
    balance = spatial.answers_per_family()["object_count_across_frames"]
    assert balance.answers == {"2": 4, "1": 3, "3": 1} and balance.left_out == 3
    assert balance.n == len(counts) and balance.majority_share == 0.5


def test_relative_direction_asks_each_quadrant_of_an_object_before_repeating_one() -> None:
    labels = _labels("relative_direction")
    for track in (t for t in TRACKS.tracks if t.name in {lab.object_names[0] for lab in labels}):
        phi = math.degrees(math.atan2(track.center_world[0], track.center_world[2]))
        quadrants = set()
        for f in range(6):  # the quadrants the object takes around the six cameras
            rel = math.radians(phi - STEP_DEG * f)
            x, z = 3 * math.sin(rel), 3 * math.cos(rel)
            if min(abs(x), abs(z)) >= 0.2:
                quadrants.add(f"{'front' if z > 0 else 'back'}-{'right' if x > 0 else 'left'}")
        mine = [lab.answer for lab in labels if lab.object_names == [track.name]]
        assert set(mine) == quadrants and len(mine) == 4, (track.name, mine, quadrants)
    # Over the family: no quadrant above half, fronts and backs alike.
    balance = build_spatial(TRACKS, range(6)).answers_per_family()
    assert set(balance) == {"appearance_order", "object_count_across_frames",
                            "relative_direction"}  # numeric families: no answer distribution
    direction = balance["relative_direction"]
    assert direction.majority_share <= 0.5 and direction.n == len(labels)
    fronts = sum(n for answer, n in direction.answers.items() if answer.startswith("front"))
    assert 4 <= fronts <= 8, direction.answers


def test_camera_distance_asks_for_the_median_its_gold_is() -> None:
    (distance,) = [lab for lab in _labels("camera_distance_m") if lab.object_names == ["red ball"]]
    question = {c.id: c.question for c in build_spatial(TRACKS, range(6)).cases}[distance.id]
    # The gold is the median LiDAR range over the mask (as the scene truth's
    # surface_distance_m, a median over the visible pixels): the question asks for exactly that.
    assert "median distance from the camera to the visible surface of the red ball" in question
    assert "nearest" not in question and distance.evidence["statistic"] == "median"


# --- "may show" and counts whose gold the shown images support --------------------------------

def _forward_camera(frame: int, step_m: float = 0.25) -> FrameCamera:
    """Frame ``f``: the camera ``f · step_m`` along its axis (world z), axes as the world's."""
    m = np.eye(4)
    m[2, 3] = step_m * frame
    return FrameCamera(world_from_camera=m.reshape(-1).tolist(),
                       K=[400.0, 0.0, 320.0, 0.0, 400.0, 240.0, 0.0, 0.0, 1.0],
                       width=640, height=480, image_ts=float(frame))


def _corner_in_image(camera: FrameCamera, track: ObjectTrack) -> bool:
    """Whether a corner of the track's box projects into ``camera``'s image (an oracle that
    does not use :meth:`TrackIndex.may_be_visible`)."""
    m = np.asarray(camera.world_from_camera).reshape(4, 4)
    k = np.asarray(camera.K).reshape(3, 3)
    half = np.asarray(track.extent_m) / 2
    for signs in np.array(np.meshgrid(*[[-1, 1]] * 3)).T.reshape(-1, 3):
        p = m[:3, :3].T @ (np.asarray(track.center_world) + signs * half - m[:3, 3])
        if p[2] > 0:
            u, v = k[0, 0] * p[0] / p[2] + k[0, 2], k[1, 1] * p[1] / p[2] + k[1, 2]
            if 0 <= u < camera.width and 0 <= v < camera.height:
                return True
    return False


# A box near the camera and off its axis (the sample's frame 11: centre 0.87 m right, 0.75 m
# ahead): its centre projects 143 px right of the image, but its near corner is in it.
NEAR_BOX = _track("blue box#2", [0.872, 0.166, 1.503], [0, 1], extent=(0.3055, 0.3052, 0.3442))


def test_an_object_near_the_camera_and_off_its_axis_may_show() -> None:
    from eval_assets.vqa.spatial.evidence import TrackIndex

    cameras = {f: _forward_camera(f) for f in range(6)}
    index = TrackIndex(ObjectTracks(world_frame="world", cameras=cameras, tracks=[NEAR_BOX]),
                       tuple(range(6)))
    for f in range(6):
        # Never "cannot show" where a corner of its box is in the image.
        assert index.may_be_visible(NEAR_BOX, f) or not _corner_in_image(cameras[f], NEAR_BOX), f
    assert _corner_in_image(cameras[3], NEAR_BOX) and index.may_be_visible(NEAR_BOX, 3)
    assert not index.may_be_visible(NEAR_BOX, 5)  # 0.87 m right, 0.25 m ahead: out of view
    assert not _corner_in_image(cameras[5], NEAR_BOX)


def test_a_count_gold_is_what_every_namesake_in_its_frames_gives() -> None:
    """Three blue boxes; the third, seen in frames 0 and 1, still shows at the image edge in
    frame 3 undetected. No count case (all, fewer, halves: balancing's picks) may count over a
    frame where a box it does not count shows."""
    cameras = {f: _forward_camera(f) for f in range(6)}
    tracks = ObjectTracks(world_frame="world", cameras=cameras, tracks=[
        _track("blue box#0", [-0.4, 0.0, 5.0], list(range(6)), extent=(0.3, 0.3, 0.3)),
        _track("blue box#1", [0.4, 0.0, 5.5], list(range(6)), extent=(0.3, 0.3, 0.3)),
        NEAR_BOX])
    spatial = build_spatial(tracks, range(6))
    counts = [lab for lab in spatial.labels if lab.family == "object_count_across_frames"]
    assert {lab.answer for lab in counts} == {"2", "3"}
    for lab in counts:
        shown = lab.frame_indices or []
        truth = sum(any(_corner_in_image(cameras[f], t) for f in shown) for t in tracks.tracks)
        assert lab.answer == str(truth), (lab.id, lab.answer, truth)
