"""The robot's own motion families (``shared/specs/motion.md``): truth from TF alone.

The tracks file carries the rectified camera's pose at every TF sample
(:attr:`~eval_assets.schemas.spatial.ObjectTracks.trajectory`). A shown frame's pose ``p``
(optical centre) and heading ``ψ`` (yaw of the optical axis on the floor plane, counter-clockwise)
are that trajectory at the image's stamp, linearly interpolated between the two TF samples around
it: the nearest sample alone can be half a TF period away, which on a robot turning 45°/s at
10 Hz TF is 2° of heading. Interpolation is exact while the motion is uniform; a frame whose TF
step differs from its neighbours (a turn or run starting between two samples) is not used.
Between two frames, ``path`` sums the step lengths and ``turn`` the wrapped yaw steps over every
TF sample in between, not only over the frames shown, so a 200° left turn is +200.

Families (each asked only where its answer is unambiguous, at most :data:`MAX_MOTION_CASES` per
recording, windows spread over the whole recording, everything deterministic):

- ``camera_displacement_m`` / ``path_length_m``: straight-line distance / distance travelled;
  asked when it is below :data:`ZERO_M` (answer 0) or at least :data:`MIN_DISTANCE_M`.
- ``turn_direction``: ``left`` / ``right`` / ``no turn`` from the sign of the total turn
  (balanced; nothing asked where every window has the same answer).
- ``turn_angle_deg``: the total turn's size, in degrees.
- ``egocentric_direction_deg``: where an object seen earlier is from the last frame's camera,
  in degrees clockwise from straight ahead, when it is out of the last frame's view.
- ``route_sequence``: the path cut into straight runs and turns, with three distractors one move
  away.
- ``same_place``: whether the last frame was taken about where (and facing about the way) the
  first was; yes and no balanced.

Windows that fall between the thresholds are not asked about; the rejections file counts them
per family and reason (one row each, with a few example windows), not one row per window. Nor
are windows (or ``same_place`` pairs) that span or touch a stretch where the frame stage found
the images and TF disagreeing (:attr:`~eval_assets.vqa.spatial.evidence.TrackIndex.breaks`: a
frozen camera, a stuck TF): which of the two was wrong there is unknown, and every truth here
comes from TF (:data:`CROSSES_BREAK`).
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from eval_assets.schemas.spatial import ObjectTrack, SpatialCase, SpatialLabel, spatial_families
from eval_assets.schemas.vqa import asset_relpath
from eval_assets.vqa.families import slug
from eval_assets.vqa.spatial.evidence import (
    SpatialRejection,
    TrackIndex,
    best_frames,
    track_evidence,
)
from eval_assets.vqa.spatial.trajectory import (
    ROUTE_TURN_DEG,
    RUN_MAX_TURN_DEG,
    RUN_MIN_M,
    Run,
)
from eval_assets.vqa.spatial.trajectory import Motion as Motion
from eval_assets.vqa.spatial.trajectory import Pose as Pose
from eval_assets.vqa.spatial.trajectory import route as route
from eval_assets.vqa.spatial.trajectory import wrap_deg as wrap_deg
from eval_assets.vqa.spatial.wording import ask

Item = tuple[SpatialCase, SpatialLabel] | SpatialRejection

MAX_MOTION_CASES = 24
# Distances: below ZERO_M the camera did not move (truth 0); between it and MIN_DISTANCE_M a
# model's estimate and the truth are both within TF and rounding noise of each other's scale.
ZERO_M = 0.05
MIN_DISTANCE_M = 0.5
# Turns: |turn| < NO_TURN_DEG is "no turn"; MIN_TURN_DEG..MAX_TURN_DEG a clear left or right (past
# 150° "left" and "right" are both a half turn away from the same heading).
NO_TURN_DEG = 15.0
MIN_TURN_DEG = 30.0
MAX_TURN_DEG = 150.0
# Route questions: the moves of the trajectory's runs (:mod:`~eval_assets.vqa.spatial.trajectory`).
ROUTE_MOVES = (2, 5)  # moves per route question, at least and at most
MOVES = ("forward", "turn left", "turn right")
# Same place: yes under SAME_M and SAME_DEG; no over APART_M or APART_DEG.
SAME_M = 0.5
SAME_DEG = 30.0
APART_M = 2.0
APART_DEG = 90.0
# Egocentric direction: the object at least this far from the last camera on the floor (closer,
# its centre's bearing swings with centimetres of error).
EGO_MIN_M = 0.6
EGO_ENDS_PER_OBJECT = 4
# Windows: the last frame the one nearest to this many seconds after the first (in frames at 2 Hz:
# 1, 2, 3, 4, 6, 8, 12, 16, 24, 32 on), from at most MAX_STARTS first frames spread over the
# recording: seconds, not frame counts, so a 15 Hz recording's windows span its turns as well.
SPANS_S = (0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0)
MAX_STARTS = 160
SHOWN = 4  # frames a distance or turn case shows (first, last and evenly between)
ROUTE_SHOWN = 8
REJECTION_EXAMPLES = 5
CROSSES_BREAK = "crosses_image_tf_disagreement"
_BREAK_DESCRIBED = {CROSSES_BREAK: "span frames whose images and TF disagree (the frame stage's "
                                   "frozen_image / image_moved_tf_still)"}
_TIME_ORDER = "These images are frames of one video, in time order. "


def _frame_times(index: TrackIndex, motion: Motion) -> list[tuple[int, float]]:
    """Published frames whose stamp the trajectory covers, amid steady motion, with their
    stamps, in time order."""
    cams = index.tracks.cameras
    out = [(f, cams[f].image_ts) for f in index.published
           if f in cams and motion.covers(cams[f].image_ts) and motion.steady(cams[f].image_ts)]
    return sorted(out, key=lambda ft: (ft[1], ft[0]))


def _shown(frames: Sequence[tuple[int, float]], n: int) -> list[tuple[int, float]]:
    """``n`` frames of ``frames``: the first, the last and the rest evenly between."""
    if len(frames) <= n:
        return list(frames)
    picks = {round(i * (len(frames) - 1) / (n - 1)) for i in range(n)}
    return [frames[i] for i in sorted(picks)]


def _windows(frames: Sequence[tuple[int, float]]) -> Iterator[list[tuple[int, float]]]:
    """Windows of published frames: from each of up to :data:`MAX_STARTS` first frames, to the
    frame nearest :data:`SPANS_S` seconds on (each window once)."""
    times = np.array([t for _, t in frames])
    seen: set[tuple[int, int]] = set()
    for start in _spread(range(len(frames)), MAX_STARTS):
        for span in SPANS_S:
            j = int(np.searchsorted(times, times[start] + span))
            if j > 0 and (j == len(times) or
                          times[start] + span - times[j - 1] < times[j] - times[start] - span):
                j -= 1
            if j <= start or j >= len(times) or (start, j) in seen:
                continue
            seen.add((start, j))
            yield list(frames[start:j + 1])


def _spread(items: Sequence[Any], n: int) -> list[Any]:
    """At most ``n`` of ``items`` (kept in their order), evenly spaced over them."""
    if len(items) <= n:
        return list(items)
    return [items[int(i * len(items) / n)] for i in range(n)]


def _balanced(groups: Mapping[str, Sequence[Any]], cap: int) -> list[Any]:
    """Up to ``cap`` items, the groups (answers) sharing it evenly; a group with fewer items
    leaves its share to the others. Each group's picks are spread over it."""
    quota = dict.fromkeys(groups, 0)
    left = cap
    while left > 0:
        open_ = [g for g in sorted(groups) if quota[g] < len(groups[g])]
        if not open_:
            break
        for g in open_:
            if left == 0:
                break
            quota[g] += 1
            left -= 1
    return [item for g in sorted(groups) for item in _spread(groups[g], quota[g])]


class _Rejections:
    """Windows not asked about, counted per reason (the rejections file would otherwise hold
    one row per window of every family)."""

    def __init__(self, family: str) -> None:
        self.family = family
        self.seen: dict[str, list[tuple[int, ...]]] = {}

    def add(self, reason: str, frames: Sequence[int]) -> None:
        self.seen.setdefault(reason, []).append(tuple(frames))

    def rows(self, describe: Mapping[str, str]) -> Iterator[SpatialRejection]:
        for reason in sorted(self.seen):
            windows = self.seen[reason]
            examples = ", ".join(f"{w[0]}-{w[-1]}" for w in windows[:REJECTION_EXAMPLES])
            yield SpatialRejection(self.family, (), reason,
                                   f"{len(windows)} windows: {describe.get(reason, reason)} "
                                   f"(e.g. frames {examples})", windows[0])


def _case(family: str, shown: Sequence[Pose], question: str, answer: str,
          motion: Motion, evidence: Mapping[str, Any], names: Sequence[str] = (),
          tracks: Sequence[ObjectTrack] = (), choices: Sequence[str] | None = None) -> Item:
    """The case and its audit label; the evidence always carries the truth inputs: ``p`` and
    ``psi_deg`` per shown frame, ``path_m`` and ``turn_deg`` from the first to the last."""
    answer_type, unit = spatial_families()[family]
    frames = [s.frame for s in shown]
    case_id = (f"spatial-{family}-" + (f"{slug(names)}-" if names else "")
               + "-".join(f"{f:06d}" for f in frames))
    a, b = shown[0].t, shown[-1].t
    truth = {"p": [[round(x, 4) + 0.0 for x in s.p] for s in shown],
             "psi_deg": [round(s.psi, 3) + 0.0 for s in shown],
             "image_ts": [s.t for s in shown],
             "path_m": round(motion.path(a, b), 4) + 0.0,
             "turn_deg": round(motion.turn(a, b), 3) + 0.0}
    listed = list(choices) if choices is not None else None
    case = SpatialCase(id=case_id, images=[asset_relpath(f) for f in frames], question=question,
                       answer_type=answer_type, unit=unit, choices=listed)
    label = SpatialLabel(
        id=case_id, answer=answer, family=family, answer_type=answer_type, unit=unit,
        choices=listed, object_names=list(names),
        frame_index=frames[0] if len(frames) == 1 else None,
        frame_indices=frames if len(frames) > 1 else None,
        evidence={**truth, **evidence, "tracks": [track_evidence(t) for t in tracks]})
    return case, label


def _poses(motion: Motion, frames: Sequence[tuple[int, float]]) -> list[Pose]:
    return [motion.pose(f, t) for f, t in frames]


def _no_trajectory(family: str, index: TrackIndex, motion: Motion) -> Iterator[SpatialRejection]:
    if len(motion.times) < 2:
        yield SpatialRejection(family, (), "no_trajectory",
                               "the tracks file has no camera trajectory (rebuild the "
                               "object_tracks asset) or the recording has no TF for the camera")


def _distance_family(index: TrackIndex, family: str,
                     measure: Callable[[Motion, Pose, Pose], float],
                     question: str) -> Iterator[Item]:
    motion = Motion.of(index)
    yield from _no_trajectory(family, index, motion)
    frames = _frame_times(index, motion)
    rejected = _Rejections(family)
    groups: dict[str, list[tuple[list[Pose], float]]] = {"moved": [], "zero": []}
    for window in _windows(frames):
        shown = _poses(motion, _shown(window, SHOWN))
        if index.crosses_break(shown[0].t, shown[-1].t):
            rejected.add(CROSSES_BREAK, [s.frame for s in shown])
            continue
        d = measure(motion, shown[0], shown[-1])
        if d < ZERO_M:
            groups["zero"].append((shown, 0.0))
        elif d >= MIN_DISTANCE_M:
            groups["moved"].append((shown, d))
        else:
            rejected.add("between_thresholds", [s.frame for s in shown])
    yield from rejected.rows({"between_thresholds": f"{ZERO_M}-{MIN_DISTANCE_M} m",
                              **_BREAK_DESCRIBED})
    # Zero answers (a stop) are at most a quarter of the family: a model must not learn "0".
    zeros = _spread(groups["zero"], min(len(groups["zero"]), MAX_MOTION_CASES // 4))
    picked = zeros + _spread(groups["moved"], MAX_MOTION_CASES - len(zeros))
    for shown, d in sorted(picked, key=lambda item: (item[0][0].t, item[0][-1].t)):
        yield _case(family, shown, _TIME_ORDER + question, f"{d:.2f}", motion,
                    {"distance_m": round(d, 4) + 0.0})


def _displacement(motion: Motion, a: Pose, b: Pose) -> float:
    return math.dist(a.p, b.p)


def _travelled(motion: Motion, a: Pose, b: Pose) -> float:
    return motion.path(a.t, b.t)


def camera_displacement_m(index: TrackIndex) -> Iterator[Item]:
    """Straight-line distance between the camera at the first and at the last frame."""
    yield from _distance_family(
        index, "camera_displacement_m", _displacement, ask("camera_displacement_m"))


def path_length_m(index: TrackIndex) -> Iterator[Item]:
    """Distance the camera travelled along its path from the first frame to the last."""
    yield from _distance_family(
        index, "path_length_m", _travelled, ask("path_length_m"))


def _turn_windows(index: TrackIndex, family: str
                  ) -> tuple[Motion, dict[str, list[tuple[list[Pose], float]]], _Rejections]:
    motion = Motion.of(index)
    frames = _frame_times(index, motion)
    rejected = _Rejections(family)
    groups: dict[str, list[tuple[list[Pose], float]]] = {"left": [], "right": [], "no turn": []}
    for window in _windows(frames):
        shown = _poses(motion, _shown(window, SHOWN))
        if index.crosses_break(shown[0].t, shown[-1].t):
            rejected.add(CROSSES_BREAK, [s.frame for s in shown])
            continue
        turn = motion.turn(shown[0].t, shown[-1].t)
        if abs(turn) < NO_TURN_DEG:
            groups["no turn"].append((shown, turn))
        elif MIN_TURN_DEG <= abs(turn) <= MAX_TURN_DEG:
            groups["left" if turn > 0 else "right"].append((shown, turn))
        else:
            rejected.add("ambiguous_turn", [s.frame for s in shown])
    return motion, groups, rejected


_TURN_DESCRIBED = {"ambiguous_turn": f"total turn {NO_TURN_DEG:g}-{MIN_TURN_DEG:g}° or over "
                                     f"{MAX_TURN_DEG:g}°", **_BREAK_DESCRIBED}


def turn_direction(index: TrackIndex) -> Iterator[Item]:
    """Left, right or no turn between the first and the last frame (answers balanced)."""
    motion, groups, rejected = _turn_windows(index, "turn_direction")
    yield from _no_trajectory("turn_direction", index, motion)
    yield from rejected.rows(_TURN_DESCRIBED)
    answers = [g for g in sorted(groups) if groups[g]]
    if len(answers) == 1:
        # One answer for every window (a recording that never turns): "always say it" would
        # score 100 %, so the family asks nothing here.
        yield SpatialRejection("turn_direction", (), "one_answer_only",
                               f"every window's answer is {answers[0]!r}")
        return
    picked = _balanced(groups, MAX_MOTION_CASES)
    for shown, turn in sorted(picked, key=lambda item: (item[0][0].t, item[0][-1].t)):
        answer = ("no turn" if abs(turn) < NO_TURN_DEG else "left" if turn > 0 else "right")
        yield _case("turn_direction", shown, _TIME_ORDER + ask("turn_direction"), answer, motion,
                    {}, choices=("left", "right", "no turn"))


def turn_angle_deg(index: TrackIndex) -> Iterator[Item]:
    """How many degrees the camera turned between the first and the last frame (30-150°),
    left and right turns sharing the cap."""
    motion, groups, rejected = _turn_windows(index, "turn_angle_deg")
    yield from _no_trajectory("turn_angle_deg", index, motion)
    yield from rejected.rows(_TURN_DESCRIBED)
    picked = _balanced({"left": groups["left"], "right": groups["right"]}, MAX_MOTION_CASES)
    for shown, turn in sorted(picked, key=lambda item: (item[0][0].t, item[0][-1].t)):
        yield _case("turn_angle_deg", shown, _TIME_ORDER + ask("turn_angle_deg"),
                    f"{abs(turn):.0f}", motion, {})


def bearing_cw_deg(pose: Pose, point: Sequence[float]) -> float:
    """Direction of ``point`` from the camera ``pose`` on the floor plane: degrees clockwise
    from straight ahead, in (-180, 180]."""
    ccw = math.degrees(math.atan2(point[1] - pose.p[1], point[0] - pose.p[0]))
    return wrap_deg(-(ccw - pose.psi))


def egocentric_direction_deg(index: TrackIndex) -> Iterator[Item]:
    """Bearing of an object seen in an earlier frame from the camera of a later frame that does
    not see it (clockwise from straight ahead); objects take turns for the cap."""
    family = "egocentric_direction_deg"
    motion = Motion.of(index)
    yield from _no_trajectory(family, index, motion)
    good, rejected = index.askable(family)
    yield from rejected
    frames = _frame_times(index, motion)
    per_object: list[list[Item]] = []
    for t in good:
        items: list[Item] = []
        covered = {f for f, _ in frames}
        seen = [f for f in t.frames if f in covered]
        if not seen:
            continue
        hidden = [(f, ts) for f, ts in frames if f > seen[0] and not index.may_be_visible(t, f)]
        asked = 0
        # Ends spread over the frames that do not see it; twice the need, as some are too close.
        for last in _spread(hidden, 2 * EGO_ENDS_PER_OBJECT):
            if asked == EGO_ENDS_PER_OBJECT:
                break
            earlier = [f for f in seen if f < last[0]]
            first = best_frames(t.model_copy(update={"frames": earlier}), 1)[0]
            window = [ft for ft in frames if first <= ft[0] <= last[0]]
            if index.crosses_break(window[0][1], window[-1][1]):
                items.append(SpatialRejection(family, (t.name,), CROSSES_BREAK,
                                              _BREAK_DESCRIBED[CROSSES_BREAK],
                                              (window[0][0], window[-1][0])))
                continue
            shown = _poses(motion, _shown(window, SHOWN))
            end = shown[-1]
            floor = math.dist(end.p[:2], t.center_world[:2])
            if floor < EGO_MIN_M:
                items.append(SpatialRejection(family, (t.name,), "too_close",
                                              f"{floor:.2f} m from the camera on the floor",
                                              tuple(s.frame for s in shown)))
                continue
            bearing = bearing_cw_deg(end, t.center_world)
            asked += 1
            items.append(_case(
                family, shown, _TIME_ORDER + ask(family, name=t.name), f"{bearing:.0f}", motion,
                {"bearing_deg": round(bearing, 3) + 0.0, "floor_distance_m": round(floor, 4) + 0.0,
                 "seen_in": first}, [t.name], [t]))
        per_object.append(items)
    asked_total = 0
    for turn in itertools.zip_longest(*per_object):
        for item in turn:
            if item is None:
                continue
            if isinstance(item, SpatialRejection):
                yield item
            elif asked_total < MAX_MOTION_CASES:
                asked_total += 1
                yield item


def _one_move_away(gold: tuple[str, ...]) -> set[tuple[str, ...]]:
    """Sequences one move from ``gold`` (a move changed, dropped or added), no move repeated
    back to back (two forwards in a row are one forward)."""
    out: set[tuple[str, ...]] = set()
    for i in range(len(gold)):
        for move in MOVES:
            out.add((*gold[:i], move, *gold[i + 1:]))
        if len(gold) > 1:
            out.add(gold[:i] + gold[i + 1:])
    for i in range(len(gold) + 1):
        for move in MOVES:
            out.add((*gold[:i], move, *gold[i:]))
    return {s for s in out if s != gold and s and all(x != y for x, y in itertools.pairwise(s))}


def _contains_end(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Whether one of ``a`` and ``b`` begins or ends the other."""
    short, long_ = sorted((a, b), key=len)
    return long_[:len(short)] == short or long_[len(long_) - len(short):] == short


def route_choices(gold: tuple[str, ...], key: str) -> list[str]:
    """The gold route and three routes one move away (none the start or the end of another), in
    an order drawn from ``key``."""
    def draw(seq: tuple[str, ...]) -> str:
        return hashlib.sha256(f"{key}|{', '.join(seq)}".encode()).hexdigest()

    chosen = [gold]
    for seq in sorted(_one_move_away(gold), key=draw):
        # No choice may begin with another: a reply naming the longer one would also start with
        # the shorter, and the choice matcher could not tell them apart. Nor end with another:
        # TimeFlip reverses the routes, which turns an ending into a beginning.
        if any(_contains_end(seq, c) for c in chosen):
            continue
        chosen.append(seq)
        if len(chosen) == 4:
            break
    return [", ".join(s) for s in sorted(chosen, key=draw)]


def route_sequence(index: TrackIndex) -> Iterator[Item]:
    """The sequence of straight runs and turns from the first frame to the last, where the TF
    path cuts cleanly into them."""
    family = "route_sequence"
    motion = Motion.of(index)
    yield from _no_trajectory(family, index, motion)
    frames = _frame_times(index, motion)
    rejected = _Rejections(family)
    found: list[tuple[list[Pose], list[Run]]] = []
    for window in _windows(frames):
        ids = [window[0][0], window[-1][0]]
        if index.crosses_break(window[0][1], window[-1][1]):
            rejected.add(CROSSES_BREAK, ids)
            continue
        runs = route(motion, window[0][1], window[-1][1])
        unclean = [r.why for r in runs if not r.clean]
        if unclean:
            rejected.add(unclean[0], ids)
        elif not ROUTE_MOVES[0] <= len(runs) <= ROUTE_MOVES[1]:
            rejected.add("too_few_moves" if len(runs) < ROUTE_MOVES[0] else "too_many_moves", ids)
        else:
            found.append((_poses(motion, _shown(window, ROUTE_SHOWN)), runs))
    yield from rejected.rows({
        "short": f"a straight run under {RUN_MIN_M} m", "curved": f"a run whose heading swings "
        f"{RUN_MAX_TURN_DEG:g}° or more", "not_forward": "a run not straight ahead",
        "small_turn": f"a turn under {ROUTE_TURN_DEG:g}°",
        "too_few_moves": f"fewer than {ROUTE_MOVES[0]} moves",
        "too_many_moves": f"more than {ROUTE_MOVES[1]} moves", **_BREAK_DESCRIBED})
    # Each distinct route once per stretch of time: windows ending in the same place with the
    # same moves are one question asked twice.
    distinct: dict[tuple[str, ...], list[tuple[list[Pose], list[Run]]]] = {}
    for shown, runs in found:
        distinct.setdefault(tuple(r.move for r in runs), []).append((shown, runs))
    picked = _balanced({", ".join(k): v for k, v in distinct.items()}, MAX_MOTION_CASES)
    for shown, runs in sorted(picked, key=lambda item: (item[0][0].t, item[0][-1].t)):
        gold = tuple(r.move for r in runs)
        key = "-".join(str(s.frame) for s in shown)
        yield _case(family, shown, _TIME_ORDER + ask(family), ", ".join(gold), motion,
                    {"runs": [{"move": r.move, "length_m": round(r.length_m, 4) + 0.0,
                               "turn_deg": round(r.turn_deg, 3) + 0.0} for r in runs]},
                    choices=route_choices(gold, key))


def same_place(index: TrackIndex) -> Iterator[Item]:
    """Whether the last frame was taken about where and facing about the way the first was;
    yes and no balanced, revisits (the longest time apart) first among the yes."""
    family = "same_place"
    motion = Motion.of(index)
    yield from _no_trajectory(family, index, motion)
    poses = _poses(motion, _frame_times(index, motion))
    if len(poses) < 2:
        return
    p = np.array([q.p for q in poses])
    psi = np.array([q.psi for q in poses])
    yes: list[tuple[float, int, int]] = []
    no: list[tuple[int, int]] = []
    between = crossing = 0
    for i in range(len(poses) - 1):
        dp = np.linalg.norm(p[i + 1:] - p[i], axis=1)
        dpsi = np.abs((psi[i + 1:] - psi[i] + 180.0) % 360.0 - 180.0)
        for k in range(len(dp)):
            j = i + 1 + k
            if index.crosses_break(poses[i].t, poses[j].t):
                crossing += 1
            elif dp[k] < SAME_M and dpsi[k] < SAME_DEG:
                yes.append((poses[j].t - poses[i].t, i, j))
            elif dp[k] > APART_M or dpsi[k] > APART_DEG:
                no.append((i, j))
            else:
                between += 1
    if between:
        yield SpatialRejection(family, (), "between_thresholds",
                               f"{between} frame pairs {SAME_M}-{APART_M} m apart and "
                               f"{SAME_DEG:g}-{APART_DEG:g}° turned")
    if crossing:
        yield SpatialRejection(family, (), CROSSES_BREAK,
                               f"{crossing} frame pairs {_BREAK_DESCRIBED[CROSSES_BREAK]}")
    # Revisits first: pairs far apart in time, one per first frame, each end used once.
    used: set[int] = set()
    chosen_yes: list[tuple[int, int]] = []
    for _, i, j in sorted(yes, key=lambda y: (-round(y[0], 3), y[1], y[2])):
        if i in used or j in used:
            continue
        used.update((i, j))
        chosen_yes.append((i, j))
        if len(chosen_yes) == MAX_MOTION_CASES // 2:
            break
    chosen_yes = chosen_yes[:len(no)]  # balanced: as many no as yes
    chosen_no = _spread(no, len(chosen_yes))
    for (i, j), answer in sorted([*((c, "yes") for c in chosen_yes),
                                  *((c, "no") for c in chosen_no)]):
        shown = [poses[i], poses[j]]
        yield _case(family, shown, _TIME_ORDER + ask(family), answer, motion,
                    {"distance_m": round(math.dist(shown[0].p, shown[1].p), 4) + 0.0,
                     "heading_change_deg": round(abs(wrap_deg(shown[1].psi - shown[0].psi)),
                                                 3) + 0.0},
                    choices=("yes", "no"))


MOTION_GENERATORS: dict[str, Callable[[TrackIndex], Iterator[Item]]] = {
    "camera_displacement_m": camera_displacement_m,
    "path_length_m": path_length_m,
    "turn_direction": turn_direction,
    "turn_angle_deg": turn_angle_deg,
    "egocentric_direction_deg": egocentric_direction_deg,
    "route_sequence": route_sequence,
    "same_place": same_place,
}
