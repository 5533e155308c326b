"""Deterministic synthetic recordings: a known scene ray-cast into camera images and LiDAR scans.

``sample`` is the bundled sample (fixed scene, :mod:`eval_assets.synth.sample`); ``stream`` writes
the reference rig's format and seeded scenes of any length with bounded memory.
"""

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
from eval_assets.synth.scene import Distractor, LoopPath, Scene, SceneObject, sample_scene
from eval_assets.synth.seeded import seeded_scene
from eval_assets.synth.stream import (
    PROFILES,
    Profile,
    SynthConfigError,
    SynthOutputs,
    synthesize_recording,
)

__all__ = [
    "BACKGROUND_ID",
    "DEFAULT_FRAMES",
    "DEFAULT_SEED",
    "PROFILES",
    "Distractor",
    "LoopPath",
    "Profile",
    "SampleOutputs",
    "Scene",
    "SceneObject",
    "SceneRaycaster",
    "SynthConfigError",
    "SynthOutputs",
    "Timeline",
    "View",
    "make_timeline",
    "sample_scene",
    "seeded_scene",
    "sidecar_paths",
    "synthesize_recording",
    "synthesize_sample",
]
