"""What a frame family's rule reads and what it returns: the evidence records of one frame
(detections with boxes, mask areas and LiDAR range statistics) and the decision (answered, or
rejected with a reason code). Plain frozen records, so every rule is a pure function of them
(:mod:`eval_assets.vqa.families`) and can be tested without perception or files."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any


@dataclass(frozen=True)
class RangeEvidence:
    """Range statistics (metres) of the projected LiDAR points inside one mask.

    ``background`` counts the mask's points that are floor seen beyond the object (LiDAR and
    camera see from different places: see :mod:`eval_assets.vqa.background`), and
    ``without_background`` holds the statistics of the other points (None when none is left).
    Both stay at their defaults where the frame has no camera pose to find the floor by.
    """

    count: int
    median: float
    q1: float
    q3: float
    min: float
    background: int = 0
    without_background: RangeEvidence | None = None

    def summary(self) -> dict[str, float | int]:
        """A JSON-able summary for labels and the audit."""
        return {"count": self.count, "median": rounded(self.median), "q1": rounded(self.q1),
                "q3": rounded(self.q3), "min": rounded(self.min)}


@dataclass(frozen=True)
class DetectionEvidence:
    """One detection: its box in rectified pixels, its mask area and the range in its mask.

    ``mask_area`` is None when no mask was produced; ``range`` is None when the frame has no
    usable LiDAR or no point fell inside the mask.
    """

    box_xyxy: tuple[float, float, float, float]
    score: float = 1.0
    mask_area: int | None = None
    range: RangeEvidence | None = None


@dataclass(frozen=True)
class FrameEvidence:
    """Everything the rules may use about one frame.

    ``detections`` maps normalised names to that name's detections; ``queried`` holds every
    normalised name the detector was asked about (a name never asked about cannot be "absent").
    ``lidar_ok`` is False for image-only frames (LiDAR unmatched or TF unresolved).
    ``unsure`` holds the normalised names for which the detector saw a region it could not name
    with confidence: such a name may be present even where it has no detection.
    """

    frame_index: int
    width: int
    height: int
    queried: frozenset[str]
    detections: Mapping[str, tuple[DetectionEvidence, ...]] = field(default_factory=dict)
    lidar_ok: bool = True
    lidar_reason: str | None = None
    unsure: frozenset[str] = frozenset()

    def of(self, name: str) -> tuple[DetectionEvidence, ...]:
        """Detections of a normalised name (empty when none)."""
        return tuple(self.detections.get(name, ()))


@dataclass(frozen=True)
class Answered:
    """A proposal the evidence answers."""

    question: str
    choices: tuple[str, ...]
    answer: str
    evidence: dict[str, Any]


@dataclass(frozen=True)
class Rejected:
    """A proposal the evidence cannot answer, with a reason code and a human-readable detail."""

    reason: str
    detail: str


Decision = Answered | Rejected


def rounded(x: float | Fraction) -> float:
    """Round for the evidence summary only (decisions use the unrounded values)."""
    return round(float(x), 6)
