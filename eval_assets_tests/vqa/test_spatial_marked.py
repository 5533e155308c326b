"""Marked objects ("object marked N") in the track families, and their truth matched by centre."""

from __future__ import annotations

import math
from typing import Any

import pytest

from eval_assets.evidence_quality.gold import spatial_families
from eval_assets.schemas.spatial import SpatialLabel, marked_name
from eval_assets.vqa.spatial.evidence import SpatialRejection, TrackIndex
from eval_assets.vqa.spatial.families import spatial_items
from eval_assets.vqa.spatial.truth import (
    FLOOR_Z_M,
    MARKED_GATE_M,
    NOT_COVERED,
    check_labels,
    match_object,
    top_height_m,
)
from eval_assets_tests.vqa.spatial_tracks import track, tracks_of

COUNT = "object_count_across_frames"


def _items(*objects: Any) -> list[Any]:
    tracks = tracks_of(*objects)
    return spatial_items(TrackIndex(tracks, tuple(sorted(tracks.cameras))))


# --- generation ---------------------------------------------------------------------------------

def test_a_marked_object_is_never_counted() -> None:
    # Behind the cameras that count the red ball (all look along +x): it cannot be one of them.
    items = _items(track(marked_name(3), [-3.0, 0.0, 0.1], [4, 5], extent=(0.4, 0.3, 0.2)),
                   track("red ball", [3.0, 0.0, 0.2], [0, 1]))
    counts = [i for i in items if not isinstance(i, SpatialRejection) and i[1].family == COUNT]
    assert [lab.object_names for _, lab in counts] == [["red ball"]]
    (why,) = [i for i in items if isinstance(i, SpatialRejection) and i.family == COUNT]
    assert (why.object_names, why.reason, why.frame_indices) == (
        ("object marked 3",), "marked_object", (4, 5))
    # The other families ask about it under its mark.
    asked = {lab.family for i in items if not isinstance(i, SpatialRejection)
             for _, lab in [i] if lab.object_names == ["object marked 3"]}
    assert {"object_size_cm", "camera_distance_m", "object_height_cm"} <= asked


def test_a_count_is_unsure_where_a_marked_object_may_show() -> None:
    # The marked object stands in front of the cameras that count the red balls: it may be one.
    items = _items(track("red ball", [3.0, -1.0, 0.2], [0, 1]),
                   track(marked_name(5), [3.0, 1.0, 0.2], [4, 5]))
    rejections = [i for i in items if isinstance(i, SpatialRejection) and i.family == COUNT
                  and i.object_names == ("red ball",)]
    assert [r.reason for r in rejections] == ["marked_in_view"]
    assert "object marked 5#0" in rejections[0].detail
    assert not [i for i in items if not isinstance(i, SpatialRejection) and i[1].family == COUNT
                and i[1].object_names == ["red ball"]]


# --- truth --------------------------------------------------------------------------------------

OBJECTS = [{"id": 0, "name": "chair", "center_world": [1.0, 0.0, 0.3], "size": [0.5, 0.5, 0.6]},
           {"id": 1, "name": "mug", "center_world": [1.2, 0.1, 0.05], "size": [0.1, 0.1, 0.1]},
           {"id": 2, "name": "box", "center_world": [3.0, 0.0, 0.2], "size": [0.3, 0.3, 0.4]}]


def test_a_marked_track_matches_the_nearest_object_of_any_name_within_its_gate() -> None:
    assert MARKED_GATE_M == 0.35
    near = [1.0, -0.34, 0.3]  # 0.34 m from the chair, farther from the mug
    obj, why, _ = match_object(OBJECTS, marked_name(3), near)
    assert obj is not None and obj["id"] == 0 and why == ""
    # The nearest of any name: here the mug, not the chair.
    obj, _, _ = match_object(OBJECTS, marked_name(3), [1.2, 0.05, 0.05])
    assert obj is not None and obj["id"] == 1
    far = [1.0, -0.36, 0.3]
    obj, why, detail = match_object(OBJECTS, marked_name(3), far)
    assert obj is None and why == "outside_gate" and "'chair'" in detail and "0.36 m" in detail
    # A named track keeps its own gate (0.5 m, namesakes only).
    obj, _, _ = match_object(OBJECTS, "chair", far)
    assert obj is not None and obj["id"] == 0
    assert match_object(OBJECTS, "table", near)[1] == "false_detection"


def _frame(index: int, seen: dict[int, float]) -> dict[str, Any]:
    return {"index": index, "camera_from_world": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0],
                                                  [0, 0, 0, 1]],
            "objects": [{"id": i, "name": OBJECTS[i]["name"], "surface_distance_m": d}
                        for i, d in seen.items()]}


SCENE = {"objects": OBJECTS, "frames": [_frame(0, {0: 1.1, 2: 2.9})],
         "distractors": [{"kind": "crate", "center_world": [5.0, 0.0, 0.3],
                          "size": [0.6, 0.4, 0.6]}]}


def _label(family: str, answer: str, tracks: list[tuple[str, list[float]]],
           choices: list[str] | None = None, unit: str | None = None) -> SpatialLabel:
    return SpatialLabel(id=f"spatial-{family}-{answer}", answer=answer, family=family,
                        answer_type="choice" if choices else "number", unit=unit,
                        choices=choices, object_names=[n for n, _ in tracks], frame_index=0,
                        evidence={"tracks": [{"name": n, "center_world": c} for n, c in tracks]})


def test_each_new_family_has_its_truth() -> None:
    chair, box = (marked_name(3), [1.1, 0.0, 0.3]), ("box", [3.0, 0.0, 0.2])
    choices = [marked_name(3), "box"]
    labels = [
        _label("object_height_cm", "60", [chair], unit="cm"),       # top 0.6 m
        _label("object_height_cm", "40", [box], unit="cm"),         # top 0.4 m
        _label("closer_to_camera", "object marked 3", [chair, box], choices),
        _label("closer_to_camera", "box", [chair, box], choices),   # wrong
        _label("larger_object", "object marked 3", [chair, box], choices),
        _label("larger_object", "box", [chair, box], choices),      # wrong
    ]
    checks = check_labels(labels, SCENE)
    assert [c.truth for c in checks] == ["60.0000", "40.0000", "object marked 3",
                                         "object marked 3", "object marked 3", "object marked 3"]
    assert [c.score for c in checks] == [1.0, 1.0, 1.0, 0.0, 1.0, 0.0]
    # The evidence-quality report counts them (heights by relative error, choices by agreement).
    by_family = {f.family: f for f in spatial_families(labels, SCENE, {})}
    assert (by_family["object_height_cm"].checked, by_family["object_height_cm"].wrong) == (2, 0)
    assert (by_family["closer_to_camera"].wrong, by_family["larger_object"].wrong) == (1, 1)


def test_a_marked_track_beyond_its_gate_is_wrong_and_a_distractor_is_matched() -> None:
    stray = (marked_name(3), [1.0, -0.5, 0.3])  # 0.5 m from the chair: a named one would match
    crate = (marked_name(4), [5.1, 0.0, 0.3])
    box = ("box", [3.0, 0.0, 0.2])
    labels = [_label("object_height_cm", "60", [stray], unit="cm"),
              _label("object_size_cm", "60", [crate], unit="cm"),
              _label("larger_object", "object marked 4", [crate, box], [marked_name(4), "box"]),
              _label("closer_to_camera", "box", [crate, box], [marked_name(4), "box"])]
    stray_check, crate_size, crate_larger, crate_closer = check_labels(labels, SCENE)
    assert stray_check.score == 0.0 and stray_check.detail.startswith("outside_gate")
    assert (crate_size.truth, crate_size.score) == ("60.0000", 1.0)
    assert (crate_larger.truth, crate_larger.score) == ("object marked 4", 1.0)
    # The truth frames list no distractor: what a frame shows of it is not covered.
    assert crate_closer.score is None and crate_closer.detail == NOT_COVERED
    # A named track never matches a distractor.
    assert check_labels([_label("object_size_cm", "60", [("crate", [5.0, 0.0, 0.3])],
                                unit="cm")], SCENE)[0].detail.startswith("false_detection")


def test_the_top_of_a_simulated_object_turned_on_its_side() -> None:
    assert FLOOR_Z_M == 0.0
    upright = {"center_world": [0.0, 0.0, 0.25], "size": [0.4, 0.3, 0.5]}
    assert top_height_m(upright) == pytest.approx(0.5)
    # The simulator's size is in the object's own frame: a quarter turn about x lays the 0.5 m
    # side along y and stands the 0.3 m side up.
    s = math.sin(math.pi / 4)
    lying = {**upright, "center_world": [0.0, 0.0, 0.15], "base_orientation": [s, 0.0, 0.0, s]}
    assert top_height_m(lying) == pytest.approx(0.30)
    yawed = {**upright, "base_orientation": [0.0, 0.0, s, s]}  # a turn about z: height kept
    assert top_height_m(yawed) == pytest.approx(0.5)
