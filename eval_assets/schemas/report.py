"""Records of the human-facing report: one card per (model, case) with its ground-truth overlay.

A card is a private artefact (it shows gold answers and detector evidence) and is only ever
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


class CaseCard(BaseModel):
    """One model's answer to one case, with everything a person needs to judge it at a glance.

    ``overlay_png`` is the frame with the ground-truth boxes, masks and LiDAR points drawn on it;
    cards of different models on the same case carry the same bytes (the report shows it once).
    """

    model_config = ConfigDict(
        frozen=True, extra="forbid", ser_json_bytes="base64", val_json_bytes="base64"
    )

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
    overlay_png: bytes
    overlay_note: str = Field(description="what the overlay shows, e.g. point-cloud status")
    judge: JudgeNote | None = None
