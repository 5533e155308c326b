"""The two perception strategies and the one function that combines them.

A :class:`Detector` turns an object name into boxes (reference: Moondream ``detect``); a
:class:`Segmenter` turns a box prompt into a mask (reference: EdgeTAM, a SAM2-family model). Both
are chosen by configuration; everything downstream only sees :class:`Detection` records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from eval_assets.schemas.frames import RectifiedFrame
from eval_assets.schemas.perception import Detection


class ConfigurationError(ValueError):
    """A perception strategy cannot be built from its configuration (missing key, file, package).

    The message names the configuration field or environment variable and how to fix it; a
    misconfigured model is never replaced silently by another one.
    """


class PerceptionError(RuntimeError):
    """A configured model failed while running (unreachable server, malformed reply)."""


@dataclass(frozen=True)
class Box:
    """One detector hit: pixel-edge box ``(x0, y0, x1, y1)`` and a confidence in ``[0, 1]``."""

    box_xyxy: tuple[float, float, float, float]
    score: float


@runtime_checkable
class Detector(Protocol):
    """Open-vocabulary prompt detector: object name → boxes of every visible instance."""

    name: str
    version: str

    def detect(self, image: np.ndarray, object_name: str) -> list[Box]:
        """Boxes of ``object_name`` in an RGB ``uint8`` image (H, W, 3), in a stable order."""
        ...


@runtime_checkable
class Abstaining(Protocol):
    """A detector that can say where it saw something it would not name.

    ``unsure`` returns the regions that might be ``object_name`` but that the detector could not
    name with confidence (too small, cut off, or unlike anything it was written for). They are
    not detections; they stop the question rules from asserting that the object is absent or
    that exactly one is visible.
    """

    def unsure(self, image: np.ndarray, object_name: str) -> list[Box]:
        """Regions of ``image`` that may be ``object_name`` but were not detected as it."""
        ...


@runtime_checkable
class Segmenter(Protocol):
    """Box-prompted segmenter: box → boolean mask of the object inside it."""

    name: str
    version: str

    def segment(self, image: np.ndarray,
                box_xyxy: tuple[float, float, float, float]) -> np.ndarray:
        """A boolean (H, W) mask of the object prompted by ``box_xyxy`` in an RGB image."""
        ...


@runtime_checkable
class FrameBound(Protocol):
    """A detector or segmenter that must know which recording frame it is looking at.

    :func:`~eval_assets.perception.evidence_io.build_detections` calls ``bind_frame`` before
    asking about each frame (the truth evidence answers from that frame's truth map).
    """

    def bind_frame(self, frame: RectifiedFrame) -> None:
        """Look at ``frame`` from now on; raise when it cannot."""
        ...


def check_rgb(image: np.ndarray) -> np.ndarray:
    """Return ``image`` if it is an RGB ``uint8`` (H, W, 3) array, else raise ``ValueError``."""
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(
            f"expected an RGB uint8 image of shape (H, W, 3), got dtype {image.dtype} and shape "
            f"{image.shape}; load frames with eval_assets.frames.load_rectified_image"
        )
    return image


def clip_box(box_xyxy: Sequence[float], width: int,
             height: int) -> tuple[float, float, float, float] | None:
    """``box_xyxy`` clipped to the image; ``None`` when nothing of it is left inside."""
    x0, y0, x1, y1 = (float(v) for v in box_xyxy)
    x0, x1 = min(max(x0, 0.0), float(width)), min(max(x1, 0.0), float(width))
    y0, y1 = min(max(y0, 0.0), float(height)), min(max(y1, 0.0), float(height))
    if x1 <= x0 or y1 <= y0:
        return None
    return (x0, y0, x1, y1)


def detect_and_segment(
    image: np.ndarray,
    names: Sequence[str],
    detector: Detector,
    segmenter: Segmenter,
) -> list[tuple[Detection, np.ndarray]]:
    """Query every name, segment every box; detections (``mask_path=None``) with their masks.

    Results are ordered by the position of the name in ``names`` (its ``label_index``), then in
    the detector's order. Boxes are clipped to the image; a box entirely outside it is dropped.
    """
    check_rgb(image)
    height, width = image.shape[:2]
    out: list[tuple[Detection, np.ndarray]] = []
    for label_index, name in enumerate(names):
        for hit in detector.detect(image, name):
            box = clip_box(hit.box_xyxy, width, height)
            if box is None:
                continue
            mask = np.asarray(segmenter.segment(image, box), dtype=bool)
            if mask.shape != (height, width):
                raise PerceptionError(
                    f"segmenter {segmenter.name!r} returned a mask of shape {mask.shape} for an "
                    f"image of shape {(height, width)}; a segmenter must return one (H, W) mask"
                )
            out.append((
                Detection(
                    name=name,
                    label_index=label_index,
                    box_xyxy=box,
                    score=min(max(float(hit.score), 0.0), 1.0),
                    mask_area=int(mask.sum()),
                    mask_path=None,
                    detector=detector.name,
                    detector_version=detector.version,
                    segmenter=segmenter.name,
                    segmenter_version=segmenter.version,
                ),
                mask,
            ))
    return out
