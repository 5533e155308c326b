"""Set-of-Mark marks: anchors at the distance-transform maximum, numbers that never hide the object,
outlines just outside the region, same bytes on every run."""

from __future__ import annotations

import json
from itertools import combinations

import cv2
import numpy as np
import pytest
from scipy import ndimage

from eval_assets.perception.marks import (
    DEFAULT_MARK_STYLE,
    Box,
    MarkStyle,
    draw_marks,
    mark_anchor,
    place_marks,
)

GREY = (100, 100, 100)
STYLE = DEFAULT_MARK_STYLE


def _blank(h: int = 120, w: int = 160) -> np.ndarray:
    image = np.zeros((h, w, 3), np.uint8)
    image[:] = GREY
    return image


def _scipy_anchor(mask: np.ndarray) -> tuple[int, int]:
    """The reference: exact Euclidean distance transform (the image edge outside), first max."""
    dist = ndimage.distance_transform_edt(np.pad(mask, 1))[1:-1, 1:-1]
    y, x = np.unravel_index(int(np.argmax(dist)), mask.shape)
    return int(x), int(y)


def _overlap(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _in_box(shape: tuple[int, ...], box: Box) -> np.ndarray:
    inside = np.zeros(shape[:2], bool)
    inside[box[1]:box[3], box[0]:box[2]] = True
    return inside


def _scene() -> tuple[np.ndarray, np.ndarray, dict[int, int]]:
    """Three overlapping objects painted far to near (depth order), two tiny balls, and one
    unmarked object."""
    image, labels = _blank(240, 320), np.zeros((240, 320), np.int32)

    def paint(label: int, mask: np.ndarray, rgb: tuple[int, int, int]) -> None:
        labels[mask], image[mask] = label, rgb

    def disc(center: tuple[int, int], radius: int) -> np.ndarray:
        return cv2.circle(np.zeros((240, 320), np.uint8), center, radius, 1, -1).astype(bool)

    box = np.zeros((240, 320), bool)
    box[60:200, 40:180] = True
    paint(1, box, (30, 60, 200))
    paint(2, disc((170, 150), 50), (220, 40, 40))
    near = np.zeros((240, 320), bool)
    near[150:175, 120:150] = True
    paint(3, near, (240, 220, 30))
    paint(4, disc((260, 60), 6), (40, 200, 60))
    paint(5, disc((285, 60), 5), (200, 60, 200))
    unmarked = np.zeros((240, 320), bool)
    unmarked[180:220, 250:300] = True
    paint(6, unmarked, (255, 255, 255))
    return image, labels, {1: 3, 2: 7, 3: 12, 4: 1, 5: 2}


def test_anchor_sits_in_the_thick_part_of_an_l_shape() -> None:
    region = np.zeros((90, 90), bool)
    region[5:80, 5:13] = True  # the thin upright
    region[45:80, 5:60] = True  # the thick foot
    x, y = mark_anchor(region, np.zeros_like(region)) or (-1, -1)
    assert (x, y) == _scipy_anchor(region)
    assert 13 <= x < 60 and 45 <= y < 80  # in the foot, clear of the upright
    assert min(x - 5, 59 - x, y - 45, 79 - y) >= 15  # deep inside: the foot is 35 rows tall


def test_anchor_ties_go_to_the_first_pixel_in_row_major_order() -> None:
    region = np.zeros((40, 40), bool)
    region[10:13, 20:27] = True  # three rows: the middle row x=21..25 ties at distance 2
    assert mark_anchor(region, np.zeros_like(region)) == (21, 11)


def test_anchor_treats_the_image_edge_as_outside() -> None:
    region = np.zeros((40, 60), bool)
    region[:, :20] = True  # an object cut by the left and top edges
    x, y = mark_anchor(region, np.zeros_like(region)) or (-1, -1)
    assert (x, y) == _scipy_anchor(region)
    assert 8 <= x <= 11 and y >= 9  # mid-strip, not against the edge


def test_anchor_avoids_covered_pixels() -> None:
    region = np.zeros((60, 60), bool)
    region[10:50, 10:50] = True
    covered = np.zeros_like(region)
    covered[:, :30] = True  # an earlier number over the left half
    x, y = mark_anchor(region, covered) or (-1, -1)
    assert not covered[y, x] and region[y, x]
    assert (x, y) == _scipy_anchor(region & ~covered)
    assert mark_anchor(region, np.zeros_like(region)) == _scipy_anchor(region)


def test_anchor_of_an_empty_region_is_none_and_a_covered_one_falls_back() -> None:
    region = np.zeros((20, 20), bool)
    assert mark_anchor(region, region) is None
    region[5:10, 5:10] = True
    assert mark_anchor(region, np.ones_like(region)) == (7, 7)


def test_numbers_are_placed_smallest_region_first_then_by_label() -> None:
    labels = np.zeros((100, 200), np.int32)
    labels[10:90, 10:90] = 4
    labels[10:40, 100:130] = 9
    labels[50:80, 100:130] = 2
    order = [p.label for p in place_marks(labels, {4: 1, 9: 2, 2: 3})]
    assert order == [2, 9, 4]


def test_two_large_regions_get_their_numbers_inside_and_apart() -> None:
    labels = np.zeros((80, 160), np.int32)
    labels[10:70, 10:70] = 1
    labels[10:70, 70:130] = 2
    a, b = place_marks(labels, {1: 5, 2: 6})
    assert a.anchor != b.anchor and not _overlap(a.box, b.box)
    for p in (a, b):
        assert not p.outside
        assert (labels[p.box[1]:p.box[3], p.box[0]:p.box[2]] == p.label).all()


def test_crowded_small_regions_get_non_overlapping_numbers_outside_them() -> None:
    labels = np.zeros((120, 120), np.int32)
    for i in range(3):
        for j in range(3):
            labels[30 + 25 * i:36 + 25 * i, 30 + 25 * j:36 + 25 * j] = 1 + 3 * i + j
    placements = place_marks(labels, {lab: 10 + lab for lab in range(1, 10)})
    assert len(placements) == 9
    assert len({p.anchor for p in placements}) == 9
    for p, q in combinations(placements, 2):
        assert not _overlap(p.box, q.box), (p, q)
    for p in placements:
        assert p.outside and labels[p.anchor[1], p.anchor[0]] == p.label
        # No number hides more than a third of any object, its own included.
        crop = labels[p.box[1]:p.box[3], p.box[0]:p.box[2]]
        assert all(np.count_nonzero(crop == lab) <= 12 for lab in range(1, 10)), p


def test_a_small_region_gets_its_number_just_outside_and_stays_visible() -> None:
    image, labels = _blank(), np.zeros((120, 160), np.int32)
    labels[60:66, 80:86] = 1
    image[labels == 1] = (0, 200, 0)
    (p,) = place_marks(labels, {1: 4})
    assert p.outside and not _in_box(labels.shape, p.box)[labels == 1].any()
    gap = max(60 - p.box[3], p.box[1] - 66, 80 - p.box[2], p.box[0] - 86)
    assert 0 <= gap <= STYLE.outline_px + STYLE.rim_px + 1  # adjacent to the outline
    out = draw_marks(image, labels, {1: 4})
    assert (out[labels == 1] == (0, 200, 0)).all()  # every pixel of the object still shows
    box = out[p.box[1]:p.box[3], p.box[0]:p.box[2]]
    assert (box == STYLE.text_rgb).all(axis=2).any() and (box == STYLE.label_rgb).all(axis=2).any()


def test_outline_lies_just_outside_the_region_boundary() -> None:
    image, labels = _blank(), np.zeros((120, 160), np.int32)
    labels[40:80, 50:110] = 1
    image[labels == 1] = (200, 30, 30)
    (p,) = place_marks(labels, {1: 8})
    out = draw_marks(image, labels, {1: 8})
    away = ~_in_box(labels.shape, p.box)
    ring = np.zeros(labels.shape, int)  # chessboard distance outside the region, 0 = inside
    for k in range(4, 0, -1):
        ring[40 - k:80 + k, 50 - k:110 + k] = k
    ring[labels == 1] = 0
    changed = (out != image).any(axis=2) & away
    assert changed.any()
    assert not changed[labels == 1].any()  # the object itself is untouched
    assert not changed[(ring == 0) & (labels == 0)].any()  # nothing far from the boundary
    assert (out[(ring >= 1) & (ring <= STYLE.outline_px)] == STYLE.outline_rgb).all()
    assert (out[ring == STYLE.outline_px + 1] == STYLE.rim_rgb).all()
    assert not changed[ring == 4].any()


def test_between_touching_marked_objects_the_smaller_ones_outline_is_drawn() -> None:
    image, labels = _blank(), np.zeros((120, 160), np.int32)
    labels[20:100, 20:140] = 1  # far and large
    labels[50:60, 60:75] = 2  # nearer and small, inside the large one's outline
    image[labels == 1], image[labels == 2] = (30, 60, 200), (240, 220, 30)
    out = draw_marks(image, labels, {1: 1, 2: 2})
    assert (out[labels == 2] == (240, 220, 30)).all()
    (small,) = [p for p in place_marks(labels, {1: 1, 2: 2}) if p.label == 2]
    assert small.box[3] <= 50  # its number above it, so below it the outline shows
    assert (out[60:62, 58:77] == STYLE.outline_rgb).all()  # its outline, on the large one
    assert (out[62, 57:78] == STYLE.rim_rgb).all()


def test_drawing_is_byte_identical_on_repeat() -> None:
    image, labels, numbers = _scene()
    first = draw_marks(image, labels, numbers)
    again = draw_marks(image.copy(), labels.copy(), dict(reversed(numbers.items())))
    assert first.tobytes() == again.tobytes()
    assert first.dtype == np.uint8 and first.shape == image.shape


def test_input_arrays_are_not_modified() -> None:
    image, labels, numbers = _scene()
    image_before, labels_before = image.copy(), labels.copy()
    out = draw_marks(image, labels, numbers)
    assert (image == image_before).all() and (labels == labels_before).all()
    assert not (out == image).all()


def test_absent_labels_are_skipped_and_unnumbered_ones_not_drawn() -> None:
    image, labels, numbers = _scene()
    assert (draw_marks(image, labels, {99: 4}) == image).all()  # 99: not in this frame
    with_absent = draw_marks(image, labels, {**numbers, 99: 40})
    assert with_absent.tobytes() == draw_marks(image, labels, numbers).tobytes()
    only_one = draw_marks(image, labels, {2: 7})
    assert (only_one[labels == 6] == image[labels == 6]).all()  # far from 2, unmarked
    assert [p.label for p in place_marks(labels, {2: 7, 99: 1})] == [2]


def test_the_example_scene_keeps_every_small_object_visible() -> None:
    image, labels, numbers = _scene()
    out = draw_marks(image, labels, numbers)
    placements = {p.label: p for p in place_marks(labels, numbers)}
    for lab in (3, 4, 5):
        assert placements[lab].outside
        assert (out[labels == lab] == image[labels == lab]).all()
    assert not placements[1].outside and not placements[2].outside


@pytest.mark.parametrize(("image", "labels", "numbers", "message"), [
    (np.zeros((8, 8, 3), np.float32), np.zeros((8, 8), np.int32), {}, "RGB uint8"),
    (np.zeros((8, 8), np.uint8), np.zeros((8, 8), np.int32), {}, "RGB uint8"),
    (np.zeros((8, 8, 4), np.uint8), np.zeros((8, 8), np.int32), {}, "RGB uint8"),
    (np.zeros((8, 8, 3), np.uint8), np.zeros((8, 8), np.float32), {}, "integer"),
    (np.zeros((8, 8, 3), np.uint8), np.zeros((8, 8), bool), {}, "integer"),
    (np.zeros((8, 8, 3), np.uint8), np.zeros((8, 9), np.int32), {}, "differs"),
    (np.zeros((8, 8, 3), np.uint8), np.zeros((8, 8), np.int32), {1: 0}, "positive int"),
    (np.zeros((8, 8, 3), np.uint8), np.zeros((8, 8), np.int32), {1: -2}, "positive int"),
    (np.zeros((8, 8, 3), np.uint8), np.zeros((8, 8), np.int32), {1: 2.0}, "positive int"),
    (np.zeros((8, 8, 3), np.uint8), np.zeros((8, 8), np.int32), {1: True}, "positive int"),
    (np.zeros((8, 8, 3), np.uint8), np.zeros((8, 8), np.int32), {0: 1}, "non-zero int"),
    (np.zeros((8, 8, 3), np.uint8), np.zeros((8, 8), np.int32), {1: 3, 2: 3}, "given to"),
])
def test_bad_inputs_are_refused_clearly(image: np.ndarray, labels: np.ndarray,
                                        numbers: dict[int, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        draw_marks(image, labels, numbers)


def test_bad_anchor_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="shaped like region"):
        mark_anchor(np.zeros((4, 4), bool), np.zeros((4, 5), bool))
    with pytest.raises(ValueError, match="2-D"):
        mark_anchor(np.zeros((4, 4, 1), bool), np.zeros((4, 4, 1), bool))


def test_numpy_integer_labels_and_numbers_are_accepted() -> None:
    labels = np.zeros((60, 60), np.uint16)
    labels[10:50, 10:50] = 3
    (p,) = place_marks(labels, {np.uint16(3): np.int64(12)})  # type: ignore[dict-item]
    assert (p.label, p.number) == (3, 12)


def test_style_record_names_every_field_and_is_json() -> None:
    record = STYLE.record()
    assert json.loads(json.dumps(record)) == record
    assert set(record) == set(MarkStyle.__dataclass_fields__)
    assert record["name"] == "outline+number" and record["outline_px"] == 2
    assert record["outline_rgb"] == [255, 255, 255]


@pytest.mark.parametrize("bad", [{"outline_px": 0}, {"rim_px": -1}, {"font_scale": 0.0},
                                 {"max_label_cover": 1.5}, {"text_rgb": (255, 0)},
                                 {"label_rgb": (0, 0, 256)}, {"font": "comic"}])
def test_bad_styles_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="MarkStyle"):
        MarkStyle(**bad)  # type: ignore[arg-type]
