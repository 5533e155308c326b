"""The shape of one coloured region: which primitive it is (:func:`classify_crop`), and whether
it is a clean primitive at all — the cues that make the colour/shape detector abstain
(:mod:`eval_assets.perception.color_detector`, whose module doc describes the naming cues).

The naming cues (circle fit, column shading) assume a flat albedo on a convex solid whose
outline, where it is not convex, is cut by a nearer object. Objects the detector was not written
for break that assumption in ways these measures see, all on the region itself and on the colour
labels around it:

* **Texture (two-tone pattern)** — :func:`hole_share`. A patterned surface tinted with a palette
  colour keeps the colour only on its light tone; the dark (or white) tone is not that colour, so
  the region has holes (a soccer ball's patches: 3–24 % of its outline's area). A flat palette
  albedo has none. A hole that another vocabulary colour fills is an object in front, not
  texture (a saturated tone of another hue inside the outline is the pattern's, not an object's).
  (Edge density inside the region was measured too and rejected: a box's narrow dark side face
  and a dark-blue ball's shaded limb reach the densities of the simulated teddy bear's fur.)
* **Irregular outline (limbs, ears, a mug's handle)** — :func:`concavity`: the depths of the
  pockets between the outline and its convex hull that nothing saturated fills, summed over the
  square root of the hull's area. A box, ball or cylinder is convex; where its outline is not, a
  nearer object fills the pocket, and objects are saturated where the room is not.
* **Split by a nearer object** — :func:`fragments`: pieces of one colour joined through other
  labelled pixels (an object of another colour in front of one object, or between two) or a gap
  of a few pixels. Whether they are one object or two the image does not say.
* **Box taken by another object** — :func:`dominated`: a region that is not the largest
  single-colour region of its own box. A box prompt (the ``box_region`` segmenter, and any
  box-prompted segmenter) would cut the other object out of it.

Every function takes explicit arrays and thresholds; the thresholds are fields of
:class:`~eval_assets.perception.color_detector.ColorShapeParams`.
"""

from __future__ import annotations

import math
from collections import Counter
from functools import lru_cache

import cv2
import numpy as np

from eval_assets.perception.color_params import ColorShapeParams


def occluders(image: np.ndarray, labels: np.ndarray, colour: int,
              window: tuple[int, int, int, int], margin_px: int,
              saturation: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """Two boolean masks over ``window`` = (x, y, width, height): the pixels within
    ``margin_px`` of a pixel of another vocabulary colour than ``colour`` (``labels``: colour
    index per pixel, −1 where none), and of any saturated pixel not of ``colour``
    (``saturation`` = (least saturation, least value) of a pixel that carries a colour).

    The margin covers the seam of neither colour that blur leaves between two objects. The room
    is desaturated, so a saturated pixel of another hue is an object, palette or not.
    """
    x, y, w, h = window
    height, width = labels.shape
    px0, py0 = max(x - margin_px, 0), max(y - margin_px, 0)
    px1, py1 = min(x + w + margin_px, width), min(y + h + margin_px, height)
    crop = labels[py0:py1, px0:px1]
    rgb = image[py0:py1, px0:px1]
    # HSV's saturation (max − min) / max and value max / 255, without converting every pixel.
    high = np.maximum(np.maximum(rgb[:, :, 0], rgb[:, :, 1]), rgb[:, :, 2]).astype(np.float32)
    low = np.minimum(np.minimum(rgb[:, :, 0], rgb[:, :, 1]), rgb[:, :, 2])
    coloured = (high - low >= saturation[0] * high) & (high >= saturation[1] * 255.0)
    out = []
    for other in ((crop >= 0) & (crop != colour), coloured & (crop != colour)):
        mask = other.astype(np.uint8)
        if margin_px > 0 and mask.any():
            size = 2 * margin_px + 1
            mask = cv2.dilate(mask, cv2.getStructuringElement(cv2.MORPH_RECT, (size, size)))
        out.append(mask[y - py0:y - py0 + h, x - px0:x - px0 + w].astype(bool))
    return out[0], out[1]


def outline(region: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The outer contour (N, 1, 2) of a one-component boolean region, and the region with its
    holes filled (boolean, the region's shape)."""
    contours, _ = cv2.findContours(region.astype(np.uint8), cv2.RETR_EXTERNAL,
                                   cv2.CHAIN_APPROX_NONE)
    contour = max(contours, key=len)
    inside = np.zeros(region.shape, dtype=np.uint8)
    cv2.drawContours(inside, [contour], -1, 1, thickness=-1)
    return contour, inside.astype(bool)


def hole_share(region: np.ndarray, inside: np.ndarray, occluded: np.ndarray) -> float:
    """Share of the area inside the region's outline (``inside``, see :func:`outline`) that the
    region does not cover and ``occluded`` does not explain."""
    holes = inside & ~region & ~occluded
    return float(holes.sum()) / max(float(inside.sum()), 1.0)


def concavity(contour: np.ndarray, inside: np.ndarray, occluded: np.ndarray,
              min_depth_px: float, min_occluded_share: float) -> float:
    """Sum of the depths (px) of a region's open pockets, over the square root of its convex
    hull's area (``contour``, ``inside``: see :func:`outline`). A pocket is a connected part of
    the hull outside the outline; its depth is its farthest pixel's distance from the hull's
    edge; it is open (counted) when at least ``min_depth_px`` deep and less than
    ``min_occluded_share`` covered by ``occluded``.

    Pockets rather than ``cv2.convexityDefects``: that needs a simple outline, and a thin handle
    attached by one-pixel bridges makes the outline touch itself.
    """
    hull = np.zeros(inside.shape, dtype=np.uint8)
    cv2.fillPoly(hull, [cv2.convexHull(contour)], 1)
    pockets = hull.astype(bool) & ~inside
    # A pixel at least min_depth_px from the hull's edge: every pixel nearer is in the hull
    # (outside the crop counts as outside). Cheaper than the distance transform, which only
    # a deep pocket needs.
    if not (pockets & cv2.erode(hull, _disc(min_depth_px), borderType=cv2.BORDER_CONSTANT,
                                borderValue=0).astype(bool)).any():
        return 0.0  # a clean primitive's usual case
    depth = cv2.distanceTransform(np.pad(hull, 1), cv2.DIST_L2, cv2.DIST_MASK_PRECISE)[1:-1, 1:-1]
    _, pocket_of = cv2.connectedComponents(pockets.astype(np.uint8), connectivity=8)
    total = 0.0
    for k in np.unique(pocket_of[pockets & (depth >= min_depth_px)]):
        pocket = pocket_of == k
        if float(occluded[pocket].sum()) < min_occluded_share * float(pocket.sum()):
            total += float(depth[pocket].max())
    return total / math.sqrt(max(float(hull.sum()), 1.0))


@lru_cache(maxsize=8)
def _disc(radius: float) -> np.ndarray:
    """Structuring element of the pixel offsets nearer than ``radius``."""
    reach = math.ceil(radius)
    yy, xx = np.mgrid[-reach:reach + 1, -reach:reach + 1]
    return (xx * xx + yy * yy < radius * radius).astype(np.uint8)


def fragments(labels: np.ndarray, comp: np.ndarray, tops: dict[int, tuple[int, int, int]],
              gap_px: int) -> set[int]:
    """The components of one colour (ids of ``comp``, the keys of ``tops``) that are joined to
    another of them through labelled pixels of any colour or a gap of at most ``2 × gap_px``.

    ``labels`` and ``comp`` cover the same crop (colour labels, the colour's component ids);
    ``tops`` gives each component's bounding-box top row, left column and width in it.
    """
    if len(tops) < 2:
        return set()
    size = 2 * gap_px + 1
    joined = cv2.dilate((labels >= 0).astype(np.uint8),
                        cv2.getStructuringElement(cv2.MORPH_RECT, (size, size)))
    _, blob = cv2.connectedComponents(joined, connectivity=8)
    blob_of = {}
    for j, (y, x, w) in tops.items():
        # The top row of a component's box holds one of its pixels; all lie in one blob.
        first = x + int(np.argmax(comp[y, x:x + w] == j))
        blob_of[j] = int(blob[y, first])
    counts = Counter(blob_of.values())
    return {j for j, b in blob_of.items() if counts[b] > 1}


def dominated(labels_box: np.ndarray, comp_box: np.ndarray, colour: int, component: int) -> bool:
    """Whether, inside the region's own box, another colour has more pixels than the region's
    colour, or another component of its colour has more pixels than the region."""
    labelled = labels_box[labels_box >= 0]
    counts = np.bincount(labelled, minlength=colour + 1)
    if counts.size and int(np.argmax(counts)) != colour:
        return True
    own = np.bincount(comp_box.reshape(-1), minlength=component + 1)
    own[0] = 0
    return int(np.argmax(own)) != component


# --- which primitive a region is --------------------------------------------------------------


def _circle_fit(region: np.ndarray, origin: tuple[int, int] = (0, 0),
                size: tuple[int, int] | None = None) -> tuple[float, float]:
    """(RMS residual / radius, filled share of the circle inside the image) of a region.

    ``region`` may be a crop at ``origin`` (x, y) of an image of ``size`` (h, w) with at least one
    empty pixel around the region where the crop does not reach the image border.
    """
    h, w = size or region.shape
    pts = _outline_points(region, origin, (h, w))
    if len(pts) < 8:
        return math.inf, 0.0
    # Algebraic (Kåsa) fit: x² + y² = a x + b y + c is linear in a, b, c.
    design = np.column_stack([pts[:, 0], pts[:, 1], np.ones(len(pts))])
    a, b, c = np.linalg.lstsq(design, (pts ** 2).sum(axis=1), rcond=None)[0]
    cx, cy = a / 2.0, b / 2.0
    r2 = c + cx * cx + cy * cy
    if r2 <= 1.0:
        return math.inf, 0.0
    r = math.sqrt(r2)
    residual = float(np.sqrt(np.mean((np.hypot(pts[:, 0] - cx, pts[:, 1] - cy) - r) ** 2)) / r)
    x0, x1 = max(int(cx - r) - 1, 0), min(int(cx + r) + 2, w)
    y0, y1 = max(int(cy - r) - 1, 0), min(int(cy + r) + 2, h)
    if x1 <= x0 or y1 <= y0:
        return residual, 0.0
    yy, xx = np.mgrid[y0:y1, x0:x1]
    disc = (xx - cx) ** 2 + (yy - cy) ** 2 <= r2
    return residual, _filled_share(disc, (x0, y0), region, origin)


def _outline_points(region: np.ndarray, origin: tuple[int, int], size: tuple[int, int]
                    ) -> np.ndarray:
    """The region's outer outline in image coordinates (float), without the points on the
    image border: there the frame cuts the object, not its silhouette."""
    h, w = size
    contours, _ = cv2.findContours(region.astype(np.uint8), cv2.RETR_EXTERNAL,
                                   cv2.CHAIN_APPROX_NONE)
    pts = max(contours, key=len).reshape(-1, 2).astype(np.float64) + np.array(origin)
    inside = (pts[:, 0] > 0) & (pts[:, 0] < w - 1) & (pts[:, 1] > 0) & (pts[:, 1] < h - 1)
    return np.asarray(pts[inside])


def _filled_share(shape: np.ndarray, corner: tuple[int, int], region: np.ndarray,
                  origin: tuple[int, int]) -> float:
    """The share of a fitted ``shape`` (a boolean window whose top-left pixel is ``corner``,
    x, y) that the ``region`` (a crop at ``origin``) fills; zero outside the crop."""
    x0, y0 = corner
    ox, oy = origin
    h, w = shape.shape
    window = np.zeros(shape.shape, dtype=bool)
    rh, rw = region.shape
    wy0, wy1 = max(y0, oy), min(y0 + h, oy + rh)
    wx0, wx1 = max(x0, ox), min(x0 + w, ox + rw)
    if wy1 > wy0 and wx1 > wx0:
        window[wy0 - y0:wy1 - y0, wx0 - x0:wx1 - x0] = region[wy0 - oy:wy1 - oy, wx0 - ox:wx1 - ox]
    return float((shape & window).sum() / max(int(shape.sum()), 1))


def _radial_ellipse_fit(region: np.ndarray, origin: tuple[int, int], size: tuple[int, int],
                        params: ColorShapeParams) -> tuple[float, float] | None:
    """(RMS residual, filled share) of the ellipse fitted to a region's outline, or None when
    that ellipse is not a sphere's off-axis image (too elongated, or its long axis not pointing
    away from the image centre, or the region too close to the centre to tell).

    Same conventions as :func:`_circle_fit`; the residual is the RMS of the outline points'
    normalised radius ``√((u/a)² + (v/b)²) − 1``.
    """
    h, w = size
    pts = _outline_points(region, origin, size)
    if len(pts) < 8:
        return None
    (cx, cy), (d0, d1), angle = cv2.fitEllipse(pts.astype(np.float32))
    if not (math.isfinite(cx) and math.isfinite(cy)) or min(d0, d1) <= 2.0:
        return None
    long_deg = angle if d0 >= d1 else angle + 90.0
    ratio = min(d0, d1) / max(d0, d1)
    off = np.array([cx - (w - 1) / 2.0, cy - (h - 1) / 2.0])
    if (ratio < params.ellipse_min_axis_ratio
            or np.hypot(*off) < params.ellipse_min_offset * np.hypot(w, h) / 2.0):
        return None
    turn = abs((long_deg - math.degrees(math.atan2(off[1], off[0]))) % 180.0)
    if min(turn, 180.0 - turn) > params.ellipse_max_axis_turn_deg:
        return None
    theta = math.radians(angle)
    du, dv = pts[:, 0] - cx, pts[:, 1] - cy
    u = du * math.cos(theta) + dv * math.sin(theta)
    v = -du * math.sin(theta) + dv * math.cos(theta)
    rho = np.hypot(u / (d0 / 2.0), v / (d1 / 2.0))
    residual = float(np.sqrt(np.mean((rho - 1.0) ** 2)))
    r = max(d0, d1) / 2.0
    x0, x1 = max(int(cx - r) - 1, 0), min(int(cx + r) + 2, w)
    y0, y1 = max(int(cy - r) - 1, 0), min(int(cy + r) + 2, h)
    if x1 <= x0 or y1 <= y0:
        return residual, 0.0
    yy, xx = np.mgrid[y0:y1, x0:x1].astype(np.float64)
    eu = (xx - cx) * math.cos(theta) + (yy - cy) * math.sin(theta)
    ev = -(xx - cx) * math.sin(theta) + (yy - cy) * math.cos(theta)
    disc = (eu / (d0 / 2.0)) ** 2 + (ev / (d1 / 2.0)) ** 2 <= 1.0
    return residual, _filled_share(disc, (x0, y0), region, origin)


def _column_slope(region: np.ndarray, luma: np.ndarray, params: ColorShapeParams) -> float | None:
    """Median brightness change per column / brightness × region height; None if too narrow."""
    kernel = np.ones((3, 3), np.uint8)
    # Thin regions (slivers cut by the frame) keep more of their blurred border rather than
    # losing the shading cue altogether.
    for erode in range(params.erode_px, -1, -1):
        interior = cv2.erode(region.astype(np.uint8), kernel, iterations=erode) > 0 \
            if erode else region
        ys, xs = np.nonzero(interior)
        cols = np.unique(xs)
        if cols.size >= params.min_shading_columns:
            break
    else:
        return None
    values = luma[ys, xs]
    order = np.lexsort((values, xs))  # by column, then brightness
    xs_sorted, values = xs[order], values[order]
    starts = np.searchsorted(xs_sorted, cols, side="left")
    counts = np.diff(np.append(starts, xs_sorted.size))
    # Per-column median, as np.median computes it: the middle value, or the float mean of the two.
    lo, hi = starts + (counts - 1) // 2, starts + counts // 2
    profile = (values[lo] + values[hi]) / values.dtype.type(2)
    mean = float(profile.mean())
    if mean <= 0.0:
        return None
    lag = max(1, round(cols.size / 8))
    if profile.size <= lag:
        return None
    per_column = float(np.median(np.abs(profile[lag:] - profile[:-lag]))) / lag
    height = float(np.median(region.sum(axis=0)[cols]))
    return per_column / mean * height


def _outline_shape(region: np.ndarray) -> tuple[str, float]:
    """Shape of a region too small for shading: circularity and aspect of its outline."""
    contours, _ = cv2.findContours(region.astype(np.uint8), cv2.RETR_EXTERNAL,
                                   cv2.CHAIN_APPROX_NONE)
    contour = max(contours, key=len)
    area = float(region.sum())
    perimeter = max(cv2.arcLength(contour, True), 1.0)
    circularity = 4.0 * math.pi * area / perimeter ** 2
    _, _, w, h = cv2.boundingRect(contour)
    aspect = h / max(w, 1)
    if circularity >= 0.8 and 0.75 <= aspect <= 1.33:
        return "ball", 0.5
    if aspect >= 1.8:
        return "cylinder", 0.5
    return "box", 0.5


def classify_shape(region: np.ndarray, luma: np.ndarray,
                   params: ColorShapeParams) -> tuple[str, float]:
    """``(shape, score)`` of one region (bool H×W) given the image's luma (float H×W).

    The score is 0.5 at a decision threshold and rises to 1.0 with the margin from it.
    """
    return classify_crop(region, luma, params, (0, 0), region.shape)


def classify_crop(region: np.ndarray, luma: np.ndarray, params: ColorShapeParams,
                   origin: tuple[int, int], size: tuple[int, int]) -> tuple[str, float]:
    """:func:`classify_shape` of a region cropped at ``origin`` (x, y) from an image of ``size``.

    The crop (of the region and of the luma) must leave one empty pixel around the region except
    at the image border; every measure is then the same as on the whole image, at the cost of
    the region's size rather than the image's.
    """
    residual, coverage = _circle_fit(region, origin, size)
    if residual <= params.circle_max_residual and coverage >= params.circle_min_coverage:
        margin = min(1.0 - residual / params.circle_max_residual,
                     (coverage - params.circle_min_coverage) / (1.0 - params.circle_min_coverage))
        return "ball", 0.5 + 0.5 * min(max(margin, 0.0), 1.0)
    ellipse = _radial_ellipse_fit(region, origin, size, params)
    if ellipse is not None:
        residual, coverage = ellipse
        if residual <= params.circle_max_residual and coverage >= params.circle_min_coverage:
            margin = min(1.0 - residual / params.circle_max_residual,
                         (coverage - params.circle_min_coverage)
                         / (1.0 - params.circle_min_coverage))
            return "ball", 0.5 + 0.5 * min(max(margin, 0.0), 1.0)
    slope = _column_slope(region, luma, params)
    if slope is None:
        return _outline_shape(region)
    ratio = slope / params.cylinder_min_slope
    if ratio >= 1.0:
        return "cylinder", 0.5 + 0.5 * min(ratio - 1.0, 1.0)
    return "box", 0.5 + 0.5 * (1.0 - ratio)
