"""Segmenters that cut an object's mask out of a detector's box: ``box_region`` (the box's
dominant vocabulary colour) and ``grabcut`` (OpenCV's GrabCut, seeded for determinism)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import cv2
import numpy as np

from eval_assets.perception.color_detector import ColorClassifier
from eval_assets.perception.color_params import ColorShapeParams
from eval_assets.perception.protocols import check_rgb
from eval_assets.synth.scene import PALETTE

REGION_SEGMENTER_VERSION = "colour-region/1"
GRABCUT_SEGMENTER_VERSION = "grabcut/1"


class RegionSegmenter:
    """``box_region``: the dominant vocabulary colour inside the box, its largest region.

    Deterministic and instant; meant for the colour vocabulary (a box around an object without a
    vocabulary colour gets an empty mask, never the whole box).
    """

    name = "box_region"
    version = REGION_SEGMENTER_VERSION

    def __init__(self, vocabulary: Mapping[str, tuple[int, int, int]] | None = None,
                 params: ColorShapeParams | None = None) -> None:
        """Use the same colour vocabulary and thresholds as :class:`ColorShapeDetector`."""
        self.classifier = ColorClassifier(dict(vocabulary if vocabulary is not None else PALETTE),
                                          params or ColorShapeParams())

    def segment(self, image: np.ndarray,
                box_xyxy: tuple[float, float, float, float]) -> np.ndarray:
        """Boolean (H, W) mask: the largest region of the box's most frequent colour in the box."""
        mask, (x0, y0, x1, y1) = _empty_mask(image, box_xyxy)
        crop = self.classifier.labels(image)[y0:y1, x0:x1]
        counts = np.bincount(crop[crop >= 0].ravel(), minlength=len(self.classifier.colors))
        if crop.size == 0 or counts.sum() == 0:
            return mask
        dominant = int(np.argmax(counts))
        _, comp, stats, _ = cv2.connectedComponentsWithStats(
            (crop == dominant).astype(np.uint8), connectivity=8)
        largest = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
        mask[y0:y1, x0:x1] = comp == largest
        return mask


class GrabCutSegmenter:
    """``grabcut``: ``cv2.grabCut`` seeded by the box, fixed iterations and a fixed RNG seed.

    Works on a crop around the box (the box plus ``margin_px``), so its cost depends on the
    object's size rather than the frame's. OpenCV's GMM initialisation draws from its global RNG;
    reseeding before every call makes the mask a pure function of image and box.
    """

    name = "grabcut"
    version = GRABCUT_SEGMENTER_VERSION

    def __init__(self, iterations: int = 5, margin_px: int = 12, seed: int = 0) -> None:
        """``iterations`` of GrabCut on the box grown by ``margin_px`` (background seed)."""
        if iterations < 1:
            raise ValueError(f"grabcut iterations must be at least 1, got {iterations}")
        self.iterations = iterations
        self.margin_px = margin_px
        self.seed = seed
        self.version = f"{GRABCUT_SEGMENTER_VERSION}:it{iterations}:m{margin_px}"

    def segment(self, image: np.ndarray,
                box_xyxy: tuple[float, float, float, float]) -> np.ndarray:
        """Boolean (H, W) mask of the foreground GrabCut finds inside the box."""
        mask, (x0, y0, x1, y1) = _empty_mask(image, box_xyxy)
        h, w = mask.shape
        if x1 - x0 < 2 or y1 - y0 < 2:
            return mask
        cx0, cy0 = max(x0 - self.margin_px, 0), max(y0 - self.margin_px, 0)
        cx1, cy1 = min(x1 + self.margin_px, w), min(y1 + self.margin_px, h)
        crop = np.ascontiguousarray(cv2.cvtColor(image[cy0:cy1, cx0:cx1], cv2.COLOR_RGB2BGR))
        gc_mask = np.zeros(crop.shape[:2], dtype=np.uint8)
        bgd = np.zeros((1, 65), dtype=np.float64)
        fgd = np.zeros((1, 65), dtype=np.float64)
        rect = (x0 - cx0, y0 - cy0, x1 - x0, y1 - y0)
        cv2.setRNGSeed(self.seed)
        cv2.grabCut(crop, gc_mask, rect, bgd, fgd, self.iterations, cv2.GC_INIT_WITH_RECT)
        fg = (gc_mask == cv2.GC_FGD) | (gc_mask == cv2.GC_PR_FGD)
        mask[cy0:cy1, cx0:cx1] = fg
        # The prompt is the box: nothing outside it belongs to the object.
        mask[:y0, :] = False
        mask[y1:, :] = False
        mask[:, :x0] = False
        mask[:, x1:] = False
        return mask


def _empty_mask(image: np.ndarray, box_xyxy: tuple[float, float, float, float]
                ) -> tuple[np.ndarray, tuple[int, int, int, int]]:
    """An all-False (H, W) mask of the (checked) RGB ``image``, and the box's pixel range."""
    check_rgb(image)
    h, w = image.shape[:2]
    return np.zeros((h, w), dtype=bool), _pixel_box(box_xyxy, w, h)


def _pixel_box(box_xyxy: tuple[float, float, float, float], width: int,
               height: int) -> tuple[int, int, int, int]:
    """Integer pixel range ``[x0, x1) × [y0, y1)`` covered by a pixel-edge box, clipped."""
    x0, y0, x1, y1 = box_xyxy
    return (min(max(math.floor(x0), 0), width), min(max(math.floor(y0), 0), height),
            min(max(math.ceil(x1), 0), width), min(max(math.ceil(y1), 0), height))
