"""Reading a judge's reply: the verdict it gives, and the score rules (ours and AVLM's).

The reply's JSON is the text from the first ``{`` to the last ``}`` (RFC JSON: no NaN or
Infinity). Ours (:func:`strict_score`): the score is an integer 1..10, or a string or float
holding one; anything else is a failure with its category (``missing_score``,
``score_out_of_range``, ``invalid_score``), never a score. AVLM's (:func:`avlm_score`, for
``avlm_compat`` only): > 10 divided by 10, round half to even, clamp to 1..10, no score becomes
1, and the coercions taken are reported.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class JudgeOutcome:
    """A judge's verdict on one row: a 1-10 score, or an error with its category.

    ``coercions`` lists what AVLM compatibility did to get the score (empty in strict mode).
    """

    score: int | None
    reasoning: str = ""
    strengths: Any = field(default_factory=list)
    weaknesses: Any = field(default_factory=list)
    metadata_alignment: Any = ""
    metadata_mode_used: str | None = None
    error: str | None = None
    error_category: str | None = None
    attempts: int = 0
    coercions: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when the row has a score."""
        return self.error is None and self.score is not None

    @classmethod
    def failure(cls, category: str, error: str, attempts: int = 0) -> JudgeOutcome:
        """A recorded failure: no score, an error message and its category."""
        return cls(score=None, error=error, error_category=category, attempts=attempts)



class ScoreError(ValueError):
    """A reply whose score is not a valid 1-10 integer; ``category`` says how."""

    def __init__(self, category: str, message: str) -> None:
        super().__init__(message)
        self.category = category


_INTEGER_TEXT = re.compile(r"[+-]?\d+")


def strict_score(parsed: Mapping[str, Any]) -> int:
    """The reply's score when it is an integer 1..10 (or a string or float holding one).

    Raises :class:`ScoreError` with category ``missing_score`` (no score or null),
    ``score_out_of_range`` (an integer outside 1..10) or ``invalid_score`` (fractional, text,
    boolean, list, non-finite). Nothing is rounded, rescaled or clamped.
    """
    raw = parsed.get("score")
    if raw is None:
        raise ScoreError("missing_score", "the reply has no score")
    value: int | None = None
    if isinstance(raw, bool):
        value = None
    elif isinstance(raw, int):
        value = raw
    elif isinstance(raw, float):
        value = int(raw) if math.isfinite(raw) and raw.is_integer() else None
    elif isinstance(raw, str) and _INTEGER_TEXT.fullmatch(raw.strip()):
        value = int(raw.strip())
    if value is None:
        shown = json.dumps(raw, ensure_ascii=False, default=str)[:40]
        raise ScoreError("invalid_score", f"score {shown} is not an integer from 1 to 10")
    if not 1 <= value <= 10:
        raise ScoreError("score_out_of_range", f"score {value} is outside 1..10")
    return value


def avlm_score(raw: Any) -> tuple[int, tuple[str, ...]]:
    """AVLM's score rule, and the coercions it took to get there.

    Number or numeric string; > 10 is divided by 10 (``scaled_down``); round half to even
    (``rounded``); clamp to 1..10 (``clamped``). No score (``missing_score``) and anything that is
    not a number (``non_numeric``) become 1. Infinity and NaN raise ``ValueError`` (an unusable
    reply, retried like unparseable JSON).
    """
    if raw is None:
        return 1, ("missing_score",)
    if isinstance(raw, bool):
        return min(10, max(1, int(raw))), ("non_numeric",)
    if isinstance(raw, str):
        try:
            raw = float(raw.strip())
        except ValueError:
            return 1, ("non_numeric",)
    if not isinstance(raw, int | float):
        return 1, ("non_numeric",)
    if not math.isfinite(raw):
        raise ValueError(f"score {raw!r} is not a finite number")
    coercions: list[str] = []
    if raw > 10:
        raw, coercions = raw / 10, ["scaled_down"]
    rounded = round(raw)
    if rounded != raw:
        coercions.append("rounded")
    clamped = min(10, max(1, rounded))
    if clamped != rounded:
        coercions.append("clamped")
    return clamped, tuple(coercions)


def normalize_score(raw: Any) -> int:
    """AVLM's score rule (see :func:`avlm_score`): used only in compatibility mode."""
    return avlm_score(raw)[0]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def extract_json(text: str) -> dict[str, Any]:
    """The JSON object from the first ``{`` to the last ``}`` of ``text``; ValueError otherwise."""
    start, end = text.find("{"), text.rfind("}")
    if start == -1 or end == -1:
        raise ValueError("no JSON object in the reply")
    # NaN and Infinity are not JSON (RFC 8259), whatever Python's parser accepts by default.
    parsed = json.loads(text[start:end + 1], parse_constant=_reject_constant)
    if not isinstance(parsed, dict):
        raise ValueError(f"the reply's JSON is a {type(parsed).__name__}, not an object")
    return parsed



@dataclass(frozen=True)
class ReplyProblem:
    """Why a received reply gives no score: its category and message (without the try count)."""

    category: str
    message: str


def read_reply(content: str | None, content_chars: int, *, max_chars: int,
               avlm_compat: bool) -> JudgeOutcome | ReplyProblem:
    """A received reply as an outcome (score and texts), or the problem that makes it unusable."""
    if content_chars > max_chars:
        return ReplyProblem("oversized_reply", f"the reply has {content_chars} characters, more "
                             f"than max_reply_chars={max_chars}; it was not parsed")
    text = (content or "").strip()
    if not text:
        return ReplyProblem("empty_response", "Empty response from the judge (no content in "
                             "choices[0].message.content)")
    try:
        parsed = extract_json(text)
        if avlm_compat:
            score, coercions = avlm_score(parsed.get("score"))
        else:
            score, coercions = strict_score(parsed), ()
    except ScoreError as exc:
        return ReplyProblem(exc.category, f"No valid score in the judge reply: {exc}")
    except ValueError as exc:
        return ReplyProblem("parse_error", f"Failed to parse the judge reply as JSON: {exc}")
    return JudgeOutcome(
        score=score, reasoning=parsed.get("reasoning", ""),
        strengths=parsed.get("strengths", []), weaknesses=parsed.get("weaknesses", []),
        metadata_alignment=parsed.get("metadata_alignment", ""), coercions=coercions)
