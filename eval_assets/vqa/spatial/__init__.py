"""The spatial families beyond dimOS (``shared/specs/spatial.md``): cases from object tracks.

:func:`build_spatial` turns one recording's tracks into the second public file's cases, their
labels and the rejections; :func:`write_spatial` writes them into a dataset folder being
published (``spatial_cases.jsonl``, ``spatial_labels.jsonl``, ``audit/spatial_labels.jsonl``,
``audit/spatial_rejections.jsonl``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from eval_assets.jsonio import dumps_json
from eval_assets.schemas.spatial import (
    AUDIT_SPATIAL_LABELS,
    SPATIAL_CASES,
    SPATIAL_LABELS,
    ObjectTracks,
    SpatialCase,
    SpatialLabel,
)
from eval_assets.schemas.vqa import DATASET_AUDIT, AnswerBalance, dumps_line
from eval_assets.vqa.balance import answer_balance
from eval_assets.vqa.spatial.evidence import SpatialRejection, TrackIndex
from eval_assets.vqa.spatial.families import (
    ANSWER_BALANCE,
    balance_key,
    balanced_family,
    spatial_items,
)
from eval_assets.vqa.spatial.marked import (
    MarkSource,
    is_marked,
    marked_images,
    marked_numbers,
    with_marks,
    write_marked_images,
)

AUDIT_SPATIAL_REJECTIONS = "spatial_rejections.jsonl"


@dataclass(frozen=True)
class SpatialSet:
    """The spatial cases of one dataset, their full labels and what was not asked, and why."""

    cases: tuple[SpatialCase, ...]
    labels: tuple[SpatialLabel, ...]
    rejections: tuple[SpatialRejection, ...]
    marks: MarkSource | None = None
    marked: frozenset[int] = field(default_factory=frozenset)

    def cases_per_family(self) -> dict[str, int]:
        """Cases per spatial family, sorted by name."""
        return dict(sorted(Counter(lab.family for lab in self.labels).items()))

    def rejections_per_reason(self) -> dict[str, int]:
        """Rejections per reason, sorted by name."""
        return dict(sorted(Counter(r.reason for r in self.rejections).items()))

    def answers_per_family(self) -> dict[str, AnswerBalance]:
        """Per family whose answers a guess could win (choices, counts), sorted by name: the
        gold answers' distribution (for a choice between the named objects, the gold's
        position: :func:`~eval_assets.vqa.spatial.families.balance_key`), the most common one's
        share and the cases of it left out for balance (the note says when the scene could not
        give more)."""
        out = {}
        for family in sorted({lab.family for lab in self.labels} |
                             {r.family for r in self.rejections}):
            if not balanced_family(family):
                continue
            left_out = sum(1 for r in self.rejections
                           if r.family == family and r.reason == ANSWER_BALANCE)
            record = answer_balance([balance_key(lab) for lab in self.labels
                                     if lab.family == family], left_out)
            if record is not None:
                out[family] = record
        return out


def build_spatial(tracks: ObjectTracks, published: Sequence[int],
                  marks: MarkSource | None = None,
                  breaks: Sequence[tuple[float, float]] = ()) -> SpatialSet:
    """The spatial cases about ``tracks`` showing only the ``published`` frames.

    A case about a marked object shows the marked frames (:mod:`~eval_assets.vqa.spatial.
    marked`), drawn from ``marks``; without ``marks`` it is not asked (``no_marks``). No motion
    case spans or touches one of the ``breaks`` (:attr:`TrackIndex.breaks`).
    """
    items = spatial_items(TrackIndex(tracks, tuple(sorted(set(published))),
                                     tuple(sorted((float(a), float(b)) for a, b in breaks))))
    rejections = [i for i in items if isinstance(i, SpatialRejection)]
    seen: Counter[str] = Counter()
    cases, labels = [], []
    for case, label in (i for i in items if not isinstance(i, SpatialRejection)):
        if is_marked(label):
            if marks is None:
                rejections.append(SpatialRejection(
                    label.family, tuple(label.object_names), "no_marks",
                    "the case asks about a marked object but no object-number images were "
                    "given to draw its marks from", tuple(label.frame_indices or [])))
                continue
            case, label = with_marks(case, label, marks.style)
        seen[case.id] += 1
        if seen[case.id] > 1:  # two questions that slug alike on the same frames
            suffix = f"-{seen[case.id]}"
            case = case.model_copy(update={"id": case.id + suffix})
            label = label.model_copy(update={"id": label.id + suffix})
        cases.append(case)
        labels.append(label)
    return SpatialSet(tuple(cases), tuple(labels), tuple(rejections), marks,
                      marked_numbers(tracks))


def write_spatial(root: Path, spatial: SpatialSet) -> None:
    """Write the spatial files under the dataset folder ``root`` (its ``assets/`` hold the
    frames already) and the marked images its cases show; an empty set still writes empty
    files, so a reader finds them."""
    (root / DATASET_AUDIT).mkdir(parents=True, exist_ok=True)
    (root / SPATIAL_CASES).write_text("".join(dumps_line(c) + "\n" for c in spatial.cases),
                                      encoding="utf-8")
    (root / SPATIAL_LABELS).write_text(
        "".join(dumps_line(lab.public()) + "\n" for lab in spatial.labels), encoding="utf-8")
    (root / DATASET_AUDIT / AUDIT_SPATIAL_LABELS).write_text(
        "".join(dumps_line(lab) + "\n" for lab in spatial.labels), encoding="utf-8")
    (root / DATASET_AUDIT / AUDIT_SPATIAL_REJECTIONS).write_text(
        "".join(dumps_json(r.record(), indent=None, newline=False) + "\n"
                for r in spatial.rejections), encoding="utf-8")
    if spatial.marks is not None:
        write_marked_images(root, marked_images(spatial.cases), spatial.marked, spatial.marks)
