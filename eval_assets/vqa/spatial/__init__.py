"""The spatial families beyond dimOS (``shared/specs/spatial.md``): cases from object tracks.

:func:`build_spatial` turns one recording's tracks into the second public file's cases, their
labels and the rejections; :func:`write_spatial` writes them into a dataset folder being
published (``spatial_cases.jsonl``, ``spatial_labels.jsonl``, ``audit/spatial_labels.jsonl``,
``audit/spatial_rejections.jsonl``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
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
from eval_assets.vqa.spatial.families import ANSWER_BALANCE, balanced_family, spatial_items

AUDIT_SPATIAL_REJECTIONS = "spatial_rejections.jsonl"


@dataclass(frozen=True)
class SpatialSet:
    """The spatial cases of one dataset, their full labels and what was not asked, and why."""

    cases: tuple[SpatialCase, ...]
    labels: tuple[SpatialLabel, ...]
    rejections: tuple[SpatialRejection, ...]

    def cases_per_family(self) -> dict[str, int]:
        """Cases per spatial family, sorted by name."""
        return dict(sorted(Counter(lab.family for lab in self.labels).items()))

    def rejections_per_reason(self) -> dict[str, int]:
        """Rejections per reason, sorted by name."""
        return dict(sorted(Counter(r.reason for r in self.rejections).items()))

    def answers_per_family(self) -> dict[str, AnswerBalance]:
        """Per family whose answers a guess could win (choices, counts), sorted by name: the
        gold answers' distribution, the most common one's share and the cases of it left out
        for balance (the note says when the scene could not give more)."""
        out = {}
        for family in sorted({lab.family for lab in self.labels} |
                             {r.family for r in self.rejections}):
            if not balanced_family(family):
                continue
            left_out = sum(1 for r in self.rejections
                           if r.family == family and r.reason == ANSWER_BALANCE)
            record = answer_balance([lab.answer for lab in self.labels if lab.family == family],
                                    left_out)
            if record is not None:
                out[family] = record
        return out


def build_spatial(tracks: ObjectTracks, published: Sequence[int]) -> SpatialSet:
    """The spatial cases about ``tracks`` showing only the ``published`` frames."""
    items = spatial_items(TrackIndex(tracks, tuple(sorted(set(published)))))
    pairs = [i for i in items if not isinstance(i, SpatialRejection)]
    seen: Counter[str] = Counter()
    cases, labels = [], []
    for case, label in pairs:
        seen[case.id] += 1
        if seen[case.id] > 1:  # two questions that slug alike on the same frames
            suffix = f"-{seen[case.id]}"
            case = case.model_copy(update={"id": case.id + suffix})
            label = label.model_copy(update={"id": label.id + suffix})
        cases.append(case)
        labels.append(label)
    return SpatialSet(tuple(cases), tuple(labels),
                      tuple(i for i in items if isinstance(i, SpatialRejection)))


def write_spatial(root: Path, spatial: SpatialSet) -> None:
    """Write the spatial files under the dataset folder ``root`` (its ``assets/`` hold the
    frames already); an empty set still writes empty files, so a reader finds them."""
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
