"""The judge's resume journal: one fsynced JSON line per judge call, keyed by the exact request.

It is the resume journal (:class:`eval_assets.journal.Journal`: append-only, one
whole-line write plus fsync per record, a torn last line repaired on open) holding
:class:`JudgeCallRecord` s. A record is keyed by the SHA-256 of the request as built (judge model,
messages, temperature, max_tokens and response_format: everything that can change the reply; the
token limit named ``max_tokens`` whichever parameter the endpoint takes) and
the reply try it answers, so a restart after a crash or SIGKILL makes again only the calls that
were in flight, and any change to the rubric, the row or the settings asks again.

Retry policy on a rerun:

- ``success`` means the endpoint returned a reply; whatever that reply says (a score, no score, a
  score of 42, text that is not JSON, an oversized body) is a deterministic answer that was paid
  for, so it is kept and never asked again. How it is read (strict or AVLM-compatible) is decided
  afterwards, so switching modes costs no call.
- ``failed`` means no reply after the in-run retries (timeout, rate limit, 5xx, connection error,
  a 4xx such as a bad key, a Retry-After longer than allowed), or a reply too large to read
  (``reply_too_large``: over the chat client's cap; its text is not kept). These are transient or
  fixed by changing the setup, so a rerun asks again; the record stays in the file as a trace.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from eval_assets.hashing import canonical_json_sha256
from eval_assets.journal import Journal
from eval_assets.schemas.chat import TokenUsage
from eval_assets.schemas.cost import Price

JOURNAL_FILE = "judge.journal.jsonl"
LOCK_FILE = ".judge.lock"

# Replies are journalled up to this many characters; ``content_chars`` keeps the true length, and
# ``max_reply_chars`` may not exceed it, so a cut reply is always classified as oversized.
JOURNAL_CONTENT_LIMIT = 65536

CallPurpose = Literal["row", "calibration"]


class JudgeCallRecord(BaseModel):
    """One judge call as journalled: the reply text, or why there was none."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    request_sha256: str
    reply_try: int
    status: Literal["success", "failed"]
    content: str | None = None
    content_chars: int = 0
    # Absent (not null) unless set, so lines of ordinary replies stay as they were written.
    content_from: str | None = Field(
        default=None, exclude_if=lambda v: v is None,
        description="the message field the content was read from when the reply's content was "
        "empty (reasoning_content or reasoning); absent: the content")
    error_category: str | None = None
    error: str | None = None
    calls: int = 1
    purpose: CallPurpose = "row"
    label: str = ""
    # What the call cost (absent in journals written before they were recorded): tokens the
    # server reported for the reply, seconds of the last HTTP attempt, and of the whole call.
    usage: TokenUsage | None = None
    latency_s: float | None = None
    wall_s: float | None = None


def request_sha256(request: Mapping[str, Any]) -> str:
    """SHA-256 of a chat request body in canonical JSON (sorted keys, no spaces).

    Non-ASCII characters stay as they are (``ensure_ascii=False``): the journals' keys were made
    so, and changing the recipe would orphan every stored judge reply.
    """
    return canonical_json_sha256(request, ensure_ascii=False)


def call_key(request_digest: str, reply_try: int) -> str:
    """The journal key of reply try ``reply_try`` (0-based) of one request."""
    return f"{request_digest}:{reply_try}"


def open_journal(path: Path) -> Journal[JudgeCallRecord]:
    """Open (or create) the judge journal at ``path``."""
    return Journal(path, JudgeCallRecord, key=lambda record: record.key)


def journal_cost_usd(path: Path, price: Price) -> float:
    """What the calls journalled at ``path`` cost at ``price`` (0 without a journal)."""
    if not path.is_file():
        return 0.0
    total = 0.0
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = JudgeCallRecord.model_validate_json(line)
        except ValueError:
            continue  # a blank or torn line (a crash mid-write), which the journal drops too
        total += price.cost(record.usage)
    return round(total, 6)
