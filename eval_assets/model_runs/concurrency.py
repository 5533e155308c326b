"""Adaptive concurrency for HTTP models under test: how many requests to keep in flight, and when
to start the next one.

Modelled on inspect_ai's ``AdaptiveConcurrencyController``: slow start (the limit doubles each
round until the first back-off), then an increase of ``increase`` (5 %, at least 1) per round; a
*retry episode* (a 429, or no reply at all) multiplies the limit by ``decrease`` (0.8), at most
once per ``cooldown_s``, so a burst of refusals from one overload counts once. A round is
``limit`` successful replies. Resumed answers never reach the controller (the runner schedules
only what the journal lacks), so journal hits are neutral.

What inspect lacks, added here (issue 18 item 4, issue 27 item 2):

- header pacing: a 429's ``retry-after`` holds every new start that long (a rate limit is
  shared); ``x-ratelimit-limit-requests``, ``-remaining-requests`` and ``-reset-requests`` give
  the server's refill rate (``(limit - remaining) / reset``), and once few requests remain,
  starts are spaced at ``pace_share`` of that rate instead of waiting for 429s. Values that make
  no sense (Azure's -1, a reset of zero or of days) are ignored. Remaining without a reset
  (LiteLLM's proxy) is counted down by each start, and starts stop before it runs out;
- a limiter that gives no hint (a 429 without a usable ``Retry-After``; ``Retry-After: 0`` and
  garbage are no hint): starts stop, and one probe at a time (1 s after, then gaps doubling up
  to ``probe_gap_max_s``) tests whether its window has reset; the chat client's retries wait at
  the same gate (:meth:`AdaptiveController.wait_to_retry`). When a probe passes, what the window
  allowed over its length is the limiter's rate: starts are paced at it from then on, creeping
  up 5 % a round (a window that also counted the wait understates a bucket's rate);
- a 5xx's ``Retry-After`` is waited by the request that got it, the others carry on, and a
  request only waiting to retry does not count against the limit (:attr:`slots`). A 5xx
  cuts the limit only when its share grows with the limit, or when fewer in flight answered as
  much: a gateway failing a steady share whatever the load is not overloaded;
- a latency signal for servers that queue instead of refusing, told apart from the client's
  own delays (a busy client's threads wait for CPU, which no cut relieves): each limit's rounds
  are remembered (median latency, throughput, 5xx share, as moving averages). Latency counts
  as queueing only when it exceeds the next lower limit's by more than half the limits' ratio
  would (a queue makes it grow in proportion; with no lower limit measured yet, against
  ``latency_factor`` times the unloaded baseline). Queueing stops growth, and cuts the limit by
  ``decrease`` unless a lower limit answered clearly less (then it holds) or a higher one
  answered clearly more (then it grows back): throughput is what a cut must not lose.

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
_PROBE_POLL_S = 0.1  # how often a request waiting on a probe's outcome asks again


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
    probe_gap_s: float = 1.0
    probe_gap_max_s: float = 32.0
    probe_timeout_s: float = 30.0

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


def remaining_requests(headers: Mapping[str, str]) -> int | None:
    """``x-ratelimit-remaining-requests`` when ``x-ratelimit-limit-requests`` makes it sane (at
    most the limit); None otherwise."""
    lower = {k.lower(): v for k, v in headers.items()}
    cap = _count(lower.get("x-ratelimit-limit-requests"))
    remaining = _count(lower.get("x-ratelimit-remaining-requests"))
    if cap is None or cap < 1 or remaining is None or remaining > cap:
        return None
    return remaining


@dataclass
class _Round:
    start: float
    limit: int
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    backed_off: bool = False


@dataclass
class _Level:
    """What rounds at one limit measured (moving averages: conditions change during a run)."""

    throughput: float = 0.0
    latency: float = 0.0
    error_share: float = 0.0
    attempts: int = 0
    rounds: int = 0

    def update(self, throughput: float, latency: float, share: float, attempts: int) -> None:
        if self.rounds == 0:
            self.throughput, self.latency, self.error_share = throughput, latency, share
        else:
            self.throughput = 0.5 * self.throughput + 0.5 * throughput
            self.latency = 0.5 * self.latency + 0.5 * latency
            self.error_share = 0.5 * self.error_share + 0.5 * share
        self.attempts += attempts
        self.rounds += 1


class AdaptiveController:
    """The in-flight limit and start pacing of one run; thread-safe (workers observe, the
    scheduler and the retrying workers ask the gate)."""

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
        self._levels: dict[int, _Level] = {}
        self._round = _Round(start=self._t0, limit=self.limit)
        self._episodes = 0
        self._latency_backoffs = 0
        self._error_backoffs = 0
        # A rate limiter that says nothing (429 without a usable Retry-After): starts stop, one
        # probe at a time tests whether its window has reset, and the rate it allowed is learnt.
        self._blocked_since: float | None = None
        self._probe_at = -math.inf
        self._probe_gap = self.settings.probe_gap_s
        self._probe_busy_until = -math.inf
        self._probe_taken_at = math.inf
        self._window_start = self._t0
        self._window_successes = 0
        self._learned_rate: float | None = None
        self._learned_paces = False
        self._blocks = 0
        # Starts the limiter still allows, from x-ratelimit-remaining-requests when it comes
        # without a reset time (LiteLLM's proxy): at none left, starts stop before any 429.
        self._allowance: int | None = None
        self._in_flight = 0
        self._waiting = 0
        self._changes = [LimitChange(t_s=0.0, limit=self.limit, reason="start")]

    @property
    def limit(self) -> int:
        """Requests allowed in flight now."""
        return max(1, min(self.cap, int(self._limit)))

    # --- what the scheduler and retrying workers ask --------------------------------------
    def _gate(self, now: float) -> float:
        """Seconds until a request may go (0: now), without taking the turn."""
        gate = self._hold_until
        if self._blocked_since is None and self._allowance is not None and self._allowance <= 0:
            # The window allows no more: stop before a 429 says so.
            self._block(now)
        if self._blocked_since is not None:
            if self._probe_busy_until > now:
                # A probe is out: its reply may open the gate any moment, so ask again soon
                # rather than sleep out its timeout.
                return min(_PROBE_POLL_S, max(gate, self._probe_busy_until) - now)
            gate = max(gate, self._probe_at)
        elif self._paced:
            gate = max(gate, self._next_start)
        return max(0.0, gate - now)

    def _take(self, now: float) -> None:
        """A request goes now: it is the probe while blocked, else it spaces the next start."""
        self._in_flight += 1
        if self._allowance is not None:
            self._allowance -= 1
        if self._blocked_since is not None:
            self._probe_busy_until = now + self.settings.probe_timeout_s
            self._probe_taken_at = now
        elif self._paced and self._rate:
            interval = 1.0 / (self.settings.pace_share * self._rate)
            # A start made late (a busy client's scheduler thread wakes late) is made up by the
            # next ones, up to two intervals late: else every late wake-up is rate lost. Later
            # than that the requests were not there to start: the schedule restarts now.
            late = now - self._next_start
            self._next_start = (self._next_start if late < 2 * interval else now) + interval

    def start_delay(self) -> float:
        """Seconds before the next request may start (0: now)."""
        with self._lock:
            return self._gate(self._clock())

    def started(self) -> None:
        """A request starts now (spaces the next one when pacing, is the probe when blocked)."""
        with self._lock:
            self._take(self._clock())

    @property
    def slots(self) -> int:
        """Requests the scheduler may hold now: the limit, plus those only waiting to retry
        (a request waiting out a 5xx's ``Retry-After`` loads no server; the others carry on)."""
        with self._lock:
            return min(self.cap, self.limit + self._waiting)

    def wait_to_retry(self, seconds: float) -> float:
        """Wait ``seconds`` (a retry's backoff or ``Retry-After``), then until :meth:`acquire`
        lets the retry go; the seconds waited. The chat client's
        :attr:`~eval_assets.openai_chat.ChatClient.retry_wait`."""
        with self._lock:
            self._waiting += 1
        try:
            time.sleep(seconds)
            waited = seconds
            while (delay := self.acquire()) > 0:
                time.sleep(delay)
                waited += delay
            return waited
        finally:
            with self._lock:
                self._waiting -= 1

    def acquire(self) -> float:
        """0 when a request may go now (its turn is taken), else the seconds to wait before
        asking again (the scheduler's gate, and the retries' in :meth:`wait_to_retry`)."""
        with self._lock:
            if self._ignored:
                return 0.0
            now = self._clock()
            delay = self._gate(now)
            if delay <= 0:
                self._take(now)
            return delay

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
            sent = now - latency_s
            self._in_flight = max(0, min(self._in_flight - 1, self.cap))
            self._pace(headers, now)
            # Only the attempt that took the probe's turn tests the limiter; one sent before
            # the block (its thread late to start) says nothing of the window. The client
            # times attempts with another clock: 50 ms of slack, else a probe sent at once
            # could read as sent before its turn and hold the gate for probe_timeout_s.
            probe = (self._blocked_since is not None
                     and sent >= self._probe_taken_at - 0.05)
            if status is not None and 200 <= status < 300:
                if probe:
                    self._unblock(sent)
                if sent >= self._window_start and (self._blocked_since is None
                                                   or sent < self._blocked_since):
                    self._window_successes += 1
                self._success(latency_s, now)
                return
            if probe:
                # The probe found the limiter still closed: the next one waits twice as long.
                self._probe_busy_until = -math.inf
                if status == 429:
                    self._probe_gap = min(self.settings.probe_gap_max_s, 2 * self._probe_gap)
                self._probe_at = now + self._probe_gap
            if status == 429 or status is None:
                self._retry_episode(status, headers, now)
            elif status >= 500:
                # Judged per round: whether the errors track the load (see _end_round).
                self._round.errors += 1

    def _pace(self, headers: Mapping[str, str], now: float) -> None:
        hint = header_rate(headers)
        if hint is None:
            remaining = remaining_requests(headers)
            if remaining is not None:
                # What remains is spent by those in flight too. Two are kept in hand: LiteLLM's
                # proxy (1.74) reports what remained before the request it answers, and its
                # last one is refused (rpm 5: replies say 5, 4, 3, 2, then 429).
                self._allowance = remaining - self._in_flight - 2
            return
        rate, remaining = hint
        if rate:
            self._rate = rate if self._rate is None else 0.7 * self._rate + 0.3 * rate
        # Each request in flight will spend one of what remains: pace once they could use it up.
        by_headers = self._rate is not None and remaining <= self.limit
        self._paced = by_headers or self._learned_paces
        self._pacing_used |= by_headers

    def _retry_episode(self, status: int | None, headers: Mapping[str, str], now: float) -> None:
        from eval_assets.openai_chat import parse_retry_after

        wait = parse_retry_after(headers)
        hinted = wait is not None and 0 < wait <= _MAX_RESET_S
        if status == 429 and hinted and wait is not None:
            # A rate limit is shared by every request: none starts before it allows. A 5xx's
            # Retry-After is left to the request that got it (the others carry on).
            self._hold_until = max(self._hold_until, now + wait)
        elif status == 429 and self._blocked_since is None:
            self._block(now)
        # Like inspect: a round that saw any retry does not grow, whether or not it cut.
        self._round.backed_off = True
        if self._decrease(now, "retry_episode"):
            self._episodes += 1

    def _block(self, now: float) -> None:
        self._blocked_since = now
        self._blocks += 1
        self._probe_gap = self.settings.probe_gap_s
        self._probe_at = now + self._probe_gap
        self._probe_busy_until = -math.inf
        self._probe_taken_at = math.inf

    def _unblock(self, sent: float) -> None:
        """A probe got through: the window has reset. What the last window allowed over its
        length is the limiter's rate; starts are paced at it from now on."""
        window = sent - self._window_start
        if self._window_successes >= 2 and window > 0:
            rate = self._window_successes / window
            # The latest window's rate replaces an earlier one: pacing at that one was too fast.
            self._learned_rate = rate
            # A limiter that says what remains (the probe's reply just did) is followed by that
            # count instead: pacing at a rate learnt from a short first window would be slower
            # than the window allows.
            self._learned_paces = self._allowance is None or self._allowance <= 0
            if self._learned_paces:
                self._rate = rate
                self._paced = True
                self._next_start = sent
            self._record(sent, "rate_learned")
        self._blocked_since = None
        self._probe_busy_until = -math.inf
        self._probe_taken_at = math.inf
        if self._allowance is not None and self._allowance <= 0:
            self._allowance = None  # the probe's reply said nothing of what remains now
        self._window_start = sent
        self._window_successes = 0

    def _decrease(self, now: float, reason: str, cooldown: bool = True,
                  explore: bool = False) -> bool:
        """Cut the limit; ``explore``: a cut to learn whether fewer do better, which does not
        end the slow start."""
        if cooldown and now - self._last_decrease < self.settings.cooldown_s:
            return False
        if cooldown:
            self._last_decrease = now
        self._slow_start = self._slow_start and explore
        self._limit = max(1.0, self._limit * self.settings.decrease)
        # A round measures one limit: the next starts here, and does not grow (like inspect: a
        # round that saw a cut is not evidence for more).
        self._round = _Round(start=now, limit=self.limit, backed_off=not explore)
        self._record(now, reason)
        return True

    def _success(self, latency_s: float, now: float) -> None:
        current = self._round
        current.latencies.append(latency_s)
        if len(current.latencies) >= max(self.settings.min_round, current.limit):
            self._end_round(current, now)

    def _end_round(self, current: _Round, now: float) -> None:
        """Judge a round by what changes with the limit: a signal that does not grow with the
        number in flight (the client's own CPU starving its threads, errors at a steady share)
        is no congestion, so it never cuts the limit below where throughput was as good."""
        self._round = _Round(start=now, limit=self.limit)
        try:
            self._judge(current, now)
        finally:
            # The next round measures the limit the judgement set (a cut made its own round).
            self._round.limit = self.limit

    def _judge(self, current: _Round, now: float) -> None:
        elapsed = now - current.start
        if elapsed <= 0:
            return
        done = len(current.latencies)
        throughput = done / elapsed
        ordered = sorted(current.latencies)
        low = ordered[len(ordered) // 10]
        self._baseline = low if self._baseline is None else min(self._baseline, low)
        median = statistics.median(ordered)
        share = current.errors / (done + current.errors)
        others = {k: v for k, v in self._levels.items() if k != current.limit and v.rounds}
        level = self._levels.setdefault(current.limit, _Level())
        level.update(throughput, median, share, done + current.errors)
        below = max((k for k in others if k < current.limit), default=None)
        best_above = max((v.throughput for k, v in others.items() if k > current.limit),
                         default=None)
        fewer_as_good = below is not None and (
            others[below].throughput >= 0.9 * level.throughput)
        # Throughput of a round with 5xx is noisy (each waits out its Retry-After): fewer in
        # flight count as answering as much only once this limit has two rounds.
        settled = level.rounds >= 2
        if current.errors and (self._errors_track_load(level, others)
                               or (fewer_as_good and settled and level.error_share > 0.1)):
            # Errors that grow with the load, or a share of them while fewer in flight answered
            # as much: the server is past what it can take.
            self._error_backoffs += 1
            self._decrease(now, "server_errors", cooldown=False, explore=not others)
            return
        if below is not None:
            # Queueing makes latency grow with the number in flight (in proportion, for a
            # server that serves a fixed number at once); the client's own delays do not.
            ratio = current.limit / below
            queueing = level.latency > others[below].latency * (1 + 0.5 * (ratio - 1))
        else:
            queueing = median > self.settings.latency_factor * self._baseline
        if queueing:
            if best_above is not None and level.throughput < 0.9 * best_above:
                # More in flight did more: the latency is not the server's queue.
                if not current.backed_off:
                    self._grow(now, "throughput")
            elif below is None or fewer_as_good:
                # Fewer in flight did as much, or it is not known yet: cut (each round is
                # measured wholly at the limit set before it, so no time cooldown applies).
                self._latency_backoffs += 1
                self._decrease(now, "latency", cooldown=False)
            return
        if current.backed_off:
            return  # like inspect: a round that saw a retry or a cut does not grow
        self._grow(now, "increase")
        if self._learned_paces and self._learned_rate is not None and self._blocked_since is None:
            # The learnt rate counts the window's wait too (a bucket that refills all the time
            # allows more): creep up as the limit does; overrunning costs one block, which
            # learns the rate again over the long window since.
            self._learned_rate *= 1 + self.settings.increase
            self._rate = self._learned_rate

    def _errors_track_load(self, level: _Level, others: Mapping[int, _Level]) -> bool:
        """Whether this limit's share of 5xx stands clearly above the lowest share measured at
        another limit (none measured yet: any share over 10 % counts, so the next round tries
        fewer and tells). A gateway failing a steady share of requests whatever the load is not
        overloaded: cutting the limit would only lose throughput."""
        below = [v for k, v in others.items() if v.attempts >= 20 and v is not level]
        if not others:
            return level.error_share > 0.1
        if not below:
            return False  # not measured well enough elsewhere to tell
        # Against the lowest share measured well enough (each estimate is noisy: the margin
        # is two standard errors of the difference, 0.15 at least).
        lowest = min(below, key=lambda v: v.error_share)
        p = max(lowest.error_share, 0.05)
        noise = 2 * math.sqrt(p * (1 - p) * (1 / max(1, level.attempts) + 1 / lowest.attempts))
        return level.error_share > lowest.error_share + max(0.15, noise)

    def _grow(self, now: float, reason: str) -> None:
        if self._limit >= self.cap:
            return
        if self._slow_start:
            self._limit = min(float(self.cap), self._limit * 2)
            self._record(now, "slow_start")
        else:
            self._limit = min(float(self.cap),
                              self._limit + max(1.0, self.settings.increase * self._limit))
            self._record(now, reason)

    def _record(self, now: float, reason: str) -> None:
        if self._changes[-1].limit != self.limit or reason == "rate_learned":
            self._changes.append(LimitChange(t_s=round(now - self._t0, 3), limit=self.limit,
                                             reason=reason))

    def history(self) -> ConcurrencyHistory:
        """The limit's history so far."""
        with self._lock:
            return ConcurrencyHistory(
                cap=self.cap, final_limit=self.limit,
                max_limit=max(c.limit for c in self._changes),
                retry_episodes=self._episodes, latency_backoffs=self._latency_backoffs,
                error_backoffs=self._error_backoffs,
                paced_by_headers=self._pacing_used,
                learned_rate_per_s=(round(self._learned_rate, 4)
                                    if self._learned_rate is not None else None),
                rate_limit_blocks=self._blocks,
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
    chat.retry_wait = controller.wait_to_retry
    return controller
