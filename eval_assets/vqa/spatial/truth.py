"""Check spatial labels against the synthesizer's scene truth (``OUT.scene.json``).

The truth is independent of the pipeline: the scene's object centres and sizes, and per frame
the objects with visible pixels, their surface distance and the camera's pose. Each label's
``evidence.tracks`` names world centres; each is matched to the nearest scene object of the same
name (a track whose name no scene object has is a false detection: the case disagrees).

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

    def match(self, entry: Mapping[str, Any]) -> dict[str, Any] | None:
        same = [o for o in self.objects if o["name"] == entry["name"]]
        if not same:
            return None
        c = np.asarray(entry["center_world"], dtype=np.float64)
        return min(same, key=lambda o: float(np.linalg.norm(np.asarray(o["center_world"]) - c)))

    def visible(self, frame: int) -> dict[int, dict[str, Any]]:
        return {int(o["id"]): o for o in self.frames[frame]["objects"]}


def _frames(label: SpatialLabel) -> list[int]:
    return list(label.frame_indices or [label.frame_index])  # type: ignore[list-item]


def _truth(label: SpatialLabel, scene: _Scene) -> tuple[str | None, str]:
    """The scene's answer to the label's question, or None and why it cannot tell."""
    entries = label.evidence["tracks"]
    matched = [scene.match(e) for e in entries]
    if any(m is None for m in matched):
        return None, "false_detection"
    objs: list[dict[str, Any]] = [m for m in matched if m is not None]
    frames = _frames(label)
    if any(f not in scene.frames for f in frames):
        return None, "no_truth_frame"
    family = label.family
    if family == "object_size_cm":
        return f"{100 * max(objs[0]['size']):.4f}", ""
    if family == "pair_distance_m":
        return f"{math.dist(objs[0]['center_world'], objs[1]['center_world']):.4f}", ""
    if family == "camera_distance_m":
        seen = scene.visible(frames[0]).get(int(objs[0]["id"]))
        if seen is None:
            return None, "not_visible_in_truth"
        return f"{seen['surface_distance_m']:.4f}", ""
    if family == "appearance_order":
        first = {}
        for o in objs:
            shown = [f for f in frames if int(o["id"]) in scene.visible(f)]
            if not shown:
                return "(never visible)", ""
            first[o["name"]] = shown[0]
        if len(set(first.values())) < len(first):
            return "(tie)", ""
        return ", ".join(sorted(first, key=lambda n: first[n])), ""
    if family == "object_count_across_frames":
        name = label.object_names[0]
        ids = {i for f in frames for i, o in scene.visible(f).items() if o["name"] == name}
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
            score = 0.0 if why == "false_detection" else None
        elif label.family in NUMERIC:
            score = mean_relative_accuracy(float(label.answer), float(truth))
        else:
            score = float(label.answer == truth)
        out.append(TruthCheck(label.id, label.family, label.answer, truth, score, why))
    return out


def per_family(checks: Sequence[TruthCheck]) -> dict[str, dict[str, float | int]]:
    """Per family: cases, checkable cases and the mean score (MRA or agreement)."""
    out: dict[str, dict[str, float | int]] = {}
    for family in (*NUMERIC, *MULTI_FRAME):
        mine = [c for c in checks if c.family == family]
        scored = [c.score for c in mine if c.score is not None]
        out[family] = {"n": len(mine), "checked": len(scored),
                       "score": float(np.mean(scored)) if scored else float("nan")}
    return out
