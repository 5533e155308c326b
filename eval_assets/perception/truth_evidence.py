"""``truth``: evidence read from the engine's truth beside a simulated or synthesized recording.

``eval-assets recording simulate`` and ``recording synthesize`` write ``X.scene.json`` (object
names) and ``X.truth.npz`` (``id_maps``: object id per rectified pixel, 255 for none, and
``frame_index``: the recording frame of each map) beside ``X.db``. The detector returns, for a
queried name, the exact box of every object of that name with pixels in the frame (score 1);
the segmenter returns that object's exact mask. That is gold evidence: what the rest of the
chain makes of perfect perception, and the yardstick for any real detector.

It refuses everything else: a recording without those files (a real one) fails when the
detector is built, naming the missing file and the fix; a frame without a truth map, or whose
size or time disagrees with the truth, fails when it is reached. It is never a fallback.
"""

from __future__ import annotations

import json
import math
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from eval_assets.errors import InputError
from eval_assets.perception.protocols import Box, ConfigurationError, check_rgb
from eval_assets.schemas.frames import RectifiedFrame

TRUTH_VERSION = "1"
NONE_ID = 255
_TS_TOLERANCE_S = 1e-5


class TruthFrameError(InputError, ValueError):
    """A frame the truth files cannot answer for (no map, another size or time)."""


def truth_paths(recording: Path) -> tuple[Path, Path]:
    """``X.db`` → ``X.scene.json``, ``X.truth.npz``."""
    return recording.with_suffix(".scene.json"), recording.with_suffix(".truth.npz")


_FIX = ("Fix: the truth detector works only on recordings made by `eval-assets recording "
        "simulate` or `eval-assets recording synthesize` (with their .scene.json and "
        ".truth.npz beside them); for any other recording choose detector `color` or "
        "`moondream` (--detector, or the perception resource's `detector` field)")


class TruthSource:
    """The truth files of one recording, checked once, and the frame being looked at."""

    def __init__(self, recording: str | Path) -> None:
        """Load ``recording``'s scene.json and truth.npz (``ConfigurationError`` if unusable)."""
        self.recording = Path(recording)
        scene_path, npz_path = truth_paths(self.recording)
        for path in (scene_path, npz_path):
            if not path.is_file():
                raise ConfigurationError(f"{path} does not exist: {self.recording} has no "
                                         f"engine truth beside it. {_FIX}")
        try:
            scene = json.loads(scene_path.read_text(encoding="utf-8"))
            self.names: dict[int, str] = {int(o["id"]): str(o["name"])
                                          for o in scene["objects"]}
            frames: list[dict[str, Any]] = list(scene.get("frames", []))
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigurationError(f"{scene_path}: not a truth scene.json (needs `objects` "
                                     f"with `id` and `name`): {exc}. {_FIX}") from exc
        self.image_ts = {int(f["index"]): float(f["image_ts"]) for f in frames
                         if "image_ts" in f}
        try:
            with np.load(npz_path, allow_pickle=False) as npz:
                self.id_maps = np.asarray(npz["id_maps"])
                frame_index = np.asarray(npz["frame_index"]) if "frame_index" in npz.files \
                    else np.arange(len(self.id_maps))
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
            raise ConfigurationError(f"{npz_path}: not a truth file (needs uint8 `id_maps` "
                                     f"frames × H × W): {exc}. {_FIX}") from exc
        if self.id_maps.dtype != np.uint8 or self.id_maps.ndim != 3 \
                or len(frame_index) != len(self.id_maps):
            raise ConfigurationError(
                f"{npz_path}: id_maps is {self.id_maps.dtype} {self.id_maps.shape} with "
                f"{len(frame_index)} frame_index entries; expected uint8 frames × H × W, one "
                f"entry per map. {_FIX}")
        self.map_of_frame = {int(f): i for i, f in enumerate(frame_index.tolist())}
        self._frame: RectifiedFrame | None = None
        self._ids: np.ndarray | None = None

    def bind_frame(self, frame: RectifiedFrame) -> None:
        """Look at ``frame`` from now on (``TruthFrameError`` when the truth cannot)."""
        _, npz_path = truth_paths(self.recording)
        i = self.map_of_frame.get(frame.frame_index)
        if i is None:
            kept = sorted(self.map_of_frame)
            raise TruthFrameError(
                f"{npz_path} has no truth map for frame {frame.frame_index} (it keeps "
                f"{len(kept)} frames: {kept[:5]}{'…' if len(kept) > 5 else ''}). Fix: select "
                "only frames with truth (e.g. --stride equal to the recording's truth_every), "
                "or write the recording with truth for every frame (--truth-every 1)")
        ids = self.id_maps[i]
        if ids.shape != (frame.height, frame.width):
            raise TruthFrameError(
                f"{npz_path}: the truth map of frame {frame.frame_index} is "
                f"{ids.shape[1]}×{ids.shape[0]} but the rectified frame is "
                f"{frame.width}×{frame.height}: these truth files belong to another recording. "
                f"Fix: regenerate {self.recording} and its truth together")
        ts = self.image_ts.get(frame.frame_index)
        if ts is not None and not math.isclose(ts, frame.image_ts, abs_tol=_TS_TOLERANCE_S):
            raise TruthFrameError(
                f"{truth_paths(self.recording)[0]}: frame {frame.frame_index} of the truth is at "
                f"{ts:.6f} s but the recording's is at {frame.image_ts:.6f} s: these truth files "
                f"belong to another recording. Fix: regenerate {self.recording} and its truth "
                "together")
        self._frame, self._ids = frame, ids

    def ids(self, image: np.ndarray) -> np.ndarray:
        """The bound frame's id map, checked against ``image``'s size."""
        if self._ids is None or self._frame is None:
            raise TruthFrameError(
                f"{self.recording}: the truth evidence was asked about an image before any frame "
                "was bound; it runs only inside build_detections, which binds each frame")
        check_rgb(image)
        if image.shape[:2] != self._ids.shape:
            raise TruthFrameError(
                f"{self.recording}: image of {image.shape[1]}×{image.shape[0]} for frame "
                f"{self._frame.frame_index}, whose truth map is {self._ids.shape[1]}×"
                f"{self._ids.shape[0]}. Fix: run the truth evidence on this recording's "
                "rectified frames only")
        return self._ids


def _box(mask: np.ndarray) -> tuple[float, float, float, float]:
    vs, us = np.nonzero(mask)
    return (float(us.min()), float(vs.min()), float(us.max() + 1), float(vs.max() + 1))


class _FromTruth:
    """A perception model (``truth``) that answers from the recording's truth files."""

    name = "truth"
    version = TRUTH_VERSION

    def __init__(self, source: TruthSource) -> None:
        """Answer from ``source`` (the recording's truth files)."""
        self.source = source

    def bind_frame(self, frame: RectifiedFrame) -> None:
        """See :meth:`TruthSource.bind_frame`."""
        self.source.bind_frame(frame)


class TruthDetector(_FromTruth):
    """Exact boxes of every object of the queried name with pixels in the frame (score 1)."""

    def detect(self, image: np.ndarray, object_name: str) -> list[Box]:
        """One box per object named ``object_name`` visible in the bound frame, by object id."""
        ids = self.source.ids(image)
        present = set(np.unique(ids).tolist()) - {NONE_ID}
        wanted = object_name.strip().lower()
        return [Box(_box(ids == oid), 1.0) for oid in sorted(present)
                if self.source.names.get(oid, "").lower() == wanted]


class TruthSegmenter(_FromTruth):
    """The exact mask of the object whose truth box is the prompt (the truth detector's)."""

    def segment(self, image: np.ndarray,
                box_xyxy: tuple[float, float, float, float]) -> np.ndarray:
        """The mask of the object whose box is ``box_xyxy``; among several, the one with the
        most pixels inside it; an empty mask when no object has pixels there."""
        ids = self.source.ids(image)
        x0, y0, x1, y1 = (round(v) for v in box_xyxy)
        inside = ids[max(y0, 0):max(y1, 0), max(x0, 0):max(x1, 0)]
        counts = np.bincount(inside.ravel(), minlength=256)
        counts[NONE_ID] = 0
        best: tuple[int, int] | None = None  # (exact box match, pixels inside) of the best id
        for oid in np.nonzero(counts)[0].tolist():
            exact = _box(ids == oid) == (float(x0), float(y0), float(x1), float(y1))
            key = (int(exact), int(counts[oid]))
            if best is None or key > best:
                best, chosen = key, oid
        if best is None:
            return np.zeros(ids.shape, dtype=bool)
        return np.asarray(ids == chosen)
