"""Perturbations of the synthesizer for the tests of the sample comparisons.

:func:`jitter_raycasting` emulates another CPU: open3d's ray casting on an AMD EPYC returns hit
distances that differ from this machine's in the last bits (most likely Embree's approximate
reciprocal instructions, whose results Intel and AMD do not share). Jittering every hit distance
by ±1 ulp and regenerating the sample reproduces exactly what was measured there: 3 of 24 images
and 24 of 24 LiDAR scans change bytes, camera_info and tf do not.

:func:`change_first_object` makes a real change to the scene, which the comparisons must catch.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import open3d as o3d
import pytest

import eval_assets.synth.sample as sample_module
from eval_assets.synth.scene import Scene


class _JitteredScene:
    """A ``RaycastingScene`` whose ray directions and hit distances are off by a few ulps."""

    def __init__(self, scene: Any, rng: np.random.Generator, t_ulps: int,
                 direction_ulps: int) -> None:
        self._scene, self._rng = scene, rng
        self._t_ulps, self._direction_ulps = t_ulps, direction_ulps

    def add_triangles(self, *args: Any) -> int:
        """Forwarded unchanged: the geometry is the same on every CPU."""
        return self._scene.add_triangles(*args)

    def cast_rays(self, rays: o3d.core.Tensor) -> dict[str, o3d.core.Tensor]:
        """Cast with directions nudged by up to ``direction_ulps`` float32 ulps per component
        (edge pixels may hit another surface), then nudge each hit distance by up to ``t_ulps``."""
        r = rays.numpy().copy()
        d = r[:, 3:]
        r[:, 3:] = d + self._steps(d.shape, self._direction_ulps) * np.spacing(np.abs(d))
        out = self._scene.cast_rays(o3d.core.Tensor(r))
        t = out["t_hit"].numpy()
        t = (t * (1.0 + self._steps(t.shape, self._t_ulps) * 2.0**-23)).astype(np.float32)
        return {"t_hit": o3d.core.Tensor(t), "geometry_ids": out["geometry_ids"],
                "primitive_normals": out["primitive_normals"]}

    def _steps(self, shape: tuple[int, ...], ulps: int) -> np.ndarray:
        return self._rng.integers(-ulps, ulps + 1, shape).astype(np.float32)


def jitter_raycasting(monkeypatch: pytest.MonkeyPatch, t_ulps: int = 2, direction_ulps: int = 1,
                      seed: int = 0) -> None:
    """Make every ``RaycastingScene`` built during the test round like another CPU might."""
    real = o3d.t.geometry.RaycastingScene
    rng = np.random.default_rng(seed)
    monkeypatch.setattr(o3d.t.geometry, "RaycastingScene",
                        lambda *a, **k: _JitteredScene(real(*a, **k), rng, t_ulps,
                                                       direction_ulps))


def change_first_object(monkeypatch: pytest.MonkeyPatch, **changes: Any) -> None:
    """Synthesize samples whose first object (the red ball) has ``changes`` applied."""
    real = sample_module.sample_scene

    def changed(*args: Any, **kwargs: Any) -> Scene:
        scene = real(*args, **kwargs)
        first = dataclasses.replace(scene.objects[0], **changes)
        return dataclasses.replace(scene, objects=(first, *scene.objects[1:]))

    monkeypatch.setattr(sample_module, "sample_scene", changed)
