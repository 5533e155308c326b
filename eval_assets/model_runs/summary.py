"""The run summary's parts: counts, outcomes, latency and tokens of the standing records (their
cost is every call's: :func:`eval_assets.model_runs.ledger.ledger_cost`)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import TypeGuard

from eval_assets.schemas.predictions import (
    AnswerRecord,
    CallSummary,
    DescriptionRecord,
    LatencyStats,
    RotationRecord,
    TokenUsage,
    outcome_of,
)

Record = AnswerRecord | DescriptionRecord | RotationRecord


def _asks_for_a_choice(record: Record) -> TypeGuard[AnswerRecord | RotationRecord]:
    """An answer or rotation whose reply is read for a choice (not a spatial number case)."""
    if isinstance(record, RotationRecord):
        return True
    return isinstance(record, AnswerRecord) and (
        record.spatial is None or record.spatial.answer_type == "choice")


def _percentile(sorted_values: list[float], q: float) -> float:
    """Linear-interpolation percentile of an ascending list (numpy's default)."""
    pos = (len(sorted_values) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def _sum_or_none(values: list[int | None]) -> int | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def summarise(records: Sequence[Record], total: int) -> CallSummary:
    """Counts, error categories, latency and token totals of the standing records."""
    ok = [r for r in records if r.status == "success"]
    latencies = sorted(r.latency_s for r in ok if r.latency_s is not None)
    latency = LatencyStats(
        count=len(latencies),
        mean=round(sum(latencies) / len(latencies), 4) if latencies else None,
        p50=round(_percentile(latencies, 0.5), 4) if latencies else None,
        p95=round(_percentile(latencies, 0.95), 4) if latencies else None,
        max=round(latencies[-1], 4) if latencies else None,
    )
    usages = [r.usage for r in records if r.usage is not None]
    tokens = TokenUsage(
        prompt_tokens=_sum_or_none([u.prompt_tokens for u in usages]),
        completion_tokens=_sum_or_none([u.completion_tokens for u in usages]),
        total_tokens=_sum_or_none([u.total_tokens for u in usages]),
        reasoning_tokens=_sum_or_none([u.reasoning_tokens for u in usages]),
    )
    errors = Counter(r.error_category for r in records if r.error_category is not None)
    outcomes = Counter(outcome_of(r) for r in records)
    answered_from = Counter(r.answer_field for r in ok if r.answer_field is not None)
    # Truncated and refused replies are never read for a choice: not parse failures.
    unmatched = sum(1 for r in ok if _asks_for_a_choice(r)
                    and r.choice is None and outcome_of(r) == "answered")
    return CallSummary(
        total=total, success=len(ok), failed=len(records) - len(ok),
        missing=total - len(records), error_counts=dict(sorted(errors.items())),
        unmatched_choices=unmatched, outcomes=dict(sorted(outcomes.items())),
        answered_from=dict(sorted(answered_from.items())),
        latency_s=latency, tokens=tokens,
        attempts=sum(r.attempts for r in records),
    )
