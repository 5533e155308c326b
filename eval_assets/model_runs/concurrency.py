"""Adaptive concurrency for HTTP models under test: how many requests to keep in flight, and when
to start the next one.

Modelled on inspect_ai's ``AdaptiveConcurrencyController``: slow start (the limit doubles each
round until the first back-off), then an increase of ``increase`` (5 %, at least 1) per round; a
*retry episode* (a 429 or 5xx seen by the chat client) multiplies the limit by ``decrease``
(0.8), at most once per ``cooldown_s``, so a burst of refusals from one overload counts once. A
round is ``limit`` successful replies. Resumed answers never reach the controller (the runner
schedules only what the journal lacks), so journal hits are neutral.

What inspect lacks, added here:

- header pacing: ``retry-after`` holds every new start that long; ``x-ratelimit-limit-requests``,
  ``x-ratelimit-remaining-requests`` and ``x-ratelimit-reset-requests`` give the server's refill
  rate (``(limit - remaining) / reset``), and once few requests remain, starts are spaced at
  ``pace_share`` of that rate instead of waiting for 429s. Values that make no sense (Azure's
  -1, a reset of zero or of days) are ignored: the controller then works from 429s alone;
- a latency signal for servers that queue instead of refusing: each round's median latency is
  compared to the unloaded baseline (the lowest per-round 10th percentile seen); over
  ``latency_factor`` times it the limit stops growing, and if throughput did not grow either
  (against the best of the last rounds) it is multiplied by ``decrease`` (each round measures
  the limit set before it, so no time cooldown).

Everything takes a clock (``time.monotonic`` by default) so tests drive it deterministically.
"""

from __future__ import annotations

import contextlib
import math
import re
import statistics
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from eval_assets.schemas.concurrency import ConcurrencyHistory, LimitChange

DEFAULT_ADAPTIVE_CAP = 64
"""Most requests in flight when the endpoint names no ``max_concurrency`` of its own."""

_MAX_RESET_S = 3600.0  # a reset further away than this is not a pacing hint


@dataclass(frozen=True)
class ControllerSettings:
    """The controller's constants; tests shrink ``cooldown_s``."""

    initial: int = 16
    decrease: float = 0.8
    increase: float = 0.05
    cooldown_s: float = 15.0
    latency_factor: float = 1.2
    pace_share: float = 0.95
    min_round: int = 4

    def __post_init__(self) -> None:
        if self.initial < 1:
            raise ValueError(f"initial is {self.initial}; it must be at least 1")
        if not 0 < self.decrease < 1:
            raise ValueError(f"decrease is {self.decrease}; it must be between 0 and 1")
        if self.cooldown_s < 0 or self.increase < 0:
            raise ValueError("cooldown_s and increase must be 0 or more")
        if self.latency_factor <= 1 or not 0 < self.pace_share <= 1:
            raise ValueError("latency_factor must exceed 1 and pace_share be in (0, 1]")


_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def parse_reset(value: str | None) -> float | None:
    """Seconds of an ``x-ratelimit-reset-*`` value (``"1s"``, ``"6m0s"``, ``"20ms"``, ``"0.5"``).

    None when absent, unparsable, not positive or over an hour (garbage, not a pacing hint).
    """
    if value is None:
        return None
    text = value.strip().lower()
    seconds: float | None
    try:
        seconds = float(text)
    except ValueError:
        parts = _DURATION_PART.findall(text)
        if not parts or "".join(n + u for n, u in parts) != text:
            return None
        scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
        seconds = sum(float(n) * scale[u] for n, u in parts)
    if not math.isfinite(seconds) or seconds <= 0 or seconds > _MAX_RESET_S:
        return None
    return seconds


def _count(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        number = int(float(value.strip()))
    except ValueError:
        return None
    return number if number >= 0 else None


def header_rate(headers: Mapping[str, str]) -> tuple[float | None, int] | None:
    """``(requests/s the server refills, requests remaining)`` from ``x-ratelimit-*``; None when
    the headers are missing or not sane."""
    lower = {k.lower(): v for k, v in headers.items()}
    cap = _count(lower.get("x-ratelimit-limit-requests"))
    remaining = _count(lower.get("x-ratelimit-remaining-requests"))
    reset = parse_reset(lower.get("x-ratelimit-reset-requests"))
    if cap is None or cap < 1 or remaining is None or remaining > cap or reset is None:
        return None
    used = cap - remaining
    # Nothing used yet says nothing about the rate, only that all remains.
    return (used / reset if used > 0 else None), remaining


@dataclass
class _Round:
    start: float
    latencies: list[float] = field(default_factory=list)
    backed_off: bool = False


class AdaptiveController:
    """The in-flight limit and start pacing of one run; thread-safe (workers observe, the
    scheduler reads)."""

    def __init__(self, cap: int, settings: ControllerSettings | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if cap < 1:
            raise ValueError(f"cap is {cap}; it must be at least 1")
        self.cap = cap
        self.settings = settings or ControllerSettings()
        self._ignored = False
        self._clock = clock
        self._lock = threading.Lock()
        self._t0 = clock()
        self._limit = float(min(cap, self.settings.initial))
        self._slow_start = True
        self._last_decrease = -math.inf
        self._hold_until = -math.inf
        self._rate: float | None = None
        self._paced = False
        self._pacing_used = False
        self._next_start = -math.inf
        self._baseline: float | None = None
        self._throughputs: list[float] = []
        self._round = _Round(start=self._t0)
        self._episodes = 0
        self._latency_backoffs = 0
        self._changes = [LimitChange(t_s=0.0, limit=self.limit, reason="start")]

    @property
    def limit(self) -> int:
        """Requests allowed in flight now."""
        return max(1, min(self.cap, int(self._limit)))

    # --- what the scheduler asks ----------------------------------------------------------
    def start_delay(self) -> float:
        """Seconds before the next request may start (0: now)."""
        with self._lock:
            now = self._clock()
            gate = max(self._hold_until, self._next_start if self._paced else -math.inf)
            return max(0.0, gate - now)

    def started(self) -> None:
        """A request starts now (spaces the next one when pacing)."""
        with self._lock:
            if self._paced and self._rate:
                now = self._clock()
                self._next_start = max(now, self._next_start) + 1.0 / (
                    self.settings.pace_share * self._rate)

    # --- what the chat client reports -----------------------------------------------------
    @contextlib.contextmanager
    def ignoring(self) -> Iterator[None]:
        """Attempts made meanwhile are not observed: the capability preflight's probes are tiny
        requests, whose latency would set an unloaded baseline no real call can meet."""
        with self._lock:
            self._ignored = True
        try:
            yield
        finally:
            with self._lock:
                self._ignored = False

    def observe(self, status: int | None, latency_s: float, headers: Mapping[str, str]) -> None:
        """One HTTP attempt: its status (None: no reply), latency and pacing headers."""
        with self._lock:
            if self._ignored:
                return
            now = self._clock()
            self._pace(headers, now)
            if status is not None and 200 <= status < 300:
                self._success(latency_s, now)
            elif status is None or status == 429 or status >= 500:
                self._retry_episode(headers, now)

    def _pace(self, headers: Mapping[str, str], now: float) -> None:
        hint = header_rate(headers)
        if hint is None:
            return
        rate, remaining = hint
        if rate:
            self._rate = rate if self._rate is None else 0.7 * self._rate + 0.3 * rate
        # Each request in flight will spend one of what remains: pace once they could use it up.
        self._paced = self._rate is not None and remaining <= self.limit
        self._pacing_used |= self._paced

    def _retry_episode(self, headers: Mapping[str, str], now: float) -> None:
        from eval_assets.openai_chat import parse_retry_after

        wait = parse_retry_after(headers)
        if wait is not None and 0 < wait <= _MAX_RESET_S:
            self._hold_until = max(self._hold_until, now + wait)
        # Like inspect: a round that saw any retry does not grow, whether or not it cut.
        self._round.backed_off = True
        if self._decrease(now, "retry_episode"):
            self._episodes += 1

    def _decrease(self, now: float, reason: str, cooldown: bool = True) -> bool:
        if cooldown and now - self._last_decrease < self.settings.cooldown_s:
            return False
        if cooldown:
            self._last_decrease = now
        self._slow_start = False
        self._limit = max(1.0, self._limit * self.settings.decrease)
        self._round.backed_off = True
        self._record(now, reason)
        return True

    def _success(self, latency_s: float, now: float) -> None:
        current = self._round
        current.latencies.append(latency_s)
        if len(current.latencies) < max(self.settings.min_round, self.limit):
            return
        self._round = _Round(start=now)
        elapsed = now - current.start
        throughput = len(current.latencies) / elapsed if elapsed > 0 else None
        ordered = sorted(current.latencies)
        low = ordered[len(ordered) // 10]
        self._baseline = low if self._baseline is None else min(self._baseline, low)
        median = statistics.median(ordered)
        # Against the best of the last rounds: one round's throughput alone is too noisy.
        flat = (throughput is None or not self._throughputs
                or throughput < 1.1 * max(self._throughputs))
        if throughput is not None:
            self._throughputs = [*self._throughputs[-3:], throughput]
        if median > self.settings.latency_factor * self._baseline:
            # Queueing: never grow. Back off when throughput did not grow with the latency; a
            # round is measured wholly at the limit set before it, so no time cooldown applies.
            if flat and self._decrease(now, "latency", cooldown=False):
                self._latency_backoffs += 1
            return
        if current.backed_off or self._limit >= self.cap:
            return
        if self._slow_start:
            self._limit = min(float(self.cap), self._limit * 2)
            self._record(now, "slow_start")
        else:
            self._limit = min(float(self.cap),
                              self._limit + max(1.0, self.settings.increase * self._limit))
            self._record(now, "increase")

    def _record(self, now: float, reason: str) -> None:
        if self._changes[-1].limit != self.limit:
            self._changes.append(LimitChange(t_s=round(now - self._t0, 3), limit=self.limit,
                                             reason=reason))

    def history(self) -> ConcurrencyHistory:
        """The limit's history so far."""
        with self._lock:
            return ConcurrencyHistory(
                cap=self.cap, final_limit=self.limit,
                max_limit=max(c.limit for c in self._changes),
                retry_episodes=self._episodes, latency_backoffs=self._latency_backoffs,
                paced_by_headers=self._pacing_used,
                baseline_latency_s=(round(self._baseline, 4) if self._baseline is not None
                                    else None),
                changes=list(self._changes))


def fixed_concurrency(client: Any) -> int:
    """The number a model without adaptive concurrency keeps in flight: its endpoint's
    ``max_concurrency`` (4 when the client has no endpoint)."""
    endpoint = getattr(getattr(client, "settings", None), "endpoint", None)
    return int(getattr(endpoint, "max_concurrency", 4))


def controller_for(client: Any, max_concurrency: int | None = None,
                   settings: ControllerSettings | None = None) -> AdaptiveController | None:
    """An adaptive controller watching ``client``'s chat client, or None to keep a fixed number
    in flight.

    Only a model reached over HTTP adapts: a local model served in-process (``serve``) is
    CPU-bound, so its entry's ``max_concurrency`` stays the number in flight (and its results
    stay what they were). The cap: ``max_concurrency`` when given, else the endpoint's when the
    entry sets it explicitly, else :data:`DEFAULT_ADAPTIVE_CAP`.
    """
    chat = getattr(client, "_chat", None)
    endpoint = getattr(getattr(client, "settings", None), "endpoint", None)
    if chat is None or endpoint is None or not hasattr(chat, "observer"):
        return None
    if getattr(endpoint, "serve", None) is not None:
        return None
    if max_concurrency is None:
        explicit = "max_concurrency" in endpoint.model_fields_set
        max_concurrency = endpoint.max_concurrency if explicit else DEFAULT_ADAPTIVE_CAP
    controller = AdaptiveController(max_concurrency, settings)
    chat.observer = controller.observe
    return controller
