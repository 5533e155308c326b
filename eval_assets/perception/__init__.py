"""Perception evidence: pluggable detectors and segmenters, and the stored detections.

Strategies are chosen by name through :class:`PerceptionConfig` (the Dagster resource
``PerceptionResource`` fills it from run config); each name maps to one factory below.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from eval_assets.env_names import check_env_var_name
from eval_assets.perception.box_segmenters import GrabCutSegmenter, RegionSegmenter
from eval_assets.perception.color_detector import ColorShapeDetector, ColorShapeParams
from eval_assets.perception.edgetam_segmenter import EdgeTAMSegmenter
from eval_assets.perception.evidence_io import (
    build_detections,
    load_mask,
    read_detections,
    write_detections_table,
    write_frame_detections,
)
from eval_assets.perception.moondream_detector import DEFAULT_API_KEY_ENV, MoondreamDetector
from eval_assets.perception.protocols import (
    Box,
    ConfigurationError,
    Detector,
    FrameBound,
    PerceptionError,
    Segmenter,
    detect_and_segment,
)
from eval_assets.perception.taught_names import TaughtNames
from eval_assets.perception.truth_evidence import TruthDetector, TruthSegmenter, TruthSource
from eval_assets.schemas.perception import Detection, FrameDetections
from eval_assets.synth.scene import PALETTE, SHAPES

T = TypeVar("T")
TRUTH = "truth"  # the detector and segmenter that read a simulated recording's truth files


def references_beside(recording: Path) -> Path:
    """``<recording stem>.objects``: where the simulator writes its catalogue's reference views,
    and where a team may put its own beside a recording."""
    return recording.with_name(f"{recording.stem}.objects")


def default_vocabulary() -> list[str]:
    """Every colour × shape name of the sample scene, present in it or not (for "no" answers)."""
    return [f"{color} {shape}" for color in PALETTE for shape in SHAPES]


@dataclass(frozen=True)
class PerceptionConfig:
    """Which detector and segmenter to use, and what they need.

    ``detector``: ``color`` | ``moondream`` | ``truth``; ``segmenter``: ``box_region`` |
    ``grabcut`` | ``edgetam`` | ``truth``. ``truth`` reads the engine's truth beside a simulated
    or synthesized recording (:mod:`~eval_assets.perception.truth_evidence`): it needs the
    recording's path when built and refuses a recording without truth files; the ``truth``
    segmenter only with the ``truth`` detector (it segments the truth's own boxes). The
    Moondream key is read from the environment variable named by ``moondream_api_key_env``
    (never stored in config). An empty ``vocabulary`` means :func:`default_vocabulary`.

    ``objects``: where the tracks' objects come from (:data:`~eval_assets.tracks.build.
    OBJECT_SOURCES`): ``lidar`` (found in the LiDAR, named only when certain, else marked) or
    ``detections`` (each detector mask lifted); empty: ``detections`` for the ``truth``
    detector (its masks are exact), ``lidar`` otherwise. ``references``: a folder of taught
    names (``<name>/*.png``, :mod:`~eval_assets.perception.taught_names`); empty: the
    ``<recording>.objects`` folder beside the recording when there is one (the simulator writes
    its catalogue's views there), else none.
    """

    detector: str = "color"
    segmenter: str = "box_region"
    moondream_api_key_env: str = DEFAULT_API_KEY_ENV
    moondream_endpoint: str = ""
    edgetam_checkpoint: str = ""
    edgetam_config: str = ""
    vocabulary: tuple[str, ...] = field(default_factory=tuple)
    objects: str = ""
    references: str = ""

    def __post_init__(self) -> None:
        # A key pasted as the variable's name is refused before any message could repeat it.
        try:
            check_env_var_name(self.moondream_api_key_env,
                               "perception config field moondream_api_key_env",
                               example=DEFAULT_API_KEY_ENV)
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None
        if self.segmenter == TRUTH and self.detector != TRUTH:
            raise ConfigurationError(
                f"perception config field `segmenter` is 'truth' but `detector` is "
                f"{self.detector!r}: the truth segmenter segments the truth detector's boxes. "
                "Fix: set detector to 'truth' too, or choose another segmenter")

    def object_source(self) -> str:
        """The tracks' object source in force (see the class docstring)."""
        if self.objects:
            if self.objects not in ("lidar", "detections"):
                raise ConfigurationError(
                    f"perception config field `objects` is {self.objects!r}; choose 'lidar' or "
                    "'detections' (or leave it empty)")
            return self.objects
        return "detections" if self.detector == TRUTH else "lidar"

    def references_dir(self, recording: str | Path | None = None) -> Path | None:
        """The taught names' folder in force: ``references``, else the recording's
        ``<stem>.objects`` folder when it exists, else None. A configured folder that does not
        exist is a :class:`ConfigurationError`."""
        if self.references:
            folder = Path(self.references)
            if not folder.is_dir():
                raise ConfigurationError(
                    f"perception config field `references` is {self.references!r}, which is not "
                    "a folder. Fix: point it at a folder of <name>/*.png reference images, or "
                    "leave it empty")
            return folder
        if recording is None:
            return None
        beside = references_beside(Path(recording))
        return beside if beside.is_dir() else None

    def build_namer(self, recording: str | Path | None = None) -> TaughtNames | None:
        """The taught names in force (None without a references folder); a bad folder raises
        :class:`~eval_assets.perception.taught_names.ReferenceImagesError` naming the file."""
        folder = self.references_dir(recording)
        return TaughtNames.load(folder) if folder is not None else None

    def names(self) -> list[str]:
        """The object names to query in every frame, in order, without duplicates."""
        names = list(self.vocabulary) if self.vocabulary else default_vocabulary()
        return list(dict.fromkeys(n.strip() for n in names if n.strip()))

    def build_detector(self, recording: str | Path | None = None) -> Detector:
        """The configured detector (``ConfigurationError`` for an unknown name or missing key).

        ``recording``: the recording it will see; only ``truth`` needs it (and its truth files).
        """
        if self.detector == TRUTH:
            return TruthDetector(_truth_source(recording, "detector"))
        return _choose(DETECTORS, self.detector, "detector")(self)

    def build_segmenter(self, recording: str | Path | None = None) -> Segmenter:
        """The configured segmenter (``ConfigurationError`` for an unknown name or checkpoint)."""
        if self.segmenter == TRUTH:
            return TruthSegmenter(_truth_source(recording, "segmenter"))
        return _choose(SEGMENTERS, self.segmenter, "segmenter")(self)


def _truth_source(recording: str | Path | None, field_name: str) -> TruthSource:
    if recording is None:
        raise ConfigurationError(
            f"perception config field `{field_name}` is 'truth', which reads the truth files "
            "beside a recording, but no recording was given. Fix: build it with the recording "
            f"(build_{field_name}(recording)), or choose another {field_name}")
    return TruthSource(recording)


def _choose(table: Mapping[str, Callable[[PerceptionConfig], T]], key: str,
            field_name: str) -> Callable[[PerceptionConfig], T]:
    if key not in table:
        raise ConfigurationError(
            f"perception config field `{field_name}` is {key!r}; choose one of "
            f"{sorted([*table, TRUTH])}"
        )
    return table[key]


def _moondream(config: PerceptionConfig) -> Detector:
    key = os.environ.get(config.moondream_api_key_env, "") if config.moondream_api_key_env else ""
    return MoondreamDetector(api_key=key or None, endpoint=config.moondream_endpoint or None,
                             api_key_env=config.moondream_api_key_env or DEFAULT_API_KEY_ENV)


DETECTORS: dict[str, Callable[[PerceptionConfig], Detector]] = {
    "color": lambda config: ColorShapeDetector(),
    "moondream": _moondream,
}
SEGMENTERS: dict[str, Callable[[PerceptionConfig], Segmenter]] = {
    "box_region": lambda config: RegionSegmenter(),
    "grabcut": lambda config: GrabCutSegmenter(),
    "edgetam": lambda config: EdgeTAMSegmenter(config.edgetam_checkpoint,
                                               config.edgetam_config or None),
}

__all__ = [
    "DETECTORS",
    "SEGMENTERS",
    "TRUTH",
    "Box",
    "ColorShapeDetector",
    "ColorShapeParams",
    "ConfigurationError",
    "Detection",
    "Detector",
    "EdgeTAMSegmenter",
    "FrameBound",
    "FrameDetections",
    "GrabCutSegmenter",
    "MoondreamDetector",
    "PerceptionConfig",
    "PerceptionError",
    "RegionSegmenter",
    "Segmenter",
    "TruthDetector",
    "TruthSegmenter",
    "TruthSource",
    "build_detections",
    "default_vocabulary",
    "detect_and_segment",
    "load_mask",
    "read_detections",
    "write_detections_table",
    "write_frame_detections",
]
