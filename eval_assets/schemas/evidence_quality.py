"""The evidence-quality record: the configured detector's evidence and the gold answers it made,
compared with a recording's own truth (``X.scene.json`` + ``X.truth.npz``).

Written per recording by the ``evidence_quality`` asset (``evidence_quality.json``) and read by
the report's "Evidence quality" section. A recording without truth sidecars gets a record with
``status="no_truth"`` and the reason, so the asset never fails for want of truth.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from eval_assets.layout import EVIDENCE_QUALITY_FILE as EVIDENCE_QUALITY_FILE

FamilyKind = Literal["dimos", "spatial"]


class NameDetectionQuality(BaseModel):
    """Detection precision and recall of one object name, at the record's mask IoU threshold."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    queried: bool = Field(description="whether the detector was asked about this name")
    detections: int = Field(ge=0, description="detections of this name on frames with truth")
    truth_instances: int = Field(ge=0, description="visible truth objects of this name")
    true_positives: int = Field(
        ge=0, description="detections of this name matched to a truth object of this name")
    precision: float | None = None
    recall: float | None = None
    mean_iou: float | None = Field(None, description="mean mask IoU of the true positives")


class DetectionQuality(BaseModel):
    """Detections against the truth's instance masks, pooled over the frames with truth."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    iou_threshold: float
    min_truth_pixels: int = Field(description="truth objects with fewer visible pixels are "
                                  "not expected to be found (a hit on one still counts)")
    frames_checked: int
    frames_not_checked: dict[str, int] = Field(
        default_factory=dict, description="frames of the detections without usable truth, "
                                          "per reason")
    detections: int
    matched: int = Field(description="detections whose mask matches a truth object (any name)")
    correctly_named: int = Field(description="matched detections named as their truth object")
    naming_accuracy: float | None = None
    mean_mask_iou: float | None = Field(None, description="over every matched detection")
    precision: float | None = Field(None, description="correctly named matches / detections")
    recall: float | None = Field(None, description="truth instances of queried names found "
                                                   "and named right / those instances")
    per_name: list[NameDetectionQuality] = Field(default_factory=list)
    confusions: dict[str, int] = Field(
        default_factory=dict, description="'detected name -> truth name': matched detections "
                                          "named otherwise than their truth object")


class TrackCheck(BaseModel):
    """One object track matched (or not) to the truth object of its name within the gate."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    track_id: str
    name: str
    truth_id: int | None = None
    centre_error_m: float | None = None
    extent_error_m: float | None = Field(
        None, description="largest per-axis error of (sorted horizontal extents, height)")
    reason: str | None = Field(None, description="why it matched no truth object")


class TrackQuality(BaseModel):
    """3-D tracks against the truth objects' centres and sizes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    gate: str = Field(description="how far a track may be from its namesake to match it")
    tracks: int
    matched: int
    centre_error_m_median: float | None = None
    centre_error_m_p90: float | None = None
    extent_error_m_median: float | None = None
    extent_error_m_p90: float | None = None
    checks: list[TrackCheck] = Field(default_factory=list)
    missed: list[str] = Field(default_factory=list,
                              description="truth objects (name#id) visible in the checked "
                                          "frames that no track matched")


class WrongCase(BaseModel):
    """One gold answer that the truth contradicts or cannot confirm."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    case_id: str
    gold: str
    truth: str | None = Field(None, description="the truth's answer; None when it has none")
    reason: str = Field(description="'differs', or why the case cannot be matched or scored")
    detail: str = ""


class FamilyQuality(BaseModel):
    """One family's yield and its wrong-gold rate against the truth."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    family: str
    kind: FamilyKind
    cases: int = Field(description="cases made")
    rejected: dict[str, int] = Field(default_factory=dict,
                                     description="proposals rejected, per reason")
    checked: int = Field(description="cases whose frames the truth covers")
    not_checked: dict[str, int] = Field(
        default_factory=dict, description="cases outside the truth's coverage, per reason "
                                          "(e.g. a frame without per-frame truth)")
    wrong: int
    wrong_rate: float | None = Field(None, description="wrong / checked")
    mean_mra: float | None = Field(None, description="numeric families: mean relative "
                                                     "accuracy, unscorable cases as 0")
    wrong_cases: list[WrongCase] = Field(default_factory=list)


class TruthSource(BaseModel):
    """Which truth files were read."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    generator: str
    scene_json_sha256: str
    truth_npz_sha256: str
    truth_frames: int


class EvidenceQuality(BaseModel):
    """Everything the ``evidence_quality`` asset measured about one recording."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    recording: str
    status: Literal["measured", "no_truth"]
    reason: str | None = Field(None, description="why nothing was measured (no_truth)")
    truth: TruthSource | None = None
    detector: str | None = None
    detection: DetectionQuality | None = None
    tracks: TrackQuality | None = None
    families: list[FamilyQuality] = Field(default_factory=list)

    def wrong_totals(self) -> tuple[int, int]:
        """(wrong, checked) over every family."""
        return (sum(f.wrong for f in self.families), sum(f.checked for f in self.families))
