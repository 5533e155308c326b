"""object_height_cm: the top of a track above the LiDAR's floor, asked only when seen from above."""

from __future__ import annotations

from eval_assets.schemas.spatial import ObjectTracks, SpatialLabel, marked_name
from eval_assets.vqa.spatial.evidence import SpatialRejection, TrackIndex
from eval_assets.vqa.spatial.families import (
    TOP_BOUND_SHARE,
    TOP_SEEN_MARGIN_M,
    spatial_items,
    top_bounded,
)
from eval_assets_tests.vqa.spatial_tracks import level_camera, track, tracks_of

FAMILY = "object_height_cm"


def _asked(tracks: ObjectTracks) -> tuple[list[tuple[str, SpatialLabel]],
                                          list[SpatialRejection]]:
    items = spatial_items(TrackIndex(tracks, tuple(sorted(tracks.cameras))))
    cases = [(i[0].question, i[1]) for i in items
             if not isinstance(i, SpatialRejection) and i[1].family == FAMILY]
    rejections = [i for i in items if isinstance(i, SpatialRejection) and i.family == FAMILY]
    return cases, rejections


def test_the_gold_is_the_top_above_the_floor_in_whole_centimetres() -> None:
    # Centre 0.20 m high, 0.30 m tall: the top at 0.35 m; the floor measured at 0.02 m.
    box = track("blue box", [3.0, 0.0, 0.20], [0, 1, 2, 3], extent=(0.4, 0.3, 0.30))
    (question, label), = _asked(tracks_of(box, floor_z=0.02))[0]
    assert label.answer == "33" and label.unit == "cm" and label.answer_type == "number"
    assert question == "How high above the floor is the top of the blue box, in centimetres?"
    assert label.evidence["top_z_m"] == 0.35 and label.evidence["floor_z_m"] == 0.02
    assert label.evidence["tracks"][0]["center_world"] == [3.0, 0.0, 0.20]
    # Up to three of its best frames (the most mask pixels), in time order.
    assert label.frame_indices == [1, 2, 3]


def test_without_a_floor_nothing_is_asked() -> None:
    box = track("blue box", [3.0, 0.0, 0.20], [0, 1, 2], extent=(0.4, 0.3, 0.30))
    cases, rejections = _asked(tracks_of(box, floor_z=None))
    assert cases == []
    assert [(r.object_names, r.reason) for r in rejections] == [(("blue box",), "no_floor")]


def test_a_top_no_camera_saw_from_above_is_not_asked() -> None:
    # The top at 0.45 m; the cameras at 0.50 m are above it, but by less than the margin.
    tall = track("green box", [3.0, 0.0, 0.25], [0, 1, 2], extent=(0.4, 0.3, 0.40))
    assert 0.45 + TOP_SEEN_MARGIN_M > 0.50
    cases, rejections = _asked(tracks_of(tall, camera_height_m=0.50))
    assert cases == []
    (why,) = rejections
    assert why.reason == "top_unseen" and why.object_names == ("green box",)
    assert "top is at 0.45 m" in why.detail and "0.50 m" in why.detail
    # Seen from a camera high enough in one frame: asked, showing only that frame.
    tracks = tracks_of(tall, camera_height_m=0.50)
    high = tracks.model_copy(update={"cameras": {**tracks.cameras, 1: level_camera(1, 0.56)}})
    (_, label), = _asked(high)[0]
    assert label.answer == "45" and label.frame_index == 1


def test_a_marked_object_is_asked_about_by_its_mark() -> None:
    marked = track(marked_name(3), [2.0, 1.0, 0.10], [0, 1], extent=(0.3, 0.3, 0.20))
    (question, label), = _asked(tracks_of(marked))[0]
    assert question == ("How high above the floor is the top of the object marked 3, in "
                        "centimetres?")
    assert label.object_names == ["object marked 3"] and label.answer == "20"


def test_a_top_the_lidar_bounds_closely_is_asked_though_no_camera_looked_down_on_it() -> None:
    # The top at 0.45 m, the cameras at 0.50 m: not seen from above. Rays passed within 2 cm
    # above every top return: 4 % of its 45 cm, so the LiDAR top is the gold.
    tall = track("green box", [3.0, 0.0, 0.25], [0, 1, 2, 3], extent=(0.4, 0.3, 0.40))
    bounded = tall.model_copy(update={"top_margin_m": 0.018})
    assert TOP_BOUND_SHARE * 0.45 >= 0.018
    (_, label), = _asked(tracks_of(bounded, camera_height_m=0.50))[0]
    assert label.answer == "45"
    assert label.evidence["top_measured_by"] == "lidar_bound"
    assert label.evidence["top_margin_m"] == 0.018
    assert label.frame_indices == [1, 2, 3]  # its best frames: none is from above
    # Seen from above as well: the frames from above are shown, as before.
    tracks = tracks_of(bounded, camera_height_m=0.50)
    high = tracks.model_copy(update={"cameras": {**tracks.cameras, 0: level_camera(0, 0.56)}})
    (_, label), = _asked(high)[0]
    assert label.evidence["top_measured_by"] == "camera_above" and label.frame_index == 0


def test_a_loose_or_missing_lidar_bound_does_not_measure_the_top() -> None:
    tall = track("green box", [3.0, 0.0, 0.25], [0, 1, 2], extent=(0.4, 0.3, 0.40))
    for margin in (0.03, None):  # 3 cm is 6.7 % of 45 cm; None: no ray passed over it all
        cases, rejections = _asked(tracks_of(tall.model_copy(update={"top_margin_m": margin}),
                                             camera_height_m=0.50))
        assert cases == []
        (why,) = rejections
        assert why.reason == "top_unseen"
        assert ("3.0 cm above" if margin else "no LiDAR ray passed over") in why.detail


def test_the_bound_is_a_share_of_the_height_not_centimetres() -> None:
    # 1.5 cm is 3 % of a 50 cm table but 17 % of a 9 cm jenga block.
    assert top_bounded(0.015, 0.50) and not top_bounded(0.015, 0.09)
    assert top_bounded(0.0, 0.30) and not top_bounded(None, 0.30)
    assert not top_bounded(0.0, 0.0)
