"""Simulated recordings: PyBullet scenes with real meshes and textures, and the engine's truth.

:func:`~eval_assets.sim.simulate.simulate_recording` writes a dimOS recording and its truth in
the synthesizer's format (``OUT.scene.json``, ``OUT.truth.npz``); no Dagster here. PyBullet is
imported on first use, so importing this package costs nothing.
"""

from __future__ import annotations

from eval_assets.lazy import lazy_exports

_EXPORTS = {
    "CATALOG": "catalog", "SimConfigError": "catalog",
    "SimConfig": "world", "SimOutputs": "simulate", "simulate_recording": "simulate",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports(__name__, _EXPORTS)
