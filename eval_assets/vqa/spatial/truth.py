"""Check spatial labels against the synthesizer's scene truth (``OUT.scene.json``).

The truth is independent of the pipeline: the scene's object centres and sizes, and per frame
the objects with visible pixels, their surface distance and the camera's pose. Each label's
``evidence.tracks`` names world centres; each is matched to the nearest scene object of the same
name **within a gate** (:func:`gate_m`: 0.5 m, or half the object's longest size when that is
more). A track whose name no scene object has (``false_detection``), or whose nearest namesake
lies outside the gate (``outside_gate``: a phantom track far from the object must not be
credited with that object's truth), cannot be matched: the case scores 0, as does any other case
the truth cannot answer, with the reason in ``detail``. Only a case whose frames the truth does
not cover (``no_truth_frame``, e.g. a rig recording's truth every 15th frame) is left unscored.

Numeric families are scored with VSI-Bench's mean relative accuracy of the gold answer against
the truth; the multi-frame (choice and count) families agree or not.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from eval_assets.metrics.numeric import mean_relative_accuracy
from eval_assets.schemas.spatial import SpatialLabel

NUMERIC = ("object_size_cm", "pair_distance_m", "camera_distance_m")
MULTI_FRAME = ("appearance_order", "object_count_across_frames", "relative_direction")
GATE_M = 0.5
"""A track matches a namesake at most this far from its centre (metres) ..."""
GATE_SIZE_FRACTION = 0.5
"""... or this share of the object's longest size, when that is more (large objects, whose
centre a partial view places less exactly)."""
NOT_COVERED = "no_truth_frame"
"""The one reason a case is left unscored: its frames have no per-frame truth."""


def gate_m(obj: Mapping[str, Any]) -> float:
    """How far (metres) a track's centre may be from the scene object ``obj`` to match it."""
    return max(GATE_M, GATE_SIZE_FRACTION * max(float(v) for v in obj["size"]))


def gate_text() -> str:
    """The gate in words, for reports."""
    return (f"{GATE_M:g} m, or {GATE_SIZE_FRACTION:g} x the object's longest size when that "
            "is more")


@dataclass(frozen=True)
class TruthCheck:
    """One label checked: ``score`` is the MRA (numeric) or 1/0 (agreement); ``truth`` the
    answer the scene gives; None when the scene cannot check it (``detail`` says why)."""

    case_id: str
    family: str
    answer: str
    truth: str | None
    score: float | None
    detail: str = ""


class _Scene:
    def __init__(self, scene: Mapping[str, Any]) -> None:
        self.objects = list(scene["objects"])
        self.frames = {int(f["index"]): f for f in scene.get("frames", [])}

    def match(self, entry: Mapping[str, Any]) -> tuple[dict[str, Any] | None, str, str]:
        """The nearest namesake of a track within the gate, or None, the reason and details."""
        return match_object(self.objects, entry["name"], entry["center_world"])

    def visible(self, frame: int) -> dict[int, dict[str, Any]]:
        return {int(o["id"]): o for o in self.frames[frame]["objects"]}


def _key(name: str) -> str:
    return " ".join(str(name).split()).lower()


def match_object(objects: Sequence[Mapping[str, Any]], name: str, center: Sequence[float],
                 ) -> tuple[dict[str, Any] | None, str, str]:
    """``(object, "", "")``: the scene object named ``name`` nearest to ``center`` within its
    gate; else ``(None, reason, detail)`` with reason ``false_detection`` (no object of that name)
    or ``outside_gate`` (the nearest is too far). Names compare lower-case, spaces collapsed."""
    same = [dict(o) for o in objects if _key(o["name"]) == _key(name)]
    if not same:
        return None, "false_detection", f"no scene object is named {name!r}"
    c = np.asarray(center, dtype=np.float64)
    dist = [float(np.linalg.norm(np.asarray(o["center_world"], dtype=np.float64) - c))
            for o in same]
    best = int(np.argmin(dist))
    if dist[best] > gate_m(same[best]):
        return None, "outside_gate", (f"the nearest {name!r} (object {same[best]['id']}) is "
                                      f"{dist[best]:.2f} m from the track; the gate is "
                                      f"{gate_m(same[best]):.2f} m")
    return same[best], "", ""


def _frames(label: SpatialLabel) -> list[int]:
    return list(label.frame_indices or [label.frame_index])  # type: ignore[list-item]


def _needed_frames(label: SpatialLabel) -> list[int] | None:
    """The frames whose truth the answer depends on (None: a direction without its reference
    frame). Sizes and distances between objects need none, a direction only its reference
    frame's camera."""
    if label.family in ("object_size_cm", "pair_distance_m"):
        return []
    if label.family == "relative_direction":
        return None if label.reference_frame is None else [label.reference_frame]
    return _frames(label)


def _order(objs: Sequence[Mapping[str, Any]], frames: Sequence[int], scene: _Scene) -> str:
    """The objects' names in order of first visibility over ``frames`` (or why there is none)."""
    first = {}
    for o in objs:
        shown = [f for f in frames if int(o["id"]) in scene.visible(f)]
        if not shown:
            return "(never visible)"
        first[o["name"]] = shown[0]
    if len(set(first.values())) < len(first):
        return "(tie)"
    return ", ".join(sorted(first, key=lambda n: first[n]))


def _truth(label: SpatialLabel, scene: _Scene) -> tuple[str | None, str]:
    """The scene's answer to the label's question, or None and why it cannot tell."""
    family = label.family
    objs: list[dict[str, Any]] = []
    for entry in label.evidence["tracks"]:
        obj, why, detail = scene.match(entry)
        if obj is None:
            return None, f"{why}: {detail}"
        objs.append(obj)
    needed = _needed_frames(label)
    if needed is None:
        return None, "no_reference_frame: the label names no reference frame"
    if any(f not in scene.frames for f in needed):
        return None, NOT_COVERED
    if family == "object_size_cm":
        return f"{100 * max(objs[0]['size']):.4f}", ""
    if family == "pair_distance_m":
        if objs[0]["id"] == objs[1]["id"]:
            return None, (f"same_object: both tracks match object {objs[0]['id']}, so the "
                          "truth has no distance between two objects")
        return f"{math.dist(objs[0]['center_world'], objs[1]['center_world']):.4f}", ""
    if family == "camera_distance_m":
        seen = scene.visible(needed[0]).get(int(objs[0]["id"]))
        if seen is None:
            return None, "not_visible_in_truth"
        return f"{seen['surface_distance_m']:.4f}", ""
    if family == "appearance_order":
        return _order(objs, needed, scene), ""
    if family == "object_count_across_frames":
        name = label.object_names[0]
        ids = {i for f in needed for i, o in scene.visible(f).items()
               if _key(o["name"]) == _key(name)}
        return str(len(ids)), ""
    if family == "relative_direction":
        assert label.reference_frame is not None
        m = np.asarray(scene.frames[label.reference_frame]["camera_from_world"], dtype=float)
        p = m @ np.array([*objs[0]["center_world"], 1.0])
        return f"{'front' if p[2] > 0 else 'back'}-{'right' if p[0] > 0 else 'left'}", ""
    return None, "unchecked_family"


def check_labels(labels: Iterable[SpatialLabel], scene: Mapping[str, Any]) -> list[TruthCheck]:
    """Every label checked against ``scene`` (the parsed ``scene.json``)."""
    world = _Scene(scene)
    out = []
    for label in labels:
        truth, why = _truth(label, world)
        if truth is None:
            # Unmatched or unscorable counts as wrong; only the truth's own gaps are unscored.
            score = None if why == NOT_COVERED else 0.0
        elif label.family in NUMERIC:
            score = mean_relative_accuracy(float(label.answer), float(truth))
        else:
            score = float(label.answer == truth)
        out.append(TruthCheck(label.id, label.family, label.answer, truth, score, why))
    return out


def per_family(checks: Sequence[TruthCheck]) -> dict[str, dict[str, float | int]]:
    """Per family: cases, checked cases (the truth covers their frames; unmatched and
    unscorable ones are checked and score 0) and the mean score (MRA or agreement)."""
    out: dict[str, dict[str, float | int]] = {}
    for family in (*NUMERIC, *MULTI_FRAME):
        mine = [c for c in checks if c.family == family]
        scored = [c.score for c in mine if c.score is not None]
        out[family] = {"n": len(mine), "checked": len(scored),
                       "score": float(np.mean(scored)) if scored else float("nan")}
    return out
