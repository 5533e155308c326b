"""VQA records that cross a file boundary: proposals, public cases, private labels and the audit.

The public/private split is enforced here: :class:`Case` is the only record written to the
public ``cases.jsonl`` and it forbids any field beyond ``case_id``, ``image``, ``question`` and
``choices``.
Everything that explains an answer (labels, evidence, rejections) lives in the private records.
File names inside a dataset folder are decided here too (see ``DATASET_*`` and the helpers).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

FamilyName = Literal[
    "presence",
    "horizontal_direction",
    "object_count",
    "image_coverage",
    "largest_visible_area",
    "object_distance",
    "closest_object",
]
FAMILY_NAMES: tuple[str, ...] = (
    "presence",
    "horizontal_direction",
    "object_count",
    "image_coverage",
    "largest_visible_area",
    "object_distance",
    "closest_object",
)

# Why a proposal did not become a case. Kept as plain strings so the audit is readable as JSON.
REJECTION_REASONS: tuple[str, ...] = (
    "malformed_author_reply",  # the author's reply (or one item of it) could not be parsed
    "author_call_failed",  # the author endpoint could not be reached / returned an error
    "over_proposal_limit",  # beyond the configured per-frame proposal limit
    "unknown_family",
    "wrong_reference_count",  # single-object family without exactly 1 name, or not 2-5 refs
    "repeated_reference",  # the same reference twice in one multi-reference proposal
    "duplicate_proposal",  # same family and names as an earlier proposal of the frame
    "name_not_queried",  # the detector was never asked about this name on this frame
    "no_detection",
    "multiple_detections",
    "no_mask",
    "image_only_frame",  # LiDAR unmatched or TF unresolved: no range evidence on this frame
    "too_few_points",  # fewer than the minimum projected LiDAR points inside the mask
    "quartiles_cross_boundary",  # [q1, q3] of the range crosses a distance bucket boundary
    "area_margin_too_small",  # largest mask has less than 1.2x the runner-up's pixels
    "range_intervals_overlap",  # closest reference's [q1, q3] overlaps another's
)

# Dataset layout (dimOS-compatible).
DATASET_CASES = "cases.jsonl"
DATASET_LABELS = "labels.jsonl"
DATASET_ASSETS = "assets"
DATASET_AUDIT = "audit"
AUDIT_RUN = "run.json"
AUDIT_FRAME_FILES = ("frame.json", "ground_truth.json", "cases.json", "labels.json")

# Proposal stage layout.
PROPOSALS_FILE = "proposals.jsonl"
PROPOSALS_SUMMARY = "summary.json"


def frame_stem(frame_index: int) -> str:
    """``frame-000100``: the stem shared by a frame's asset, audit folder and case ids."""
    return f"frame-{frame_index:06d}"


def asset_relpath(frame_index: int) -> str:
    """A frame's public image path relative to the dataset folder."""
    return f"{DATASET_ASSETS}/{frame_stem(frame_index)}.png"


def audit_frame_relpath(frame_index: int) -> str:
    """A frame's private audit folder relative to the dataset folder."""
    return f"{DATASET_AUDIT}/{frame_stem(frame_index)}"


class Proposal(BaseModel):
    """One question an author proposes for a frame: a family and the object names it is about.

    ``error`` is set (with ``error_detail``) when the author's reply item could not be turned into
    a usable proposal; such a proposal is rejected with that reason, never answered.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    frame_index: int = Field(ge=0)
    ordinal: int = Field(ge=0, description="position among this frame's proposals")
    family: str
    object_names: list[str]
    author: str = Field(description="which author produced it, e.g. 'vocabulary' or 'vlm:<model>'")
    error: str | None = None
    error_detail: str | None = None


class Rejection(BaseModel):
    """A proposal that did not become a case, and why (private audit only)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    frame_index: int
    ordinal: int
    family: str
    object_names: list[str]
    reason: str
    detail: str

    @field_validator("reason")
    @classmethod
    def _known_reason(cls, reason: str) -> str:
        if reason not in REJECTION_REASONS:
            raise ValueError(f"rejection reason {reason!r} is not one of {REJECTION_REASONS}")
        return reason


class Case(BaseModel):
    """A public case: exactly what a model under test may see, and nothing else."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    case_id: str
    image: str = Field(description="asset path relative to the dataset folder")
    question: str
    choices: list[str] = Field(min_length=2)


class Label(BaseModel):
    """The private answer of one case with the evidence summary that decided it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    case_id: str
    answer: str
    family: str
    frame_index: int
    object_names: list[str]
    choices: list[str]
    evidence: dict[str, Any]


class RangeSummary(BaseModel):
    """Range statistics of the LiDAR points inside one mask (metres)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    count: int
    median: float
    q1: float
    q3: float
    min: float


class DetectionAudit(BaseModel):
    """One detection used as evidence, with its mask (row-major RLE) and the models behind it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    box_xyxy: list[float] = Field(min_length=4, max_length=4)
    score: float
    mask_area: int | None
    mask_rle: dict[str, list[int]] | None = Field(
        description="{'size': [h, w], 'counts': [zeros, ones, zeros, ...]} in row-major order"
    )
    mask_source: str | None = Field(description="mask file the perception stage wrote, if any")
    detector: str
    detector_version: str
    segmenter: str | None
    segmenter_version: str | None
    range: RangeSummary | None


class FrameAudit(BaseModel):
    """``audit/frame-XXXXXX/frame.json``: the frame, its calibration and its point-cloud status."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    frame_index: int
    image_ts: float
    image: str | None = Field(description="public asset path; None when the frame has no case")
    width: int
    height: int
    camera_frame_id: str
    distortion_model: str
    K_rect: list[float]
    pointcloud_status: Literal["ok", "image_only"]
    pointcloud_reason: str | None
    lidar_dt: float | None
    n_points_in_front: int
    num_proposals: int
    num_cases: int
    num_rejections: int


class GroundTruthAudit(BaseModel):
    """``audit/frame-XXXXXX/ground_truth.json``: every piece of evidence and every decision."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    frame_index: int
    queried_names: list[str]
    detections: list[DetectionAudit]
    proposals: list[Proposal]
    rejections: list[Rejection]


class SourceRecording(BaseModel):
    """The recording a dataset was generated from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(description="file name (no folder, so the audit does not depend on paths)")
    sha256: str


class RunAudit(BaseModel):
    """``audit/run.json``: how the dataset was generated."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    generator: str
    generator_version: str
    config: dict[str, Any]
    source: SourceRecording
    frame_indices: list[int] = Field(description="every selected frame, answered or not")
    frames_with_cases: list[int]
    num_proposals: int
    num_cases: int
    cases_per_family: dict[str, int]
    rejections_per_reason: dict[str, int]


def dumps_line(model: BaseModel) -> str:
    """One compact, deterministic JSON line (field order as declared, UTF-8 kept)."""
    return json.dumps(model.model_dump(mode="json"), ensure_ascii=False, separators=(", ", ": "))


def dumps_document(data: Any) -> str:
    """A deterministic, indented JSON document with a trailing newline."""
    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json")
    elif isinstance(data, list):
        data = [d.model_dump(mode="json") if isinstance(d, BaseModel) else d for d in data]
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def read_jsonl(path: Path, model: type[BaseModel]) -> list[Any]:
    """Records of ``model`` from a JSON-lines file; a bad line names the file and line number."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist")
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append(model.model_validate_json(line))
        except ValueError as exc:
            raise ValueError(
                f"{path}:{number} is not a valid {model.__name__} record: {exc}; "
                "regenerate the file"
            ) from exc
    return out
