"""Fixtures: the bundled sample rectified once per session, with its ground truth."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from eval_assets.frames import RectifiedFrame, build_rectified_frames, load_rectified_image
from eval_assets.recording import Recording


@dataclass(frozen=True)
class RectifiedSample:
    """The sample's rectified frames (files and decoded images) and the synthesizer's truth.

    Truth pixels (``bbox_xyxy``, ``visible_pixels``, ``id_maps``) refer to the rectified image.
    """

    frames_dir: Path
    frames: list[RectifiedFrame]
    images: list[np.ndarray]
    truth_frames: list[dict[str, Any]]
    objects: dict[int, dict[str, Any]]
    id_maps: np.ndarray

    def truth_objects(self, frame_index: int) -> list[dict[str, Any]]:
        """The truth records of the objects visible in a frame."""
        return self.truth_frames[frame_index]["objects"]


@pytest.fixture(scope="session")
def rectified_sample(tmp_path_factory: pytest.TempPathFactory,
                     sample_db: Path) -> RectifiedSample:
    """Every frame of the sample rectified by the project's frame stage."""
    frames_dir = tmp_path_factory.mktemp("perception-rect")
    with Recording.open(sample_db) as rec:
        frames = build_rectified_frames(rec, frames_dir)
    scene = json.loads(sample_db.with_suffix(".scene.json").read_text())
    with np.load(sample_db.with_suffix(".truth.npz")) as truth:
        id_maps = truth["id_maps"]
    return RectifiedSample(
        frames_dir=frames_dir,
        frames=frames,
        images=[load_rectified_image(frames_dir, f) for f in frames],
        truth_frames=scene["frames"],
        objects={o["id"]: o for o in scene["objects"]},
        id_maps=id_maps,
    )
