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
the truth; the multi-frame (choice and count) families agree or not. The motion families need
no object: their truth is the frames' camera poses (``frames[].camera_from_world``); their
numbers are checked by absolute error (metres, degrees), their choices by agreement.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from eval_assets.family_spec import FamilySpec, families
from eval_assets.family_spec import family as family_spec
from eval_assets.metrics.numeric import mean_relative_accuracy
from eval_assets.schemas.spatial import SpatialLabel
from eval_assets.vqa.spatial import motion as _motion_module
from eval_assets.vqa.spatial.motion import (
    APART_DEG,
    APART_M,
    NO_TURN_DEG,
    SAME_DEG,
    SAME_M,
    ZERO_M,
    Motion,
    Pose,
    bearing_cw_deg,
    route,
    wrap_deg,
)


def _is_motion(spec: FamilySpec) -> bool:
    """A family of the robot's own motion: its rule is one of :mod:`~eval_assets.vqa.spatial.
    motion`'s generators (its truth is the camera's poses, :func:`_motion_truth`)."""
    return getattr(spec.rule, "__module__", None) == _motion_module.__name__


def _checked(keep: Callable[[FamilySpec], bool]) -> tuple[str, ...]:
    """The generated spatial families (declared with a rule) that ``keep`` holds for, in their
    declaration order."""
    return tuple(s.name for s in families("spatial") if s.rule is not None and keep(s))


# The groups are derived from the family declarations (eval_assets.family_spec), so a new
# family is checked by how it is scored without an edit here:
# numbers with a unit from tracks, scored by mean relative accuracy;
NUMERIC = _checked(lambda s: not _is_motion(s) and s.answer_type == "number"
                   and s.unit is not None)
# the other track families (choices and counts), scored by agreement;
MULTI_FRAME = _checked(lambda s: not _is_motion(s) and not (s.answer_type == "number"
                                                            and s.unit is not None))
# the robot's own motion: numbers checked by their absolute error (metres, degrees), choices by
# agreement, the truth from the scene's camera poses alone.
MOTION_NUMERIC = _checked(lambda s: _is_motion(s) and s.answer_type == "number")
MOTION_CHOICE = _checked(lambda s: _is_motion(s) and s.answer_type == "choice")
CHECKED_FAMILIES: tuple[str, ...] = (*NUMERIC, *MULTI_FRAME, *MOTION_NUMERIC, *MOTION_CHOICE)
"""Every family the truth checks, in the order the reports list them."""
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
        self.camera = scene_camera(scene)

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


def scene_pose(frame: Mapping[str, Any]) -> tuple[np.ndarray, float]:
    """A scene frame's camera: optical centre (world) and heading (degrees, counter-clockwise)."""
    return _pose_of(np.linalg.inv(np.asarray(frame["camera_from_world"], dtype=np.float64)))


CameraAt = Callable[[float], np.ndarray]


def scene_camera(scene: Mapping[str, Any]) -> tuple[CameraAt, float, float] | None:
    """``(world_from_camera at any time, TF rate, first TF stamp)`` of a scene whose drive can be
    rebuilt: a seeded synthetic scene (from its scene seed: the synthesizer's own path, not the
    recording's TF; the TF stream starts when the path does) or a simulated one (its
    ``path.segments`` driven from ``path.t_start``, with ``robot.base_from_camera``; TF from
    ``tf_first_stamp``). Both record the TF rate as ``rates_hz.tf_world_base_link``. None for
    another scene (older simulated scenes recorded no TF rate)."""
    path = scene.get("path", {})
    if scene.get("scene_seed") is not None and "tour" in path:
        return _synth_camera(scene)
    if "segments" in path and "tf_world_base_link" in scene.get("rates_hz", {}):
        return _sim_camera(scene)
    return None


def _synth_camera(scene: Mapping[str, Any]) -> tuple[CameraAt, float, float]:
    from eval_assets.synth.scene import TourPath, sample_camera  # only for synthetic truth
    from eval_assets.synth.seeded import seeded_scene

    world = seeded_scene(int(scene["scene_seed"]), sample_camera())
    tour = world.path
    assert isinstance(tour, TourPath)
    rate = float(scene["rates_hz"]["tf_world_base_link"])

    def camera_at(t: float) -> np.ndarray:
        return world.path.world_from_base(t) @ world.base_from_camera

    return camera_at, rate, tour.t_start


def _sim_camera(scene: Mapping[str, Any]) -> tuple[CameraAt, float, float]:
    from eval_assets.sim.path import SPEED_M_S, DrivePath, Segment  # only for simulated truth

    path = scene["path"]
    # The drive's speed is the simulator's constant, not a segment field: a scene written at
    # another speed would rebuild a different drive, so it is refused rather than misread.
    speed = float(path.get("speed_mps", SPEED_M_S))
    if abs(speed - SPEED_M_S) > 1e-9:
        raise ValueError(f"scene.json path.speed_mps is {speed:g} m/s but this simulator drives "
                         f"at {SPEED_M_S:g} m/s; re-simulate the recording with this version")
    drive = DrivePath(tuple(Segment(**seg) for seg in path["segments"]), float(path["t_start"]))
    base_from_camera = np.asarray(scene["robot"]["base_from_camera"], dtype=np.float64)

    def camera_at(t: float) -> np.ndarray:
        return drive.world_from_base(t) @ base_from_camera

    return camera_at, float(scene["rates_hz"]["tf_world_base_link"]), float(
        scene["tf_first_stamp"])


def _pose_of(world_from_camera: np.ndarray) -> tuple[np.ndarray, float]:
    axis = world_from_camera[:3, 2]
    return world_from_camera[:3, 3], math.degrees(math.atan2(axis[1], axis[0]))


def _motion_truth(label: SpatialLabel, scene: _Scene) -> tuple[str | None, str]:
    """The motion families' answers from the scene's camera poses: the shown frames' from
    ``frames[].camera_from_world``; path and turn (spec: over every TF sample between the first
    and the last image) from the synthesizer's path at the TF stamps when the scene can be
    rebuilt, else over every truth frame between them (which cuts the corners of turns)."""
    frames = _frames(label)
    if any(f not in scene.frames for f in frames):
        return None, "no_truth_frame"
    first, last = (scene_pose(scene.frames[f]) for f in (frames[0], frames[-1]))
    a, b = (float(scene.frames[f]["image_ts"]) for f in (frames[0], frames[-1]))
    if scene.camera is not None:
        camera_at, rate, t0 = scene.camera
        k = np.arange(math.floor((a - t0) * rate) + 1, math.ceil((b - t0) * rate))
        times = np.concatenate([[a], t0 + k / rate, [b]])
        times = times[(times >= a) & (times <= b)]
        poses = [_pose_of(camera_at(float(t))) for t in times]
    else:
        between = [f for f in sorted(scene.frames) if frames[0] <= f <= frames[-1]]
        times = np.array([float(scene.frames[f]["image_ts"]) for f in between])
        poses = [scene_pose(scene.frames[f]) for f in between]
    p = np.array([q[0] for q in poses])
    psi = np.array([q[1] for q in poses])
    path = float(np.sum(np.linalg.norm(np.diff(p, axis=0), axis=1)))
    turn = float(sum(wrap_deg(float(d)) for d in np.diff(psi)))
    family = label.family
    if family == "camera_displacement_m":
        d = float(np.linalg.norm(last[0] - first[0]))
        return f"{0.0 if d < ZERO_M else d:.4f}", ""
    if family == "path_length_m":
        return f"{0.0 if path < ZERO_M else path:.4f}", ""
    if family == "turn_angle_deg":
        return f"{abs(turn):.3f}", ""
    if family == "turn_direction":
        return ("no turn" if abs(turn) < NO_TURN_DEG else "left" if turn > 0 else "right"), ""
    if family == "same_place":
        dp = float(np.linalg.norm(last[0] - first[0]))
        dpsi = abs(wrap_deg(last[1] - first[1]))
        if dp < SAME_M and dpsi < SAME_DEG:
            return "yes", ""
        return ("no", "") if dp > APART_M or dpsi > APART_DEG else ("(between)", "")
    if family == "egocentric_direction_deg":
        # The bearing of the track's centre (the motion is what is checked here); a track no
        # scene object matches is a phantom and scores 0, as in the other families.
        entry = label.evidence["tracks"][0]
        obj, why, detail = scene.match(entry)
        if obj is None:
            return None, f"{why}: {detail}"
        centre = entry["center_world"]
        end = Pose(frames[-1], b, (float(last[0][0]), float(last[0][1]), float(last[0][2])),
                   float(last[1]))
        return f"{bearing_cw_deg(end, centre):.3f}", ""
    if family == "route_sequence":
        runs = route(Motion(times, p, psi), a, b)
        if not all(r.clean for r in runs):
            return "(unclean)", ""
        return ", ".join(r.move for r in runs), ""
    return None, "unchecked_family"


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


def family_is_motion(family: str) -> bool:
    """Whether ``family`` is one of the robot's own motion families."""
    spec = family_spec(family)
    return spec is not None and _is_motion(spec)


def _truth(label: SpatialLabel, scene: _Scene) -> tuple[str | None, str]:
    """The scene's answer to the label's question, or None and why it cannot tell."""
    if family_is_motion(label.family):
        return _motion_truth(label, scene)
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
        elif label.family in MOTION_NUMERIC:
            score = motion_error(label.family, float(label.answer), float(truth))
        else:
            score = float(label.answer == truth)
        out.append(TruthCheck(label.id, label.family, label.answer, truth, score, why))
    return out


def motion_error(family: str, answer: float, truth: float) -> float:
    """Absolute error of a motion number: metres, or degrees (wrapped for a direction)."""
    if family == "egocentric_direction_deg":
        return abs(wrap_deg(answer - truth))
    return abs(answer - truth)


def per_family(checks: Sequence[TruthCheck]) -> dict[str, dict[str, float | int]]:
    """Per family: cases, checked cases (the truth covers their frames; unmatched and
    unscorable ones are checked and score 0) and the mean score (MRA or agreement; for the
    motion numbers, the mean absolute error in metres or degrees)."""
    out: dict[str, dict[str, float | int]] = {}
    for family in CHECKED_FAMILIES:
        mine = [c for c in checks if c.family == family]
        scored = [c.score for c in mine if c.score is not None]
        out[family] = {"n": len(mine), "checked": len(scored),
                       "score": float(np.mean(scored)) if scored else float("nan")}
    return out
