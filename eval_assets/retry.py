"""When to try a call again and how long to wait: the one retry policy of every model call.

:class:`RetryPolicy` (retries, backoff, the longest ``Retry-After`` honoured),
:func:`parse_retry_after` (what the server asks: seconds, an HTTP date or ``retry-after-ms``),
:func:`backoff_delay` (what to wait when it asks nothing) and :func:`is_retryable_status`.
:class:`eval_assets.openai_chat.ChatClient` applies them; the adaptive concurrency controller
reads the same ``Retry-After``.
"""

from __future__ import annotations

import email.utils
import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from eval_assets.schemas.endpoint import (
    DEFAULT_ANNOUNCE_WAIT_S,
    DEFAULT_BACKOFF_BASE_S,
    DEFAULT_BACKOFF_MAX_S,
    DEFAULT_JITTER,
    DEFAULT_MAX_RETRIES,
    DEFAULT_RETRY_AFTER_MAX_S,
)

__all__ = ["RETRYABLE_STATUS", "RetryPolicy", "backoff_delay", "is_retryable_status",
           "parse_retry_after"]


def parse_retry_after(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """Seconds to wait from ``Retry-After`` (seconds or an HTTP date) or ``retry-after-ms``.

    Header names are matched case-insensitively. Returns ``None`` when no usable header is
    present; never a negative number.
    """
    lower = {k.lower(): v for k, v in headers.items()}
    if "retry-after-ms" in lower:
        try:
            return max(0.0, float(lower["retry-after-ms"]) / 1000.0)
        except ValueError:
            pass
    value = lower.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    now = now or datetime.now(UTC)
    return max(0.0, (when - now).total_seconds())


RETRYABLE_STATUS: frozenset[int] = frozenset({408, 409, 425, 429})
"""Statuses below 500 worth another try; every 5xx is too."""


@dataclass(frozen=True)
class RetryPolicy:
    """How hard one call tries: retries, backoff, and the longest wait a server may ask for."""

    max_retries: int = DEFAULT_MAX_RETRIES
    backoff_base_s: float = DEFAULT_BACKOFF_BASE_S
    backoff_max_s: float = DEFAULT_BACKOFF_MAX_S
    jitter: float = DEFAULT_JITTER
    retry_after_max_s: float = DEFAULT_RETRY_AFTER_MAX_S
    announce_wait_s: float = DEFAULT_ANNOUNCE_WAIT_S

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries is {self.max_retries}; it must be 0 or more")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"jitter is {self.jitter}; it must be between 0 and 1")
        for name in ("backoff_base_s", "backoff_max_s", "retry_after_max_s", "announce_wait_s"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} is {getattr(self, name)}; it must be 0 or more")


def backoff_delay(retry: int, policy: RetryPolicy, rng: random.Random,
                  rate_limited: bool = False) -> float:
    """Seconds before retry ``retry`` (1-based) when the server named no wait.

    ``backoff_base_s * 2**(retry - 1)``, at most ``backoff_max_s``, less a random share of up to
    ``jitter`` of it, so workers that failed together do not come back together.

    ``rate_limited``: a 429 without a usable ``Retry-After``. A rate limiter's window (commonly a
    minute) must pass before a retry can succeed, so the wait grows fourfold per retry and the
    jitter is added, not taken off: with the defaults the four retries come 1, 5, 21 and 81 s
    (nominal) after the refusal, so the last one falls past a 60 s window whatever the draw.
    """
    if rate_limited:
        nominal = min(policy.backoff_max_s, policy.backoff_base_s * 4 ** max(0, retry - 1))
        return nominal * (1.0 + policy.jitter * rng.random())
    nominal = min(policy.backoff_max_s, policy.backoff_base_s * 2 ** max(0, retry - 1))
    return nominal * (1.0 - policy.jitter * rng.random())


def is_retryable_status(status: int) -> bool:
    """Whether another try of the same request may get a different answer."""
    return status in RETRYABLE_STATUS or status >= 500
