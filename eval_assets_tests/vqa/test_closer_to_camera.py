"""closer_to_camera: of two objects in one frame, the one whose visible surface is nearer."""

from __future__ import annotations

from eval_assets.schemas.spatial import ObjectTrack, SpatialCase, SpatialLabel, marked_name
from eval_assets.schemas.vqa import asset_relpath
from eval_assets.vqa.spatial.either_or import CLOSER_MIN_GAP_M, CLOSER_MIN_SHARE
from eval_assets.vqa.spatial.evidence import SpatialRejection
from eval_assets.vqa.spatial.families import ANSWER_BALANCE, balance_key
from eval_assets_tests.vqa.spatial_tracks import family_items, track

FAMILY = "closer_to_camera"


def _items(*objects: ObjectTrack) -> tuple[list[tuple[SpatialCase, SpatialLabel]],
                                           list[SpatialRejection]]:
    return family_items(FAMILY, *objects)


def _at(k: int, name: str, ranges: dict[int, float]) -> ObjectTrack:
    """Object ``k`` (1 m from the others, so no two are one object) seen in ``ranges``' frames."""
    return track(name, [3.0, float(k), 0.2], sorted(ranges), ranges=ranges)


def test_the_gold_is_the_object_with_the_nearer_surface_and_the_choices_are_the_names() -> None:
    (case, label), = _items(_at(0, "red ball", {0: 2.6, 1: 2.5}),
                             _at(1, "blue box", {0: 1.4, 1: 1.5}))[0]
    assert label.answer == "blue box" and label.answer_type == "choice" and label.unit is None
    assert sorted(case.choices or []) == ["blue box", "red ball"] == label.object_names
    first, second = case.choices or []
    assert case.question == (f"Which is closer to the camera in this image: the {first} or the "
                             f"{second}?")
    # One frame seeing both, the one showing them best (more pixels in later frames here).
    assert case.images == [asset_relpath(1)] and label.frame_index == 1
    assert label.evidence["range_m"] == {"blue box": 1.5, "red ball": 2.5}
    assert [t["name"] for t in label.evidence["tracks"]] == ["blue box", "red ball"]


def test_ranges_closer_than_the_gap_are_too_close_to_call() -> None:
    assert (CLOSER_MIN_GAP_M, CLOSER_MIN_SHARE) == (0.3, 0.15)
    pairs = [
        ({0: 2.0}, {0: 2.25}, False),  # 0.25 m apart: under 0.3 m
        ({0: 4.0}, {0: 4.5}, False),   # 0.5 m apart: under 15 % of 4 m
        ({0: 2.0}, {0: 2.3}, True),    # exactly 0.3 m
        ({0: 4.0}, {0: 4.6}, True),    # exactly 15 % of the nearer
    ]
    for near, far, asked in pairs:
        cases, rejections = _items(_at(0, "red ball", {**near, 1: 9.0}),
                                   _at(1, "blue box", {**far, 1: 9.0}))
        assert bool(cases) == asked, (near, far)
        if not asked:
            (why,) = rejections
            assert why.reason == "too_close_to_call" and why.frame_indices == (0, 1)
            assert why.object_names == ("blue box", "red ball")
    # Too close in one frame, clear in another: asked in that one.
    (_, label), = _items(_at(0, "red ball", {0: 2.0, 1: 2.1, 2: 3.0}),
                          _at(1, "blue box", {0: 2.1, 1: 2.0, 2: 2.0}))[0]
    assert label.frame_index == 2 and label.answer == "blue box"


def test_a_pair_never_ranged_in_one_frame_is_not_asked() -> None:
    cases, rejections = _items(_at(0, "red ball", {0: 1.0, 1: 1.0}),
                               _at(1, "blue box", {2: 3.0, 3: 3.0}))
    assert cases == [] and rejections == []


def test_the_gold_is_first_in_half_the_cases_so_a_first_choice_guess_scores_half() -> None:
    # Eight objects in one frame, each clearly nearer than the next: 28 pairs, 12 asked.
    ranges = [1.0, 1.5, 2.0, 2.6, 3.3, 4.2, 5.3, 6.6]
    names = ["red ball", "blue box", "green cylinder", "yellow box", "purple ball", "white mug",
             "black chair", "orange crate"]
    objects = [_at(k, n, {0: r, 1: r}) for k, (n, r) in enumerate(zip(names, ranges,
                                                                       strict=True))]
    cases, rejections = _items(*objects)
    assert len(cases) == 12 and not [r for r in rejections if r.reason == ANSWER_BALANCE]
    first = [c.choices is not None and c.choices[0] == lab.answer for c, lab in cases]
    assert sum(first) == 6  # a constant "first choice" guess: 50 %
    assert {balance_key(lab) for _, lab in cases} == {"choice 1", "choice 2"}
    for case, label in cases:  # the question names them in the choices' order
        assert case.choices is not None and case.choices == label.choices
        assert case.question.index(case.choices[0]) < case.question.index(case.choices[1])
    # Drawn from the case id: the same tracks, the same order.
    again, _ = _items(*objects)
    assert [c.choices for c, _ in again] == [c.choices for c, _ in cases]


def test_an_odd_surplus_of_one_position_is_left_out_for_balance() -> None:
    cases, rejections = _items(_at(0, "red ball", {0: 1.0, 1: 1.0}),
                               _at(1, "blue box", {0: 2.0, 1: 2.0}),
                               _at(2, "green cylinder", {0: 3.0, 1: 3.0}))
    # Three pairs: the gold first in two (or one) of them; one of the two is left out.
    assert len(cases) == 2
    assert sorted(balance_key(lab) for _, lab in cases) == ["choice 1", "choice 2"]
    (left_out,) = [r for r in rejections if r.reason == ANSWER_BALANCE]
    assert "'choice " in left_out.detail and "more than half" in left_out.detail


def test_a_marked_object_is_asked_about_by_its_mark() -> None:
    (case, label), = _items(_at(0, marked_name(3), {0: 1.0, 1: 1.0}),
                             _at(1, "red ball", {0: 2.0, 1: 2.0}))[0]
    assert label.answer == "object marked 3"
    assert "the object marked 3" in case.question and "the red ball" in case.question
    assert sorted(case.choices or []) == ["object marked 3", "red ball"]
