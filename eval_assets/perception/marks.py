"""Set-of-Mark marks: a numbered outline drawn on each marked object of a frame.

An object no name is certain for is asked about as "the object marked 3". Per frame the caller
gives an instance label image in depth order (each pixel the nearest object's, 0 = none) and each
label's number (a track keeps its number in every frame). Allocation follows Set-of-Mark (Yang et
al., 2023): regions by area (smallest first, then label: small objects pick their spot first),
each number at the distance-transform maximum of the region's part no earlier number covers.
Pure OpenCV drawing on integer coordinates: the same inputs give the same bytes.
"""

from __future__ import annotations

import dataclasses
import numbers as _numbers
from collections.abc import Mapping
from dataclasses import dataclass

import cv2
import numpy as np

Box = tuple[int, int, int, int]  # x0, y0, x1, y1 (exclusive ends)
RGB = tuple[int, int, int]
FONT = cv2.FONT_HERSHEY_SIMPLEX  # recorded as MarkStyle.font


def _is_int(value: object) -> bool:
    return isinstance(value, _numbers.Integral) and not isinstance(value, bool | np.bool_)


@dataclass(frozen=True)
class MarkStyle:
    """How marks are drawn; recorded with each case (models read boxes, outlines and numbers
    differently: VP-Bench 2025), so it stays fixed within a benchmark.

    Colours are neutral on purpose: a white outline with a dark rim, white digits on a dark box.
    The questions name colours ("the red ball"); a per-number palette would add colours a model
    can mistake for the object's own, while white-on-dark reads on any background. The outline is
    drawn just *outside* the region, so the marked object's own pixels (its colour and shape, what
    the question is about) are never painted by its own outline, even when it is a few pixels big.
    """

    name: str = "outline+number"  # the style's id recorded in cases
    outline_px: int = 2  # thin, high contrast
    rim_px: int = 1  # dark rim outside the outline: contrast on bright backgrounds
    font: str = "hershey_simplex"  # fixed (OpenCV's); a field so the record names it
    font_scale: float = 0.5  # ~10 px tall digits: readable at 640x480 without hiding much
    text_px: int = 1  # stroke thickness of the digits
    label_pad_px: int = 2  # dark margin around the digits
    outline_rgb: RGB = (255, 255, 255)
    rim_rgb: RGB = (0, 0, 0)
    text_rgb: RGB = (255, 255, 255)
    label_rgb: RGB = (0, 0, 0)
    max_label_cover: float = 1 / 3  # above this share of the region, the number goes outside it

    def __post_init__(self) -> None:
        for field, least in ("outline_px", 1), ("rim_px", 0), ("text_px", 1), ("label_pad_px", 0):
            if not _is_int(value := getattr(self, field)) or value < least:
                raise ValueError(f"MarkStyle.{field} must be an int >= {least}, got {value!r}")
        if self.font != "hershey_simplex" or not self.font_scale > 0 \
                or not 0 < self.max_label_cover <= 1:
            raise ValueError("MarkStyle: font must be 'hershey_simplex', font_scale > 0, "
                             f"max_label_cover in (0, 1]; got {self!r}")
        for field in ("outline_rgb", "rim_rgb", "text_rgb", "label_rgb"):
            value = getattr(self, field)
            if len(value) != 3 or not all(_is_int(c) and 0 <= c <= 255 for c in value):
                raise ValueError(f"MarkStyle.{field} must be three ints in 0..255, got {value!r}")

    def record(self) -> dict[str, object]:
        """Every field, JSON-able (colours as lists), for the case and its audit."""
        return {f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v
                for f in dataclasses.fields(self)}


DEFAULT_MARK_STYLE = MarkStyle()


def mark_anchor(region: np.ndarray, covered: np.ndarray) -> tuple[int, int] | None:
    """(x, y) pixel for a region's number: the distance-transform maximum of the region's
    uncovered part (Set-of-Mark, Yang et al. 2023), the point deepest inside the object.

    The image border counts as outside (the mask is padded), as in Set-of-Mark's reference code.
    Ties go to the first pixel in row-major order. ``None`` when the region is empty; a region
    entirely covered falls back to its whole area (the caller then sees its box hit ``covered``).
    """
    for name, array in ("region", region), ("covered", covered):
        if not isinstance(array, np.ndarray) or array.shape != np.shape(region) or array.ndim != 2:
            raise ValueError(f"{name} must be a 2-D array shaped like region, got "
                             f"{_describe(array)} (region: {_describe(region)})")
    region, covered = region.astype(bool, copy=False), covered.astype(bool, copy=False)
    if not region.any():
        return None
    free = region & ~covered
    if not free.any():
        free = region
    padded = np.pad(free.astype(np.uint8), 1)
    dist = cv2.distanceTransform(padded, cv2.DIST_L2, cv2.DIST_MASK_PRECISE)[1:-1, 1:-1]
    y, x = divmod(int(np.argmax(dist)), region.shape[1])  # argmax: first maximum, row-major
    return x, y


@dataclass(frozen=True)
class MarkPlacement:
    """One number's ``anchor`` (x, y) and ``box`` (x0, y0, x1, y1, ends exclusive); ``outside``:
    the box is off the region, joined to it by a leader line."""

    label: int
    number: int
    anchor: tuple[int, int]
    box: Box
    outside: bool


def place_marks(labels: np.ndarray, numbers: Mapping[int, int],
                style: MarkStyle = DEFAULT_MARK_STYLE) -> list[MarkPlacement]:
    """Where :func:`draw_marks` puts each number, in allocation order (area, then label).

    The number must not hide the object: its box goes at the anchor (:func:`mark_anchor`) only
    when it covers at most ``style.max_label_cover`` of the region and no earlier number.
    Otherwise it goes just outside the region's bounding box, past the outline: the spot nearest
    it (above, right, left, below, then one and two boxes further out, clipped into the image)
    that hides no other object beyond the same share. Each placed box is marked covered, so
    later anchors and boxes avoid it.
    """
    _check_labels(labels, numbers)
    ids, counts = np.unique(labels, return_counts=True)
    every_area = {int(i): int(c) for i, c in zip(ids, counts, strict=True)}
    areas = {int(lab): every_area.get(int(lab), 0) for lab in numbers}
    covered = np.zeros(labels.shape, bool)
    placements = []
    for _, lab in sorted((area, lab) for lab, area in areas.items() if area > 0):
        region = labels == lab
        number = int(numbers[lab])
        (tw, th), _ = cv2.getTextSize(str(number), FONT, style.font_scale, style.text_px)
        bw, bh = tw + 2 * style.label_pad_px, th + 2 * style.label_pad_px
        anchor = mark_anchor(region, covered)
        assert anchor is not None  # only regions present in this frame are placed
        box = _clip((anchor[0] - bw // 2, anchor[1] - bh // 2), bw, bh, labels.shape)
        outside = bool(_count(covered, box)
                       or _count(region, box) > style.max_label_cover * areas[lab])
        if outside:
            box = _outside_box(region, covered, labels, every_area, (bw, bh), style)
        covered[box[1]:box[3], box[0]:box[2]] = True
        placements.append(MarkPlacement(lab, number, anchor, box, outside))
    return placements


def draw_marks(image: np.ndarray, labels: np.ndarray, numbers: Mapping[int, int],
               style: MarkStyle = DEFAULT_MARK_STYLE) -> np.ndarray:
    """A copy of the RGB uint8 image (H, W, 3) with each labelled region in ``numbers`` outlined
    and numbered; ``labels`` is an integer (H, W) array in depth order (0 = no object).

    A label absent from ``labels`` is skipped (not in this frame); one not in ``numbers`` is not
    drawn; the input is not modified. Numbers go where :func:`place_marks` says; one outside its
    region gets a leader line to the anchor, stopping at the region's edge: adjacency alone
    leaves a number between two small objects side by side ambiguous.
    """
    if not isinstance(image, np.ndarray) or image.dtype != np.uint8 or image.shape[2:] != (3,):
        raise ValueError(f"image must be an RGB uint8 array (H, W, 3), got {_describe(image)}")
    _check_labels(labels, numbers)
    if labels.shape != image.shape[:2]:
        raise ValueError(f"labels shape {labels.shape} differs from image shape {image.shape[:2]}")
    placements = place_marks(labels, numbers, style)
    out = image.copy()
    masks = [labels == p.label for p in placements]
    # Outlines first, largest first, none painted on a smaller marked region: between two
    # touching marked objects the line is the smaller one's, drawn on the larger one.
    smaller = np.zeros(labels.shape, bool)
    rings = []
    for mask in masks:
        rings.append(_rings(mask, style, ~smaller))
        smaller |= mask
    for rim, ring in reversed(rings):
        out[rim] = style.rim_rgb
        out[ring] = style.outline_rgb
    covered = np.zeros(labels.shape, bool)
    for p, mask in zip(placements, masks, strict=True):
        x0, y0, x1, y1 = p.box
        if p.outside:
            layer = out.copy()
            near = (min(max(p.anchor[0], x0), x1 - 1), min(max(p.anchor[1], y0), y1 - 1))
            cv2.line(layer, near, p.anchor, style.rim_rgb, 3, cv2.LINE_8)
            cv2.line(layer, near, p.anchor, style.outline_rgb, 1, cv2.LINE_8)
            keep = ~mask & ~covered  # the leader stops at the object's edge and earlier numbers
            out[keep] = layer[keep]
        cv2.rectangle(out, (x0, y0), (x1 - 1, y1 - 1), style.label_rgb, cv2.FILLED)
        origin = (x0 + style.label_pad_px, y1 - 1 - style.label_pad_px)
        cv2.putText(out, str(p.number), origin, FONT, style.font_scale, style.text_rgb,
                    style.text_px, cv2.LINE_AA)
        covered[y0:y1, x0:x1] = True
    return out


def _rings(mask: np.ndarray, style: MarkStyle,
           allowed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # Square kernels: the outline is every pixel within chessboard distance outline_px outside
    # the region, the rim the next rim_px; the image edge is no object, so outlines stay closed.
    inner, outer = (cv2.dilate(mask.astype(np.uint8), np.ones((2 * r + 1, 2 * r + 1), np.uint8),
                               borderType=cv2.BORDER_CONSTANT, borderValue=0).astype(bool)
                    for r in (style.outline_px, style.outline_px + style.rim_px))
    return outer & ~inner & allowed, inner & ~mask & allowed


def _outside_box(region: np.ndarray, covered: np.ndarray, labels: np.ndarray,
                 areas: Mapping[int, int], size: tuple[int, int], style: MarkStyle) -> Box:
    bw, bh = size
    ys, xs = np.nonzero(region)
    x0, y0, x1, y1 = int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1
    cx, cy = (x0 + x1 - bw) // 2, (y0 + y1 - bh) // 2
    candidates: list[tuple[int, int]] = []
    for ring in range(3):  # beside the outline first, then one and two boxes further out
        gap = style.outline_px + style.rim_px + 1 + ring * bh
        candidates += [(x, y0 - gap - bh) for x in (cx, x0, x1 - bw)]  # above
        candidates += [(x1 + gap, y) for y in (cy, y0, y1 - bh)]  # right
        candidates += [(x0 - gap - bw, y) for y in (cy, y0, y1 - bh)]  # left
        candidates += [(x, y1 + gap) for x in (cx, x0, x1 - bw)]  # below
    boxes = [_clip(corner, bw, bh, region.shape) for corner in candidates]
    # Never over an earlier number, then least of this object, then hide no other object
    # (marked or not: a question may name it) beyond the same share; a sliver of a large
    # neighbour is fine, a far spot with a long leader across the scene is worse. The list
    # order is the nearness preference and breaks ties deterministically.
    return min(boxes, key=lambda b: (_count(covered, b), _count(region, b),
                                     _hidden(labels, b, areas, style.max_label_cover)))


def _hidden(labels: np.ndarray, box: Box, areas: Mapping[int, int], share: float) -> int:
    crop = labels[box[1]:box[3], box[0]:box[2]]
    ids, counts = np.unique(crop[crop != 0], return_counts=True)
    return sum(int(c) > share * areas[int(i)] for i, c in zip(ids, counts, strict=True))


def _clip(corner: tuple[int, int], bw: int, bh: int, shape: tuple[int, ...]) -> Box:
    x = min(max(corner[0], 0), max(shape[1] - bw, 0))
    y = min(max(corner[1], 0), max(shape[0] - bh, 0))
    return x, y, min(x + bw, shape[1]), min(y + bh, shape[0])


def _count(mask: np.ndarray, box: Box) -> int:
    return int(np.count_nonzero(mask[box[1]:box[3], box[0]:box[2]]))


def _describe(a: object) -> str:
    return f"shape {a.shape} dtype {a.dtype}" if isinstance(a, np.ndarray) else type(a).__name__


def _check_labels(labels: np.ndarray, numbers: Mapping[int, int]) -> None:
    if (not isinstance(labels, np.ndarray) or labels.ndim != 2
            or not np.issubdtype(labels.dtype, np.integer)):
        raise ValueError(f"labels must be an integer (H, W) array, got {_describe(labels)}")
    seen: dict[int, int] = {}
    for lab, number in numbers.items():
        if not _is_int(lab) or lab == 0:
            raise ValueError(f"numbers key {lab!r} is not a non-zero int label (0 = no object)")
        if not _is_int(number) or number <= 0:
            raise ValueError(f"numbers[{lab}] = {number!r} is not a positive int")
        if int(number) in seen:
            raise ValueError(f"number {number} is given to labels {seen[int(number)]} and {lab}")
        seen[int(number)] = int(lab)
