"""Boundary tests of the seven families' evidence rules (pure functions, no files)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from eval_assets.metrics.vqa import match_choice
from eval_assets.vqa.families import (
    COUNT_CHOICES,
    COVERAGE_SCHEMES,
    DIRECTION_CHOICES,
    DISTANCE_BOUNDARIES_M,
    DISTANCE_CHOICES,
    FAMILIES,
    MIN_MASK_PIXELS,
    PRESENCE_CHOICES,
    QUESTIONS,
    Answered,
    DetectionEvidence,
    FrameEvidence,
    RangeEvidence,
    Rejected,
    bucket_index,
    case_id_base,
    coverage_choices,
    decide,
    slug,
)


def det(x0: float = 10, x1: float = 20, area: int | None = 50,
        rng: RangeEvidence | None = None) -> DetectionEvidence:
    return DetectionEvidence(box_xyxy=(x0, 0.0, x1, 10.0), score=0.9, mask_area=area, range=rng)


def rng(q1: float, median: float, q3: float, count: int = 20) -> RangeEvidence:
    return RangeEvidence(count=count, median=median, q1=q1, q3=q3, min=q1 - 0.05)


def frame(detections: dict[str, list[DetectionEvidence]], width: int = 300, height: int = 100,
          queried: set[str] | None = None, lidar_ok: bool = True) -> FrameEvidence:
    names = set(detections) if queried is None else queried
    return FrameEvidence(frame_index=7, width=width, height=height, queried=frozenset(names),
                         detections={k: tuple(v) for k, v in detections.items()},
                         lidar_ok=lidar_ok, lidar_reason=None if lidar_ok else "no LiDAR")


def answered(decision: Answered | Rejected) -> Answered:
    assert isinstance(decision, Answered), decision
    return decision


def rejected(decision: Answered | Rejected, reason: str) -> Rejected:
    assert isinstance(decision, Rejected), decision
    assert decision.reason == reason, decision
    return decision


# --- presence -----------------------------------------------------------------------------------

def test_presence_yes_no_and_unqueried() -> None:
    ev = frame({"red ball": [det()]}, queried={"red ball", "blue box"})
    yes = answered(decide("presence", ["Red  Ball"], ev))
    assert (yes.answer, yes.choices) == ("yes", PRESENCE_CHOICES)
    assert yes.question == "Does the image contain any red ball?"
    assert answered(decide("presence", ["blue box"], ev)).answer == "no"
    rejected(decide("presence", ["green cylinder"], ev), "name_not_queried")


# --- horizontal_direction: thirds -------------------------------------------------------------

@pytest.mark.parametrize(("x0", "x1", "expected"), [
    (0.0, 199.998, "left"),  # centre 99.999 < W/3 = 100
    (99.0, 101.0, "center"),  # centre exactly W/3
    (150.0, 249.998, "center"),  # centre 199.999 < 2W/3
    (199.0, 201.0, "right"),  # centre exactly 2W/3
    (290.0, 300.0, "right"),
])
def test_horizontal_thirds_boundaries(x0: float, x1: float, expected: str) -> None:
    ev = frame({"red ball": [det(x0, x1)]}, width=300)
    a = answered(decide("horizontal_direction", ["red ball"], ev))
    assert a.answer == expected
    assert a.choices == DIRECTION_CHOICES


def test_horizontal_needs_exactly_one_detection() -> None:
    ev = frame({"red ball": [det(), det(200, 220)], "blue box": []})
    rejected(decide("horizontal_direction", ["red ball"], ev), "multiple_detections")
    rejected(decide("horizontal_direction", ["blue box"], ev), "no_detection")


# --- object_count ------------------------------------------------------------------------------

@pytest.mark.parametrize(("n", "expected"), [(1, "one"), (2, "two"), (3, "three"),
                                             (4, "four or more"), (7, "four or more")])
def test_count_is_min_n_4(n: int, expected: str) -> None:
    ev = frame({"blue box": [det(10 * i, 10 * i + 5) for i in range(n)]})
    a = answered(decide("object_count", ["blue box"], ev))
    assert (a.answer, a.choices) == (expected, COUNT_CHOICES)


def test_count_zero_rejects() -> None:
    rejected(decide("object_count", ["blue box"], frame({"blue box": []})), "no_detection")


# --- image_coverage: two schemes, ties to A ----------------------------------------------------

@pytest.mark.parametrize(("percent", "scheme", "expected"), [
    (1, "A", "under 25 percent"),
    (20, "A", "under 25 percent"),  # tie: A's nearest is 25 (5 away), B's is 15 (5 away)
    (30, "A", "25 to under 50 percent"),  # tie again (25 / 35)
    (40, "A", "25 to under 50 percent"),  # A 10 away, B 5 away
    (25, "B", "15 to under 35 percent"),  # on A's boundary: B is 10 away
    (50, "B", "35 to under 65 percent"),
    (75, "B", "65 to under 85 percent"),
    (15, "A", "under 25 percent"),  # on B's boundary
    (85, "A", "75 percent or more"),
    (100, "A", "75 percent or more"),
])
def test_coverage_scheme_choice_and_buckets(percent: int, scheme: str, expected: str) -> None:
    ev = frame({"red ball": [det(area=100 * percent)]}, width=100, height=100)
    a = answered(decide("image_coverage", ["red ball"], ev))
    assert a.evidence["scheme"] == scheme
    assert a.choices == coverage_choices(COVERAGE_SCHEMES[scheme])
    assert a.answer == expected


def test_coverage_needs_one_masked_detection() -> None:
    ev = frame({"a": [det(area=None)], "b": [det(area=0)], "c": [det(), det()], "d": []})
    rejected(decide("image_coverage", ["a"], ev), "no_mask")
    rejected(decide("image_coverage", ["b"], ev), "no_mask")
    rejected(decide("image_coverage", ["c"], ev), "multiple_detections")
    rejected(decide("image_coverage", ["d"], ev), "no_detection")


# --- largest_visible_area: exactly 1.2x -------------------------------------------------------

@pytest.mark.parametrize(("winner", "runner", "ok"), [
    (120, 100, True), (6, 5, True), (119, 100, False), (1199, 1000, False), (1200, 1000, True),
    (121, 100, True),
])
def test_largest_area_margin_exactly_1_2(winner: int, runner: int, ok: bool) -> None:
    # Scaled by 100: every mask is at least MIN_MASK_PIXELS, the margin rule alone decides.
    ev = frame({"red ball": [det(area=100 * winner)], "blue box": [det(area=100 * runner)],
                "green cylinder": [det(area=MIN_MASK_PIXELS)]})
    d = decide("largest_visible_area", ["blue box", "red ball", "green cylinder"], ev)
    if ok:
        a = answered(d)
        assert a.answer == "red ball"
        # The proposal's order, as dimOS (only the case id sorts the names).
        assert a.choices == ("blue box", "red ball", "green cylinder")
        assert a.question == QUESTIONS["largest_visible_area"]
    else:
        rejected(d, "area_margin_too_small")


def test_largest_area_reference_rules() -> None:
    ev = frame({"a": [det(area=100)], "b": [det(area=60), det(area=60)], "c": []})
    rejected(decide("largest_visible_area", ["a", "b"], ev), "multiple_detections")
    rejected(decide("largest_visible_area", ["a", "c"], ev), "no_detection")
    rejected(decide("largest_visible_area", ["a"], ev), "wrong_reference_count")
    rejected(decide("largest_visible_area", ["a", "b", "c", "d", "e", "f"], ev),
             "wrong_reference_count")
    rejected(decide("largest_visible_area", ["a", "A"], ev), "repeated_reference")


# --- a speck is not "the visible X" ---------------------------------------------------------------

def test_the_visible_x_is_not_asked_about_a_speck() -> None:
    """A mask under MIN_MASK_PIXELS (the truth check's "undefined") rejects every family that
    asks about "the visible X"; presence and count still count it (the truth accepts both)."""
    speck, enough = MIN_MASK_PIXELS - 1, MIN_MASK_PIXELS
    near = rng(0.4, 0.5, 0.6)
    ev = frame({"duck": [det(area=speck, rng=near)], "mug": [det(area=10 * enough, rng=rng(
        1.4, 1.5, 1.6))], "ball": [det(area=enough, rng=near)]})
    for family in ("horizontal_direction", "image_coverage", "object_distance"):
        r = rejected(decide(family, ["duck"], ev), "mask_too_small")
        assert f"{speck} pixels" in r.detail
        answered(decide(family, ["ball"], ev))
    for family in ("largest_visible_area", "closest_object"):
        rejected(decide(family, ["mug", "duck"], ev), "mask_too_small")
    assert answered(decide("presence", ["duck"], ev)).answer == "yes"
    assert answered(decide("object_count", ["duck"], ev)).answer == "one"
    # Box-only evidence (no mask) is judged by its box, as before.
    answered(decide("horizontal_direction", ["duck"], frame({"duck": [det(area=None)]})))


def test_the_truth_check_uses_the_families_speck_size() -> None:
    from eval_assets.evidence_quality import MIN_TRUTH_PIXELS
    assert MIN_TRUTH_PIXELS == MIN_MASK_PIXELS


# --- object_distance: >= 5 points, quartile rule ------------------------------------------------

@pytest.mark.parametrize(("q1", "median", "q3", "expected"), [
    (1.9, 2.0, 2.1, None),  # straddles 2.0
    (1.5, 1.8, 2.0, None),  # q3 exactly on 2.0 reaches the next bucket
    (2.0, 2.2, 2.4, "2 to under 3 meters"),  # q1 exactly on 2.0 is inside "2 to under 3"
    (1.5, 1.8, 1.999, "1 to under 2 meters"),
    (0.2, 0.5, 0.9, "under 1 meter"),
    (3.0, 4.0, 9.0, "3 meters or more"),
])
def test_distance_quartiles_at_2m(q1: float, median: float, q3: float,
                                  expected: str | None) -> None:
    ev = frame({"red ball": [det(rng=rng(q1, median, q3))]})
    d = decide("object_distance", ["red ball"], ev)
    if expected is None:
        rejected(d, "quartiles_cross_boundary")
    else:
        a = answered(d)
        assert (a.answer, a.choices) == (expected, DISTANCE_CHOICES)
        assert a.evidence["range_m"]["median"] == median


@pytest.mark.parametrize(("count", "ok"), [(4, False), (5, True)])
def test_distance_needs_5_points(count: int, ok: bool) -> None:
    ev = frame({"red ball": [det(rng=rng(1.2, 1.3, 1.4, count=count))]})
    d = decide("object_distance", ["red ball"], ev)
    if ok:
        assert answered(d).answer == "1 to under 2 meters"
    else:
        rejected(d, "too_few_points")


def test_distance_other_rejections() -> None:
    ev = frame({"a": [det(rng=None)], "b": [det(area=None, rng=rng(1, 1.1, 1.2))],
                "c": [det(rng=rng(1, 1.1, 1.2))] * 2})
    rejected(decide("object_distance", ["a"], ev), "too_few_points")
    rejected(decide("object_distance", ["b"], ev), "no_mask")
    rejected(decide("object_distance", ["c"], ev), "multiple_detections")
    image_only = frame({"a": [det(rng=rng(1, 1.1, 1.2))]}, lidar_ok=False)
    rejected(decide("object_distance", ["a"], image_only), "image_only_frame")


def behind(q1: float, median: float, q3: float, count: int, background: int,
           rest: RangeEvidence | None) -> RangeEvidence:
    """Range evidence whose mask holds ``background`` points of floor seen beyond the object."""
    return RangeEvidence(count=count, median=median, q1=q1, q3=q3, min=q1 - 0.05,
                         background=background, without_background=rest)


def test_distance_half_table_top_half_floor_beyond() -> None:
    """Points half on a table top at ~1.8 m, half on the floor beyond at ~3.2 m: dimOS's own
    quartile rule refuses; with the floor a larger share (its q1 on the floor too), dimOS's
    median says "3 meters or more" and the floor-free points "1 to under 2": refused, with the
    figures."""
    half = behind(1.8, 2.5, 3.2, count=20, background=10, rest=rng(1.78, 1.8, 1.82, count=10))
    rejected(decide("object_distance", ["table"], frame({"table": [det(rng=half)]})),
             "quartiles_cross_boundary")
    most = behind(3.1, 3.2, 3.3, count=20, background=15, rest=rng(1.78, 1.8, 1.82, count=5))
    r = rejected(decide("object_distance", ["table"], frame({"table": [det(rng=most)]})),
                 "background_in_mask")
    assert r.detail.startswith("15 of the 20 LiDAR points in the mask of 'table' are floor seen "
                               "beyond it (median 3.200 m, q1=3.100, q3=3.300 m; the others: "
                               "q1=1.780, median=1.800, q3=1.820 m)")
    assert "answers '3 meters or more', without them it answers '1 to under 2 meters'" in r.detail


@pytest.mark.parametrize(("rest", "why"), [
    (None, "0 points are left"),
    (rng(1.7, 1.8, 1.9, count=4), "4 points are left"),
    (rng(1.8, 2.5, 3.2, count=8), "q1=1.800 m and q3=3.200 m fall on both sides"),
])
def test_distance_refused_when_the_floor_free_points_give_no_answer(
        rest: RangeEvidence | None, why: str) -> None:
    ev = frame({"ball": [det(rng=behind(2.6, 2.62, 2.63, count=12, background=12, rest=rest))]})
    assert why in rejected(decide("object_distance", ["ball"], ev), "background_in_mask").detail


def test_distance_clean_or_unchanged_by_the_floor_is_dimos_answer() -> None:
    clean = rng(1.7, 1.8, 1.9)
    same = behind(3.4, 3.6, 4.4, count=20, background=5, rest=rng(3.4, 3.5, 3.6, count=15))
    for evidence in (clean, same):
        a = answered(decide("object_distance", ["t"], frame({"t": [det(rng=evidence)]})))
        assert a.answer == DISTANCE_CHOICES[bucket_index(Fraction(evidence.median),
                                                         DISTANCE_BOUNDARIES_M)]
        assert a.evidence == {"range_m": evidence.summary()}


# --- closest_object: interval non-overlap -----------------------------------------------------

def test_closest_separated_intervals() -> None:
    ev = frame({"b": [det(rng=rng(1.0, 1.2, 1.4))], "a": [det(rng=rng(1.5, 2.0, 2.5))],
                "c": [det(rng=rng(3.0, 3.1, 3.2))]})
    a = answered(decide("closest_object", ["c", "a", "b"], ev))
    assert a.answer == "b"
    assert a.choices == ("c", "a", "b")
    assert set(a.evidence["range_m"]) == {"a", "b", "c"}


@pytest.mark.parametrize(("other_q1", "ok"), [(1.4, False), (1.39, False), (1.41, True)])
def test_closest_touching_intervals_overlap(other_q1: float, ok: bool) -> None:
    ev = frame({"a": [det(rng=rng(1.0, 1.2, 1.4))], "b": [det(rng=rng(other_q1, 1.8, 2.0))]})
    d = decide("closest_object", ["a", "b"], ev)
    if ok:
        assert answered(d).answer == "a"
    else:
        rejected(d, "range_intervals_overlap")


def test_closest_every_reference_needs_range_evidence() -> None:
    ev = frame({"a": [det(rng=rng(1.0, 1.2, 1.4))], "b": [det(rng=rng(3, 3.1, 3.2, count=4))],
                "c": [], "d": [det(rng=rng(3, 3.1, 3.2))] * 2})
    rejected(decide("closest_object", ["a", "b"], ev), "too_few_points")
    rejected(decide("closest_object", ["a", "c"], ev), "no_detection")
    rejected(decide("closest_object", ["a", "d"], ev), "multiple_detections")
    rejected(decide("closest_object", ["a", "e"], ev), "name_not_queried")


def test_closest_guard_against_floor_beyond_a_reference() -> None:
    """A table whose median is the floor 14 m beyond it looks farther than a bear at 5 m; the
    table's floor-free points put it at 4.5 m: refused. Floor that changes nothing is kept."""
    bear = rng(4.99, 5.01, 5.03)
    table = behind(5.07, 14.03, 14.04, count=60, background=46,
                   rest=rng(4.4, 4.5, 4.6, count=14))
    r = rejected(decide("closest_object", ["bear", "table"],
                        frame({"bear": [det(rng=bear)], "table": [det(rng=table)]})),
                 "background_in_mask")
    assert "'table' 46 of 60 points" in r.detail and "the closest would be 'table'" in r.detail
    overlapping = behind(5.07, 14.03, 14.04, count=60, background=46,
                         rest=rng(4.9, 5.2, 5.3, count=14))
    r = rejected(decide("closest_object", ["bear", "table"],
                        frame({"bear": [det(rng=bear)], "table": [det(rng=overlapping)]})),
                 "background_in_mask")
    assert "overlapping 'table'" in r.detail
    short = behind(5.07, 14.03, 14.04, count=60, background=58, rest=rng(4.4, 4.5, 4.6, 2))
    assert "keep fewer than 5 points" in rejected(decide(
        "closest_object", ["bear", "table"],
        frame({"bear": [det(rng=bear)], "table": [det(rng=short)]})), "background_in_mask").detail
    unchanged = behind(7.0, 8.0, 9.0, count=60, background=10, rest=rng(6.8, 7.5, 8.0, 50))
    a = answered(decide("closest_object", ["bear", "table"],
                        frame({"bear": [det(rng=bear)], "table": [det(rng=unchanged)]})))
    assert a.answer == "bear"


# --- shape checks, ids and choice matching ----------------------------------------------------

def test_unknown_family_and_bad_names() -> None:
    ev = frame({"a": [det()]})
    rejected(decide("colour", ["a"], ev), "unknown_family")
    rejected(decide("presence", ["a", "b"], ev), "wrong_reference_count")
    rejected(decide("presence", [""], ev), "malformed_author_reply")


def test_slug_and_case_id() -> None:
    assert slug(["Red Ball"]) == "red-ball"
    # dimOS's slug: runs of other characters collapse to one "-", ends are stripped.
    assert slug(["blue box", "red  ball"]) == "blue-box-vs-red-ball"
    assert slug(["T-Shirt (blue)"]) == "t-shirt-blue"
    assert slug(["--"]) == "object"
    assert case_id_base(100, ["red ball"], "presence") == "frame-000100-red-ball-presence"


def every_choice_list() -> list[tuple[str, ...]]:
    lists = [PRESENCE_CHOICES, DIRECTION_CHOICES, COUNT_CHOICES, DISTANCE_CHOICES]
    lists += [coverage_choices(b) for b in COVERAGE_SCHEMES.values()]
    return lists


@pytest.mark.parametrize("choices", every_choice_list())
def test_every_fixed_choice_round_trips_through_match_choice(choices: tuple[str, ...]) -> None:
    for choice in choices:
        for reply in (choice, choice.upper(), f"{choice}.", f"Answer: {choice}", f'"{choice}"'):
            match = match_choice(reply, list(choices))
            assert match.choice == choice, (reply, match)
        assert not choice.endswith("%")


def test_families_registry_is_complete() -> None:
    assert list(FAMILIES) == ["presence", "horizontal_direction", "object_count",
                              "image_coverage", "largest_visible_area", "object_distance",
                              "closest_object"]


# --- unsure regions -------------------------------------------------------------------------------

def unsure_frame(detections: dict[str, list[DetectionEvidence]], unsure: set[str],
                 queried: set[str]) -> FrameEvidence:
    """A frame whose detector saw a region it could not name that may be each of ``unsure``."""
    base = frame(detections, queried=queried)
    return FrameEvidence(frame_index=base.frame_index, width=base.width, height=base.height,
                         queried=base.queried, detections=base.detections,
                         unsure=frozenset(unsure))


def test_presence_no_is_not_asked_where_the_detector_saw_something_it_could_not_name() -> None:
    ev = unsure_frame({"red ball": [det()]}, unsure={"blue box", "red ball"},
                      queried={"red ball", "blue box", "green ball"})
    rejected(decide("presence", ["blue box"], ev), "unsure_detection")
    # A detection still answers "yes" (an unsure region cannot make it absent) ...
    assert answered(decide("presence", ["red ball"], ev)).answer == "yes"
    # ... and a name without an unsure region still answers "no".
    assert answered(decide("presence", ["green ball"], ev)).answer == "no"


@pytest.mark.parametrize("family,names", [
    ("object_count", ["red ball"]), ("horizontal_direction", ["red ball"]),
    ("image_coverage", ["red ball"]), ("object_distance", ["red ball"]),
    ("largest_visible_area", ["red ball", "blue box"]),
    ("closest_object", ["blue box", "red ball"]),
])
def test_counts_and_the_visible_x_are_not_asked_about_an_unsure_name(
        family: str, names: list[str]) -> None:
    dets = {"red ball": [det(10, 20, 500, rng(1.0, 1.1, 1.2))],
            "blue box": [det(100, 120, 50, rng(2.5, 2.6, 2.7))]}
    sure = unsure_frame(dets, unsure=set(), queried=set(dets))
    assert isinstance(decide(family, names, sure), Answered)
    # One more region of red that the detector could not name: a second red ball, perhaps.
    ev = unsure_frame(dets, unsure={"red ball"}, queried=set(dets))
    assert "red ball" in rejected(decide(family, names, ev), "unsure_detection").detail
