"""The spatial families that ask which of two objects: ``closer_to_camera`` (the one whose
visible surface is nearer the camera in a frame showing both) and ``larger_object`` (the one
whose longest dimension is longer, of two whose sizes were measured).

The choices are the two names. Which is named first (in the question and the choices) is drawn
from the case id so that the gold is first in half the cases, and the family is balanced on the
gold's position, not its name (:func:`~eval_assets.vqa.spatial.families.balance_key`): a guess
that always takes the first choice scores 50 %. Each is asked only when the evidence tells the
two apart clearly (``too_close_to_call``); a marked object (``"object marked 3"``) is asked
about under its mark.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from eval_assets.schemas.spatial import ObjectTrack
from eval_assets.vqa.spatial.evidence import (
    SpatialRejection,
    TrackIndex,
    best_frames,
    narrow_view,
)
from eval_assets.vqa.spatial.families import Item, _case, _case_id
from eval_assets.vqa.spatial.wording import ask

# closer_to_camera asks only when, in the frame shown, the farther object's median surface
# range exceeds the nearer one's by at least max(CLOSER_MIN_GAP_M, CLOSER_MIN_SHARE x the
# nearer range). The gold compares medians over each visible surface (as the truth's
# surface_distance_m does), while a reader of the image takes each object as a whole, often by
# its nearest part: that lies 3.4 % (the median case) to 12 % (a box seen across a corner)
# nearer than the median (camera_distance_m), and an object's visible surface spans its depth
# (0.2-0.6 m here). Medians closer than 15 % or 0.3 m can order two objects otherwise than their
# nearest parts do; the question would then have two defensible answers.
CLOSER_MIN_GAP_M = 0.3
CLOSER_MIN_SHARE = 0.15
_EPS_M = 1e-9  # "at least" the gap, whatever the ranges' float rounding
# larger_object asks only when one longest dimension is at least this many times the other.
# The sizes are the fitted boxes' longest extents of objects whose sides were measured
# (narrow_view: simulated, MRA 0.99 against the truth; a box's L may fall short of its ends by
# up to MAX_OUTLINE_OVERHANG, 5 %): two such errors leave about 1.1x. The rest of the margin is
# for the reader: a model judges sizes across perspective, where the nearer of two objects
# looks the larger.
LARGER_MIN_RATIO = 1.3


@dataclass(frozen=True)
class _EitherOr:
    """A question between two objects, before its wording: the names (sorted), the gold name,
    the frames shown, the evidence and the two tracks (in the names' order)."""

    names: tuple[str, str]
    gold: str
    frames: tuple[int, ...]
    evidence: dict[str, object]
    tracks: tuple[ObjectTrack, ObjectTrack]


def _either_or_cases(family: str, candidates: Sequence[_EitherOr]) -> Iterator[Item]:
    """The cases of ``candidates``, each naming the gold first or second.

    Which one is named first (in the question and the choices) is drawn from the case id: the
    cases are ranked by its hash and every other rank names the gold first, so it is first in
    half of them (one more at most), where a coin per case would often leave 8 of 12 on one
    side. :func:`_capped` then keeps the positions taking turns (:func:`balance_key`)."""
    ids = [_case_id(family, c.names, c.frames) for c in candidates]
    ranked = sorted(range(len(ids)),
                    key=lambda i: (hashlib.sha256(ids[i].encode()).hexdigest(), ids[i]))
    gold_first = {i: rank % 2 == 0 for rank, i in enumerate(ranked)}
    for i, c in enumerate(candidates):
        other = c.names[1] if c.gold == c.names[0] else c.names[0]
        shown = [c.gold, other] if gold_first[i] else [other, c.gold]
        yield _case(family, c.names, c.frames, ask(family, name=shown[0], other=shown[1]),
                    c.gold, c.evidence, c.tracks, choices=shown)


def _pair(a: ObjectTrack, b: ObjectTrack
          ) -> tuple[tuple[str, str], tuple[ObjectTrack, ObjectTrack]]:
    """The two names sorted, and the tracks in that order."""
    first, second = sorted((a, b), key=lambda t: t.name)
    return (first.name, second.name), (first, second)


def closer_to_camera(index: TrackIndex) -> Iterator[Item]:
    """Which of two askable objects is closer to the camera in a frame seeing both: the one
    whose median visible-surface range (``ranges_m``) is smaller there, asked only where the
    ranges differ by at least max(:data:`CLOSER_MIN_GAP_M`, :data:`CLOSER_MIN_SHARE` of the
    nearer) (``too_close_to_call``); of those frames, the one showing both best. A pair never
    ranged in one frame is not a question of this family."""
    family = "closer_to_camera"
    good, rejected = index.askable(family)
    yield from rejected
    candidates = []
    for a, b in itertools.combinations(good, 2):
        names, tracks = _pair(a, b)
        shared = [f for f in sorted(set(a.frames) & set(b.frames))
                  if f in a.ranges_m and f in b.ranges_m]
        if not shared:
            continue
        margin = {f: _range_margin(a.ranges_m[f], b.ranges_m[f]) for f in shared}
        clear = [f for f in shared if margin[f] >= -_EPS_M]
        if not clear:
            f = max(shared, key=lambda f: (margin[f], -f))
            yield SpatialRejection(
                family, names, "too_close_to_call",
                f"at best (frame {f}) {a.name!r} at {a.ranges_m[f]:.2f} m and {b.name!r} at "
                f"{b.ranges_m[f]:.2f} m: at least max({CLOSER_MIN_GAP_M:g} m, "
                f"{CLOSER_MIN_SHARE:.0%} of the nearer) apart needed", tuple(shared))
            continue
        frame = max(clear, key=lambda f: (min(a.pixels.get(f, 0), b.pixels.get(f, 0)), -f))
        nearer = min((a, b), key=lambda t: t.ranges_m[frame])
        candidates.append(_EitherOr(
            names, nearer.name, (frame,),
            {"distance": "surface", "statistic": "median",
             "range_m": {t.name: t.ranges_m[frame] for t in tracks}}, tracks))
    yield from _either_or_cases(family, candidates)


def _range_margin(r1: float, r2: float) -> float:
    """How far (metres) two ranges are apart beyond what closer_to_camera needs (negative:
    too close to call)."""
    near, far = sorted((r1, r2))
    return far - near - max(CLOSER_MIN_GAP_M, CLOSER_MIN_SHARE * near)


def larger_object(index: TrackIndex) -> Iterator[Item]:
    """Which of two askable objects whose sizes were measured (:func:`narrow_view`) is larger
    by its longest dimension, asked only when that is at least :data:`LARGER_MIN_RATIO` times
    the other's (``too_close_to_call``); shown in a frame seeing both, else each one's best."""
    family = "larger_object"
    good, rejected = index.askable(family)
    yield from rejected
    measured = []
    for t in good:
        if (narrow := narrow_view(family, t)) is not None:
            yield narrow
            continue
        measured.append(t)
    candidates = []
    for a, b in itertools.combinations(measured, 2):
        names, tracks = _pair(a, b)
        small, big = sorted((a, b), key=lambda t: (max(t.extent_m), t.name))
        ratio = max(big.extent_m) / max(small.extent_m) if max(small.extent_m) > 0 else 0.0
        if ratio < LARGER_MIN_RATIO:
            yield SpatialRejection(
                family, names, "too_close_to_call",
                f"longest dimensions {max(a.extent_m):.2f} m ({a.name!r}) and "
                f"{max(b.extent_m):.2f} m ({b.name!r}): {ratio:.2f}x, at least "
                f"{LARGER_MIN_RATIO:g}x needed", tuple(sorted(set(a.frames) | set(b.frames))))
            continue
        shared = sorted(set(a.frames) & set(b.frames))
        frames = ([max(shared, key=lambda f: (min(a.pixels[f], b.pixels[f]), -f))] if shared
                  else sorted({best_frames(a, 1)[0], best_frames(b, 1)[0]}))
        candidates.append(_EitherOr(
            names, big.name, tuple(frames),
            {"measure": "longest oriented extent", "ratio": round(ratio, 4),
             "longest_m": {t.name: max(t.extent_m) for t in tracks}}, tracks))
    yield from _either_or_cases(family, candidates)
