"""Human corrections of gold answers (``data/labels/<recording>.overrides.jsonl``).

One :class:`LabelOverride` per line, appended, never rewritten: the file is the audit trail of
who changed which answer, when and why. Each override carries the content hash of the case it
corrects (image bytes, question, choices), so it applies only to that content: a case that is
gone or changed leaves it orphaned (reported, never applied).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from eval_assets.schemas.vqa import NonEmptyString


class LabelOverride(BaseModel):
    """One correction of one case's gold answer."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    case_id: NonEmptyString
    content_sha256: str = Field(pattern=r"^[0-9a-f]{64}$",
                                description="eval_assets.vqa.overrides.case_content_sha256 of "
                                            "the case it corrects")
    old_answer: NonEmptyString = Field(description="the gold answer in force when it was made")
    new_answer: NonEmptyString
    by: NonEmptyString = Field(description="who made the correction")
    reason: NonEmptyString
    at: NonEmptyString = Field(description="when, UTC ISO 8601 (YYYY-MM-DDTHH:MM:SSZ)")
