"""Deterministic synthetic recordings: a known scene ray-cast into camera images and LiDAR scans."""

from eval_assets.synth.render import BACKGROUND_ID, SceneRaycaster, View
from eval_assets.synth.sample import (
    DEFAULT_FRAMES,
    DEFAULT_SEED,
    SampleOutputs,
    Timeline,
    make_timeline,
    sidecar_paths,
    synthesize_sample,
)
from eval_assets.synth.scene import Scene, SceneObject, sample_scene

__all__ = [
    "BACKGROUND_ID",
    "DEFAULT_FRAMES",
    "DEFAULT_SEED",
    "SampleOutputs",
    "Scene",
    "SceneObject",
    "SceneRaycaster",
    "Timeline",
    "View",
    "make_timeline",
    "sample_scene",
    "sidecar_paths",
    "synthesize_sample",
]
