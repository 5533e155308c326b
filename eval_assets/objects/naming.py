"""A name for a LiDAR object only when certain: votes of the detector and of taught references.

Each frame where an object is seen clean (not cut by the border, at most
:data:`MAX_OCCLUDED_SHARE` hidden) is one chance to name it. The detector votes for a name when
one of its masks covers the object's mask with an IoU of at least :data:`NAME_IOU`; the taught
references vote when they name the object's pixels (their own margin already applied). A name is
the object's when it has at least :data:`NAME_MIN_FRAMES` votes, covers at least
:data:`NAME_SHARE` of the clean frames, and every other name together has at most a
1/:data:`NAME_RIVAL_RATIO` of its votes. A name certain for two objects names neither (a question
about "the mug" must point at one object): both are marked.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

NAME_IOU = 0.5
"""A detector's mask votes for an object when their IoU is at least this (their outlines agree
on the object, not just overlap it)."""
MAX_OCCLUDED_SHARE = 0.15
"""A frame names an object only where at most this share of its silhouette is hidden."""
NAME_MIN_FRAMES = 3
"""A name needs this many votes: one or two frames are a detector's slip as often as not."""
NAME_SHARE = 0.5
"""... from at least this share of the frames where the object was seen clean ..."""
NAME_RIVAL_RATIO = 3
"""... and at least this many times the votes of every other name together."""


@dataclass
class NameVotes:
    """What the frames said about one object's name."""

    clean_frames: int = 0
    votes: Counter[str] = field(default_factory=Counter)
    sources: dict[str, set[str]] = field(default_factory=dict)

    def add(self, name: str, source: str) -> None:
        """One frame's vote for ``name`` from ``source`` (``detector`` or ``taught``)."""
        self.votes[name] += 1
        self.sources.setdefault(name, set()).add(source)


@dataclass(frozen=True)
class NameDecision:
    """An object's name (None: marked) and why."""

    name: str | None
    reason: str
    votes: dict[str, int]
    clean_frames: int


def best_overlap(mask: np.ndarray, candidates: Sequence[np.ndarray]) -> tuple[int, float]:
    """Index of the candidate mask with the highest IoU with ``mask``, and that IoU (-1, 0.0
    without candidates)."""
    best, best_iou = -1, 0.0
    area = int(np.count_nonzero(mask))
    for i, other in enumerate(candidates):
        inter = int(np.count_nonzero(mask & other))
        if not inter:
            continue
        iou = inter / (area + int(np.count_nonzero(other)) - inter)
        if iou > best_iou:
            best, best_iou = i, iou
    return best, best_iou


def decide(votes: NameVotes) -> NameDecision:
    """The object's name from its votes, or None with the reason it stays unnamed."""
    tally = dict(sorted(votes.votes.items(), key=lambda kv: (-kv[1], kv[0])))
    if not tally:
        return NameDecision(None, "no detector or reference named it", tally,
                            votes.clean_frames)
    top, top_votes = next(iter(tally.items()))
    rivals = sum(tally.values()) - top_votes
    if top_votes < NAME_MIN_FRAMES:
        why = f"{top!r} has {top_votes} votes (at least {NAME_MIN_FRAMES} needed)"
    elif top_votes < NAME_SHARE * votes.clean_frames:
        why = (f"{top!r} was said in {top_votes} of {votes.clean_frames} clean frames (at least "
               f"{NAME_SHARE:.0%} needed)")
    elif rivals * NAME_RIVAL_RATIO > top_votes:
        why = (f"{top!r} has {top_votes} votes but other names {rivals} (at most 1/"
               f"{NAME_RIVAL_RATIO} allowed)")
    else:
        return NameDecision(top, f"{top_votes} of {votes.clean_frames} clean frames", tally,
                            votes.clean_frames)
    return NameDecision(None, why, tally, votes.clean_frames)


def decide_all(votes: Mapping[int, NameVotes]) -> dict[int, NameDecision]:
    """Every object's decision; a name certain for several objects names none of them."""
    decisions = {k: decide(v) for k, v in sorted(votes.items())}
    owners = Counter(d.name for d in decisions.values() if d.name is not None)
    for k, d in decisions.items():
        if d.name is not None and owners[d.name] > 1:
            decisions[k] = NameDecision(
                None, f"{d.name!r} is certain for {owners[d.name]} objects: a question about "
                      f"the {d.name} could not say which", d.votes, d.clean_frames)
    return decisions
