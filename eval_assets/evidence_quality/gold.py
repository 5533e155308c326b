"""Wrong-gold rates: each case's gold answer against the answer the truth gives to the same
question, with each family's yield (cases made, proposals rejected per reason).

dimOS's seven per-frame families are answered from the truth frame (id map pixels and boxes,
``scene.json`` surface distances) by the family's own rule, with the truth in place of the
detector's evidence. An object counts as visible with :data:`MIN_TRUTH_PIXELS` pixels or more;
where the answer changes with whether a sliver below that counts (presence, count), both answers
are accepted. "The visible X" (direction, coverage, distance, largest, closest) needs exactly one
visible object of that name: none or several make the case wrong (``not_visible``,
``ambiguous_reference``), as the gold asserted one.

The spatial families go through :mod:`eval_assets.vqa.spatial.truth` (tracks matched within the
gate). A number is wrong when it is more than :data:`NUMERIC_TOLERANCE` off the truth
(relative); unmatched or unscorable cases are wrong, with the reason. Only cases whose frames the
truth does not cover (``no_truth_frame``) are left out of the rate, and counted.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from eval_assets.evidence_quality.detection import MIN_TRUTH_PIXELS
from eval_assets.evidence_quality.truth import FrameTruth, SceneTruth
from eval_assets.jsonio import read_jsonl
from eval_assets.layout import AUDIT_LABELS, AUDIT_SPATIAL_LABELS, DATASET_AUDIT
from eval_assets.schemas.evidence_quality import FamilyKind, FamilyQuality, WrongCase
from eval_assets.schemas.spatial import SpatialLabel
from eval_assets.schemas.vqa import Label
from eval_assets.vqa.declarations import family_names
from eval_assets.vqa.families import (
    COUNT_CHOICES,
    COVERAGE_SCHEMES,
    DIRECTION_CHOICES,
    DISTANCE_BOUNDARIES_M,
    DISTANCE_CHOICES,
    bucket_index,
    coverage_choices,
    normalize_name,
)
from eval_assets.vqa.spatial import AUDIT_SPATIAL_REJECTIONS
from eval_assets.vqa.spatial.truth import (
    CHECKED_FAMILIES,
    MOTION_NUMERIC,
    NOT_COVERED,
    NUMERIC,
    check_labels,
)

NUMERIC_TOLERANCE = 0.10
# A motion number (from TF, not from a detector) is wrong beyond its rounding and interpolation:
# 5 cm for a distance, 2 degrees for an angle (gold is written to 0.01 m and whole degrees).
MOTION_TOLERANCE_M = 0.05
MOTION_TOLERANCE_DEG = 2.0
"""A numeric gold answer more than this far from the truth (|gold − truth| / truth) is wrong."""
SPATIAL_FAMILIES: tuple[str, ...] = CHECKED_FAMILIES
"""The spatial families the truth checks (derived from their declarations)."""


@dataclass(frozen=True)
class Verdict:
    """The truth's answer to one question: the answers it accepts (empty: none, see reason)."""

    truth: str | None
    accepted: frozenset[str]
    reason: str = ""
    detail: str = ""


def _unscorable(reason: str, detail: str) -> Verdict:
    return Verdict(None, frozenset(), reason, detail)


def _exact(answer: str, detail: str = "") -> Verdict:
    return Verdict(answer, frozenset({answer}), "", detail)


class _Frame:
    """One truth frame as the family rules ask about it."""

    def __init__(self, truth: SceneTruth, frame: FrameTruth) -> None:
        self.truth = truth
        self.frame = frame

    def namesakes(self, name: str) -> list[tuple[int, int]]:
        """(id, visible pixels) of every object named ``name`` with at least one pixel."""
        return [(i, px) for i, px in sorted(self.frame.pixels.items())
                if normalize_name(self.truth.objects[i]["name"]) == name]

    def the_one(self, name: str) -> int | Verdict:
        """The one visible object named ``name``, or the verdict that there is not one."""
        seen = self.namesakes(name)
        visible = [i for i, px in seen if px >= MIN_TRUTH_PIXELS]
        if len(visible) == 1:
            return visible[0]
        if len(visible) > 1:
            return _unscorable("ambiguous_reference",
                               f"{len(visible)} objects named {name!r} are visible "
                               f"(ids {visible}); the question asks about one")
        if seen:
            return _unscorable("marginal_visibility",
                               f"{name!r} shows only {max(px for _, px in seen)} px "
                               f"(< {MIN_TRUTH_PIXELS})")
        return _unscorable("not_visible", f"no object named {name!r} is visible in the frame")


def _count_answer(n: int) -> str:
    return COUNT_CHOICES[min(n, 4) - 1] if n else "none"


def dimos_verdict(label: Label, truth: SceneTruth, frame: FrameTruth) -> Verdict:
    """The truth's answer to one of dimOS's per-frame questions (``label``'s family, names and
    choices) on ``frame``."""
    f = _Frame(truth, frame)
    names = [normalize_name(n) for n in label.object_names]
    family = label.family
    width, height = truth.width, truth.height
    if family in ("presence", "object_count"):
        seen = f.namesakes(names[0])
        strict = len(seen)
        lenient = sum(1 for _, px in seen if px >= MIN_TRUTH_PIXELS)
        say = ((lambda n: "yes" if n else "no") if family == "presence" else _count_answer)
        answers = {say(strict), say(lenient)}
        text = " or ".join(sorted(answers))
        detail = (f"{strict} visible, {lenient} with ≥ {MIN_TRUTH_PIXELS} px"
                  if strict != lenient else f"{strict} visible")
        return Verdict(text, frozenset(answers), "", detail)
    if family in ("largest_visible_area", "closest_object"):
        ids = []
        for name in names:
            one = f.the_one(name)
            if isinstance(one, Verdict):
                return one
            ids.append(one)
        if family == "largest_visible_area":
            value = {n: float(frame.pixels[i]) for n, i in zip(names, ids, strict=True)}
            best = max(value.values())
            unit = "px"
        else:
            missing = [n for n, i in zip(names, ids, strict=True) if i not in frame.distance]
            if missing:
                return _unscorable("no_truth_distance",
                                   f"the truth frame has no distance for {missing}")
            value = {n: frame.distance[i] for n, i in zip(names, ids, strict=True)}
            best = min(value.values())
            unit = "m"
        winners = [n for n in names if value[n] == best]
        detail = ", ".join(f"{n} {value[n]:g} {unit}" for n in names)
        if len(winners) > 1:
            return _unscorable("truth_tie", detail)
        return _exact(winners[0], detail)
    one = f.the_one(names[0])
    if isinstance(one, Verdict):
        return one
    if family == "horizontal_direction":
        x0, _, x1, _ = frame.bbox[one]
        thrice = 3 * Fraction(x0 + x1, 2)
        return _exact(DIRECTION_CHOICES[bucket_index(thrice, (width, 2 * width))],
                      f"visible box x {x0}..{x1} of {width}")
    if family == "image_coverage":
        percent = Fraction(100 * frame.pixels[one], width * height)
        for bounds in COVERAGE_SCHEMES.values():
            choices = coverage_choices(bounds)
            if list(choices) == list(label.choices):
                return _exact(choices[bucket_index(percent, bounds)],
                              f"{float(percent):.2f} % of the image")
        return _unscorable("unknown_choices", f"choices {label.choices} are no coverage scheme")
    if family == "object_distance":
        if one not in frame.distance:
            return _unscorable("no_truth_distance", "the truth frame has no surface distance")
        d = frame.distance[one]
        return _exact(DISTANCE_CHOICES[bucket_index(Fraction(d), DISTANCE_BOUNDARIES_M)],
                      f"surface {d:.2f} m")
    return _unscorable("unchecked_family", f"no truth rule for family {family!r}")


def dimos_rejections(dataset_dir: Path) -> dict[str, Counter[str]]:
    """Rejected proposals per family and reason, from every frame's ``ground_truth.json``."""
    out: dict[str, Counter[str]] = {}
    audit = Path(dataset_dir) / DATASET_AUDIT
    for path in sorted(audit.glob("frame-*/ground_truth.json")):
        for row in json.loads(path.read_text(encoding="utf-8")):
            if row.get("status") == "rejected":
                family = row.get("proposal", {}).get("family", "?")
                reason = row.get("reason_code") or row.get("reason") or "unknown"
                out.setdefault(family, Counter())[reason] += 1
    return out


def spatial_rejections(dataset_dir: Path) -> dict[str, Counter[str]]:
    """Spatial cases not asked, per family and reason (``audit/spatial_rejections.jsonl``)."""
    path = Path(dataset_dir) / DATASET_AUDIT / AUDIT_SPATIAL_REJECTIONS
    out: dict[str, Counter[str]] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                out.setdefault(row["family"], Counter())[row["reason"]] += 1
    return out


def _family(family: str, kind: FamilyKind, cases: int, rejected: Mapping[str, int],
            outcomes: Sequence[tuple[WrongCase | None, str | None]],
            mra: Sequence[float] | None = None) -> FamilyQuality:
    """``outcomes``: per case (its wrong record or None, and a not-covered reason or None)."""
    not_checked = Counter(why for _, why in outcomes if why is not None)
    checked = sum(1 for _, why in outcomes if why is None)
    wrong = [w for w, why in outcomes if w is not None and why is None]
    return FamilyQuality(
        family=family, kind=kind, cases=cases, rejected=dict(sorted(rejected.items())),
        checked=checked, not_checked=dict(sorted(not_checked.items())), wrong=len(wrong),
        wrong_rate=len(wrong) / checked if checked else None,
        mean_mra=(sum(mra) / len(mra)) if mra else None, wrong_cases=wrong)


def dimos_families(labels: Iterable[Label], truth: SceneTruth,
                   rejected: Mapping[str, Mapping[str, int]]) -> list[FamilyQuality]:
    """dimOS's seven families: each case's gold against the truth frame, and the yield."""
    by_family: dict[str, list[tuple[WrongCase | None, str | None]]] = {
        f: [] for f in family_names("dimos")}
    for label in labels:
        outcomes = by_family.setdefault(label.family, [])
        if not truth.has_frame(label.frame_index):
            outcomes.append((None, NOT_COVERED))
            continue
        v = dimos_verdict(label, truth, truth.frame(label.frame_index))
        if label.answer in v.accepted:
            outcomes.append((None, None))
        else:
            outcomes.append((WrongCase(case_id=label.id, gold=label.answer, truth=v.truth,
                                       reason=v.reason or "differs", detail=v.detail), None))
    return [_family(f, "dimos", len(o), rejected.get(f, {}), o) for f, o in by_family.items()]


def spatial_families(labels: Sequence[SpatialLabel], scene: Mapping[str, Any],
                     rejected: Mapping[str, Mapping[str, int]]) -> list[FamilyQuality]:
    """The spatial families: each gold against the scene (tracks gated), and the yield."""
    checks = check_labels(labels, scene)
    by_family: dict[str, list[tuple[WrongCase | None, str | None]]] = {
        f: [] for f in SPATIAL_FAMILIES}
    mra: dict[str, list[float]] = {f: [] for f in NUMERIC}
    for c in checks:
        outcomes = by_family.setdefault(c.family, [])
        if c.detail == NOT_COVERED:
            outcomes.append((None, NOT_COVERED))
            continue
        if c.family in mra:
            mra[c.family].append(float(c.score or 0.0))
        if c.truth is None:
            code, _, detail = c.detail.partition(": ")
            outcomes.append((WrongCase(case_id=c.case_id, gold=c.answer, truth=None,
                                       reason=code, detail=detail), None))
        elif c.family in NUMERIC:
            truth, gold = float(c.truth), float(c.answer)
            rel = abs(gold - truth) / truth if truth else float("inf")
            outcomes.append((WrongCase(case_id=c.case_id, gold=c.answer, truth=f"{truth:g}",
                                       reason="differs",
                                       detail=f"relative error {rel:.0%} > "
                                              f"{NUMERIC_TOLERANCE:.0%}")
                             if rel > NUMERIC_TOLERANCE else None, None))
        elif c.family in MOTION_NUMERIC:
            # check_labels scores a motion number by its absolute error (metres or degrees).
            tolerance = (MOTION_TOLERANCE_DEG if c.family.endswith("_deg")
                         else MOTION_TOLERANCE_M)
            error = float(c.score or 0.0)
            outcomes.append((WrongCase(case_id=c.case_id, gold=c.answer, truth=c.truth,
                                       reason="differs",
                                       detail=f"off by {error:.3g}, more than {tolerance:g}")
                             if error > tolerance else None, None))
        else:
            outcomes.append((None if c.answer == c.truth else WrongCase(
                case_id=c.case_id, gold=c.answer, truth=c.truth, reason="differs"), None))
    made = Counter(label.family for label in labels)
    return [_family(f, "spatial", made[f], rejected.get(f, {}), o, mra.get(f))
            for f, o in by_family.items()]


def read_dataset_labels(dataset_dir: Path) -> tuple[list[Label], list[SpatialLabel]]:
    """The full labels of a published dataset (dimOS's families and the spatial ones)."""
    audit = Path(dataset_dir) / DATASET_AUDIT
    labels = read_jsonl(audit / AUDIT_LABELS, Label) if (audit / AUDIT_LABELS).is_file() else []
    spatial_path = audit / AUDIT_SPATIAL_LABELS
    spatial = read_jsonl(spatial_path, SpatialLabel) if spatial_path.is_file() else []
    return labels, spatial
