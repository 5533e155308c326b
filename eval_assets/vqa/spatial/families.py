"""The spatial families: numeric answers from LiDAR tracks, questions across frames.

Each family reads a :class:`~eval_assets.vqa.spatial.evidence.TrackIndex` and yields cases with
their full labels (``../shared/specs/spatial.md``) or rejections with a reason, deterministically
and at most :data:`~eval_assets.vqa.spatial.evidence.MAX_CASES_PER_FAMILY` cases per recording.

- ``object_size_cm``: the track's longest oriented extent, in whole centimetres.
- ``pair_distance_m``: distance between two tracks' centres, shown in a frame seeing both
  (else in each one's best frame).
- ``camera_distance_m``: the median range from the camera to the object's visible SURFACE
  in that frame (``evidence.distance = "surface"``, ``statistic = "median"``; the synthesizer's
  ``surface_distance_m``; the LiDAR's median corrected for the rows its rings crossed), and the
  question asks for that median.
- ``appearance_order``: the order in which three (or two) objects were first seen.
- ``object_count_across_frames``: distinct tracks of one name across the frames shown (all of
  the name's objects, or fewer of them).
- ``relative_direction``: an object's quadrant around the camera of a reference frame.
- ``object_height_cm``: how high the track's top (centre z + half its height) is above the
  floor (``ObjectTracks.floor_z``), asked only when a camera that saw it was above that top or
  the LiDAR's rays bound it closely from above.
- ``closer_to_camera``, ``larger_object``: which of two objects is nearer the camera, or
  larger (:mod:`eval_assets.vqa.spatial.either_or`).

An object no name is certain for is named by its mark (``"object marked 3"``,
:func:`~eval_assets.schemas.spatial.mark_number`) and asked about under that name, except by
``object_count_across_frames``: a mark is drawn on one object, so its count is 1 by
construction (``marked_object``).

The choice and count families' cases are chosen so that no answer is more than half of a
family's cases where the scene allows (:mod:`eval_assets.vqa.balance`); a choice between the
two objects the question names is balanced on the gold's position among its choices
(:func:`balance_key`).

``room_area_m2`` is not generated: the tracks hold objects, not the room, and the point clouds a
recording's selected frames give cover the walls only where the camera looked. A floor area
needs the room's whole outline (or a closed loop's map), which no stage builds yet; a partial
outline would give an area that is confidently wrong, so the family is left out.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterator, Sequence

from eval_assets.family_spec import families
from eval_assets.schemas.spatial import (
    RELATIVE_DIRECTIONS,
    ObjectTrack,
    SpatialCase,
    SpatialLabel,
    mark_number,
    spatial_families,
)
from eval_assets.schemas.vqa import asset_relpath
from eval_assets.vqa.balance import select_balanced, take_turns
from eval_assets.vqa.families import slug
from eval_assets.vqa.spatial.evidence import (
    MAX_CASES_PER_FAMILY,
    QUADRANT_MARGIN_M,
    SpatialRejection,
    TrackIndex,
    best_frames,
    narrow_view,
    spread,
    track_evidence,
)
from eval_assets.vqa.spatial.wording import ask

Item = tuple[SpatialCase, SpatialLabel] | SpatialRejection
_TIME_ORDER = "These images are frames of one video, in time order. "
# Reference frames per object for relative_direction; objects take turns, so the family's cap
# spreads over objects before it repeats one.
REFERENCES_PER_OBJECT = 4
# Groups of namesakes counted at most, per name: a room with many objects of one name would
# otherwise give 2^n groups; the family's cap takes 12 cases in all anyway.
MAX_GROUPS_PER_NAME = 30
# The rejection reason of a case left out so that one answer is at most half of its family.
ANSWER_BALANCE = "answer_balance"
# object_height_cm asks only when a camera that saw the object was at least this much above the
# track's top (its highest LiDAR point). From below, the top face is unseen and the highest
# point is where the last ring crossed the side, up to a ring's spacing under the true top (the
# synthesizer's rig: rings 1.25 degrees apart, 9 cm at 4 m). A camera this far above the
# measured top is above the true top too, and sees the top face.
TOP_SEEN_MARGIN_M = 0.10
# ... or when the LiDAR bounds the top from above within this share of the height: every top
# return had a ray pass over it at most this far above the measured top (ObjectTrack.
# top_margin_m, eval_assets.objects.lidar.top_ceiling), so the gold is at most this share
# short. A share, not centimetres: 2 cm is 22 % of a 9 cm jenga block. Synthesized seeds
# 7201-7206 and 7301-7306, simulated 9321-9323 (loop and figure8), 184 objects against the
# truth: no tracked object's true top above its bound, measured tops within 3.7 %; margins
# 0.2-2.6 cm on the synthesizer's tilted Mid-360 (3-8 % of the height), 0.3-8 cm simulated.
TOP_BOUND_SHARE = 0.05


def _case_id(family: str, names: Sequence[str], frames: Sequence[int]) -> str:
    """``spatial-{family}-{objects}-{frames}`` (the runner reads the family from it)."""
    return f"spatial-{family}-{slug(names)}-" + "-".join(f"{f:06d}" for f in sorted(frames))


def _case(family: str, names: Sequence[str], frames: Sequence[int], question: str,
          answer: str, evidence: dict[str, object], tracks: Sequence[ObjectTrack],
          choices: Sequence[str] | None = None, reference: int | None = None) -> Item:
    answer_type, unit = spatial_families()[family]
    frames = sorted(frames)
    case_id = _case_id(family, names, frames)
    case = SpatialCase(id=case_id, images=[asset_relpath(f) for f in frames], question=question,
                       answer_type=answer_type, unit=unit,
                       choices=list(choices) if choices is not None else None)
    label = SpatialLabel(
        id=case_id, answer=answer, family=family, answer_type=answer_type, unit=unit,
        choices=list(choices) if choices is not None else None, object_names=list(names),
        frame_index=frames[0] if len(frames) == 1 else None,
        frame_indices=frames if len(frames) > 1 else None, reference_frame=reference,
        evidence={**evidence, "tracks": [track_evidence(t) for t in tracks]})
    return case, label


def balanced_family(family: str) -> bool:
    """Whether ``family``'s answers are a few values a guess could win (choices and counts, no
    unit); a measurement in a unit rarely repeats, so its cases are not chosen for balance."""
    answer_type, unit = spatial_families()[family]
    return answer_type == "choice" or unit is None


def balance_key(label: SpatialLabel) -> str:
    """What a balanced family's cases take turns on: the gold answer, or for a choice between
    the objects the question names (its choices are those names: ``closer_to_camera``,
    ``larger_object``) the gold's position among the choices (``"choice 1"``, ``"choice 2"``).

    There the gold is a name, a fact of the scene that each pair of objects has its own of; what
    a guess without the image can win on is the position (always the first choice), so that is
    kept at most half of the family, and a constant-position guess scores about 50 %."""
    choices = label.choices or []
    if label.answer in choices and sorted(choices) == sorted(label.object_names):
        return f"choice {choices.index(label.answer) + 1}"
    return label.answer


def _capped(family: str, items: Iterator[Item], cap: int = MAX_CASES_PER_FAMILY
            ) -> Iterator[Item]:
    """The family's rejections, then at most ``cap`` of its cases: the first ones, or for a
    :func:`balanced_family` the answers (:func:`balance_key`) taking turns, with any surplus of
    one answer over half the family left out and recorded (``answer_balance``)."""
    cases: list[tuple[SpatialCase, SpatialLabel]] = []
    for item in items:
        if isinstance(item, SpatialRejection):
            yield item
        else:
            cases.append(item)
    if not balanced_family(family):
        yield from cases[:cap]
        return
    kept, dropped = select_balanced(cases, lambda c: balance_key(c[1]), cap)
    yield from kept
    top = balance_key(dropped[0][1]) if dropped else ""
    others = sum(1 for _, label in kept if dropped and balance_key(label) != top)
    for _, label in dropped:
        yield SpatialRejection(
            family, tuple(label.object_names), ANSWER_BALANCE,
            f"{top!r} would answer more than half of the family's cases (only {others} "
            "answer otherwise): left out so that guessing it cannot win",
            tuple(label.frame_indices or ([] if label.frame_index is None
                                          else [label.frame_index])))


def object_size_cm(index: TrackIndex) -> Iterator[Item]:
    """The longest dimension of each askable object, from up to three of its best frames."""
    good, rejected = index.askable("object_size_cm")
    yield from rejected
    for t in good:
        if (narrow := narrow_view("object_size_cm", t)) is not None:
            yield narrow
            continue
        size_cm = round(100 * max(t.extent_m))
        if size_cm < 1:
            yield SpatialRejection("object_size_cm", (t.name,), "degenerate_extent",
                                   f"{t.track_id} spans {t.extent_m} m")
            continue
        yield _case("object_size_cm", [t.name], best_frames(t, 3),
                    ask("object_size_cm", name=t.name), str(size_cm),
                    {"extent_m": list(t.extent_m), "measure": "longest oriented extent"}, [t])


def pair_distance_m(index: TrackIndex) -> Iterator[Item]:
    """Centre-to-centre distance of two askable objects, in a frame seeing both if any."""
    good, rejected = index.askable("pair_distance_m")
    yield from rejected
    for a, b in itertools.combinations(good, 2):
        shared = sorted(set(a.frames) & set(b.frames))
        # One frame seeing both, else each one's best frame (two images, in time order).
        frames = ([max(shared, key=lambda f: (min(a.pixels[f], b.pixels[f]), -f))] if shared
                  else sorted({best_frames(a, 1)[0], best_frames(b, 1)[0]}))
        names = sorted([a.name, b.name])
        d = sum((p - q) ** 2 for p, q in zip(a.center_world, b.center_world, strict=True)) ** 0.5
        if d < 0.05:
            yield SpatialRejection("pair_distance_m", tuple(names), "degenerate_distance",
                                   f"centres {d:.3f} m apart", tuple(frames))
            continue
        yield _case("pair_distance_m", names, frames,
                    ask("pair_distance_m", name=names[0], other=names[1]), f"{d:.2f}",
                    {"distance": "centre"},
                    [a, b] if a.name == names[0] else [b, a])


def camera_distance_m(index: TrackIndex) -> Iterator[Item]:
    """Camera to an askable object's visible surface in the frame that shows it best: the
    median range over that surface, and the question says so.

    The gold is the median range over the object's visible surface, as the synthesizer's and
    the simulator's truth (``surface_distance_m``: the median over the visible pixels) measure
    it: the LiDAR's median inside the mask, corrected by the track's fused box for the rows the
    rings happened to cross (:func:`~eval_assets.tracks.fuse.visible_surface_range`). The question
    used to ask for "the nearest visible surface", a minimum, which lies nearer than that median
    (3.4 % at the median case and 12 % on a box seen across a corner, when this was found): a
    model answering it well would have been marked down. A median over the visible part is
    what both the LiDAR and a model looking at the image can estimate without one noisy point
    deciding it.
    """
    good, rejected = index.askable("camera_distance_m")
    yield from rejected
    for t in good:
        ranged = [f for f in t.frames if f in t.ranges_m]
        # A frame seeing it whole when there is one: where the border or a nearer object cuts
        # it, the median over what is left is another surface than the whole object's.
        ranged = [f for f in ranged if f in t.whole_frames] or ranged
        if not ranged:
            continue
        frame = max(ranged, key=lambda f: (t.pixels.get(f, 0), -f))
        yield _case("camera_distance_m", [t.name], [frame],
                    ask("camera_distance_m", name=t.name),
                    f"{t.ranges_m[frame]:.2f}",
                    {"distance": "surface", "statistic": "median",
                     "range_m": t.ranges_m[frame]}, [t])


def _order_choices(gold: tuple[str, ...], key: str) -> list[str]:
    """The gold ordering and up to three others, in an order drawn from the case id."""
    def draw(perm: tuple[str, ...]) -> str:
        return hashlib.sha256(f"{key}|{', '.join(perm)}".encode()).hexdigest()

    others = sorted((p for p in itertools.permutations(gold) if p != gold), key=draw)[:3]
    return [", ".join(p) for p in sorted([gold, *others], key=draw)]


def appearance_order(index: TrackIndex) -> Iterator[Item]:
    """First-appearance order of three (then two) askable objects, over frames that include each
    one's first sighting; objects first seen in one frame, or that may show in an earlier frame
    without being detected, are not asked about."""
    good, rejected = index.askable("appearance_order")
    yield from rejected
    # Triples first (the harder question), then pairs; each group in first-seen order.
    groups = [*itertools.combinations(good, 3), *itertools.combinations(good, 2)]
    for group in groups:
        size = len(group)
        names = tuple(t.name for t in group)
        firsts = [t.frames[0] for t in group]
        if len(set(firsts)) < size:
            yield SpatialRejection("appearance_order", names, "same_first_frame",
                                   f"first seen in frames {firsts}", tuple(firsts))
            continue
        window = [f for f in index.published if firsts[0] <= f <= firsts[-1]]
        frames = spread(window, firsts)
        early = [(t.name, f) for t in group for f in frames
                 if f < t.frames[0] and index.may_be_visible(t, f)]
        if early:
            yield SpatialRejection(
                "appearance_order", names, "may_be_visible_earlier",
                f"{early[0][0]!r} may show in frame {early[0][1]} before it was detected",
                tuple(frames))
            continue
        asked = sorted(names)
        gold = tuple(t.name for t in sorted(group, key=lambda t: t.frames[0]))
        key = f"{slug(asked)}-{'-'.join(map(str, frames))}"
        yield _case("appearance_order", asked, frames,
                    _TIME_ORDER + ask("appearance_order", names=", ".join(asked)),
                    ", ".join(gold), {"first_seen": dict(zip(names, firsts,
                                                                         strict=True))},
                    sorted(group, key=lambda t: t.name), choices=_order_choices(gold, key))


def object_count_across_frames(index: TrackIndex) -> Iterator[Item]:
    """Distinct objects of one name across frames showing each of them (the same object seen
    twice counts once); a name with any weak track is not asked about.

    Then, after every name's full count, for a name several objects share: every smaller group
    of them over the frames where no other namesake can show (each of the group seen in one of
    them; the answer is the group's size however often each is seen); last, each group of two
    or more over each half of its frames (:func:`_halves`). A marked name
    (``"object marked 3"``) is not asked about (``marked_object``): its mark is drawn on one
    object, so its count is 1 by construction. A count of 0 (frames
    where no object of the name can show) is not asked: counts are scored by mean relative
    accuracy, which a target of 0 cannot have (``spatial.md``), so the 2s and 3s a scene's
    namesakes give are what balances its 1s.
    """
    fewer: list[Item] = []
    halves: list[Item] = []
    for name in sorted({t.name for t in index.visible}):
        if mark_number(name) is not None:
            yield SpatialRejection(
                "object_count_across_frames", (name,), "marked_object",
                f"{name!r} is one LiDAR object with its number drawn on it: its count is 1 by "
                "construction", tuple(sorted({f for t in index.by_name(name) for f in t.frames})))
            continue
        tracks = index.by_name(name)
        weak = [w for w in (index.problem(t) for t in tracks) if w is not None]
        if weak:
            yield SpatialRejection("object_count_across_frames", (name,), weak[0][0], weak[0][1])
            continue
        must = sorted({best_frames(t, 1)[0] for t in tracks})
        frames = spread([f for t in tracks for f in t.frames], must)
        yield _count_case(index, name, frames, {"track_ids": [t.track_id for t in tracks]})
        if len(tracks) > 1:
            halves.extend(_halves(index, name, tracks,
                                  sorted({f for t in tracks for f in t.frames}),
                                  {"track_ids": [t.track_id for t in tracks]}))
        fewer.extend(_subgroups(index, name, tracks, halves))
    yield from fewer
    yield from halves


def _halves(index: TrackIndex, name: str, group: Sequence[ObjectTrack], frames: Sequence[int],
            evidence: dict[str, object]) -> Iterator[Item]:
    """``group`` (two or more namesakes) counted again over each half, in time, of ``frames``
    (those it may be counted over) that still sees every one of it: other images, the same
    count. Asked after every other count, so they add 2s and 3s only where a scene's 1s
    outnumber them."""
    cut = len(frames) // 2
    for label, half in (("first half", frames[:cut]), ("second half", frames[cut:])):
        if len(half) < 2 or any(not set(half) & set(t.frames) for t in group):
            continue
        best = [max((f for f in t.frames if f in half), key=lambda f: (t.pixels.get(f, 0), -f))
                for t in group]
        yield _count_case(index, name, spread(half, sorted(set(best))),
                          {**evidence, "window": label})


def _subgroups(index: TrackIndex, name: str, tracks: Sequence[ObjectTrack],
               halves: list[Item]) -> Iterator[Item]:
    """For a name several objects share: each smaller group of them (ones first, then twos...)
    counted over the frames where no other namesake can show; a group of two or more is also
    counted over each half of those frames (added to ``halves``, see :func:`_halves`)."""
    groups = [g for k in range(1, len(tracks)) for g in itertools.combinations(tracks, k)]
    for group in groups[:MAX_GROUPS_PER_NAME]:
        ids = [t.track_id for t in group]
        # Namesakes seen only in frames not published may still show in the published ones.
        others = [o for o in _namesakes(index, name) if o.track_id not in ids]
        own = [f for f in sorted({f for t in group for f in t.frames})
               if not any(_may_show(index, o, f) for o in others)]
        unseen = [t.track_id for t in group if not set(own) & set(t.frames)]
        if len(own) < 2 or unseen:
            detail = (f"another {name} may show in every frame but {len(own)} of "
                      f"{', '.join(ids)}'s" if len(own) < 2 else
                      f"another {name} may show in every frame {', '.join(unseen)} was seen in")
            yield SpatialRejection("object_count_across_frames", (name,), "namesake_in_view",
                                   detail, tuple(own))
            continue
        best = [max((f for f in t.frames if f in own), key=lambda f: (t.pixels.get(f, 0), -f))
                for t in group]
        evidence: dict[str, object] = {"track_ids": ids,
                                       "namesakes_out_of_view": [o.track_id for o in others]}
        yield _count_case(index, name, spread(own, sorted(set(best))), evidence)
        if len(group) > 1:
            halves.extend(_halves(index, name, group, own, evidence))


def _count_case(index: TrackIndex, name: str, frames: Sequence[int],
                evidence: dict[str, object]) -> Item:
    """The count of ``name`` over the chosen ``frames``, its gold from every namesake's evidence
    there: the namesakes detected in any of them (published frames or not, weak or not).

    The group a case was built for (all of the name's objects, a smaller group, a half) only
    chose the frames; the gold is what those frames show. Where a namesake not detected in them
    may still show in one (:meth:`TrackIndex.may_be_visible`), the count is unsure and is not
    asked (``namesake_in_view``): balancing the answers must never make a gold the images do
    not support (the sample: a 2 over frames where a third blue box shows at the image edge).
    A marked object that may show in one of them is an object no name was certain for: it may
    be another of the name, so the count is unsure too (``marked_in_view``).
    """
    chosen = set(frames)
    # Published frames are chosen, so a namesake detected in one is among the visible tracks.
    seen = [t for t in index.by_name(name) if chosen & set(t.frames)]
    counted = {t.track_id for t in seen}
    unsure = [t.track_id for t in _namesakes(index, name) if t.track_id not in counted
              and any(index.may_be_visible(t, f) for f in sorted(chosen))]
    if unsure:
        return SpatialRejection("object_count_across_frames", (name,), "namesake_in_view",
                                f"{', '.join(unsure)} may show undetected in frames "
                                f"{sorted(chosen)}", tuple(sorted(chosen)))
    marked = [t.track_id for t in index.tracks.tracks if mark_number(t.name) is not None
              and any(_may_show(index, t, f) for f in sorted(chosen))]
    if marked:
        return SpatialRejection("object_count_across_frames", (name,), "marked_in_view",
                                f"{', '.join(marked)} may show in frames {sorted(chosen)} and "
                                f"may be a {name} (no name was certain for it)",
                                tuple(sorted(chosen)))
    return _case("object_count_across_frames", [name], frames,
                 _TIME_ORDER + ask("object_count_across_frames", name=name), str(len(seen)),
                 {**evidence, "track_ids": [t.track_id for t in seen]}, seen)


def _may_show(index: TrackIndex, track: ObjectTrack, frame: int) -> bool:
    """Whether ``track``'s object may show in ``frame``: detected there, or in view by its pose
    (:meth:`TrackIndex.may_be_visible`)."""
    return frame in track.frames or index.may_be_visible(track, frame)


def _namesakes(index: TrackIndex, name: str) -> list[ObjectTrack]:
    """Every track of ``name``, published frames or not."""
    return [t for t in index.tracks.tracks if t.name == name]


def _quadrant(x: float, z: float) -> str:
    return f"{'front' if z > 0 else 'back'}-{'right' if x > 0 else 'left'}"


def _references(index: TrackIndex, t: ObjectTrack) -> list[int]:
    """Reference frames to try for ``t``: not showing it first, in an order drawn from its id."""
    def draw(f: int) -> str:
        return hashlib.sha256(f"{t.track_id}|{f}".encode()).hexdigest()

    return sorted(index.published, key=lambda f: (f in t.frames, draw(f)))


def relative_direction(index: TrackIndex) -> Iterator[Item]:
    """Quadrant of an askable object around the camera of a reference frame (OpenCV camera:
    x right, z forward), shown with frames that see the object; objects within
    :data:`QUADRANT_MARGIN_M` of a quadrant boundary are not asked about."""
    good, rejected = index.askable("relative_direction")
    yield from rejected
    per_object = [list(_directions(index, t)) for t in good]
    for items in per_object:
        yield from (i for i in items if isinstance(i, SpatialRejection))
    cases = [[i for i in items if not isinstance(i, SpatialRejection)] for items in per_object]
    # Round robin: every object's first case, then every object's second, and so on.
    for turn in itertools.zip_longest(*cases):
        yield from (item for item in turn if item is not None)


def _directions(index: TrackIndex, t: ObjectTrack) -> Iterator[Item]:
    """Up to :data:`REFERENCES_PER_OBJECT` relative_direction cases of ``t``, its quadrants
    taking turns, and the rejections met on the way.

    The references not showing the object come first, and those see it mostly behind the
    camera (13 unseen recordings, scene seeds 1001-1013: 99 of 148 answers "back-*" when the
    first references were asked), so each quadrant the object takes around the published
    cameras gets its first reference before any gets a second: an object that is on every side
    of the camera's path is asked about once per quadrant. A reference rejected (near a
    quadrant boundary) before the last one asked is recorded.
    """
    candidates: list[tuple[int, int, float, float]] = []  # (position, reference, x, z)
    near: list[tuple[int, SpatialRejection]] = []
    for position, ref in enumerate(_references(index, t)):
        p = index.camera_xyz(ref, t.center_world)
        if p is None:
            continue
        x, z = float(p[0]), float(p[2])
        if min(abs(x), abs(z)) < QUADRANT_MARGIN_M:
            near.append((position, SpatialRejection(
                "relative_direction", (t.name,), "near_quadrant_boundary",
                f"x {x:+.2f} m, z {z:+.2f} m in frame {ref}", (ref,))))
            continue
        candidates.append((position, ref, x, z))
    chosen = sorted(take_turns(candidates, lambda c: _quadrant(c[2], c[3]),
                               REFERENCES_PER_OBJECT))
    last = candidates[chosen[-1]][0] if chosen else len(index.published)
    yield from (rejection for position, rejection in near if position < last)
    for _, ref, x, z in (candidates[i] for i in chosen):
        frames = sorted({ref, *best_frames(t, 3)})
        k = frames.index(ref) + 1
        yield _case("relative_direction", [t.name], frames,
                    _TIME_ORDER + ask("relative_direction", k=k, name=t.name), _quadrant(x, z),
                    {"camera_xz_m": [round(x, 4), round(z, 4)], "reference_image": k},
                    [t], choices=RELATIVE_DIRECTIONS, reference=ref)


def _camera_z(index: TrackIndex, frame: int) -> float | None:
    """The height (world z) of ``frame``'s camera, None without a pose."""
    camera = index.tracks.cameras.get(frame)
    return None if camera is None else float(camera.world_from_camera[11])


def object_height_cm(index: TrackIndex) -> Iterator[Item]:
    """How high above the floor each askable object's top is, in whole centimetres, shown in
    up to three of its best frames (taken from above that top when a camera was).

    The top is the track's centre z plus half its height extent (its LiDAR top), the floor the
    tracks' ``floor_z`` (``no_floor`` without it). Asked only when that top is measured
    (``top_unseen`` otherwise): a camera that saw the object stood at least
    :data:`TOP_SEEN_MARGIN_M` above it (from below, the top face is unseen and the highest
    return can lie under the true top), or the LiDAR bounds it from above within
    :data:`TOP_BOUND_SHARE` of the height (``top_margin_m``: rays passed over every top return
    that close above it)."""
    family = "object_height_cm"
    good, rejected = index.askable(family)
    yield from rejected
    floor = index.tracks.floor_z
    for t in good:
        if floor is None:
            yield SpatialRejection(family, (t.name,), "no_floor",
                                   "the tracks hold no floor height (floor_z)", tuple(t.frames))
            continue
        top = t.center_world[2] + t.extent_m[2] / 2
        heights = _camera_heights(index, t)
        above = [f for f, z in heights.items() if z >= top + TOP_SEEN_MARGIN_M]
        bounded = top_bounded(t.top_margin_m, top - floor)
        if not above and not bounded:
            yield SpatialRejection(family, (t.name,), "top_unseen",
                                   _top_unseen_detail(t, top, floor, heights), tuple(t.frames))
            continue
        height_cm = round(100 * (top - floor))
        if height_cm < 1:
            yield SpatialRejection(family, (t.name,), "degenerate_height",
                                   f"{t.track_id}'s top at {top:.3f} m, the floor at "
                                   f"{floor:.3f} m", tuple(t.frames))
            continue
        shown = above or list(heights) or list(t.frames)
        frames = sorted(sorted(shown, key=lambda f: (-t.pixels.get(f, 0), f))[:3])
        yield _case(family, [t.name], frames, ask(family, name=t.name), str(height_cm),
                    {"top_z_m": round(top, 4), "floor_z_m": floor,
                     "measure": "top (centre z + half the height extent) above the floor",
                     "top_measured_by": "camera_above" if above else "lidar_bound",
                     "top_margin_m": t.top_margin_m,
                     "camera_z_m": [round(heights[f], 4) for f in frames if f in heights]},
                    [t])


def _camera_heights(index: TrackIndex, t: ObjectTrack) -> dict[int, float]:
    """The height (world z) of the camera of each frame that saw ``t`` and has a pose."""
    return {f: z for f in t.frames if (z := _camera_z(index, f)) is not None}


def top_bounded(top_margin_m: float | None, height_m: float) -> bool:
    """Whether the LiDAR bounds a top ``height_m`` above the floor from above tightly enough to
    ask it: its ``top_margin_m`` is at most :data:`TOP_BOUND_SHARE` of the height."""
    return top_margin_m is not None and height_m > 0 and top_margin_m <= TOP_BOUND_SHARE * height_m


def _top_unseen_detail(t: ObjectTrack, top: float, floor: float,
                       heights: dict[int, float]) -> str:
    highest = (f"the highest camera that saw it was at {max(heights.values()):.2f} m"
               if heights else "no frame that saw it has a camera pose")
    bound = ("no LiDAR ray passed over all of its top" if t.top_margin_m is None else
             f"the LiDAR bounds it within {100 * t.top_margin_m:.1f} cm above")
    return (f"{t.track_id}'s top is at {top:.2f} m and {highest} (at least "
            f"{TOP_SEEN_MARGIN_M:.2f} m above the top needed to see it); {bound} (at most "
            f"{TOP_BOUND_SHARE:.0%} of its {100 * (top - floor):.0f} cm height needed)")


def spatial_items(index: TrackIndex) -> list[Item]:
    """Every declared spatial family's rejections and cases (capped, balanced), family by
    family, in declaration order (:mod:`eval_assets.vqa.spatial.declared`)."""
    return [item for spec in families("spatial") if spec.rule is not None
            for item in _capped(spec.name, spec.rule(index), spec.cap or MAX_CASES_PER_FAMILY)]
