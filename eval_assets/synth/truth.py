"""The truth files beside a synthetic recording, written the same by the synthesizer and the
simulator: ``X.scene.json`` (rounded, sorted JSON with one row per visible object of a view) and
``X.truth.npz`` (id maps in zip entries with a fixed date, so the same maps give the same bytes).
:mod:`eval_assets.evidence_quality.truth` reads them.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

_DECIMALS = 6


def sidecar_paths(db_path: Path) -> tuple[Path, Path]:
    """The truth files beside a recording: ``X.db`` → ``X.scene.json``, ``X.truth.npz``."""
    db_path = Path(db_path)
    return db_path.with_suffix(".scene.json"), db_path.with_suffix(".truth.npz")


def rounded(value: Any) -> Any:
    """``value`` with every float rounded to 6 decimals (arrays and tuples become lists): one
    rounding for every scene file."""
    if isinstance(value, float):
        # "+ 0.0" folds −0.0 into 0.0 so the JSON text never flips sign on a rounding tie.
        return round(value, _DECIMALS) + 0.0
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [rounded(v) for v in value]
    if isinstance(value, np.ndarray):
        return rounded(value.tolist())
    return value


def npz_entry(name: str) -> zipfile.ZipInfo:
    """The deflated zip entry ``name.npy`` with a fixed date (no wall clock in the bytes)."""
    info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """The bytes ``np.savez_compressed`` would write, minus its wall-clock zip timestamps."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, array in arrays.items():
            with zf.open(npz_entry(name), "w", force_zip64=True) as fh:
                np.lib.format.write_array(fh, np.ascontiguousarray(array), allow_pickle=False)
    return buf.getvalue()


def _third(u: float, width: int) -> str:
    if u < width / 3:
        return "left"
    return "center" if u < 2 * width / 3 else "right"


def visible_object(object_id: int, name: str, center_world: Any, k: np.ndarray, width: int,
                   camera_from_world: np.ndarray, ids: np.ndarray,
                   distance: np.ndarray) -> dict[str, Any] | None:
    """One object's truth in an ideal pinhole view (``k``, ``width`` pixels wide), from the view's
    id map and per-pixel distance; None when none of its pixels is seen."""
    vs, us = np.nonzero(ids == object_id)
    if us.size == 0:
        return None
    center = camera_from_world @ np.array([*center_world, 1.0])
    px = k @ (center[:3] / center[2])
    return {
        "id": object_id,
        "name": name,
        "visible_pixels": int(us.size),
        "bbox_xyxy": [int(us.min()), int(vs.min()), int(us.max()) + 1, int(vs.max()) + 1],
        "centroid_px": [float(us.mean()), float(vs.mean())],
        "center_px": [float(px[0]), float(px[1])],
        "center_distance_m": float(np.linalg.norm(center[:3])),
        "surface_distance_m": float(np.median(distance[vs, us])),
        "horizontal_third": _third(float(px[0]), width),
    }
