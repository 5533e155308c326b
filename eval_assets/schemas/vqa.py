"""VQA records that cross a file boundary: proposals, public cases, private labels and the audit.

The public/private split is enforced here: :class:`Case` is the only record written to the
public ``cases.jsonl`` and it forbids any field beyond ``id``, ``image``, ``question`` and
``choices``; :class:`PrivateLabel` (``id``, ``answer``) is all of ``labels.jsonl``. Both are
exactly dimOS 0.0.15's ``PublicCase`` and ``PrivateLabel``, so either tool loads the other's
dataset. Everything else we know about a case (family, frame, object names, evidence) is a
:class:`Label` in the private audit, which dimOS ignores; the audit's files carry dimOS's keys
first and ours beside them. File names inside a dataset folder are the layout's.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
)

from eval_assets.jsonio import dumps_json

# The dataset's and the proposals' file names are the layout's; re-exported for their readers.
from eval_assets.layout import AUDIT_FRAME_EVIDENCE as AUDIT_FRAME_EVIDENCE
from eval_assets.layout import AUDIT_FRAME_FILES as AUDIT_FRAME_FILES
from eval_assets.layout import AUDIT_LABELS as AUDIT_LABELS
from eval_assets.layout import AUDIT_RUN as AUDIT_RUN
from eval_assets.layout import DATASET_ASSETS as DATASET_ASSETS
from eval_assets.layout import DATASET_AUDIT as DATASET_AUDIT
from eval_assets.layout import DATASET_CASES as DATASET_CASES
from eval_assets.layout import DATASET_LABELS as DATASET_LABELS
from eval_assets.layout import PROPOSALS_FILE as PROPOSALS_FILE
from eval_assets.layout import PROPOSALS_SUMMARY as PROPOSALS_SUMMARY


def check_family(name: str) -> str:
    """``name`` when it is a declared single-image family (published in dimOS's files), else a
    ValueError naming the families (:mod:`eval_assets.family_spec` holds the declarations)."""
    from eval_assets.family_spec import family_names

    known = family_names("dimos")
    if name not in known:
        raise ValueError(f"family {name!r} is not one of {known}")
    return name


# A single-image family's name, validated against the declarations (the registry, not a
# Literal: a family declared in one module is known everywhere).
FamilyName = Annotated[str, AfterValidator(check_family)]


def __getattr__(name: str) -> Any:
    """``FAMILY_NAMES``: the declared single-image families in dimOS's order, read from the
    registry when asked (the declarations import this module, so it cannot import them)."""
    if name == "FAMILY_NAMES":
        from eval_assets.family_spec import family_names

        return family_names("dimos")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    # the one detection's mask shows fewer than vqa.families.MIN_MASK_PIXELS pixels (a speck)
    "mask_too_small",
    "image_only_frame",  # LiDAR unmatched or TF unresolved: no range evidence on this frame
    "too_few_points",  # fewer than the minimum projected LiDAR points inside the mask
    "quartiles_cross_boundary",  # [q1, q3] of the range crosses a distance bucket boundary
    "area_margin_too_small",  # largest mask has less than 1.2x the runner-up's pixels
    "range_intervals_overlap",  # closest reference's [q1, q3] overlaps another's
    # Floor seen beyond the object (LiDAR and camera see from different places) is in the mask,
    # and dimOS's rule without those points would not give the same answer
    # (eval_assets.vqa.background; object_distance, closest_object).
    "background_in_mask",
    # The detector saw a region it could not name that may be this object: "no", a count or
    # "the visible X" would rest on its silence (eval_assets.vqa.families.unsure_rejection).
    "unsure_detection",
    "bias_pruned",  # answered, then dropped by Iterative Bias Pruning (eval_assets.vqa.bias)
)


def frame_stem(frame_index: int) -> str:
    """``frame-000100``: the stem shared by a frame's asset, audit folder and case ids."""
    return f"frame-{frame_index:06d}"


def asset_relpath(frame_index: int) -> str:
    """A frame's public image path relative to the dataset folder."""
    return f"{DATASET_ASSETS}/{frame_stem(frame_index)}.png"


MARKED_ASSETS = "marked"
"""The folder, beside ``assets/``, of the frames with their marked objects drawn: dimOS's
``assets/`` stays exactly dimOS's (one image per selected frame, nothing else)."""


def marked_asset_relpath(frame_index: int) -> str:
    """A frame's public image with the marked objects' numbers drawn on it (Set-of-Mark),
    relative to the dataset folder: what a case about "the object marked 3" shows."""
    return f"{MARKED_ASSETS}/{frame_stem(frame_index)}.png"


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


NonEmptyString = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


def distinct_choices(choices: list[str]) -> list[str]:
    """``choices`` unchanged, or a ValueError when one repeats another ignoring case (a model
    could not tell them apart, and dimOS's grader matches ignoring case)."""
    if len({c.casefold() for c in choices}) != len(choices):
        raise ValueError(f"choices {choices!r} repeat a choice (compared ignoring case)")
    return choices


class Case(BaseModel):
    """A public case (a ``cases.jsonl`` line): exactly what a model under test may see.

    Field for field dimOS's ``PublicCase``: ``id``, ``image``, ``question``, ``choices`` (at least
    two, distinct ignoring case), nothing else.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: NonEmptyString
    image: NonEmptyString = Field(description="asset path relative to the dataset folder")
    question: NonEmptyString
    choices: list[NonEmptyString] = Field(min_length=2)

    @field_validator("choices")
    @classmethod
    def _distinct(cls, choices: list[str]) -> list[str]:
        return distinct_choices(choices)


class PrivateLabel(BaseModel):
    """A ``labels.jsonl`` line: dimOS's ``PrivateLabel``, the case id and its answer only."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: NonEmptyString
    answer: NonEmptyString


class Label(BaseModel):
    """Everything private about one case: its answer and the evidence that decided it.

    Written to ``audit/labels.jsonl`` and to each frame's ``audit/frame-*/labels.json`` (dimOS's
    ``id`` and ``answer`` first, ours beside them). For a dataset written by dimOS, which has no
    such file, :func:`eval_assets.vqa.labels.read_labels` rebuilds it from the ids and the audit.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    answer: str
    family: str
    frame_index: int
    object_names: list[str]
    choices: list[str]
    evidence: dict[str, Any]

    def public(self) -> PrivateLabel:
        """The ``labels.jsonl`` line of this label."""
        return PrivateLabel(id=self.id, answer=self.answer)


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
    """``audit/frame-XXXXXX/frame.json``: dimOS's keys (``frame_index``, ``image``, ``timestamp``,
    ``question_count``, ``rejected_question_count``), then the frame's calibration and its
    point-cloud status."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    frame_index: int
    image: str = Field(description="public asset path; every selected frame has one, as in dimOS")
    timestamp: float
    question_count: int
    rejected_question_count: int
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


class ProposalAudit(BaseModel):
    """A proposal as dimOS's audit shows it (``QuestionProposal``: family and object names)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    family: str
    object_names: list[str]


class AnswerAudit(BaseModel):
    """dimOS's ``FamilyAnswer``: the public question with its private answer and evidence."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    question: str
    choices: list[str]
    answer: str
    evidence: dict[str, Any]


class GroundTruthRow(BaseModel):
    """One row of ``audit/frame-XXXXXX/ground_truth.json`` (a list, one row per proposal).

    dimOS's keys: ``proposal``, ``status``, then ``reason`` (rejected) or ``answer`` (answered);
    ours beside them: the proposal's ``ordinal`` and ``author``, the rejection's ``reason_code``
    and the answered case's ``id``. Written without the keys that do not apply (as dimOS).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    proposal: ProposalAudit
    status: Literal["answered", "rejected"]
    reason: str | None = None
    answer: AnswerAudit | None = None
    ordinal: int
    author: str
    reason_code: str | None = None
    id: str | None = None


class EvidenceAudit(BaseModel):
    """``audit/frame-XXXXXX/evidence.json`` (ours): what the detector was asked about and every
    detection used as evidence, with its mask and range."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    frame_index: int
    queried_names: list[str]
    detections: list[DetectionAudit]


class SourceRecording(BaseModel):
    """The recording a dataset was generated from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(description="file name (no folder, so the audit does not depend on paths)")
    sha256: str


class GenerationAudit(BaseModel):
    """dimOS's ``generation`` block of ``run.json``: the recording and the frame selection."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    dataset: str = Field(description="the recording's file name")
    image_index: int | None = None
    start: int | None = None
    stop: int | None = None
    stride: int | None = None
    quality_window: float | None = None
    min_brightness: float | None = None
    time_step: float | None = Field(default=None, description="ours: seconds between frames")
    mode: str | None = Field(default=None, description="ours: the rule that chose the frames")
    why: str | None = Field(default=None, description="ours: that rule, in words")


class AnswerBalance(BaseModel):
    """One family's published gold answers: how many of each, and the most common one's share
    (what always giving that answer would score)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n: int = Field(description="cases published")
    answers: dict[str, int] = Field(description="cases per gold answer, most common first")
    majority: str = Field(description="the most common gold answer (ties: the first by name)")
    majority_share: float = Field(description="its share of the cases (0 to 1)")
    left_out: int = Field(default=0, description="cases of the most common answer left out so "
                                                 "that it is at most half of the family")
    note: str | None = Field(default=None, description="why the share is what it is, where the "
                                                       "target was not met by choosing cases")


class RunAudit(BaseModel):
    """``audit/run.json``: dimOS's keys first (``generation``, ``configuration``, ``families``,
    ``models``, ``frame_count``, ``question_count``, ``rejected_question_count``), then how we
    generated it: our version, config, the source's hash, frames and counts."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    generation: GenerationAudit
    configuration: dict[str, Any] = Field(description="dimOS: synchronization_tolerance_s")
    families: list[str] = Field(description="families with at least one case, in family order")
    models: dict[str, str] = Field(description="dimOS: author and detector model names")
    frame_count: int
    question_count: int
    rejected_question_count: int
    generator: str
    generator_version: str
    config: dict[str, Any]
    source: SourceRecording
    frame_indices: list[int] = Field(description="every selected frame, answered or not")
    frames_with_cases: list[int]
    num_proposals: int
    cases_per_family: dict[str, int]
    rejections_per_reason: dict[str, int]
    skipped_frames: list[dict[str, Any]] = Field(
        default_factory=list, description="selected frames that could not be used, and why")
    answers_per_family: dict[str, AnswerBalance] = Field(
        default_factory=dict, description="per family (dimOS's), the gold answers' distribution "
                                          "and the most common one's share")
    spatial_answers_per_family: dict[str, AnswerBalance] = Field(
        default_factory=dict, description="the same for the spatial families whose answers a "
                                          "guess could win (choices, counts), chosen so that no "
                                          "answer is above half where the scene allows")


def dumps_line(model: BaseModel) -> str:
    """One deterministic JSON line, written as dimOS writes its jsonl (``json.dumps(row)``: field
    order as declared, ASCII escapes), so our ``cases.jsonl`` and dimOS's are the same bytes."""
    return dumps_json(model.model_dump(mode="json"), indent=None, newline=False)


def dumps_document(data: Any, exclude_none: bool = False) -> str:
    """A deterministic JSON document as dimOS writes its audit (indent 2, trailing newline).

    ``exclude_none`` drops keys whose value is None (dimOS omits keys that do not apply).
    """
    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json", exclude_none=exclude_none)
    elif isinstance(data, list):
        data = [d.model_dump(mode="json", exclude_none=exclude_none)
                if isinstance(d, BaseModel) else d for d in data]
    return dumps_json(data)
