"""Start pacing by rate: what a server's rate-limit headers say, and the rate a limiter that
names none is found to allow (AIMD on the rate, not on the number in flight).

:class:`RatePacing` is the part of :class:`eval_assets.model_runs.concurrency.AdaptiveController`
that decides *when* the next request may start (the concurrency controller decides *how many*
are in flight); both share one state under the controller's lock. The design is described in
:mod:`eval_assets.model_runs.concurrency`.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_MAX_RESET_S = 3600.0  # a reset further away than this is not a pacing hint
_PROBE_POLL_S = 0.1  # how often a request waiting on a probe's outcome asks again
_MEMORY_S = 300.0  # how long sends are remembered to measure a limiter's rate
_WINDOW_MAX_S = 120.0  # the longest window an accepted rate is measured over


@dataclass(frozen=True)
class ControllerSettings:
    """The controller's constants; tests shrink ``cooldown_s``."""

    initial: int = 8
    decrease: float = 0.8
    increase: float = 0.05
    cooldown_s: float = 15.0
    latency_factor: float = 1.2
    pace_share: float = 0.95
    min_round: int = 4
    probe_gap_s: float = 1.0
    probe_gap_max_s: float = 32.0
    probe_timeout_s: float = 30.0
    queue_allowance: float = 0.25
    rate_window_s: float = 1.0
    rate_increase: float = 0.0005
    rate_accel_starts: int = 200
    free_retry_s: float = 180.0

    def __post_init__(self) -> None:
        if self.initial < 1:
            raise ValueError(f"initial is {self.initial}; it must be at least 1")
        if not 0 < self.decrease < 1:
            raise ValueError(f"decrease is {self.decrease}; it must be between 0 and 1")
        if self.cooldown_s < 0 or self.increase < 0:
            raise ValueError("cooldown_s and increase must be 0 or more")
        if self.latency_factor <= 1 or not 0 < self.pace_share <= 1:
            raise ValueError("latency_factor must exceed 1 and pace_share be in (0, 1]")
        if min(self.rate_window_s, self.rate_accel_starts) <= 0 or min(
                self.rate_increase, self.queue_allowance, self.free_retry_s) < 0:
            raise ValueError("rate_window_s and rate_accel_starts must exceed 0, rate_increase, "
                             "queue_allowance and free_retry_s be 0 or more")


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


def _within(times: list[float], lo: float, hi: float) -> int:
    """How many of the sorted ``times`` lie in ``(lo, hi]``."""
    return bisect.bisect_right(times, hi) - bisect.bisect_right(times, lo)


class RatePacing:
    """When the next start may go: the headers' pace, the learnt rate's pace, and the probe
    while a limiter that names no rate allows nothing. State is the controller's (declared
    here, set in its ``__init__``); every method runs under its lock."""

    settings: ControllerSettings
    _round: Any
    _accepted: list[float]
    _observed: list[float]
    _starts: list[float]
    _allowance: int | None
    _blocked_since: float | None
    _blocks: int
    _bound_starts: int
    _cluster_start: float | None
    _counts_remaining: bool
    _cut_at: float
    _episodes: int
    _header_paced: bool
    _hold_until: float
    _in_flight: int
    _last_start: float
    _learned_pace: float | None
    _learned_paces: bool
    _learned_rate: float | None
    _next_start: float
    _pace_after_cut: float
    _pacing_used: bool
    _probe_at: float
    _probe_busy_until: float
    _probe_gap: float
    _probe_taken_at: float
    _rate: float | None
    _rate_cuts: int
    _rate_slow_start: bool
    _refused_at: float | None
    _window_start: float
    _window_successes: int

    @property
    def limit(self) -> int:
        """Requests allowed in flight now (the controller's)."""
        raise NotImplementedError

    def _record(self, now: float, reason: str) -> None:
        raise NotImplementedError

    def _decrease(self, now: float, reason: str, cooldown: bool = True,
                  explore: bool = False, to: float | None = None) -> bool:
        raise NotImplementedError

    def _pace_rate(self) -> float | None:
        """Starts per second now: the slower of the headers' pace and the learnt one."""
        rates = []
        if self._header_paced and self._rate:
            rates.append(self.settings.pace_share * self._rate)
        if self._learned_paces and self._learned_pace:
            rates.append(self._learned_pace)
        return min(rates) if rates else None

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
        elif self._pace_rate() is not None:
            gate = max(gate, self._next_start)
        return max(0.0, gate - now)

    def _take(self, now: float) -> None:
        """A request goes now: it is the probe while blocked, else it spaces the next start."""
        self._in_flight += 1
        bisect.insort(self._starts, now)
        last, self._last_start = self._last_start, now
        if self._allowance is not None:
            self._allowance -= 1
        if self._blocked_since is not None:
            self._probe_busy_until = now + self.settings.probe_timeout_s
            self._probe_taken_at = now
            return
        rate = self._pace_rate()
        if rate is None:
            return
        interval = 1.0 / rate
        # A start made late (a busy client's scheduler thread wakes late) is made up by the
        # next ones, up to two intervals late: else every late wake-up is rate lost. Later
        # than that the requests were not there to start: the schedule restarts now.
        late = now - self._next_start
        if late < 2 * interval and now - last < 2 * interval:
            self._next_start += interval
            self._grow_pace(interval)  # the pace held this start back: it may grow
        else:
            self._next_start = now + interval

    def _grow_pace(self, seconds: float) -> None:
        """Additive increase of the learnt pace for a start it held back ``seconds``: slow
        near the rate last learnt, faster the more starts went without a 429 (counted in
        starts, not seconds: a 429 costs the same share of the requests at any rate)."""
        if not self._learned_paces or self._learned_pace is None:
            return
        if self._rate_slow_start:
            self._learned_pace *= 2.0 ** (seconds / self._window())
            return
        speed = 1.0 + self._bound_starts / self.settings.rate_accel_starts
        self._learned_pace += self.settings.rate_increase * self._pace_after_cut * speed
        self._bound_starts += 1

    def _remember_send(self, times: list[float], sent: float, now: float) -> None:
        bisect.insort(times, sent)
        if times[0] < now - _MEMORY_S:
            del times[:bisect.bisect_left(times, now - _MEMORY_S)]
        if self._starts and self._starts[0] < now - _MEMORY_S:
            del self._starts[:bisect.bisect_left(self._starts, now - _MEMORY_S)]

    def _pace(self, headers: Mapping[str, str], now: float) -> None:
        hint = header_rate(headers)
        if hint is None:
            remaining = remaining_requests(headers)
            if remaining is not None:
                # What remains is spent by those in flight too. Two are kept in hand: LiteLLM's
                # proxy (1.74) reports what remained before the request it answers, and its
                # last one is refused (rpm 5: replies say 5, 4, 3, 2, then 429).
                self._allowance = remaining - self._in_flight - 2
                self._counts_remaining = True
            return
        rate, remaining = hint
        if rate:
            self._rate = rate if self._rate is None else 0.7 * self._rate + 0.3 * rate
        # Each request in flight will spend one of what remains: pace once they could use it up.
        self._header_paced = self._rate is not None and remaining <= self.limit
        self._pacing_used |= self._header_paced

    def _retry_episode(self, status: int | None, headers: Mapping[str, str], sent: float,
                       now: float) -> None:
        from eval_assets.retry import parse_retry_after

        wait = parse_retry_after(headers)
        hinted = wait is not None and 0 < wait <= _MAX_RESET_S
        if status == 429 and hinted and wait is not None:
            # A rate limit is shared by every request: none starts before it allows. A 5xx's
            # Retry-After is left to the request that got it (the others carry on).
            self._hold_until = max(self._hold_until, now + wait)
        # Like inspect: a round that saw any retry does not grow, whether or not it cut.
        self._round.backed_off = True
        if status == 429 and not (self._pacing_used or self._counts_remaining):
            # A limiter that names no rate: its rate is what is too high, not the number in
            # flight (AIMD on the rate); only a window that accepted nothing stops starts.
            if self._blocked_since is not None or self._refused(sent, now, hinted):
                return
            self._block(now)
        elif status == 429 and not hinted and self._blocked_since is None:
            self._block(now)
        if self._decrease(now, "retry_episode"):
            self._episodes += 1

    def _window(self) -> float:
        """The window an accepted rate is measured over: ``rate_window_s``, or five starts at
        the pace when that is longer."""
        pace = self._pace_rate()
        longest = 5.0 / pace if pace else 0.0
        return min(_WINDOW_MAX_S, max(self.settings.rate_window_s, longest))

    def _allowed(self, lo: float, hi: float) -> int:
        """Attempts sent in ``(lo, hi]`` the limiter accepted, those still unanswered
        included (a slow reply is not in yet; counting it accepted errs towards the rate)."""
        unanswered = _within(self._starts, lo, hi) - _within(self._observed, lo, hi)
        return _within(self._accepted, lo, hi) + max(0, unanswered)

    def _refused(self, sent: float, now: float, hinted: bool) -> bool:
        """A 429 from a limiter that names no rate: the pace's multiplicative decrease, to
        ``pace_share`` of the rate it was seen to allow. False when nothing was accepted over
        the window (the caller stops starts and probes)."""
        window = self._window()
        last = self._refused_at
        self._refused_at = sent if last is None else max(last, sent)
        if sent < self._cut_at:
            return True  # sent at a pace already cut for this cluster
        rate: float
        if self._cluster_start is None or last is None or sent - last > window:
            # The first 429 of a cluster: the bucket was empty at the last 429 and is again
            # now, so what it accepted in between is what it refills. At first contact, the
            # window before this one, from the first start in it: its burst overstates the
            # rate, which the cluster's next 429s correct (a rate understated would only be
            # found again slowly).
            first_contact = last is None or sent - last > _MEMORY_S
            if last is None or first_contact:
                lo = sent - window
                span_from = max(lo, self._starts[0] if self._starts else lo)
                # A quarter window at least: a burst taken in a few ms says little of a rate.
                span = max(sent - span_from, window / 4)
            else:
                lo = last
                span = sent - lo
            allowed = self._allowed(lo, sent)
            if allowed == 0:
                return False
            blind = self._learned_rate is None
            self._cluster_start = sent
            rate = allowed / span
            if self._learned_pace is not None:
                rate = min(rate, self._learned_pace / self.settings.pace_share)
            self._set_pace(rate, now)
            # A first rate may as well be too low (a burst of 1 over a quarter second): it
            # doubles each window it holds starts back, until the next 429.
            self._rate_slow_start = first_contact and blind
            self._rate_cuts += 1
            return True
        else:
            # A later 429 of the cluster, sent at the pace the first one set: empty since the
            # cluster's first, the bucket allowed at most what was accepted since, plus one,
            # and one more: sends are timed here, refusals decided at the server's arrival.
            span = sent - self._cluster_start
            allowed = self._allowed(self._cluster_start, sent)
            if allowed == 0 and span >= window:
                return False
            current = (self._learned_pace or math.inf) / self.settings.pace_share
            rate = min(current, (allowed + 2) / span) if span > 0 else current
        self._rate_cuts += 1
        self._set_pace(rate, now)
        return True

    def _set_pace(self, rate: float, now: float) -> None:
        """Pace starts at ``pace_share`` of ``rate`` (the limiter's, as learnt) from now."""
        first = self._learned_rate is None
        self._rate_slow_start = False
        self._learned_rate = rate
        self._learned_pace = self.settings.pace_share * rate
        self._learned_paces = True
        self._pace_after_cut = self._learned_pace
        self._bound_starts = 0
        self._cut_at = now
        self._next_start = max(self._next_start, self._last_start + 1.0 / self._learned_pace)
        if first:
            self._record(now, "rate_learned")

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
            # A limiter that says what remains (the probe's reply just did) is followed by that
            # count instead: pacing at a rate learnt from a short first window would be slower
            # than the window allows.
            if self._allowance is None or self._allowance <= 0:
                self._learned_rate = None  # the latest window's rate replaces an earlier one
                self._set_pace(rate, sent)
                self._next_start = sent
            else:
                self._learned_paces = False
                self._learned_rate = rate
            self._record(sent, "rate_learned")
        self._blocked_since = None
        self._cluster_start = None
        self._probe_busy_until = -math.inf
        self._probe_taken_at = math.inf
        if self._allowance is not None and self._allowance <= 0:
            self._allowance = None  # the probe's reply said nothing of what remains now
        self._window_start = sent
        self._window_successes = 0
