"""Deterministic synthetic recordings: a known scene ray-cast into camera images and LiDAR scans.

``sample`` is the bundled sample (fixed scene, :mod:`eval_assets.synth.sample`); ``stream`` writes
the reference rig's format and seeded scenes of any length with bounded memory.

Names are imported on first use: the scene vocabulary (:mod:`eval_assets.synth.scene`) is read by
the perception code, which must not pay for open3d (the ray caster) at import.
"""

from __future__ import annotations

from eval_assets.lazy import lazy_exports

_EXPORTS = {
    "BACKGROUND_ID": "render", "SceneRaycaster": "render", "View": "render",
    "DEFAULT_FRAMES": "sample", "DEFAULT_SEED": "sample", "SampleOutputs": "sample",
    "Timeline": "sample", "make_timeline": "sample", "synthesize_sample": "sample",
    "Distractor": "scene", "LoopPath": "scene", "Scene": "scene", "SceneObject": "scene",
    "TourPath": "scene",
    "sample_scene": "scene",
    "seeded_scene": "seeded",
    "sidecar_paths": "truth",
    "PROFILES": "stream", "Profile": "stream", "SynthConfigError": "stream",
    "SynthOutputs": "stream", "synthesize_recording": "stream",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS)
