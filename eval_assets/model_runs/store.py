"""Resume keys of the run journals: which stored call stands for which request.

The journal itself (append-only, fsynced, torn-line repair) is :mod:`eval_assets.journal`, shared
with the LLM judge.
"""

from __future__ import annotations

from eval_assets.schemas.predictions import AnswerRecord, DescriptionRecord, RotationRecord


def answer_key(record: AnswerRecord) -> tuple[str, str, str, str | None]:
    """Resume key of an answer: (case_id, model, config_hash, content_sha256).

    The content hash makes a case id alone worthless as identity: a case regenerated with another
    image, question or choices under the same id is asked again.
    """
    return (record.case_id, record.model, record.config_hash, record.content_sha256)


def rotation_key(record: RotationRecord) -> tuple[str, str, str, str | None]:
    """Resume key of a rotated re-ask: (case_id, model, config_hash, content_sha256).

    The content hash covers the choices in the order shown, so it alone tells the rotations of a
    case apart; the rotation number is not part of the key. A case regenerated with its choices
    in another order reuses the answers to every order that was already asked.
    """
    return (record.case_id, record.model, record.config_hash, record.content_sha256)


def description_key(record: DescriptionRecord) -> tuple[str, str, str, str | None]:
    """Resume key of a description: (frame, model, config_hash, content_sha256)."""
    return (record.frame, record.model, record.config_hash, record.content_sha256)
