"""Hand-built truth sidecars (the synthesizer's format) for the evidence-quality tests."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from eval_assets.evidence_quality.truth import SceneTruth, load_truth

WIDTH, HEIGHT = 40, 20
K = [[20.0, 0.0, 19.5], [0.0, 20.0, 9.5], [0.0, 0.0, 1.0]]


def write_truth(db: Path, objects: Sequence[dict[str, Any]], maps: Sequence[np.ndarray],
                distances: Sequence[dict[int, float]] | None = None,
                frame_index: Sequence[int] | None = None) -> SceneTruth:
    """Write ``db``'s ``scene.json`` and ``truth.npz`` and load them back."""
    indices = list(frame_index) if frame_index is not None else list(range(len(maps)))
    frames = []
    for k, (i, m) in enumerate(zip(indices, maps, strict=True)):
        dist = (distances or [{}] * len(maps))[k]
        frames.append({"index": i, "camera_from_world": np.eye(4).tolist(),
                       "objects": [{"id": int(o), "name": objects[int(o)]["name"],
                                    "visible_pixels": int((m == o).sum()),
                                    "surface_distance_m": dist.get(int(o), 1.5)}
                                   for o in np.unique(m) if o != 255]})
    scene = {"generator": "test", "camera": {"width": WIDTH, "height": HEIGHT, "K_rect": K},
             "objects": list(objects), "frames": frames}
    db.with_suffix(".scene.json").write_text(json.dumps(scene))
    arrays: dict[str, Any] = {"id_maps": np.stack(maps).astype(np.uint8)}
    if frame_index is not None:
        arrays["frame_index"] = np.asarray(indices, dtype=np.int64)
    with open(db.with_suffix(".truth.npz"), "wb") as fh:
        np.savez(fh, **arrays)
    truth = load_truth(db)
    assert truth is not None
    return truth


def obj(i: int, name: str, centre: Sequence[float] = (0.0, 0.0, 0.0),
        size: Sequence[float] = (0.3, 0.3, 0.3)) -> dict[str, Any]:
    """A scene object record."""
    return {"id": i, "name": name, "center_world": list(centre), "size": list(size)}


def blank() -> np.ndarray:
    """An id map with no object."""
    return np.full((HEIGHT, WIDTH), 255, dtype=np.uint8)
