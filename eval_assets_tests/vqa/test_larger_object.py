"""larger_object: of two objects whose sizes were measured, the one with the longer longest side."""

from __future__ import annotations

from eval_assets.schemas.spatial import ObjectTrack, SpatialCase, SpatialLabel, marked_name
from eval_assets.vqa.spatial.either_or import LARGER_MIN_RATIO
from eval_assets.vqa.spatial.evidence import SpatialRejection
from eval_assets.vqa.spatial.families import ANSWER_BALANCE, balance_key
from eval_assets_tests.vqa.spatial_tracks import family_items, track

FAMILY = "larger_object"


def _items(*objects: ObjectTrack) -> tuple[list[tuple[SpatialCase, SpatialLabel]],
                                           list[SpatialRejection]]:
    return family_items(FAMILY, *objects)


def _sized(k: int, name: str, longest: float, frames: tuple[int, ...] = (0, 1),
           view_spread_deg: float = 200.0) -> ObjectTrack:
    """Object ``k``, 1 m from the others, whose longest side is ``longest`` metres."""
    return track(name, [3.0, float(k), 0.2], list(frames), extent=(longest, 0.05, 0.05),
                 view_spread_deg=view_spread_deg)


def test_the_gold_is_the_object_with_the_longer_longest_dimension() -> None:
    (case, label), = _items(_sized(0, "red ball", 0.2), _sized(1, "blue box", 0.6))[0]
    assert label.answer == "blue box" and label.answer_type == "choice"
    assert sorted(case.choices or []) == ["blue box", "red ball"] == label.object_names
    first, second = case.choices or []
    assert case.question == (f"Which is larger (its longest dimension): the {first} or the "
                             f"{second}?")
    assert label.evidence["longest_m"] == {"blue box": 0.6, "red ball": 0.2}
    assert label.evidence["ratio"] == 3.0 and label.frame_index == 1  # one frame seeing both


def test_sizes_closer_than_the_ratio_are_too_close_to_call() -> None:
    assert LARGER_MIN_RATIO == 1.3
    cases, rejections = _items(_sized(0, "red ball", 0.5), _sized(1, "blue box", 0.6))
    assert cases == []
    (why,) = rejections
    assert why.reason == "too_close_to_call" and "1.20x" in why.detail
    # Exactly 1.3 times: asked.
    (_, label), = _items(_sized(0, "red ball", 0.4), _sized(1, "blue box", 0.52))[0]
    assert label.answer == "blue box"


def test_an_object_whose_size_was_not_measured_is_not_compared() -> None:
    # Seen from one side only (and no L of its footprint): its longest side may be unseen.
    cases, rejections = _items(_sized(0, "red ball", 0.2),
                               _sized(1, "blue box", 0.8, view_spread_deg=40.0))
    assert cases == []
    (why,) = rejections
    assert why.reason == "narrow_view" and why.object_names == ("blue box",)


def test_the_gold_is_first_in_half_the_cases() -> None:
    sizes = [0.1, 0.2, 0.3, 0.45, 0.7, 1.0, 1.5, 2.2]
    names = ["red ball", "blue box", "green cylinder", "yellow box", "purple ball", "white mug",
             "black chair", "orange crate"]
    cases, rejections = _items(*(_sized(k, n, s) for k, (n, s) in enumerate(zip(names, sizes,
                                                                                 strict=True))))
    assert len(cases) == 12 and not [r for r in rejections if r.reason == ANSWER_BALANCE]
    assert sum(c.choices is not None and c.choices[0] == lab.answer for c, lab in cases) == 6
    assert {balance_key(lab) for _, lab in cases} == {"choice 1", "choice 2"}


def test_a_marked_object_is_compared_by_its_mark() -> None:
    (case, label), = _items(_sized(0, marked_name(7), 0.9), _sized(1, "red ball", 0.2))[0]
    assert label.answer == "object marked 7"
    assert "the object marked 7" in case.question and "the red ball" in case.question
