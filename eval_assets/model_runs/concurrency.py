"""Adaptive concurrency for HTTP models under test: how many requests to keep in flight, and when
to start the next one.

Modelled on inspect_ai's ``AdaptiveConcurrencyController``: slow start (the limit, from
``initial`` 8, doubles each round until the first back-off), then an increase of ``increase``
(5 %, at least 1) per round; a *retry episode* (no reply at all, or a 429 that stops starts)
multiplies the limit by ``decrease`` (0.8), at most once per ``cooldown_s``, so a burst of
refusals from one overload counts once. A round is ``limit`` successful replies. Resumed answers
never reach the controller (the runner schedules only what the journal lacks), so journal hits
are neutral.

What inspect lacks, added here (issue 18 item 4, issue 27 item 2, issue 42 item 6):

- header pacing: a 429's ``retry-after`` holds every new start that long (a rate limit is
  shared); ``x-ratelimit-limit-requests``, ``-remaining-requests`` and ``-reset-requests`` give
  the server's refill rate (``(limit - remaining) / reset``), and once few requests remain,
  starts are spaced at ``pace_share`` of that rate instead of waiting for 429s. Values that make
  no sense (Azure's -1, a reset of zero or of days) are ignored. Remaining without a reset
  (LiteLLM's proxy) is counted down by each start, and starts stop before it runs out;
- a limiter that names no rate (429s without a usable ``Retry-After`` -- ``Retry-After: 0`` and
  garbage are no hint -- or with one but no ``x-ratelimit-*`` rate): AIMD on the *rate*, as a
  token bucket is read. A 429 says the bucket is empty when it was sent; so is it at the next
  429, and what was accepted in between (counted by send time, those still in flight included)
  is the rate it refills. Starts are paced at ``pace_share`` (95 %) of that rate: at the first
  429 of a cluster, of the rate accepted since the last cluster (the window before it at first
  contact, whose burst overstates it); at each later one of the cluster (sent after the last
  cut), of the rate since the cluster's first, plus one, which only lowers it. Between clusters
  the pace grows by each start it holds back: ``rate_increase`` (0.05 %) of it per start,
  accelerating (``rate_accel_starts``), so it probes slowly near the rate it learnt and faster
  far from it (a first rate from one window, which may be low, doubles each window until a
  429). 429s that only follow a cut made for them cut nothing more, and do not cut the
  number in flight (the rate is what is too high). Only when nothing was accepted over the
  window (a closed minute window) do starts stop: one probe at a time (1 s after, then gaps
  doubling up to ``probe_gap_max_s``) tests whether it has reset, and when one passes, what the
  window allowed over its length is the rate paced from then on. The chat client's retries wait
  at the same gate (:meth:`AdaptiveController.wait_to_retry`), without their own backoff after
  a 429, and a 429's retry costs the call nothing of its ``max_retries`` while the endpoint
  answered some request within ``free_retry_s`` (:meth:`AdaptiveController.retry_charge`):
  waiting one's turn at a rate limit is no failure, and a key whose quota is gone still fails;
- what one call group learnt is where the next starts (:class:`Learnt`): a controller made for
  an endpoint ``key`` starts from the limit and rate the last group of that key in this process
  left (:func:`remembered`), else from ``start`` (the run folder's last ``summary.json``), out
  of slow start and paced from its first request;
- a 5xx's ``Retry-After`` is waited by the request that got it, the others carry on, and a
  request only waiting to retry does not count against the limit (:attr:`slots`). A 5xx
  cuts the limit only when its share grows with the limit, or when fewer in flight answered as
  much: a gateway failing a steady share whatever the load is not overloaded;
- a latency signal for servers that queue instead of refusing, told apart from the client's
  own delays (a busy client's threads wait for CPU, which no cut relieves): each limit's rounds
  are remembered (mean latency, throughput, 5xx share, as moving averages). Latency counts
  as queueing only when it exceeds the next lower limit's by more than half the limits' ratio
  would (a queue makes it grow in proportion; with no lower limit measured yet, against
  ``latency_factor`` times the unloaded baseline). Queueing stops growth, and cuts the limit
  unless a lower limit answered clearly less (then it holds) or a higher one answered clearly
  more (then it grows back): throughput is what a cut must not lose. The cut is ``decrease``;
  with no lower limit measured yet (the first rounds, slow start's burst) it is Vegas's: to the
  slots the latency shows (the limit times the baseline over the round's 90th percentile) plus
  ``queue_allowance`` of them, by half at most, so a server with a few slots is held just past
  them (its median latency near the unloaded one) within a round or two.

Everything takes a clock (``time.monotonic`` by default) so tests drive it deterministically.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from eval_assets.model_runs.rate_pacing import (
    ControllerSettings,
    RatePacing,
)
from eval_assets.schemas.concurrency import ConcurrencyHistory, LimitChange

DEFAULT_ADAPTIVE_CAP = 64
"""Most requests in flight when the endpoint names no ``max_concurrency`` of its own."""



@dataclass
class _Round:
    start: float
    limit: int
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    backed_off: bool = False
    # After a cut for latency, replies (and 5xx) to requests sent before it measure the queue
    # of the limit before (a server's queue drains only as they are answered): not this
    # round's, which is measured from the first reply to one sent since.
    since: float = -math.inf
    waiting_first: bool = False


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


@dataclass(frozen=True)
class Learnt:
    """What a call group's controller learnt of its endpoint, for the next group to start from:
    the limit in flight, and the rate a limiter that names none was found to allow (None: no
    such limiter, or one whose headers say what remains)."""

    limit: int
    rate_per_s: float | None = None


_LEARNT: dict[str, Learnt] = {}
_LEARNT_LOCK = threading.Lock()


def remembered(key: str) -> Learnt | None:
    """What the last call group of endpoint ``key`` in this process learnt (None: none ran)."""
    with _LEARNT_LOCK:
        return _LEARNT.get(key)


def forget_learnt(key: str | None = None) -> None:
    """Forget what call groups of ``key`` (None: of every endpoint) learnt: the next starts
    from scratch."""
    with _LEARNT_LOCK:
        if key is None:
            _LEARNT.clear()
        else:
            _LEARNT.pop(key, None)


def learnt_from(history: ConcurrencyHistory | None) -> Learnt | None:
    """What a run's recorded history (``summary.json``'s ``concurrency``) says to start from."""
    if history is None:
        return None
    return Learnt(limit=history.final_limit, rate_per_s=history.learned_rate_per_s)


class AdaptiveController(RatePacing):
    """The in-flight limit and start pacing of one call group; thread-safe (workers observe, the
    scheduler and the retrying workers ask the gate).

    ``key`` names the endpoint: the controller starts from what the last group of that key in
    this process learnt (else from ``start``), and :meth:`remember` leaves what it learnt."""

    def __init__(self, cap: int, settings: ControllerSettings | None = None,
                 clock: Callable[[], float] = time.monotonic, *, key: str | None = None,
                 start: Learnt | None = None) -> None:
        if cap < 1:
            raise ValueError(f"cap is {cap}; it must be at least 1")
        self.cap = cap
        self.settings = settings or ControllerSettings()
        self.key = key
        self._ignored = False
        self._clock = clock
        self._lock = threading.Lock()
        self._local = threading.local()
        self._t0 = clock()
        self._limit = float(min(cap, self.settings.initial))
        self._slow_start = True
        self._last_decrease = -math.inf
        self._hold_until = -math.inf
        # The rate x-ratelimit-* headers give, and whether it paces starts now / ever did.
        self._rate: float | None = None
        self._header_paced = False
        self._pacing_used = False
        self._counts_remaining = False
        self._next_start = -math.inf
        self._last_start = -math.inf
        self._baseline: float | None = None
        self._levels: dict[int, _Level] = {}
        self._round = _Round(start=self._t0, limit=self.limit)
        self._episodes = 0
        self._latency_backoffs = 0
        self._error_backoffs = 0
        # A limiter that names no rate: the rate it was seen to allow, the pace (AIMD), when
        # the pace was last cut and how long it has held starts back since (its growth).
        self._learned_rate: float | None = None
        self._learned_pace: float | None = None
        self._learned_paces = False
        self._pace_after_cut = 0.0
        self._bound_starts = 0
        self._cut_at = -math.inf
        self._cluster_start: float | None = None
        self._refused_at: float | None = None
        self._rate_slow_start = False
        self._rate_cuts = 0
        # Send times (sorted): of accepted attempts, of every attempt observed, of every start.
        self._accepted: list[float] = []
        self._observed: list[float] = []
        self._starts: list[float] = []
        self._last_success = -math.inf
        # No rate to be seen (nothing accepted over the window): starts stop, one probe at a
        # time tests whether the limiter's window has reset, and the rate it allowed is learnt.
        self._blocked_since: float | None = None
        self._probe_at = -math.inf
        self._probe_gap = self.settings.probe_gap_s
        self._probe_busy_until = -math.inf
        self._probe_taken_at = math.inf
        self._window_start = self._t0
        self._window_successes = 0
        self._blocks = 0
        # Starts the limiter still allows, from x-ratelimit-remaining-requests when it comes
        # without a reset time (LiteLLM's proxy): at none left, starts stop before any 429.
        self._allowance: int | None = None
        self._in_flight = 0
        self._waiting = 0
        self._changes = [LimitChange(t_s=0.0, limit=self.limit, reason="start")]
        seed = (remembered(key) if key is not None else None) or start
        if seed is not None:
            self._resume(seed)

    def _resume(self, seed: Learnt) -> None:
        """Start where an earlier call group of the endpoint left: its limit, out of slow
        start, and its learnt rate paced from the first request."""
        self._limit = float(max(1, min(self.cap, seed.limit)))
        self._slow_start = False
        self._round.limit = self.limit
        if seed.rate_per_s is not None and seed.rate_per_s > 0:
            self._set_pace(seed.rate_per_s, self._t0)
            self._cut_at = -math.inf
        self._changes = [LimitChange(t_s=0.0, limit=self.limit, reason="resumed")]

    @property
    def limit(self) -> int:
        """Requests allowed in flight now."""
        return max(1, min(self.cap, int(self._limit)))

    # --- what the scheduler and retrying workers ask --------------------------------------
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

    def _gates(self, now: float) -> bool:
        """Whether the gate spaces or holds starts now (a pace, a hold or a probe)."""
        return (self._blocked_since is not None or self._hold_until > now
                or self._pace_rate() is not None)

    def wait_to_retry(self, seconds: float) -> float:
        """Wait ``seconds`` (a retry's backoff or ``Retry-After``), then until :meth:`acquire`
        lets the retry go; the seconds waited. The chat client's
        :attr:`~eval_assets.openai_chat.ChatClient.retry_wait`.

        After a 429 the gate alone decides while it spaces or holds starts: the client's own
        backoff would only add to the pace (or the probe) that the limiter's rate sets."""
        with self._lock:
            self._waiting += 1
            if getattr(self._local, "refused", False) and self._gates(self._clock()):
                seconds = 0.0
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

    def retry_charge(self, charge: float) -> float:
        """What the retry after this thread's last attempt costs of the call's ``max_retries``
        (the chat client's :attr:`~eval_assets.openai_chat.ChatClient.retry_charge`):
        nothing after a 429 while the gate paces, holds or probes the limiter and the endpoint
        answered some request within ``free_retry_s`` (the call waits its turn; a key whose
        quota is gone answers none, and its calls still fail); else ``charge``."""
        with self._lock:
            now = self._clock()
            free = (getattr(self._local, "refused", False) and self._gates(now)
                    and now - self._last_success <= self.settings.free_retry_s)
            return 0.0 if free else charge

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
            self._local.refused = status == 429 and not self._ignored
            if self._ignored:
                return
            now = self._clock()
            sent = now - latency_s
            self._in_flight = max(0, min(self._in_flight - 1, self.cap))
            self._remember_send(self._observed, sent, now)
            self._pace(headers, now)
            # Only the attempt that took the probe's turn tests the limiter; one sent before
            # the block (its thread late to start) says nothing of the window. The client
            # times attempts with another clock: 50 ms of slack, else a probe sent at once
            # could read as sent before its turn and hold the gate for probe_timeout_s.
            probe = (self._blocked_since is not None
                     and sent >= self._probe_taken_at - 0.05)
            if status is not None and 200 <= status < 300:
                self._remember_send(self._accepted, sent, now)
                self._last_success = now
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
                self._retry_episode(status, headers, sent, now)
            elif status >= 500 and sent >= self._round.since:
                # Judged per round: whether the errors track the load (see _end_round).
                self._round.errors += 1

    def _decrease(self, now: float, reason: str, cooldown: bool = True,
                  explore: bool = False, to: float | None = None) -> bool:
        """Cut the limit (by ``decrease``, or ``to`` that); ``explore``: a cut to learn whether
        fewer do better, which does not end the slow start."""
        if cooldown and now - self._last_decrease < self.settings.cooldown_s:
            return False
        if cooldown:
            self._last_decrease = now
        self._slow_start = self._slow_start and explore
        self._limit = max(1.0, self._limit * self.settings.decrease if to is None else to)
        # A round measures one limit: the next starts here, and does not grow (like inspect: a
        # round that saw a cut is not evidence for more).
        self._round = _Round(start=now, limit=self.limit, backed_off=not explore)
        self._record(now, reason)
        return True

    def _success(self, latency_s: float, now: float) -> None:
        current = self._round
        if now - latency_s < current.since:
            return
        if current.waiting_first:
            # The first reply of the new limit: the round's throughput is measured from here.
            current.start, current.waiting_first = now, False
            return
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
        high = ordered[(len(ordered) - 1) * 9 // 10]
        self._baseline = low if self._baseline is None else min(self._baseline, low)
        # The mean, not the median: by Little's law it grows in proportion to the queue, where
        # the median of a server answering in waves moves only once half of them wait.
        typical = statistics.fmean(ordered)
        share = current.errors / (done + current.errors)
        others = {k: v for k, v in self._levels.items() if k != current.limit and v.rounds}
        level = self._levels.setdefault(current.limit, _Level())
        level.update(throughput, typical, share, done + current.errors)
        below = max((k for k in others if k < current.limit), default=None)
        best_above = max((v.throughput for k, v in others.items() if k > current.limit),
                         default=None)
        fewer_as_good = below is not None and (
            others[below].throughput >= 0.9 * level.throughput)
        # Throughput of a round with 5xx is noisy (each waits out its Retry-After): fewer in
        # flight count as answering as much only once this limit has two rounds, of 20
        # attempts at least.
        settled = level.rounds >= 2 and level.attempts >= 20
        if below is not None:
            # Queueing makes latency grow with the number in flight (in proportion, for a
            # server that serves a fixed number at once); the client's own delays do not.
            ratio = current.limit / below
            queueing = level.latency > others[below].latency * (1 + 0.5 * (ratio - 1))
        else:
            queueing = typical > self.settings.latency_factor * self._baseline
        if current.errors and (self._errors_track_load(level, others)
                               or (fewer_as_good and settled and level.error_share > 0.1
                                   and not (queueing and below is not None))):
            # Errors that grow with the load, or a share of them while fewer in flight answered
            # as much (and no queue says why): the server is past what it can take.
            self._error_backoffs += 1
            self._decrease(now, "server_errors", cooldown=False, explore=not others)
            return
        if queueing:
            if best_above is not None and level.throughput < 0.9 * best_above:
                # More in flight did more: the latency is not the server's queue.
                if not current.backed_off:
                    self._grow(now, "throughput")
            elif below is None or fewer_as_good:
                # Fewer in flight did as much, or it is not known yet: cut (each round is
                # measured wholly at the limit set before it, so no time cooldown applies).
                # With no lower limit measured (the first rounds, after slow start's burst),
                # straight to the slots the latency shows; below one, step by step.
                self._latency_backoffs += 1
                self._decrease(now, "latency", cooldown=False,
                               to=self._held_slots(current.limit, high) if below is None
                               else None)
                self._round.since, self._round.waiting_first = now, True
            return
        if current.backed_off:
            return  # like inspect: a round that saw a retry or a cut does not grow
        self._grow(now, "increase")

    def _held_slots(self, limit: int, latency: float) -> float:
        """Vegas's limit for a queueing server: the slots its latency shows (``limit`` times the
        unloaded baseline over ``latency``, the round's 90th percentile: the first round's
        requests all went at once, and only the last served saw the whole queue) plus
        ``queue_allowance`` of them, cut at least by ``decrease`` and at most by half."""
        baseline = self._baseline if self._baseline is not None else latency
        held = limit * baseline / latency * (1 + self.settings.queue_allowance)
        return min(limit * self.settings.decrease,
                   float(max(math.ceil(limit * 0.5), round(held))))

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
                rate_limit_blocks=self._blocks, rate_cuts=self._rate_cuts,
                baseline_latency_s=(round(self._baseline, 4) if self._baseline is not None
                                    else None),
                changes=list(self._changes))

    def learnt(self) -> Learnt:
        """What this call group learnt, for the next to start from."""
        with self._lock:
            rate = (self._learned_pace / self.settings.pace_share
                    if self._learned_paces and self._learned_pace else None)
            return Learnt(limit=self.limit, rate_per_s=rate)

    def remember(self) -> None:
        """Leave what this call group learnt for the next of its endpoint in this process
        (:func:`remembered`); nothing without a ``key``."""
        if self.key is not None:
            learnt = self.learnt()
            with _LEARNT_LOCK:
                _LEARNT[self.key] = learnt


def fixed_concurrency(client: Any) -> int:
    """The number a model without adaptive concurrency keeps in flight: its endpoint's
    ``max_concurrency`` (4 when the client has no endpoint)."""
    endpoint = getattr(getattr(client, "settings", None), "endpoint", None)
    return int(getattr(endpoint, "max_concurrency", 4))


def controller_for(client: Any, max_concurrency: int | None = None,
                   settings: ControllerSettings | None = None,
                   start: Learnt | None = None) -> AdaptiveController | None:
    """An adaptive controller watching ``client``'s chat client, or None to keep a fixed number
    in flight.

    Only a model reached over HTTP adapts: a local model served in-process (``serve``) is
    CPU-bound, so its entry's ``max_concurrency`` stays the number in flight (and its results
    stay what they were). The cap: ``max_concurrency`` when given, else the endpoint's when the
    entry sets it explicitly, else :data:`DEFAULT_ADAPTIVE_CAP`. The controller starts from what
    the last call group of the same endpoint (base URL and model) in this process learnt, else
    from ``start`` (what the run folder's last run learnt, :func:`learnt_from`).
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
    key = f"{getattr(endpoint, 'base_url', None)} {getattr(endpoint, 'model', None)}"
    controller = AdaptiveController(max_concurrency, settings, key=key, start=start)
    chat.observer = controller.observe
    chat.retry_wait = controller.wait_to_retry
    chat.retry_charge = controller.retry_charge
    return controller
