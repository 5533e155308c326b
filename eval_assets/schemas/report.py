"""Records of the human-facing report: one card per (model, case), and one ground-truth overlay
image per frame that the cards refer to by (recording, frame_index).

Both are private artefacts (they show gold answers and detector evidence) and are only ever
rendered into the static HTML report, never given to a model under test.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

CardKind = Literal["vqa", "open_ended"]
# VQA statuses are metrics/vqa.py's RowStatus; open-ended items are judged (or the judge failed).
CardStatus = Literal[
    "correct", "incorrect", "parse_failure", "failed_call", "judged", "judge_failed"
]


class JudgeNote(BaseModel):
    """The LLM judge's verdict on one open-ended answer (a score, or a recorded failure)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    score: int | None = Field(description="1-10; None when the judge failed")
    reasoning: str = ""
    error: str | None = None
    error_category: str | None = None
    judge_model: str | None = None


class GoldCorrection(BaseModel):
    """A human correction of a case's gold answer that applies to it (an applied label override,
    :mod:`eval_assets.vqa.overrides`): who made it, when, and what the sensor said."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    answer: str = Field(description="the corrected gold answer")
    by: str
    at: str = Field(description="when, UTC ISO 8601")
    sensor_answer: str | None = Field(description="the sensor's gold answer it replaces")
    reason: str

    def text(self) -> str:
        """``gold corrected by <by> at <at> (sensor said <answer>)``, as a card shows it."""
        said = f" (sensor said {self.sensor_answer})" if self.sensor_answer is not None else ""
        return f"gold corrected by {self.by} at {self.at}{said}"


class FrameImage(BaseModel):
    """One frame as JPEG twice: with its ground truth drawn on it (boxes, mask outlines, LiDAR
    points), and plain, as the model saw it (the overlay's dots and labels cover parts of the
    objects, and some questions are about their colour).

    Every case of the frame, for every model, refers to this one record, so a report holds each
    frame once however many questions were asked about it.
    """

    model_config = ConfigDict(
        frozen=True, extra="forbid", ser_json_bytes="base64", val_json_bytes="base64"
    )

    recording: str
    frame_index: int = Field(ge=0)
    overlay_jpeg: bytes
    plain_jpeg: bytes
    width: int = Field(gt=0)
    height: int = Field(gt=0)
    note: str = Field(description="what the overlay shows, e.g. point-cloud status")

    @property
    def key(self) -> str:
        """The id cards use to refer to this frame."""
        return frame_key(self.recording, self.frame_index)


def frame_key(recording: str, frame_index: int) -> str:
    """The id of a frame in the report: ``<recording>#<frame_index>``."""
    return f"{recording}#{frame_index}"


class CaseCard(BaseModel):
    """One model's answer to one case, with everything a person needs to judge it at a glance.

    The frame's overlay is a separate :class:`FrameImage`, found by (recording, frame_index).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: CardKind
    recording: str
    model: str
    case_id: str = Field(description="the case id, or the frame id of an open-ended item")
    frame_index: int = Field(ge=0)
    family: str = Field(description="question family; 'description' for open-ended items")
    question: str
    choices: list[str] = Field(description="empty for open-ended items")
    gold: str | None = Field(description="gold choice, or the reference text of an open item")
    raw_response: str | None = Field(description="the model's reply as received")
    predicted_choice: str | None
    tier: str | None = Field(description="how the reply was matched to a choice")
    status: CardStatus
    error: str | None = Field(default=None, description="why the call failed, if it did")
    latency_s: float | None = None
    evidence: dict[str, Any] = Field(default_factory=dict, description="the label's evidence")
    object_names: list[str] = Field(default_factory=list,
                                    description="the objects the question is about")
    judge: JudgeNote | None = None
    correction: GoldCorrection | None = Field(
        default=None, description="the human correction behind ``gold`` (None: the sensor's)")
    bias_score: float | None = Field(
        default=None, description="the bias audit's blind-solvability score s(x) in [0, 1] "
                                  "(audit/bias.jsonl; None: not audited or not scorable)")
    blind_solvable: bool | None = Field(
        default=None, description="the bias audit flagged the case (s >= its threshold); None: "
                                  "the dataset has no audit")
