"""A recording's own truth, as the synthesizer and the simulator write it beside ``X.db``.

``X.scene.json``: ``objects`` (``id``, ``name``, ``size``, ``center_world``), ``camera``
(``width``, ``height``, ``K_rect``) and ``frames`` (``index``: the recording's image index,
``camera_from_world``, ``objects`` with ``id`` and ``surface_distance_m``). ``X.truth.npz``:
``id_maps`` (uint8, maps × H × W, the object id per RECTIFIED pixel, 255 for none) and
``frame_index`` (the image index of each map; absent in the bundled sample, whose maps are its
frames 0, 1, ...). Only this format is read, never the synthesizer's code, so a recording from
any source that writes it can be checked.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from eval_assets.errors import InputError
from eval_assets.hashing import file_sha256

NONE_ID = 255
"""An id map's value where no named object is seen."""


class TruthFormatError(InputError, ValueError):
    """A truth sidecar that does not follow the format; the message names the file and field."""


def sidecar_paths(db_path: Path) -> tuple[Path, Path]:
    """The truth files beside a recording: ``X.db`` → ``X.scene.json``, ``X.truth.npz``."""
    db_path = Path(db_path)
    return db_path.with_suffix(".scene.json"), db_path.with_suffix(".truth.npz")


@dataclass(frozen=True)
class FrameTruth:
    """One truth frame: per named object its visible pixels, their bounding box (exclusive
    right/bottom, as ``cv2.boundingRect``) and its surface distance (None when not given)."""

    index: int
    id_map: np.ndarray
    pixels: dict[int, int]
    bbox: dict[int, tuple[int, int, int, int]]
    distance: dict[int, float]


@dataclass
class SceneTruth:
    """The parsed sidecars of one recording; frames are decoded on first use."""

    scene: dict[str, Any]
    objects: dict[int, dict[str, Any]]
    width: int
    height: int
    K_rect: np.ndarray
    generator: str
    scene_json_sha256: str
    truth_npz_sha256: str
    _maps: np.ndarray
    _map_of: dict[int, int]
    _scene_frames: dict[int, dict[str, Any]]
    _cache: dict[int, FrameTruth] = field(default_factory=dict)

    @property
    def frame_indices(self) -> list[int]:
        """Image indices that have both an id map and a ``scene.json`` frame, ascending."""
        return sorted(i for i in self._map_of if i in self._scene_frames)

    def has_frame(self, index: int) -> bool:
        """Whether image ``index`` has per-frame truth."""
        return index in self._map_of and index in self._scene_frames

    def frame(self, index: int) -> FrameTruth:
        """The truth of image ``index`` (KeyError when it has none: ask :meth:`has_frame`)."""
        if index not in self._cache:
            id_map = self._maps[self._map_of[index]]
            counts = np.bincount(id_map.reshape(-1), minlength=256)
            pixels: dict[int, int] = {}
            bbox: dict[int, tuple[int, int, int, int]] = {}
            for obj_id in np.flatnonzero(counts[:NONE_ID]).tolist():
                if obj_id not in self.objects:
                    continue  # an id the scene does not name: background for every question
                ys, xs = np.nonzero(id_map == obj_id)
                pixels[obj_id] = int(counts[obj_id])
                bbox[obj_id] = (int(xs.min()), int(ys.min()), int(xs.max()) + 1,
                                int(ys.max()) + 1)
            distance = {int(o["id"]): float(o["surface_distance_m"])
                        for o in self._scene_frames[index].get("objects", [])
                        if o.get("surface_distance_m") is not None}
            self._cache[index] = FrameTruth(index, id_map, pixels, bbox, distance)
        return self._cache[index]


def _require(document: dict[str, Any], key: str, path: Path) -> Any:
    if key not in document:
        raise TruthFormatError(f"{path}: field {key!r} is missing; the truth sidecar must hold "
                               f"{key!r} (see eval_assets/evidence_quality/truth.py)")
    return document[key]


def load_truth(db_path: Path) -> SceneTruth | None:
    """The truth beside ``db_path``, or None when either sidecar is absent.

    Raises :class:`TruthFormatError` naming the file and field when a sidecar is malformed.
    """
    scene_path, npz_path = sidecar_paths(db_path)
    if not (scene_path.is_file() and npz_path.is_file()):
        return None
    try:
        scene = json.loads(scene_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise TruthFormatError(f"{scene_path}: not valid JSON ({exc}); regenerate the "
                               "recording's truth") from exc
    camera = _require(scene, "camera", scene_path)
    objects = {int(o["id"]): o for o in _require(scene, "objects", scene_path)}
    for key in ("width", "height", "K_rect"):
        _require(camera, key, scene_path)
    width, height = int(camera["width"]), int(camera["height"])
    try:
        with np.load(npz_path, allow_pickle=False) as npz:
            if "id_maps" not in npz.files:
                raise TruthFormatError(f"{npz_path}: array 'id_maps' is missing; regenerate the "
                                       "recording's truth")
            maps = np.asarray(npz["id_maps"])
            index = (np.asarray(npz["frame_index"]).astype(int).tolist()
                     if "frame_index" in npz.files else list(range(len(maps))))
    except (OSError, ValueError) as exc:
        if isinstance(exc, TruthFormatError):
            raise
        raise TruthFormatError(f"{npz_path}: not a readable .npz ({exc}); regenerate the "
                               "recording's truth") from exc
    if maps.dtype != np.uint8 or maps.ndim != 3 or maps.shape[1:] != (height, width):
        raise TruthFormatError(
            f"{npz_path}: 'id_maps' is {maps.dtype} {maps.shape}, expected uint8 (n, {height}, "
            f"{width}) as scene.json's camera says; regenerate the recording's truth")
    if len(index) != len(maps):
        raise TruthFormatError(f"{npz_path}: 'frame_index' has {len(index)} entries for "
                               f"{len(maps)} id maps; regenerate the recording's truth")
    return SceneTruth(
        scene=scene, objects=objects, width=width, height=height,
        K_rect=np.asarray(camera["K_rect"], dtype=np.float64).reshape(3, 3),
        generator=str(scene.get("generator", "unknown")),
        scene_json_sha256=file_sha256(scene_path), truth_npz_sha256=file_sha256(npz_path),
        _maps=maps, _map_of={int(i): k for k, i in enumerate(index)},
        _scene_frames={int(f["index"]): f for f in scene.get("frames", [])})
