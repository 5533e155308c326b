"""An image's quality scores as dimOS measures them (``Image.sharpness`` / ``Image.brightness``).

Its own module so that the quality-window selection and its full-resolution re-check of near
ties (:mod:`eval_assets.frames.near_ties`) share the record without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FrameQuality:
    """dimOS's quality scores of one image, both in 0-1."""

    sharpness: float
    brightness: float
