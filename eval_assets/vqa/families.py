"""The seven question families: exact wording, fixed choices and the evidence rule of each,
declared once each (:data:`FRAME_FAMILIES`, :class:`eval_assets.family_spec.FamilySpec`).

Every rule is a pure function of plain evidence records (detections with boxes, mask areas and
LiDAR range statistics), so it can be tested without perception or files. A rule either answers
(:class:`Answered`) or rejects with a reason code from ``schemas.vqa.REJECTION_REASONS``
(:class:`Rejected`). Labels therefore come from sensors and geometry, never from a language model.
The records are declared in :mod:`eval_assets.vqa.frame_evidence` and importable from here.

Comparisons at bucket and third boundaries use exact rational arithmetic, so a value that lies
exactly on a boundary is decided by the rule ("number of boundaries <= value"), not by rounding.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import pairwise
from typing import Any, Protocol

from eval_assets.family_spec import FamilySpec, family, family_names, register
from eval_assets.vqa.frame_evidence import (
    Answered,
    Decision,
    DetectionEvidence,
    FrameEvidence,
    RangeEvidence,
    Rejected,
    rounded,
)

MIN_RANGE_POINTS = 5
MIN_MASK_PIXELS = 50
"""A detection whose mask has fewer pixels (a sliver at the image border, a corner showing past
another object) is not asked about as "the visible X": where an object shows this little, its
direction, coverage and range rest on a speck, and the truth check leaves the question undefined
(:data:`eval_assets.evidence_quality.detection.MIN_TRUTH_PIXELS` is this constant). Simulated
seeds 911-913 with the truth evidence: 14 of 15 wrong dimOS gold answers were about objects
showing 3-22 pixels."""
# "At least 20% more pixels": winner * 5 >= runner_up * 6, in integers so exactly 1.2x passes.
AREA_MARGIN = Fraction(6, 5)
MIN_REFERENCES = 2
MAX_REFERENCES = 5

DISTANCE_BOUNDARIES_M: tuple[Fraction, ...] = (Fraction(1), Fraction(2), Fraction(3))
DISTANCE_CHOICES: tuple[str, ...] = (
    "under 1 meter",
    "1 to under 2 meters",
    "2 to under 3 meters",
    "3 meters or more",
)
COUNT_CHOICES: tuple[str, ...] = ("one", "two", "three", "four or more")
PRESENCE_CHOICES: tuple[str, ...] = ("yes", "no")
DIRECTION_CHOICES: tuple[str, ...] = ("left", "center", "right")
# Percent boundaries of the two coverage schemes; "A" wins ties.
COVERAGE_SCHEMES: dict[str, tuple[int, ...]] = {"A": (25, 50, 75), "B": (15, 35, 65, 85)}



def coverage_choices(boundaries: Sequence[int]) -> tuple[str, ...]:
    """Bucket labels for percent boundaries, worded like the distance choices.

    Written with "percent" rather than "%": dimOS's answer regex can never match a choice that
    ends in "%", and a plain word matches under any reasonable matcher.
    """
    labels = [f"under {boundaries[0]} percent"]
    labels += [f"{lo} to under {hi} percent" for lo, hi in pairwise(boundaries)]
    labels.append(f"{boundaries[-1]} percent or more")
    return tuple(labels)


def bucket_index(value: Fraction, boundaries: Sequence[Fraction | int]) -> int:
    """The number of boundaries ``<= value`` (a value on a boundary belongs to the upper bucket)."""
    return sum(1 for b in boundaries if b <= value)


def normalize_name(name: str) -> str:
    """A reference as used in questions and matching: lower case, single spaces, trimmed."""
    return " ".join(name.split()).lower()


def slug(names: Sequence[str]) -> str:
    """dimOS's object id: names joined with ``-vs-``, casefolded, each run of characters outside
    ``[a-z0-9]`` -> one ``-``, leading and trailing ``-`` stripped; ``object`` when nothing is left.
    """
    return re.sub(r"[^a-z0-9]+", "-", "-vs-".join(names).casefold()).strip("-") or "object"


def case_id_base(frame_index: int, names: Sequence[str], family: str) -> str:
    """``frame-{index:06d}-{slug}-{family}`` before the ``-2``/``-3`` suffix for repeats."""
    return f"frame-{frame_index:06d}-{slug(names)}-{family}"


# ----------------------------------------------------------------------------------------------
# Family rules


class FamilyRule(Protocol):
    """One question family: how many names it takes and how evidence answers it."""

    # Read-only: the rules are frozen dataclasses, whose fields cannot be assigned.
    @property
    def name(self) -> str:
        """The family's name, as in the cases' ids."""
        ...

    @property
    def min_names(self) -> int:
        """The fewest object names a question of this family takes."""
        ...

    @property
    def max_names(self) -> int:
        """The most object names a question of this family takes."""
        ...

    @property
    def order_independent(self) -> bool:
        """Whether the names' order leaves the question unchanged."""
        ...

    def decide(self, names: Sequence[str], ev: FrameEvidence) -> Decision:
        """Answer or reject a proposal about normalised ``names`` on one frame."""
        ...


def _not_queried(names: Sequence[str], ev: FrameEvidence) -> Rejected | None:
    missing = [n for n in names if n not in ev.queried]
    if missing:
        return Rejected("name_not_queried",
                        f"the detector was not asked about {missing} on this frame; add the name "
                        "to the perception vocabulary")
    return None


def unsure_rejection(names: Sequence[str], ev: FrameEvidence) -> Rejected | None:
    """Reject when the detector saw a region it could not name that may be one of ``names``.

    Its silence about such a name is not evidence of absence, nor of there being exactly one:
    "no", a count, and every question about "the visible X" would rest on it. A detector that
    says nothing about what it could not name thus costs yield, never a wrong gold answer.
    """
    unsure = [n for n in names if n in ev.unsure]
    if unsure:
        return Rejected("unsure_detection",
                        f"the detector saw a region it could not name that may be {unsure}")
    return None


def _single_detection(name: str, ev: FrameEvidence) -> DetectionEvidence | Rejected:
    dets = ev.of(name)
    if not dets:
        return Rejected("no_detection", f"no detection of {name!r}")
    if len(dets) > 1:
        return Rejected("multiple_detections",
                        f"{len(dets)} detections of {name!r}; the family needs exactly one")
    return _large_enough(name, dets[0])


def _large_enough(name: str, det: DetectionEvidence) -> DetectionEvidence | Rejected:
    """``det``, or a ``mask_too_small`` rejection when its mask shows fewer than
    :data:`MIN_MASK_PIXELS` pixels (a detection without a mask is judged by its box alone)."""
    if det.mask_area is not None and 0 < det.mask_area < MIN_MASK_PIXELS:
        return Rejected("mask_too_small",
                        f"the mask of {name!r} has {det.mask_area} pixels; at least "
                        f"{MIN_MASK_PIXELS} are needed to ask about the visible {name}")
    return det


def _single_masked(name: str, ev: FrameEvidence) -> DetectionEvidence | Rejected:
    det = _single_detection(name, ev)
    if isinstance(det, Rejected):
        return det
    if not det.mask_area:
        return Rejected("no_mask", f"the detection of {name!r} has no (or an empty) mask")
    return det


def _ranged(name: str, ev: FrameEvidence) -> DetectionEvidence | Rejected:
    """The one masked detection of ``name`` with at least MIN_RANGE_POINTS LiDAR points."""
    if not ev.lidar_ok:
        return Rejected("image_only_frame",
                        f"frame has no range evidence: {ev.lidar_reason or 'no LiDAR'}")
    det = _single_masked(name, ev)
    if isinstance(det, Rejected):
        return det
    count = det.range.count if det.range is not None else 0
    if count < MIN_RANGE_POINTS:
        return Rejected("too_few_points",
                        f"{count} LiDAR points inside the mask of {name!r}; at least "
                        f"{MIN_RANGE_POINTS} are needed")
    return det


def _each(names: Sequence[str], ev: FrameEvidence,
          pick: Callable[[str, FrameEvidence], DetectionEvidence | Rejected]
          ) -> dict[str, DetectionEvidence] | Rejected:
    """Each name's detection by ``pick`` (in the names' order), or the first rejection."""
    dets: dict[str, DetectionEvidence] = {}
    for obj in names:
        det = pick(obj, ev)
        if isinstance(det, Rejected):
            return det
        dets[obj] = det
    return dets


@dataclass(frozen=True)
class _Rule:
    """What every family rule starts with: a proposal naming an object the detector was not asked
    about, or one it saw a region it could not name as, is rejected before :meth:`answer` is
    asked. The defaults are those of a question about one object name."""

    name: str
    min_names: int = 1
    max_names: int = 1
    order_independent: bool = False

    def decide(self, names: Sequence[str], ev: FrameEvidence) -> Decision:
        """Reject (:func:`_not_queried`, :func:`unsure_rejection`), else :meth:`answer`."""
        if (missing := _not_queried(names, ev)) is not None:
            return missing
        if (unsure := unsure_rejection(names, ev)) is not None:
            return unsure
        return self.answer(names, ev)

    def answer(self, names: Sequence[str], ev: FrameEvidence) -> Decision:
        """The family's own rule, on names the detector was asked about and sure of."""
        raise NotImplementedError


@dataclass(frozen=True)
class _References(_Rule):
    """A question comparing MIN_REFERENCES to MAX_REFERENCES objects, in any order."""

    min_names: int = MIN_REFERENCES
    max_names: int = MAX_REFERENCES
    order_independent: bool = True


@dataclass(frozen=True)
class Presence(_Rule):
    """yes: at least one detection; no: none (asked about, not found)."""

    name: str = "presence"

    # Its own prologue: an unsure region only rejects a "no" (one detection is a "yes" anyway).
    def decide(self, names: Sequence[str], ev: FrameEvidence) -> Decision:
        """See the class docstring."""
        (obj,) = names
        if (missing := _not_queried(names, ev)) is not None:
            return missing
        n = len(ev.of(obj))
        if n == 0 and (unsure := unsure_rejection(names, ev)) is not None:
            return unsure
        return Answered(_question(self.name).format(name=obj), PRESENCE_CHOICES,
                        "yes" if n else "no", {"detections": n})


@dataclass(frozen=True)
class HorizontalDirection(_Rule):
    """Exactly one detection; its box centre in thirds of the image width.

    A centre exactly on ``W/3`` is "center" and exactly on ``2W/3`` is "right".
    """

    name: str = "horizontal_direction"

    def answer(self, names: Sequence[str], ev: FrameEvidence) -> Decision:
        """See the class docstring."""
        (obj,) = names
        det = _single_detection(obj, ev)
        if isinstance(det, Rejected):
            return det
        x0, _, x1, _ = det.box_xyxy
        # 3 * centre compared with W and 2W, exactly: centre = (x0 + x1) / 2.
        thrice = 3 * (Fraction(x0) + Fraction(x1)) / 2
        index = bucket_index(thrice, (ev.width, 2 * ev.width))
        return Answered(_question(self.name).format(name=obj), DIRECTION_CHOICES,
                        DIRECTION_CHOICES[index],
                        {"box_xyxy": [rounded(v) for v in det.box_xyxy],
                         "center_x": rounded((x0 + x1) / 2), "image_width": ev.width})


@dataclass(frozen=True)
class ObjectCount(_Rule):
    """Number of detections, ``min(n, 4)``; zero detections reject."""

    name: str = "object_count"

    def answer(self, names: Sequence[str], ev: FrameEvidence) -> Decision:
        """See the class docstring."""
        (obj,) = names
        n = len(ev.of(obj))
        if n == 0:
            return Rejected("no_detection",
                            f"no detection of {obj!r}; a count of zero is not asked")
        return Answered(_question(self.name).format(name=obj), COUNT_CHOICES,
                        COUNT_CHOICES[min(n, 4) - 1], {"detections": n})


def choose_coverage_scheme(percent: Fraction) -> str:
    """The scheme whose nearest boundary is farthest from ``percent``; ties go to "A"."""
    margins = {key: min(abs(percent - b) for b in bounds)
               for key, bounds in COVERAGE_SCHEMES.items()}
    return "A" if margins["A"] >= margins["B"] else "B"


@dataclass(frozen=True)
class ImageCoverage(_Rule):
    """Mask pixels / image pixels of the one detection, in the better-separated bucket scheme."""

    name: str = "image_coverage"

    def answer(self, names: Sequence[str], ev: FrameEvidence) -> Decision:
        """See the class docstring."""
        (obj,) = names
        det = _single_masked(obj, ev)
        if isinstance(det, Rejected):
            return det
        area = int(det.mask_area or 0)
        percent = Fraction(100 * area, ev.width * ev.height)
        scheme = choose_coverage_scheme(percent)
        bounds = COVERAGE_SCHEMES[scheme]
        choices = coverage_choices(bounds)
        return Answered(_question(self.name).format(name=obj), choices,
                        choices[bucket_index(percent, bounds)],
                        {"mask_pixels": area, "image_pixels": ev.width * ev.height,
                         "percent": rounded(percent), "scheme": scheme,
                         "boundary_margin": rounded(min(abs(percent - b) for b in bounds))})


@dataclass(frozen=True)
class LargestVisibleArea(_References):
    """Each reference has one masked detection; the largest has at least 1.2x the runner-up."""

    name: str = "largest_visible_area"

    def answer(self, names: Sequence[str], ev: FrameEvidence) -> Decision:
        """See the class docstring."""
        dets = _each(names, ev, _single_masked)
        if isinstance(dets, Rejected):
            return dets
        areas = {obj: int(det.mask_area or 0) for obj, det in dets.items()}
        ranked = sorted(names, key=lambda n: -areas[n])
        winner, runner = ranked[0], ranked[1]
        evidence = {"mask_pixels": {n: areas[n] for n in names},
                    "ratio": rounded(areas[winner] / areas[runner])}
        if Fraction(areas[winner]) < AREA_MARGIN * areas[runner]:
            return Rejected("area_margin_too_small",
                            f"{winner!r} has {areas[winner]} mask pixels, {runner!r} has "
                            f"{areas[runner]}: less than {float(AREA_MARGIN)}x")
        return Answered(_question(self.name), tuple(names), winner, evidence)


@dataclass(frozen=True)
class ObjectDistance(_Rule):
    """One masked detection with >= 5 LiDAR points; the median decides the bucket.

    Rejects when the first-to-third quartile interval crosses a boundary, i.e. when q1 and q3
    fall in different buckets (q3 exactly on a boundary counts as crossing into the upper one).
    Every answer is dimOS's; on top of its rule, a mask with floor seen beyond the object
    (``background``) is answered only when the same rule on the other points gives the same
    bucket (``background_in_mask`` otherwise): simulated seeds 911-913, 931-933, 941, 942 with
    the truth evidence, 6 of 579 answers wrong before (tables, a ball, a tray), 0 of 558 after.
    """

    name: str = "object_distance"

    def answer(self, names: Sequence[str], ev: FrameEvidence) -> Decision:
        """See the class docstring."""
        (obj,) = names
        det = _ranged(obj, ev)
        if isinstance(det, Rejected):
            return det
        rng = det.range
        assert rng is not None  # _ranged guarantees it
        index = _distance_bucket(rng)
        if index is None:
            return Rejected("quartiles_cross_boundary",
                            f"range of {obj!r} has q1={rng.q1:.3f} m and q3={rng.q3:.3f} m, "
                            "on both sides of a bucket boundary")
        if rng.background:
            rest = rng.without_background
            alone = _distance_bucket(rest) if rest is not None and _enough(rest) else None
            if alone != index:
                without = (f"it answers {DISTANCE_CHOICES[alone]!r}" if alone is not None
                           else _unanswered(rest))
                return Rejected("background_in_mask", _background_detail(
                    obj, rng, f"dimOS's rule answers {DISTANCE_CHOICES[index]!r}, without "
                              f"them {without}"))
        return Answered(_question(self.name).format(name=obj), DISTANCE_CHOICES,
                        DISTANCE_CHOICES[index], {"range_m": rng.summary()})


def _distance_bucket(rng: RangeEvidence) -> int | None:
    """dimOS's distance bucket of ``rng``'s median; None when q1 and q3 fall in different
    buckets (q3 exactly on a boundary counts as crossing into the upper one)."""
    lo = bucket_index(Fraction(rng.q1), DISTANCE_BOUNDARIES_M)
    hi = bucket_index(Fraction(rng.q3), DISTANCE_BOUNDARIES_M)
    return bucket_index(Fraction(rng.median), DISTANCE_BOUNDARIES_M) if lo == hi else None


def _enough(rng: RangeEvidence | None) -> bool:
    """Whether ``rng`` has the MIN_RANGE_POINTS points dimOS's rules need."""
    return rng is not None and rng.count >= MIN_RANGE_POINTS


def _unanswered(rest: RangeEvidence | None) -> str:
    """Why dimOS's rule would not answer from ``rest`` (the points besides the background)."""
    if not _enough(rest):
        return (f"{rest.count if rest is not None else 0} points are left where at least "
                f"{MIN_RANGE_POINTS} are needed")
    assert rest is not None
    return (f"q1={rest.q1:.3f} m and q3={rest.q3:.3f} m fall on both sides of a bucket "
            "boundary")


def _background_detail(obj: str, rng: RangeEvidence, outcome: str) -> str:
    """The ``background_in_mask`` detail: the figures with and without the floor beyond."""
    rest = rng.without_background
    rest_text = ("none left" if rest is None else
                 f"q1={rest.q1:.3f}, median={rest.median:.3f}, q3={rest.q3:.3f} m")
    return (f"{rng.background} of the {rng.count} LiDAR points in the mask of {obj!r} are floor "
            f"seen beyond it (median {rng.median:.3f} m, q1={rng.q1:.3f}, q3={rng.q3:.3f} m; the "
            f"others: {rest_text}); {outcome}: the answer rests on the floor, not the object")


@dataclass(frozen=True)
class ClosestObject(_References):
    """Each reference has one detection with range evidence; the closest (smallest median)
    reference's [q1, q3] interval must overlap no other reference's (touching counts as overlap).

    As :class:`ObjectDistance`, where a reference's mask takes in floor seen beyond it the
    answer must also come, without overlap, from the points besides that floor
    (``background_in_mask`` otherwise)."""

    name: str = "closest_object"

    def answer(self, names: Sequence[str], ev: FrameEvidence) -> Decision:
        """See the class docstring."""
        dets = _each(names, ev, _ranged)
        if isinstance(dets, Rejected):
            return dets
        # _ranged guarantees every range.
        ranges = {obj: det.range for obj, det in dets.items() if det.range is not None}
        closest, overlap = _closest(names, ranges)
        if overlap is not None:
            c, o = ranges[closest], ranges[overlap]
            return Rejected("range_intervals_overlap",
                            f"{closest!r} [{c.q1:.3f}, {c.q3:.3f}] m overlaps {overlap!r} "
                            f"[{o.q1:.3f}, {o.q3:.3f}] m")
        # The same answer must come without the floor seen beyond any of the references.
        behind = [n for n in names if ranges[n].background]
        if behind:
            rests = {n: ranges[n].without_background if n in behind else ranges[n]
                     for n in names}
            short = [n for n in behind if not _enough(rests[n])]
            if short:
                why = f"without it {short} keep fewer than {MIN_RANGE_POINTS} points"
            else:
                alone, alone_overlap = _closest(names, {n: r for n, r in rests.items()
                                                        if r is not None})
                why = ("" if (alone, alone_overlap) == (closest, None) else
                       f"without it the closest would be {alone!r}" + (
                           f", overlapping {alone_overlap!r}" if alone_overlap else ""))
            if why:
                counts = ", ".join(f"{n!r} {ranges[n].background} of {ranges[n].count}"
                                   for n in behind)
                return Rejected("background_in_mask",
                                f"LiDAR points in the masks are floor seen beyond the object "
                                f"({counts} points); dimOS's rule answers {closest!r}, but "
                                f"{why}: the answer rests on the floor, not the objects")
        evidence = {"range_m": {n: ranges[n].summary() for n in names}}
        return Answered(_question(self.name), tuple(names), closest, evidence)


def _closest(names: Sequence[str], ranges: Mapping[str, RangeEvidence]) -> tuple[str, str | None]:
    """dimOS's closest reference (smallest median, the first on a tie) and the first other
    reference whose [q1, q3] interval overlaps its own (touching counts), or None."""
    closest = min(names, key=lambda n: ranges[n].median)
    c = ranges[closest]
    for other in names:
        o = ranges[other]
        if other != closest and o.q1 <= c.q3 and c.q1 <= o.q3:
            return closest, other
    return closest, None


def _question(name: str) -> str:
    """The declared wording of the family ``name``."""
    spec = family(name)
    assert spec is not None, f"family {name!r} answers without a declaration"
    return spec.question


# The seven families' declarations (eval_assets.family_spec), in dimOS's order.
FRAME_FAMILIES: tuple[FamilySpec, ...] = tuple(register(spec) for spec in (
    FamilySpec("presence", "dimos", "Does the image contain any {name}?", "choice",
               frozenset({"detections"}), Presence(), PRESENCE_CHOICES,
               paraphrase="Is at least one {name} visible anywhere in this image?"),
    FamilySpec("horizontal_direction", "dimos",
               "Which horizontal region contains the visible {name}?", "choice",
               frozenset({"detections"}), HorizontalDirection(), DIRECTION_CHOICES,
               paraphrase="Looking at the image from left to right, in which part is the "
                          "{name}?"),
    FamilySpec("object_count", "dimos", "How many instances of {name} are visible in the image?",
               "choice", frozenset({"detections"}), ObjectCount(), COUNT_CHOICES,
               paraphrase="Count the {name} you can see in this image. How many are there?"),
    # Choices: one of the two COVERAGE_SCHEMES, whichever separates the case better.
    FamilySpec("image_coverage", "dimos",
               "Approximately what percentage of the image is occupied by the visible {name}?",
               "choice", frozenset({"detections", "masks"}), ImageCoverage(),
               paraphrase="Roughly what share of the image area does the {name} take up?"),
    # Choices: the references asked about.
    FamilySpec("largest_visible_area", "dimos",
               "Which object occupies the largest visible area in the image?", "choice",
               frozenset({"detections", "masks"}), LargestVisibleArea(),
               paraphrase="Which object takes up the most area in this image?"),
    FamilySpec("object_distance", "dimos",
               "Approximately how far is the visible {name} from the camera?", "choice",
               frozenset({"detections", "masks", "lidar"}), ObjectDistance(), DISTANCE_CHOICES,
               paraphrase="Roughly what is the distance from the camera to the {name}?"),
    FamilySpec("closest_object", "dimos", "Which object is closest to the camera?", "choice",
               frozenset({"detections", "masks", "lidar"}), ClosestObject(),
               paraphrase="Which object is nearest to the camera?"),
))
# The built-in rules and questions by family name (a family declared later, e.g. by a test, is
# read from the registry: see :func:`rule_of`).
FAMILIES: dict[str, FamilyRule] = {spec.name: spec.rule for spec in FRAME_FAMILIES}
QUESTIONS: dict[str, str] = {spec.name: spec.question for spec in FRAME_FAMILIES}


def rule_of(family_name: str) -> FamilyRule | None:
    """The rule of a declared single-image (dimOS-file) family; None for any other name."""
    spec = family(family_name)
    return spec.rule if spec is not None and spec.file == "dimos" else None


def id_names(family: FamilyRule, names: Sequence[str]) -> tuple[str, ...]:
    """The names as a case id and duplicate check see them: sorted case-insensitively (stable,
    as dimOS) when the family ignores their order; the choices keep the proposal's order."""
    if family.order_independent:
        return tuple(sorted(names, key=str.casefold))
    return tuple(names)


def check_shape(family_name: str, names: Sequence[Any]) -> Rejected | None:
    """Reject a proposal whose family is unknown or whose names do not fit the family."""
    family = rule_of(family_name)
    if family is None:
        return Rejected("unknown_family",
                        f"family {family_name!r} is not one of {list(family_names('dimos'))}")
    if any(not isinstance(n, str) or not n.strip() for n in names):
        return Rejected("malformed_author_reply",
                        f"object_names {list(names)!r} must be non-empty strings")
    if not family.min_names <= len(names) <= family.max_names:
        wanted = (str(family.min_names) if family.min_names == family.max_names
                  else f"{family.min_names} to {family.max_names}")
        return Rejected("wrong_reference_count",
                        f"{family_name} takes {wanted} object names, got {len(names)}")
    normalised = [normalize_name(n) for n in names]
    if len(set(normalised)) != len(normalised):
        return Rejected("repeated_reference", f"object_names {list(names)!r} repeat a reference")
    return None


def decide(family_name: str, names: Sequence[str], ev: FrameEvidence) -> Decision:
    """Answer or reject one proposal: shape checks first, then the family's evidence rule."""
    shape = check_shape(family_name, names)
    if shape is not None:
        return shape
    rule = rule_of(family_name)
    assert rule is not None  # check_shape rejected any other name
    return rule.decide(tuple(normalize_name(n) for n in names), ev)
