"""Choosing perception strategies by configuration, and the errors of a bad configuration."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from eval_assets.defs.resources import PerceptionResource
from eval_assets.perception import PerceptionConfig, default_vocabulary
from eval_assets.perception.box_segmenters import GrabCutSegmenter, RegionSegmenter
from eval_assets.perception.color_detector import ColorShapeDetector
from eval_assets.perception.edgetam_segmenter import EdgeTAMSegmenter
from eval_assets.perception.protocols import (
    Box,
    ConfigurationError,
    Detector,
    Segmenter,
    clip_box,
    detect_and_segment,
)
from eval_assets.synth.scene import PALETTE, SHAPES


def test_default_vocabulary_includes_names_absent_from_the_scene() -> None:
    names = default_vocabulary()
    assert len(names) == len(PALETTE) * len(SHAPES) == 18
    assert {"red ball", "red box", "purple ball", "yellow cylinder"} <= set(names)
    assert PerceptionConfig().names() == names
    assert PerceptionConfig(vocabulary=(" red ball", "red ball", "", "blue box")).names() == \
        ["red ball", "blue box"]


def test_each_strategy_name_builds_its_implementation() -> None:
    assert isinstance(PerceptionConfig().build_detector(), ColorShapeDetector)
    assert isinstance(PerceptionConfig().build_segmenter(), RegionSegmenter)
    assert isinstance(PerceptionConfig(segmenter="grabcut").build_segmenter(), GrabCutSegmenter)
    assert isinstance(ColorShapeDetector(), Detector)
    for seg in (RegionSegmenter(), GrabCutSegmenter()):
        assert isinstance(seg, Segmenter)


@pytest.mark.parametrize(("field", "value"), [("detector", "yolo"), ("segmenter", "sam")])
def test_unknown_strategy_names_the_field_and_the_choices(field: str, value: str) -> None:
    config = PerceptionConfig(**{field: value})
    build = config.build_detector if field == "detector" else config.build_segmenter
    with pytest.raises(ConfigurationError, match=f"`{field}` is '{value}'; choose one of"):
        build()


def test_edgetam_without_checkpoint_says_where_to_get_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"none is configured.*edgetam_checkpoint"):
        PerceptionConfig(segmenter="edgetam").build_segmenter()
    missing = tmp_path / "weights" / "edgetam.pt"
    with pytest.raises(ConfigurationError) as err:
        EdgeTAMSegmenter(str(missing))
    message = str(err.value)
    assert str(missing) in message and "does not exist" in message
    assert "facebookresearch/EdgeTAM" in message and "edgetam_checkpoint" in message


def test_edgetam_without_its_package_or_with_a_bad_file_is_a_configuration_error(
        tmp_path: Path) -> None:
    checkpoint = tmp_path / "edgetam.pt"
    checkpoint.write_bytes(b"not a checkpoint")
    if importlib.util.find_spec("sam2") is None:
        with pytest.raises(ConfigurationError, match=r"pip install 'eval_assets\[edgetam\]'"):
            EdgeTAMSegmenter(str(checkpoint))
    else:  # the extra is installed: the file itself must be refused, naming it
        with pytest.raises(ConfigurationError, match="cannot load checkpoint"):
            EdgeTAMSegmenter(str(checkpoint))


def test_resource_maps_onto_the_core_config(monkeypatch: pytest.MonkeyPatch) -> None:
    resource = PerceptionResource(segmenter="grabcut", vocabulary=["red ball", "blue box"])
    detector, segmenter = resource.build()
    assert isinstance(detector, ColorShapeDetector) and isinstance(segmenter, GrabCutSegmenter)
    assert resource.perception_config().names() == ["red ball", "blue box"]
    monkeypatch.delenv("MOONDREAM_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="MOONDREAM_API_KEY"):
        PerceptionResource(detector="moondream").build()


class _FixedBoxes:
    """A detector that reports given boxes: the protocol's contract, without a model."""

    name = "fixed"
    version = "1"

    def __init__(self, boxes: list[Box]) -> None:
        self.boxes = boxes

    def detect(self, image: np.ndarray, object_name: str) -> list[Box]:
        return self.boxes if object_name == "thing" else []


def test_detect_and_segment_clips_drops_and_labels() -> None:
    image = np.zeros((40, 60, 3), dtype=np.uint8)
    image[10:20, 50:60] = (215, 25, 25)
    detector = _FixedBoxes([Box((45.0, 5.0, 75.0, 25.0), 1.7), Box((70.0, 0.0, 90.0, 9.0), 0.4)])
    found = detect_and_segment(image, ["other", "thing"], detector, RegionSegmenter())
    assert len(found) == 1
    det, mask = found[0]
    assert det.label_index == 1 and det.name == "thing"
    assert det.box_xyxy == (45.0, 5.0, 60.0, 25.0)
    assert det.score == 1.0  # clamped into [0, 1]
    assert det.mask_area == 100 == int(mask.sum())
    assert clip_box((-5, -5, 0, 3), 60, 40) is None
