"""The controls that need time: TimeFlip and RepeatFrames (``../shared/specs/motion.md``).

- **TimeFlip**: a multi-frame case asked again with its frames in reverse order, under the same
  words ("in time order" included). Its gold answer is the original's passed through the
  family's transform: ``turn_direction`` swaps left and right, ``route_sequence`` reverses its
  moves and swaps left and right, the distances, ``turn_angle_deg``, ``same_place`` and the
  cross-frame count keep theirs. A model that reads the frames answers both right; one that
  answers from the wording cannot.
- **RepeatFrames** (VSC-Repeat, arXiv 2511.16655): the case asked again with every frame shown
  twice in a row, for the families whose truth that leaves unchanged. A model that counts frames,
  not objects, changes its answer.

:func:`time_families` (``TIME_FAMILIES``) reads each family's ``time`` entry from its one
declaration (:mod:`eval_assets.family_spec`). Choices for our existing multi-frame spatial
families:

- ``object_count_across_frames``: in both (reversing or repeating frames shows the same objects).
- ``appearance_order``: RepeatFrames only. Reversed, its truth is the order of each object's LAST
  sighting among the shown frames, reversed: not the gold reversed (an object seen in frames
  1 and 3 and one seen only in frame 2 keep their order), and the generator only checked that
  no object may show undetected BEFORE its first sighting (``may_be_visible_earlier``), never
  after its last, so that truth is unverified; asking it would score models against guesses.
- ``relative_direction``: neither; its question names its reference frame by position ("image
  k"), which reversing moves and repeating duplicates.
- ``egocentric_direction_deg``: neither (spec: not reversible; its question names the last image).
- the single-frame and static-geometry families (sizes, pair and camera distances): neither;
  their truth ignores time, so the calls would test nothing these controls are for.

The runner decides from public fields alone: a case's family is the table name that appears as
one hyphen-separated token of its id (the generator writes ``spatial-{family}-{objects}-...``;
object slugs never hold ``_``, family names always do), and which cases are asked is a share
drawn from the case id (:func:`selected`). Nothing private is read to ask.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from eval_assets.choices import flip_text
from eval_assets.schemas.spatial import SpatialCase

# TIME_FAMILIES is served by the module's __getattr__ (read from the declarations when asked).
__all__ = ["CONTROLS", "TRANSFORMS", "AnswerKind", "Control", "TimeFamily", "check_share",
           "family_of", "repeated", "reverse_route", "selected", "shown_choices", "time_families",
           "time_flipped", "transform_of"]

Control = Literal["time_flip", "repeat_frames"]
CONTROLS: tuple[Control, ...] = ("time_flip", "repeat_frames")
AnswerKind = Literal["choice", "length", "angle", "count"]


def _same(answer: str) -> str:
    return answer


# A route is moves joined by one separator ("forward, turn left, forward"; arrows, "then" and
# ";" are read too, so the wording the generator settles on needs no change here).
_ROUTE_SEPARATOR = re.compile(r"(\s*(?:,|;|→|->|\bthen\b)\s*)", re.IGNORECASE)


def reverse_route(route: str) -> str:
    """A route's moves in reverse order with left and right swapped, joined by the same
    separators in the same places: ``forward, turn left, forward`` -> ``forward, turn right,
    forward``; ``turn left, forward`` -> ``forward, turn right``."""
    parts = _ROUTE_SEPARATOR.split(route.strip())
    moves, separators = parts[0::2], parts[1::2]
    flipped = [flip_text(m) for m in reversed(moves)]
    out = [flipped[0]]
    for separator, move in zip(separators, flipped[1:], strict=True):
        out += [separator, move]
    return "".join(out)


@dataclass(frozen=True)
class TimeFamily:
    """How one family answers (``answer``: how a reply is judged right), its gold under TimeFlip
    (``time_flip``: the transform of the answer and of each choice; None: not asked reversed),
    and whether RepeatFrames asks it (its truth is unchanged by doubled frames)."""

    answer: AnswerKind
    time_flip: Callable[[str], str] | None
    repeat_frames: bool


def time_families() -> dict[str, TimeFamily]:
    """Family name -> its answer kind, TimeFlip transform and RepeatFrames membership, for every
    declared family with a ``time`` entry (:class:`eval_assets.family_spec.FamilySpec`: the
    motion families, then the multi-frame spatial ones; see the module docstring for why)."""
    from eval_assets.family_spec import families

    return {s.name: TimeFamily(s.answer_kind, s.time.time_flip, s.time.repeat_frames)
            for s in families() if s.time is not None}


def __getattr__(name: str) -> object:
    """``TIME_FAMILIES``: :func:`time_families`, read from the declarations when asked (they
    import this module for :func:`reverse_route`, so it cannot import them)."""
    if name == "TIME_FAMILIES":
        return time_families()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def transform_of(family: str, control: Control) -> Callable[[str], str] | None:
    """The gold (and choice) transform of ``family`` under ``control``; None when the control
    does not ask the family."""
    entry = time_families().get(family)
    if entry is None:
        return None
    if control == "time_flip":
        return entry.time_flip
    return _same if entry.repeat_frames else None


def family_of(case_id: str) -> str | None:
    """The table family named by one hyphen-separated token of ``case_id``; None when no token
    (or more than one) names a family."""
    known = time_families()
    found = {token for token in case_id.split("-") if token in known}
    return next(iter(found)) if len(found) == 1 else None


def check_share(share: float) -> float:
    """``share`` when it is a share of cases that can be asked, in (0, 1]; else a ValueError
    naming the setting and the fix."""
    if not 0.0 < share <= 1.0:
        raise ValueError(f"time_control_share is {share!r}; it must be in (0, 1] (1 asks every "
                         "case of the TimeFlip and RepeatFrames families, 0.25 a quarter)")
    return share


def selected(case_id: str, control: Control, share: float) -> bool:
    """Whether ``control`` asks the case: a uniform draw from the SHA-256 of the control and the
    case id below ``share``. Deterministic, and a case's draw does not depend on the others, so
    a grown dataset keeps every earlier case's selection (and its journalled call)."""
    if check_share(share) == 1.0:
        return True
    digest = hashlib.sha256(f"{control}|{case_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0 ** 64 < share


def shown_choices(choices: Sequence[str], transform: Callable[[str], str]) -> list[str]:
    """The choices as the transformed case shows them: in the case's own order when the
    transform maps the set onto itself (``turn_direction``: a model that answers by position
    cannot stay right), else each choice transformed in its place (``route_sequence``)."""
    mapped = [transform(c) for c in choices]
    return list(choices) if sorted(mapped) == sorted(choices) else mapped


def time_flipped(case: SpatialCase, family: str) -> SpatialCase | None:
    """``case`` with its frames in reverse order and its choices transformed; None when the
    family is not reversible or the case shows one frame."""
    transform = transform_of(family, "time_flip")
    if transform is None or len(case.images) < 2:
        return None
    return case.model_copy(update={
        "images": list(reversed(case.images)),
        "choices": None if case.choices is None else shown_choices(case.choices, transform)})


def repeated(case: SpatialCase, family: str) -> SpatialCase | None:
    """``case`` with every frame shown twice in a row; None when the family's truth could
    change (or the case shows one frame)."""
    if transform_of(family, "repeat_frames") is None or len(case.images) < 2:
        return None
    return case.model_copy(update={"images": [i for image in case.images for i in (image, image)]})


TRANSFORMS: dict[Control, Callable[[SpatialCase, str], SpatialCase | None]] = {
    "time_flip": time_flipped, "repeat_frames": repeated}
