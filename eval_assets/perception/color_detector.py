"""The offline default perception: a classical prompt detector for "<colour> <shape>" names.

No registry package ships weights for an open-vocabulary detector or a SAM-family segmenter (see
``models.md``), so the default evidence comes from the scene's own regularities: objects have
saturated albedos and the room is desaturated. A pixel belongs to a colour when its saturation
and value are high enough and its hue is nearest that colour's reference hue; each 8-connected
region of one colour is one instance. The shape is told apart by two cues, both measured on the
region itself (:mod:`eval_assets.perception.shape_cues`):

* **ball** — the region's outline (ignoring the image border, where it is cut) fits a circle and
  fills it. Spheres are the only shape whose silhouette is a disc from every viewpoint. Off the
  optical axis a rectified (pinhole) image stretches a sphere into an ellipse whose long axis
  points away from the image centre, so an outline that fits and fills such an ellipse (long
  axis radial, not too elongated) is a ball too.
* **cylinder vs box** — shading across the columns. Under a directional light, a box face is
  planar and shades almost uniformly (its brightness changes only in one step, at the edge
  between two faces); an upright cylinder's normal turns across its width, so its brightness
  changes steadily from column to column. The typical change per column, relative to the
  brightness and scaled by the region's height (so the measure does not depend on how far away
  or how truncated the object is), separates the two.
* Regions too small to measure shading fall back to the outline: circularity and aspect.

A shape word is said only where that evidence is unambiguous. A region is not named (the reason
is :attr:`Instance.why`) when it is

* ``small`` or ``short`` — under ``min_area_px`` (or, unless the frame cuts it, under
  ``min_clean_px``: too far to see whether it is a clean primitive), or fewer than
  ``min_shape_rows`` rows tall: neither cue can tell its shape;
* ``albedo`` — not the palette's albedo: its median saturation more than
  ``max_saturation_offset`` below its reference colour's or ``max_saturation_excess`` above it,
  or its median hue beyond ``max_median_hue_deg`` (a brown teddy bear read as "red", a wooden
  block as "orange", a duck's yellow body);
* ``split`` — one of several pieces of its colour joined through another colour (a nearer
  object cutting one object in two, or standing between two): one object or two is unknown;
* ``texture`` — a two-tone pattern: holes inside its outline that no other colour fills (a
  palette-tinted soccer ball's patches, a mug's handle loop);
* ``outline`` — an irregular outline: concavities no nearer object of another colour fills (a
  teddy bear's limbs and ears, a mug's handle);
* ``score`` — its shape decided near a cue's threshold (``min_name_score``);
* ``box`` — its own box holds more of another colour, or of another region of its colour, than
  of itself: a box prompt would segment that instead (the ``box_region`` segmenter takes the
  box's dominant colour).

Such a region is *unsure*: :meth:`ColorShapeDetector.unsure` reports it under every name of its
colour, so the question rules can refuse to answer "no" or "exactly one" where that region might
be the object.

Every threshold is a named field of :class:`ColorShapeParams`; the values were measured on
rectified JPEG frames of the bundled sample, unseen synthesized scenes and PyBullet renders of
the simulator's catalogue tinted with palette colours (see the perception tests).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from eval_assets.perception.color_params import ColorShapeParams
from eval_assets.perception.protocols import Box, ConfigurationError, check_rgb
from eval_assets.perception.shape_cues import (
    classify_crop,
    concavity,
    dominated,
    fragments,
    hole_share,
    occluders,
    outline,
)
from eval_assets.synth.scene import PALETTE, SHAPES

COLOR_DETECTOR_VERSION = "hsv-shape/5"  # 2: off-axis balls (ellipse fit); 3: abstains on slivers;
# 4: names only regions of the palette's albedo, reports unsure regions; 5: names only clean
# primitives (no texture holes, no open concavities, not split, not dominated in its own box)
_LUMA = np.array([0.299, 0.587, 0.114], dtype=np.float32)
_BAND_ROWS = 32  # rows per band of the colour classification (temporaries of ~0.5 MB at 1280 px)


@dataclass(frozen=True)
class Instance:
    """One coloured region and the shape it was classified as."""

    color: str
    shape: str
    box_xyxy: tuple[float, float, float, float]
    score: float
    area: int
    sure: bool = True
    """False for a region seen but not named (``shape`` is then empty): see the module doc."""
    why: str = ""
    """For an unsure region, why it was not named: ``small``, ``short``, ``albedo``, ``split``,
    ``texture``, ``outline``, ``score`` or ``box`` (see the module doc)."""


def _rgb(rgb: tuple[int, int, int]) -> tuple[int, int, int]:
    """A copy of ``rgb`` as a tuple (a configuration may give a list)."""
    red, green, blue = rgb
    return (red, green, blue)


def _hue_deg(rgb: tuple[int, int, int]) -> float:
    pixel = np.array([[rgb]], dtype=np.float32) / 255.0
    return float(cv2.cvtColor(pixel, cv2.COLOR_RGB2HSV)[0, 0, 0])


def _saturation(rgb: tuple[int, int, int]) -> float:
    pixel = np.array([[rgb]], dtype=np.float32) / 255.0
    return float(cv2.cvtColor(pixel, cv2.COLOR_RGB2HSV)[0, 0, 1])


def _albedo_offsets(image: np.ndarray, region: np.ndarray, origin: tuple[int, int],
                    hue: float, saturation: float) -> tuple[float, float]:
    """(median hue distance in degrees, median saturation − ``saturation``) of the pixels of
    ``region`` (a boolean crop whose top-left pixel is ``origin`` = (x, y) in ``image``).

    Measured inside the region (eroded by one pixel, unless nothing would be left): its outline
    pixels are blurred with the background by JPEG and rectification, which desaturates a thin
    region's median (a 5 px wide green cylinder cut by the sample's frame 19: 0.094 below its
    albedo over all pixels, 0.039 inside).
    """
    gx, gy = origin
    crop = image[gy:gy + region.shape[0], gx:gx + region.shape[1]].astype(np.float32)
    # Replicated border: where the image edge cuts the region there is no blurred outline.
    inner = cv2.erode(region.astype(np.uint8), np.ones((3, 3), np.uint8),
                      borderType=cv2.BORDER_REPLICATE).astype(bool)
    hsv = cv2.cvtColor(crop / np.float32(255.0), cv2.COLOR_RGB2HSV)[
        inner if inner.any() else region]
    diff = np.abs(hsv[:, 0] - hue)
    return (float(np.median(np.minimum(diff, 360.0 - diff))),
            float(np.median(hsv[:, 1])) - saturation)


class _LastFrame:
    """What was derived from the most recent image, shared by every detector and segmenter here.

    A prompted detector is asked about many names per image and the segmenter about every box,
    so each image is analysed once. A lookup compares the image with a private copy of the last
    one (exact, and cheaper than hashing it); a different image drops everything derived.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._image: np.ndarray | None = None
        self._values: dict[Hashable, Any] = {}

    def get(self, image: np.ndarray, key: Hashable, compute: Callable[[np.ndarray], Any]) -> Any:
        """``compute(image)``, or its stored result if ``image`` equals the last image."""
        with self._lock:
            if not _same_pixels(self._image, image):
                self._image = np.array(image, copy=True, order="C")
                self._values = {}
            if key not in self._values:
                self._values[key] = compute(image)
            return self._values[key]


_LAST_FRAME = _LastFrame()


def _same_pixels(last: np.ndarray | None, image: np.ndarray) -> bool:
    """Whether ``image`` holds exactly the pixels of ``last`` (a C-contiguous copy)."""
    if last is None or last.shape != image.shape or last.dtype != image.dtype:
        return False
    if image.flags.c_contiguous and image.nbytes % 8 == 0:
        # Eight bytes per comparison: a third of the time of an element-wise comparison.
        return bool(np.array_equal(last.reshape(-1).view(np.uint64),
                                   image.reshape(-1).view(np.uint64)))
    return bool(np.array_equal(last, image))


class ColorClassifier:
    """Per-pixel colour labels against a vocabulary of reference colours."""

    def __init__(self, vocabulary: Mapping[str, tuple[int, int, int]],
                 params: ColorShapeParams) -> None:
        """``vocabulary`` maps a colour word to its reference RGB (saturated albedo)."""
        if not vocabulary:
            raise ValueError("the colour vocabulary is empty; give at least one colour → RGB")
        self.colors = list(vocabulary)
        self.params = params
        self._hues = np.array([_hue_deg(vocabulary[c]) for c in self.colors],
                              dtype=np.float32)
        self._saturations = np.array([_saturation(vocabulary[c]) for c in self.colors],
                                     dtype=np.float32)
        self._memo_key = ("labels", tuple(self._hues.tolist()), params)

    def labels(self, image: np.ndarray) -> np.ndarray:
        """(H, W) int16: index into ``colors`` per pixel, −1 where no colour applies (read-only)."""
        return self.labelled(image)[0]

    def labelled(self, image: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(labels, flat, colour)``: :meth:`labels`, and the flat (row-major) index and colour
        index of every labelled pixel in ascending index order (all read-only)."""
        return _LAST_FRAME.get(image, self._memo_key, self._label)

    def _label(self, image: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        # The float32 HSV of the whole image, a band of rows at a time (OpenCV converts row by
        # row, so the values are the same; the temporaries stay in cache). Hue distances only for
        # the pixels saturated and bright enough to carry a colour: few, in a desaturated room.
        p = self.params
        height, width = image.shape[:2]
        flat_parts: list[np.ndarray] = []
        colour_parts: list[np.ndarray] = []
        for y0 in range(0, height, _BAND_ROWS):
            unit = image[y0:y0 + _BAND_ROWS].astype(np.float32)
            unit /= np.float32(255.0)
            hsv = cv2.cvtColor(unit, cv2.COLOR_RGB2HSV).reshape(-1, 3)
            candidates = np.flatnonzero((hsv[:, 1] >= p.min_saturation) &
                                        (hsv[:, 2] >= p.min_value))
            if candidates.size == 0:
                continue
            hue = hsv[candidates, 0]
            # Circular distance to each reference hue; the first nearest wins ties (as argmin).
            near = np.full(hue.shape, np.inf, dtype=np.float32)
            nearest = np.zeros(hue.shape, dtype=np.int16)
            for k, ref in enumerate(self._hues):
                diff = np.abs(hue - ref)
                dist = np.minimum(diff, 360.0 - diff)
                closer = dist < near
                near[closer] = dist[closer]
                nearest[closer] = k
            ok = near <= p.max_hue_distance_deg
            flat_parts.append(candidates[ok] + y0 * width)
            colour_parts.append(nearest[ok])
        flat = np.concatenate(flat_parts) if flat_parts else np.zeros(0, dtype=np.intp)
        colour = np.concatenate(colour_parts) if colour_parts else np.zeros(0, dtype=np.int16)
        labels = np.full(height * width, -1, dtype=np.int16)
        labels[flat] = colour
        labels = labels.reshape(height, width)
        for array in (labels, flat, colour):
            array.flags.writeable = False
        return labels, flat, colour


class _Frame:
    """One image being analysed: its pixels, colour labels and (computed once, when first
    needed) luma."""

    def __init__(self, image: np.ndarray, labels: np.ndarray) -> None:
        self.image = image
        self.labels = labels
        self._luma: np.ndarray | None = None

    @property
    def luma(self) -> np.ndarray:
        """(H, W) float32 luma of the image."""
        if self._luma is None:
            self._luma = self.image.astype(np.float32) @ _LUMA
        return self._luma


class _Component:
    """One connected region of a colour, labelled in a window of the image at ``offset``."""

    def __init__(self, comp: np.ndarray, index: int, stats: np.ndarray,
                 offset: tuple[int, int]) -> None:
        x, y, w, h, area = (int(v) for v in stats)
        ox, oy = offset
        self.index, self.area = index, area
        self.xywh = (ox + x, oy + y, w, h)
        # The component's own box plus one pixel (clipped to the window): the shape cues need
        # its outline and where the image border cuts it, not the whole frame.
        cy0, cx0 = max(y - 1, 0), max(x - 1, 0)
        self.comp_crop = comp[cy0:min(y + h + 1, comp.shape[0]),
                              cx0:min(x + w + 1, comp.shape[1])]
        self.region = self.comp_crop == index
        self.origin = (ox + cx0, oy + cy0)

    def cut_by(self, size: tuple[int, int]) -> bool:
        """Whether the border of an image of ``size`` (h, w) cuts the region."""
        x, y, w, h = self.xywh
        return x == 0 or y == 0 or x + w == size[1] or y + h == size[0]


class ColorShapeDetector:
    """Prompt detector for ``"<colour> <shape>"`` names (colour words from the vocabulary).

    ``vocabulary`` maps colour words to reference RGB albedos; the default is the sample scene's
    palette. Shapes are ``box``, ``ball`` and ``cylinder``. A name outside that vocabulary is an
    error (an unknown word would otherwise look like "not present").
    """

    name = "color_shape"
    version = COLOR_DETECTOR_VERSION

    def __init__(self, vocabulary: Mapping[str, tuple[int, int, int]] | None = None,
                 params: ColorShapeParams | None = None) -> None:
        """Build the colour classifier for ``vocabulary`` (default: the sample palette)."""
        self.params = params or ColorShapeParams()
        source = vocabulary if vocabulary is not None else PALETTE
        # Names are matched case-insensitively, so the colour words are kept lower-case.
        self.vocabulary = {c.strip().lower(): _rgb(rgb) for c, rgb in source.items()}
        self.shapes = tuple(SHAPES)
        self.classifier = ColorClassifier(self.vocabulary, self.params)
        self._memo_key = ("instances", tuple(self.classifier.colors), self.classifier._memo_key,
                          self.shapes)

    def names(self) -> list[str]:
        """Every name this detector understands: each colour with each shape."""
        return [f"{c} {s}" for c in self.vocabulary for s in self.shapes]

    def parse(self, object_name: str) -> tuple[str, str]:
        """``(colour, shape)`` of a name, or :class:`ConfigurationError` naming the words."""
        words = object_name.strip().lower().split()
        if len(words) != 2 or words[0] not in self.vocabulary or words[1] not in self.shapes:
            raise ConfigurationError(
                f"the color detector cannot look for {object_name!r}: it understands "
                f"'<colour> <shape>' with colours {sorted(self.vocabulary)} and shapes "
                f"{list(self.shapes)}; use those names in the vocabulary, or configure "
                "detector 'moondream' for open-vocabulary names"
            )
        return words[0], words[1]

    def instances(self, image: np.ndarray) -> list[Instance]:
        """Every coloured region of ``image`` with its shape, ordered by colour then position."""
        check_rgb(image)
        return list(_LAST_FRAME.get(image, self._memo_key, self._find_instances))

    def _find_instances(self, image: np.ndarray) -> tuple[Instance, ...]:
        labels, flat, colour = self.classifier.labelled(image)
        frame = _Frame(image, labels)
        found: list[Instance] = []
        for ci in range(len(self.classifier.colors)):
            pixels = flat[colour == ci]
            if pixels.size:
                found.extend(self._colour_instances(frame, ci, pixels))
        found.sort(key=lambda i: (self.classifier.colors.index(i.color), i.box_xyxy[0],
                                  i.box_xyxy[1]))
        return tuple(found)

    def _colour_instances(self, frame: _Frame, ci: int, pixels: np.ndarray) -> list[Instance]:
        """One instance per 8-connected region of colour ``ci`` (``pixels``: its flat indices)."""
        height, width = frame.labels.shape
        rows, cols = np.divmod(pixels, width)
        # Label only the colour's bounding box (plus one empty pixel). Even offsets keep
        # OpenCV's 2x2-block labelling, and so the component numbering, as on the full image.
        y0, x0 = max(int(rows[0]) - 1, 0) & ~1, max(int(cols.min()) - 1, 0) & ~1
        y1, x1 = min(int(rows[-1]) + 2, height), min(int(cols.max()) + 2, width)
        window = frame.labels[y0:y1, x0:x1]
        n, comp, stats, _ = cv2.connectedComponentsWithStats((window == ci).astype(np.uint8),
                                                             connectivity=8)
        # Smaller regions are too small to be an object the truth counts as visible.
        parts = [_Component(comp, j, stats[j], (x0, y0)) for j in range(1, n)
                 if stats[j, cv2.CC_STAT_AREA] >= self.params.min_unsure_px]
        # A piece too small to name is unsure anyway (and so is the count of its colour): only
        # pieces that could each be named count as fragments.
        tops = {part.index: (int(stats[part.index, cv2.CC_STAT_TOP]),
                             int(stats[part.index, cv2.CC_STAT_LEFT]),
                             int(stats[part.index, cv2.CC_STAT_WIDTH]))
                for part in parts if self._large_enough(part, frame)}
        split = fragments(window, comp, tops, self.params.occluder_margin_px)
        return [self._instance(frame, ci, part, part.index in split) for part in parts]

    def _large_enough(self, part: _Component, frame: _Frame) -> bool:
        """Whether a region has the pixels to be named (see ``min_area_px``, ``min_clean_px``)."""
        return part.area >= self.params.min_area_px and (
            part.area >= self.params.min_clean_px or part.cut_by(frame.labels.shape))

    def _instance(self, frame: _Frame, ci: int, part: _Component, split: bool) -> Instance:
        """The instance of one region: named, or unsure with the first reason that applies."""
        color, (gx, gy), region = self.classifier.colors[ci], part.origin, part.region
        x, y, w, h = part.xywh
        box = (float(x), float(y), float(x + w), float(y + h))
        why = self._unnamed(frame, ci, part, split)
        if not why:
            shape, score = classify_crop(region, frame.luma[gy:gy + region.shape[0],
                                                             gx:gx + region.shape[1]],
                                          self.params, (gx, gy), frame.labels.shape)
            # A shape decided near its threshold is a guess: seen, but not named.
            why = "score" if score < self.params.min_name_score else self._box_taken(
                frame, ci, part)
        if why:
            return Instance(color, "", box, 0.0, part.area, sure=False, why=why)
        return Instance(color, shape, box, score, part.area)

    def _unnamed(self, frame: _Frame, ci: int, part: _Component, split: bool) -> str:
        """Why a region is not named before its shape is measured ("" if nothing stops it)."""
        p = self.params
        if not self._large_enough(part, frame):
            return "small"
        if part.xywh[3] < p.min_shape_rows:
            return "short"
        hue_off, sat_off = _albedo_offsets(frame.image, part.region, part.origin,
                                           float(self.classifier._hues[ci]),
                                           float(self.classifier._saturations[ci]))
        if (hue_off > p.max_median_hue_deg
                or not -p.max_saturation_offset <= sat_off <= p.max_saturation_excess):
            return "albedo"  # some other surface of a nearby hue
        if split:
            return "split"  # one object cut in pieces by a nearer one, or several: unknown
        palette, saturated = occluders(frame.image, frame.labels, ci,
                                       (*part.origin, part.region.shape[1], part.region.shape[0]),
                                       p.occluder_margin_px, (p.min_saturation, p.min_value))
        contour, inside = outline(part.region)
        if hole_share(part.region, inside, palette) > p.max_hole_share:
            return "texture"
        if concavity(contour, inside, saturated, p.min_concavity_px,
                     p.min_occluded_pocket) > p.max_concavity:
            return "outline"
        return ""

    def _box_taken(self, frame: _Frame, ci: int, part: _Component) -> str:
        """"box" when a box prompt would segment another region than this one, else ""."""
        x, y, w, h = part.xywh
        if 2 * part.area > w * h:
            return ""  # it fills most of its box: nothing else can have more of it
        bx, by = x - part.origin[0], y - part.origin[1]
        comp_box = part.comp_crop[by:by + h, bx:bx + w]
        return "box" if dominated(frame.labels[y:y + h, x:x + w], comp_box, ci,
                                  part.index) else ""

    def detect(self, image: np.ndarray, object_name: str) -> list[Box]:
        """One box per connected region of the named colour classified as the named shape."""
        color, shape = self.parse(object_name)
        return [Box(i.box_xyxy, i.score) for i in self.instances(image)
                if i.sure and i.color == color and i.shape == shape]

    def unsure(self, image: np.ndarray, object_name: str) -> list[Box]:
        """Boxes of the regions of the named colour seen but not named (any could be the
        named object): too small or short to name, or off the palette's albedo."""
        color, _ = self.parse(object_name)
        return [Box(i.box_xyxy, 0.0) for i in self.instances(image)
                if not i.sure and i.color == color]
