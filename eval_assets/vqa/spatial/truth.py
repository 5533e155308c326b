"""Check spatial labels against the synthesizer's scene truth (``OUT.scene.json``).

The truth is independent of the pipeline: the scene's object centres and sizes, and per frame
the objects with visible pixels, their surface distance and the camera's pose. Each label's
``evidence.tracks`` names world centres; each is matched to the nearest scene object of the same
name **within a gate** (:func:`gate_m`: 0.5 m, or half the object's longest size when that is
more). A track whose name no scene object has (``false_detection``), or whose nearest namesake
lies outside the gate (``outside_gate``: a phantom track far from the object must not be
credited with that object's truth), cannot be matched. A marked track (``"object marked 3"``,
no name) matches the nearest scene object of any name, or distractor, whose centre lies within
:data:`MARKED_GATE_M` (``shared/specs/evidence.md``), else ``outside_gate``; a choice between
two tracks answers with the tracks' names, so the truth names the object it matched by its
track's name. A case with a track that cannot be matched scores 0, as does any other case
the truth cannot answer, with the reason in ``detail``. Only a case whose frames the truth does
not cover (``no_truth_frame``, e.g. a rig recording's truth every 15th frame, or what a frame
shows of a distractor, which no truth frame lists) is left unscored.

``object_height_cm``'s truth is the object's top above the floor, which both worlds put at
z = 0 (:data:`FLOOR_Z_M`, :func:`top_height_m`); ``closer_to_camera`` compares the two objects'
``surface_distance_m`` in the case's frame, ``larger_object`` their longest ``size``.

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

from eval_assets.metrics.numeric import mean_relative_accuracy
from eval_assets.schemas.spatial import SpatialLabel, mark_number
from eval_assets.vqa.declarations import FamilySpec, families
from eval_assets.vqa.declarations import family as family_spec
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
MARKED_GATE_M = 0.35
"""A marked track (:func:`~eval_assets.schemas.spatial.mark_number`) matches the nearest scene
object of any name whose centre lies at most this far from its centre (metres): "the object
matched by the evidence track's centre within 0.35 m" (``shared/specs/evidence.md``)."""
FLOOR_Z_M = 0.0
"""The floor's height in the scene truth's world: the synthesizer stands every object on z = 0
(its floor slab's top) and the simulator's floor is PyBullet's plane at z = 0."""


def gate_m(obj: Mapping[str, Any]) -> float:
    """How far (metres) a track's centre may be from the scene object ``obj`` to match it."""
    return max(GATE_M, GATE_SIZE_FRACTION * max(float(v) for v in obj["size"]))


def gate_text() -> str:
    """The gate in words, for reports."""
    return (f"{GATE_M:g} m, or {GATE_SIZE_FRACTION:g} x the object's longest size when that "
            f"is more (a marked track: {MARKED_GATE_M:g} m, to an object of any name)")


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
        self.distractors = scene_distractors(scene)
        self.frames = {int(f["index"]): f for f in scene.get("frames", [])}
        self.camera = scene_camera(scene)

    def match(self, entry: Mapping[str, Any]) -> tuple[dict[str, Any] | None, str, str]:
        """The nearest namesake of a track within the gate, or None, the reason and details;
        a marked track, the nearest object or distractor within :data:`MARKED_GATE_M`."""
        if mark_number(entry["name"]) is not None:
            return match_marked([*self.objects, *self.distractors], entry["name"],
                                entry["center_world"])
        return match_object(self.objects, entry["name"], entry["center_world"])

    def visible(self, frame: int) -> dict[int, dict[str, Any]]:
        return {int(o["id"]): o for o in self.frames[frame]["objects"]}


def _key(name: str) -> str:
    return " ".join(str(name).split()).lower()


def scene_distractors(scene: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The scene's distractors that have a place and a size (the synthesizer's crates, panels
    and boxes; the simulator records none), as objects a marked track may match: named by their
    kind, ``id`` ``"distractor {i}"``, ``distractor`` true. The LiDAR finds them as it finds the
    named objects, and a mark does not say which kind of thing it is drawn on; the truth frames
    list no distractor, so what a frame shows of one is not covered."""
    return [{"id": f"distractor {i}", "name": str(d.get("kind", "distractor")),
             "center_world": list(d["center_world"]), "size": list(d["size"]),
             "distractor": True}
            for i, d in enumerate(scene.get("distractors", []))
            if "center_world" in d and "size" in d]


def match_object(objects: Sequence[Mapping[str, Any]], name: str, center: Sequence[float],
                 ) -> tuple[dict[str, Any] | None, str, str]:
    """``(object, "", "")``: the scene object named ``name`` nearest to ``center`` within its
    gate; else ``(None, reason, detail)`` with reason ``false_detection`` (no object of that name)
    or ``outside_gate`` (the nearest is too far). Names compare lower-case, spaces collapsed.
    A marked ``name`` (``"object marked 3"``) matches by centre alone (:func:`match_marked`)."""
    if mark_number(name) is not None:
        return match_marked(objects, name, center)
    same = [dict(o) for o in objects if _key(o["name"]) == _key(name)]
    if not same:
        return None, "false_detection", f"no scene object is named {name!r}"
    best, dist = _nearest(same, center)
    if dist[best] > gate_m(same[best]):
        return None, "outside_gate", (f"the nearest {name!r} (object {same[best]['id']}) is "
                                      f"{dist[best]:.2f} m from the track; the gate is "
                                      f"{gate_m(same[best]):.2f} m")
    return same[best], "", ""


def _nearest(objects: Sequence[Mapping[str, Any]], center: Sequence[float]
             ) -> tuple[int, list[float]]:
    """The index of the object whose centre is nearest ``center``, and every distance."""
    c = np.asarray(center, dtype=np.float64)
    dist = [float(np.linalg.norm(np.asarray(o["center_world"], dtype=np.float64) - c))
            for o in objects]
    return int(np.argmin(dist)), dist


def match_marked(objects: Sequence[Mapping[str, Any]], name: str, center: Sequence[float],
                 ) -> tuple[dict[str, Any] | None, str, str]:
    """The scene object of any name nearest to a marked track's ``center``, when within
    :data:`MARKED_GATE_M`; else ``(None, "outside_gate", detail)``."""
    if not objects:
        return None, "outside_gate", f"the scene has no object for {name!r} to match"
    best, dist = _nearest(objects, center)
    if dist[best] > MARKED_GATE_M:
        return None, "outside_gate", (f"the nearest object to {name!r} ({objects[best]['name']!r}"
                                      f", object {objects[best]['id']}) is {dist[best]:.2f} m "
                                      f"from the track; a marked track's gate is "
                                      f"{MARKED_GATE_M:.2f} m")
    return dict(objects[best]), "", ""


def top_height_m(obj: Mapping[str, Any]) -> float:
    """How high the scene object's top is above the floor (:data:`FLOOR_Z_M`), metres.

    The synthesizer's ``size`` is the world-axis extent (its objects turn about z only): the
    top is the centre z plus half ``size[2]``. The simulator's ``size`` is the visual mesh's box
    in the object's own frame, turned by ``base_orientation`` (x, y, z, w): the top is that
    box's highest corner (exact for an object standing upright, a bound on a tilted one), or,
    where the simulator recorded it, ``top_z``: its mesh's highest vertex (exact: a tilted
    teddy bear's turned box put its top 22.9 cm up, its mesh's 19.9 cm, simulated seed 5151)."""
    if "top_z" in obj:
        return float(obj["top_z"]) - FLOOR_Z_M
    size = [float(v) for v in obj["size"]]
    q = obj.get("base_orientation")
    if q is None:
        half = size[2] / 2
    else:
        x, y, z, w = (float(v) for v in q)
        n = x * x + y * y + z * z + w * w
        row = (2 * (x * z - y * w) / n, 2 * (y * z + x * w) / n, 1 - 2 * (x * x + y * y) / n)
        half = sum(abs(r) * s for r, s in zip(row, size, strict=True)) / 2
    return float(obj["center_world"][2]) + half - FLOOR_Z_M


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


# The families whose truth is the objects' own (sizes, heights, distances between them).
_NO_FRAME_NEEDED = ("object_size_cm", "pair_distance_m", "object_height_cm", "larger_object")


def _needed_frames(label: SpatialLabel) -> list[int] | None:
    """The frames whose truth the answer depends on (None: a direction without its reference
    frame). Sizes and distances between objects need none, a direction only its reference
    frame's camera."""
    if label.family in _NO_FRAME_NEEDED:
        return []
    if label.family == "relative_direction":
        return None if label.reference_frame is None else [label.reference_frame]
    return _frames(label)


def _order(objs: Sequence[Mapping[str, Any]], names: Sequence[str], frames: Sequence[int],
           scene: _Scene) -> str:
    """The objects' names (their tracks' ``names``) in order of first visibility over
    ``frames`` (or why there is none)."""
    first = {}
    for o, name in zip(objs, names, strict=True):
        shown = [f for f in frames if int(o["id"]) in scene.visible(f)]
        if not shown:
            return "(never visible)"
        first[name] = shown[0]
    if len(set(first.values())) < len(first):
        return "(tie)"
    return ", ".join(sorted(first, key=lambda n: first[n]))


def family_is_motion(family: str) -> bool:
    """Whether ``family`` is one of the robot's own motion families."""
    spec = family_spec(family)
    return spec is not None and _is_motion(spec)


@dataclass(frozen=True)
class _Matched:
    """A label's tracks matched to the scene: the objects, each one's track name (a marked
    track's is its mark) and the truth frames the answer needs."""

    label: SpatialLabel
    objs: list[dict[str, Any]]
    names: list[str]
    frames: list[int]
    scene: _Scene


def _size(m: _Matched) -> tuple[str | None, str]:
    return f"{100 * max(m.objs[0]['size']):.4f}", ""


def _same_object(m: _Matched) -> str | None:
    """Why two tracks have no truth between them: both match one object (else None)."""
    if m.objs[0]["id"] != m.objs[1]["id"]:
        return None
    return (f"same_object: both tracks match object {m.objs[0]['id']}, so the truth has no "
            "answer between two objects")


def _pair_distance(m: _Matched) -> tuple[str | None, str]:
    same = _same_object(m)
    if same is not None:
        return None, same
    return f"{math.dist(m.objs[0]['center_world'], m.objs[1]['center_world']):.4f}", ""


def _unframed(m: _Matched) -> bool:
    """Whether a matched object is a distractor, which the truth frames do not list."""
    return any(o.get("distractor") for o in m.objs)


def _camera_distance(m: _Matched) -> tuple[str | None, str]:
    if _unframed(m):
        return None, NOT_COVERED
    seen = m.scene.visible(m.frames[0]).get(int(m.objs[0]["id"]))
    if seen is None:
        return None, "not_visible_in_truth"
    return f"{seen['surface_distance_m']:.4f}", ""


def _appearance(m: _Matched) -> tuple[str | None, str]:
    if _unframed(m):
        return None, NOT_COVERED
    return _order(m.objs, m.names, m.frames, m.scene), ""


def _count(m: _Matched) -> tuple[str | None, str]:
    name = m.label.object_names[0]
    ids = {i for f in m.frames for i, o in m.scene.visible(f).items()
           if _key(o["name"]) == _key(name)}
    return str(len(ids)), ""


def _direction(m: _Matched) -> tuple[str | None, str]:
    assert m.label.reference_frame is not None
    camera_from_world = np.asarray(m.scene.frames[m.label.reference_frame]["camera_from_world"],
                                   dtype=float)
    p = camera_from_world @ np.array([*m.objs[0]["center_world"], 1.0])
    return f"{'front' if p[2] > 0 else 'back'}-{'right' if p[0] > 0 else 'left'}", ""


def _height(m: _Matched) -> tuple[str | None, str]:
    return f"{100 * top_height_m(m.objs[0]):.4f}", ""


def _closer(m: _Matched) -> tuple[str | None, str]:
    """The track name of the object whose visible surface is nearer in the case's frame (the
    truth's ``surface_distance_m``)."""
    same = _same_object(m)
    if same is not None:
        return None, same
    if _unframed(m):
        return None, NOT_COVERED
    seen = m.scene.visible(m.frames[0])
    rows = [seen.get(int(o["id"])) for o in m.objs]
    if rows[0] is None or rows[1] is None:
        return None, "not_visible_in_truth"
    return _pick(m.names, [float(r["surface_distance_m"]) for r in (rows[0], rows[1])], min)


def _larger(m: _Matched) -> tuple[str | None, str]:
    """The track name of the object with the longer longest ``size``."""
    same = _same_object(m)
    if same is not None:
        return None, same
    return _pick(m.names, [max(float(v) for v in o["size"]) for o in m.objs], max)


def _pick(names: Sequence[str], values: Sequence[float],
          best: Callable[[Sequence[float]], float]) -> tuple[str | None, str]:
    if values[0] == values[1]:
        return "(tie)", ""
    return names[list(values).index(best(values))], ""


# The truth of each track family, given its tracks matched to the scene.
_OBJECT_TRUTH: dict[str, Callable[[_Matched], tuple[str | None, str]]] = {
    "object_size_cm": _size, "pair_distance_m": _pair_distance,
    "camera_distance_m": _camera_distance, "appearance_order": _appearance,
    "object_count_across_frames": _count, "relative_direction": _direction,
    "object_height_cm": _height, "closer_to_camera": _closer, "larger_object": _larger,
}


def _truth(label: SpatialLabel, scene: _Scene) -> tuple[str | None, str]:
    """The scene's answer to the label's question, or None and why it cannot tell."""
    if family_is_motion(label.family):
        return _motion_truth(label, scene)
    objs: list[dict[str, Any]] = []
    names: list[str] = []
    for entry in label.evidence["tracks"]:
        obj, why, detail = scene.match(entry)
        if obj is None:
            return None, f"{why}: {detail}"
        objs.append(obj)
        names.append(str(entry["name"]))
    needed = _needed_frames(label)
    if needed is None:
        return None, "no_reference_frame: the label names no reference frame"
    if any(f not in scene.frames for f in needed):
        return None, NOT_COVERED
    rule = _OBJECT_TRUTH.get(label.family)
    if rule is None:
        return None, "unchecked_family"
    return rule(_Matched(label, objs, names, needed, scene))


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
