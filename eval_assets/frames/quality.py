"""An image's quality scores as dimOS measures them (``Image.sharpness`` / ``Image.brightness``).

Its own module so that the quality-window selection and its full-resolution re-check of near
ties (:mod:`eval_assets.frames.near_ties`) share the record without importing each other; the
measures are here too (the selection re-exports them), with the reduced-size decode that the
quality scan and the image/TF check (:mod:`eval_assets.frames.image_motion`) share.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from eval_assets.recording import image_to_rgb
from eval_assets.recording.image_size import check_decode_size
from eval_assets.recording.messages import Image

SHARPNESS_WIDTH = 160  # dimOS Image.sharpness downsamples to 160 px wide


@dataclass(frozen=True)
class FrameQuality:
    """dimOS's quality scores of one image, both in 0-1."""

    sharpness: float
    brightness: float


def sharpness_score(gray: np.ndarray) -> float:
    """dimOS ``Image.sharpness`` of a greyscale image: Laplacian variance on a log 0-1 scale."""
    h, w = gray.shape[:2]
    if w > SHARPNESS_WIDTH:
        scale = SHARPNESS_WIDTH / w
        gray = cv2.resize(gray, (SHARPNESS_WIDTH, int(h * scale)), interpolation=cv2.INTER_AREA)
    lap_var = float(cv2.Laplacian(gray, cv2.CV_32F).var())
    if lap_var <= 0:
        return 0.0
    return float(np.clip((np.log10(lap_var + 1) - 1.0) / 3.0, 0.0, 1.0))


def _reduced_flag(width: int) -> int:
    for factor, flag in ((8, cv2.IMREAD_REDUCED_COLOR_8), (4, cv2.IMREAD_REDUCED_COLOR_4),
                         (2, cv2.IMREAD_REDUCED_COLOR_2)):
        if width // factor >= SHARPNESS_WIDTH:
            return flag
    return cv2.IMREAD_COLOR


def measure_quality(image: Image, exact: bool = False) -> FrameQuality:
    """Sharpness and brightness of a recorded image, from a reduced-size decode of its JPEG, or
    with ``exact`` from the full image exactly as dimOS computes them.

    Raises ``ValueError`` when the image does not decode.
    """
    if exact:
        return _dimos_quality(image)
    return quality_of(image, reduced_bgr(image))


def reduced_bgr(image: Image) -> np.ndarray:
    """The image decoded as the quality scan decodes it: a JPEG at the largest reduction that
    keeps it at least 160 px wide, a raw encoding in full. Raises ``ValueError`` when it does not
    decode."""
    if image.encoding == "jpeg":
        # Reduced decoding shrinks a JPEG's DCT only: a huge PNG would still decode in full.
        check_decode_size(image.data, f"Image data ({image.width}x{image.height} by its header)")
        bgr = cv2.imdecode(np.frombuffer(image.data, np.uint8), _reduced_flag(image.width))
        if bgr is None:
            raise ValueError(f"Image data ({len(image.data)} bytes) is not a decodable JPEG")
        return bgr
    return np.ascontiguousarray(image_to_rgb(image)[:, :, ::-1])  # raw encodings: the full image


def quality_of(image: Image, bgr: np.ndarray) -> FrameQuality:
    """dimOS's scores from the reduced decode ``bgr`` of ``image``."""
    w = bgr.shape[1]
    if w > SHARPNESS_WIDTH:
        # Same size as dimOS's (W -> 160 px, H scaled from the full image) before the Laplacian.
        size = (SHARPNESS_WIDTH, max(1, int(image.height * SHARPNESS_WIDTH / image.width)))
        bgr = cv2.resize(np.ascontiguousarray(bgr), size, interpolation=cv2.INTER_AREA)
    gray = cv2.cvtColor(np.ascontiguousarray(bgr), cv2.COLOR_BGR2GRAY)
    return FrameQuality(sharpness=sharpness_score(gray), brightness=float(bgr.mean() / 255.0))


def _dimos_quality(image: Image) -> FrameQuality:
    # dimOS decodes the whole JPEG (TurboJPEG, RGB), greys it, and strides the brightness mean
    # to ~256 px on the long edge; channel order changes neither the grey nor the mean.
    if image.encoding == "jpeg":
        check_decode_size(image.data, f"Image data ({image.width}x{image.height} by its header)")
    bgr = (cv2.imdecode(np.frombuffer(image.data, np.uint8), cv2.IMREAD_COLOR)
           if image.encoding == "jpeg" else image_to_rgb(image)[:, :, ::-1])
    if bgr is None:
        raise ValueError(f"Image data ({len(image.data)} bytes) is not a decodable JPEG")
    step = max(1, max(bgr.shape[:2]) // 256)
    return FrameQuality(
        sharpness=sharpness_score(cv2.cvtColor(np.ascontiguousarray(bgr), cv2.COLOR_BGR2GRAY)),
        brightness=float(bgr[::step, ::step].mean() / 255.0))
