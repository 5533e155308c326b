"""The time controls' table and transforms: which families each control asks, the reversed and
repeated cases, the gold transforms, the family read from a case id, and the share drawn."""

from __future__ import annotations

import pytest

from eval_assets.schemas.spatial import SPATIAL_FAMILIES, SpatialCase
from eval_assets.time_controls import (
    TIME_FAMILIES,
    check_share,
    family_of,
    repeated,
    reverse_route,
    selected,
    shown_choices,
    time_flipped,
    transform_of,
)

ROUTES = ["forward, turn left, forward", "forward, turn right, forward",
          "turn left, forward", "forward, turn left"]


def _case(choices: list[str] | None = None, n: int = 3) -> SpatialCase:
    return SpatialCase(id="spatial-turn_direction-camera-000010-000020-000030",
                       images=[f"assets/frame-{10 * (i + 1):06d}.png" for i in range(n)],
                       question="Did the camera turn left, turn right, or keep its heading?",
                       answer_type="choice" if choices else "number",
                       choices=choices, unit=None)


def test_the_gold_transforms_per_family() -> None:
    flip = {f: transform_of(f, "time_flip") for f in TIME_FAMILIES}
    assert flip["turn_direction"] is not None and flip["turn_direction"]("left") == "right"
    assert flip["turn_direction"]("no turn") == "no turn"
    assert flip["route_sequence"] is not None
    assert flip["route_sequence"]("turn left, forward") == "forward, turn right"
    for family in ("camera_displacement_m", "path_length_m", "turn_angle_deg", "same_place",
                   "object_count_across_frames"):
        transform = flip[family]
        assert transform is not None and transform("2.5") == "2.5" and transform("yes") == "yes"
    # Not reversible: left out of TimeFlip.
    assert flip["egocentric_direction_deg"] is None and flip["appearance_order"] is None
    assert flip["relative_direction"] is None and transform_of("pair_distance_m", "time_flip") \
        is None
    repeats = {f for f in TIME_FAMILIES if transform_of(f, "repeat_frames") is not None}
    assert repeats == {"object_count_across_frames", "appearance_order", "camera_displacement_m",
                       "path_length_m", "turn_direction"}


def test_every_existing_multi_frame_spatial_family_is_declared() -> None:
    # A new spatial family must be placed in (or knowingly out of) the table.
    for family in ("appearance_order", "object_count_across_frames", "relative_direction"):
        assert family in SPATIAL_FAMILIES and family in TIME_FAMILIES


def test_reverse_route_reverses_moves_swaps_sides_and_keeps_separators() -> None:
    assert reverse_route("forward, turn left, forward, turn right") == \
        "turn left, forward, turn right, forward"
    assert reverse_route("forward → turn right") == "turn left → forward"
    assert reverse_route("turn left then forward") == "forward then turn right"
    assert reverse_route("forward") == "forward"
    # An involution: reversing twice gives the route back.
    assert all(reverse_route(reverse_route(r)) == r for r in ROUTES)


def test_time_flipped_reverses_frames_and_shows_choices_in_place() -> None:
    turn = _case(["left", "right", "no turn"])
    flipped = time_flipped(turn, "turn_direction")
    assert flipped is not None and flipped.images == list(reversed(turn.images))
    # The same set swapped: shown in the case's own order, so position answers cannot follow.
    assert flipped.choices == ["left", "right", "no turn"]
    assert flipped.question == turn.question and flipped.id == turn.id
    route = time_flipped(_case(ROUTES), "route_sequence")
    assert route is not None and route.choices == [reverse_route(r) for r in ROUTES]
    assert route.choices == ["forward, turn right, forward", "forward, turn left, forward",
                             "forward, turn right", "turn right, forward"]
    assert time_flipped(_case(None), "egocentric_direction_deg") is None
    assert time_flipped(_case(None, n=1), "camera_displacement_m") is None
    assert shown_choices(["yes", "no"], lambda c: c) == ["yes", "no"]


def test_repeated_shows_every_frame_twice_in_a_row() -> None:
    case = _case(None)
    twice = repeated(case, "path_length_m")
    assert twice is not None and twice.images == [case.images[0], case.images[0],
                                                  case.images[1], case.images[1],
                                                  case.images[2], case.images[2]]
    assert twice.question == case.question and twice.choices is None
    assert repeated(case, "turn_angle_deg") is None and repeated(case, "same_place") is None


def test_family_of_reads_the_family_token_of_a_case_id() -> None:
    assert family_of("spatial-appearance_order-chair-vs-table-000010-000020") == \
        "appearance_order"
    assert family_of("spatial-count-object_count_across_frames") == "object_count_across_frames"
    assert family_of("spatial-turn_direction-camera-000100-000200") == "turn_direction"
    assert family_of("spatial-object_size_cm-chair-000010") is None  # not a time family
    assert family_of("frame-000100-obj0-presence") is None
    assert family_of("spatial-turn_direction-path_length_m") is None  # ambiguous: never asked


def test_the_share_is_drawn_by_case_id_deterministically() -> None:
    ids = [f"spatial-path_length_m-camera-{i:06d}" for i in range(2000)]
    assert all(selected(i, "time_flip", 1.0) for i in ids)
    quarter = [i for i in ids if selected(i, "time_flip", 0.25)]
    assert 0.2 < len(quarter) / len(ids) < 0.3
    assert quarter == [i for i in ids if selected(i, "time_flip", 0.25)]  # same every time
    # A smaller share keeps a subset; the two controls draw independently.
    assert set(i for i in ids if selected(i, "time_flip", 0.1)) <= set(quarter)
    assert quarter != [i for i in ids if selected(i, "repeat_frames", 0.25)]
    for bad in (0.0, -0.5, 1.5):
        with pytest.raises(ValueError, match="time_control_share"):
            check_share(bad)
