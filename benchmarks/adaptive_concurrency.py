"""Adaptive concurrency and pacing against paced test servers over real HTTP, quiet and beside a
busy client (issue 18 item 4, issue 27 item 2, issue 42 item 6).

    python benchmarks/adaptive_concurrency.py                  # quiet, then beside 2 CPU hogs
    python benchmarks/adaptive_concurrency.py --hogs 8 --scale 0.5
    python benchmarks/adaptive_concurrency.py --only quiet --scenario silent --scenario slots
    python benchmarks/adaptive_concurrency.py --smoke          # tiny sizes, quiet only, no target

Each scenario runs the runner's scheduler with an :class:`AdaptiveController` watching one
:class:`ChatClient` with the default retry policy (as ``vqa run`` does with no concurrency flag
and no retry setting), and reads its figures from the server's own log (:class:`PacedServer`):

- ``slots``: 4 slots of 0.2 s (ideal 20 answers/s). Quiet: answers/s >= 0.90 of ideal and the
  median latency at the server (queue wait + service) <= 1.5x the unloaded 0.2 s; in every mode
  answers/s >= 0.90 of the best fixed concurrency (4, 6, 8, 16 in flight) measured beside it;
- ``headers``: a 50/s token bucket with OpenAI's pacing headers: answers/s >= 0.90 of 50/s;
- ``503``: the slots answering 30 % of requests at once 503 with ``Retry-After: 2``: answers/s
  >= 0.60 of the slots' 20/s, and no call gives up;
- ``silent``: token buckets (a quarter second's worth of burst, 2 at least) whose 429s give
  no usable hint: no header (``none``), ``Retry-After: 0`` (``zero``), every other 429 with and
  without an exact ``Retry-After`` (``alternate``), at 5, 20 and 50/s (busy mode: 20/s), and at
  20/s with no header and a 0.3 s or an instant service, each for 30 s of the limit (60 s at
  5/s): answers/s >= 0.90 of the limit, <= 5 % of replies 429, no call gives up;
- ``groups``: three call groups in turn against one 20/s limiter without headers, each with a
  new controller for the same endpoint (the next Dagster step, the next run): the second and
  third start from the rate the first learnt: each >= 0.90 of the limit with <= 2 % 429s;
- ``rpm`` (quiet only): LiteLLM's 6 requests per calendar minute, 429s without Retry-After,
  13 calls with the default retry policy (a few minutes): every call answered;
- ``unlimited`` (quiet only): fixed latency, cap 64: >= 0.95 of 64 in flight for the whole run.

Busy mode starts ``--hogs`` CPU-bound processes (default 2) beside this one: the client's own
threads then wait for CPU, which must not read as the server's queue. The exit status is 1 when
a target is missed (not in smoke mode).
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from eval_assets.model_runs.concurrency import AdaptiveController, forget_learnt
from eval_assets.model_runs.scheduling import schedule_calls
from eval_assets.openai_chat import ChatClient
from eval_assets.retry import RetryPolicy
from eval_assets_tests.fakes.paced_servers import (
    FixedLatencyServer,
    FixedWindowServer,
    FlakySlotServer,
    PacedServer,
    SlotServer,
    TokenBucketServer,
)

REQUEST = {"model": "paced", "messages": [{"role": "user", "content": "?"}], "max_tokens": 4}
FIXED = (4, 6, 8, 16)


@dataclass
class Drive:
    """One scheduler run: seconds, calls answered, calls that gave up, the controller."""

    elapsed: float
    answered: int
    gave_up: int
    controller: AdaptiveController | None

    def limit(self) -> str:
        """The controller's final limit and learned rate, for the printed line."""
        if self.controller is None:
            return "fixed"
        history = self.controller.history()
        rate = (f", learned {history.learned_rate_per_s:.2f}/s"
                if history.learned_rate_per_s is not None else "")
        return f"limit {history.final_limit} (max {history.max_limit}){rate}"


POLICY = RetryPolicy()
"""The retry policy of every call: the default (the smoke mode's backoffs are shorter)."""


def drive(server: PacedServer, requests: int, cap: int, adaptive: bool = True,
          key: str | None = None) -> Drive:
    """Send ``requests`` calls through the scheduler, adaptive under ``cap`` or ``cap`` fixed;
    ``key``: the endpoint whose learnt pacing the controller starts from and leaves behind."""
    controller = AdaptiveController(cap, key=key) if adaptive else None
    answered = gave_up = 0
    with ChatClient(server.base_url, timeout_s=60, max_connections=cap, policy=POLICY) as chat:
        if controller is not None:
            chat.observer = controller.observe
            chat.retry_wait = controller.wait_to_retry
            chat.retry_charge = controller.retry_charge

        def task() -> Callable[[], None]:
            def call() -> None:
                nonlocal answered, gave_up
                result = chat.complete(REQUEST, label="bench", jitter_key=str(time.perf_counter()))
                if result.error_category is None:
                    answered += 1
                else:
                    gave_up += 1
            return call

        start = time.perf_counter()
        schedule_calls((task() for _ in range(requests)), cap, controller)
        elapsed = time.perf_counter() - start
    return Drive(elapsed, answered, gave_up, controller)


def _spin() -> None:
    while True:
        pass


@contextlib.contextmanager
def hogs(count: int) -> Iterator[None]:
    """``count`` CPU-bound processes beside this one meanwhile."""
    procs = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(count)]
    for proc in procs:
        proc.start()
    try:
        yield
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.join(timeout=5)


def rate_between(server: PacedServer, start: float, end: float) -> tuple[float, float, int]:
    """From the server's log between ``start`` and ``end`` (monotonic): answers/s (first reply
    to last 200), the share of 429s and the number of replies."""
    with server.lock:
        log = [(t, s) for t, s, _ in server.log if start <= t <= end]
    served = [t for t, s in log if s == 200]
    rate = len(served) / (served[-1] - log[0][0]) if len(served) > 1 else 0.0
    return rate, sum(s == 429 for _, s in log) / max(1, len(log)), len(log)


@dataclass(frozen=True)
class Mode:
    """How a mode runs: its name, the share of the full sizes, whether the machine is quiet."""

    name: str
    scale: float
    quiet: bool
    smoke: bool
    fixed_levels: tuple[int, ...]

    def n(self, full: float, least: int) -> int:
        """A scenario's number of calls: ``full`` scaled, at least ``least``."""
        return max(least, int(full * self.scale))


Check = Callable[[str, bool], None]


def slots_scenario(mode: Mode, check: Check) -> None:
    """4 slots of 0.2 s: throughput against ideal and fixed levels, latency at the server."""
    slots, service = 4, 0.2
    ideal = slots / service
    n = mode.n(300, 20)
    fixed: dict[int, float] = {}
    for concurrency in mode.fixed_levels:
        with SlotServer(slots=slots, service_s=service) as srv:
            drive(srv, n, concurrency, adaptive=False)
        fixed[concurrency] = srv.answers_per_s()
    with SlotServer(slots=slots, service_s=service) as srv:
        run = drive(srv, n, 64)
    rate = srv.answers_per_s()
    best = max(fixed.values())
    waits = sorted(w for _, s, w in srv.log if s == 200)
    latency = service + statistics.median(waits)
    fixed_text = ", ".join(f"{c}: {r:.1f}" for c, r in fixed.items())
    check(f"slots {slots} x {service:g} s: adaptive {rate:.1f}/s = {rate / ideal:.3f} of ideal, "
          f"{rate / best:.3f} of the best fixed ({fixed_text} /s); median latency at the server "
          f"{latency:.3f} s = {latency / service:.2f}x unloaded; {run.limit()}",
          rate >= 0.9 * best and (not mode.quiet or (rate >= 0.9 * ideal
                                                     and latency <= 1.5 * service)))


def headers_scenario(mode: Mode, check: Check) -> None:
    """A 50/s token bucket with OpenAI's pacing headers."""
    limit = 50.0
    with TokenBucketServer(rate=limit, burst=20, latency_s=0.05) as srv:
        run = drive(srv, mode.n(750, 30), 64)
    rate = srv.answers_per_s()
    check(f"{limit:g}/s limit with headers: {rate:.1f}/s = {rate / limit:.3f} of the limit, 429 "
          f"share {srv.share(429):.3f}, {run.gave_up} gave up; {run.limit()}",
          rate >= 0.9 * limit and run.gave_up == 0)


def flaky_scenario(mode: Mode, check: Check) -> None:
    """The slots failing 30 % of requests with 503 and Retry-After: 2."""
    slots, service = 4, 0.2
    ideal = slots / service
    with FlakySlotServer(slots=slots, service_s=service, error_share=0.3,
                         retry_after="2") as srv:
        run = drive(srv, mode.n(300, 20), 64)
    rate = srv.answers_per_s()
    check(f"30 % 503 with Retry-After: 2: {rate:.1f}/s = {rate / ideal:.3f} of the slots' "
          f"{ideal:g}/s, 503 share {srv.share(503):.3f}, {run.gave_up} gave up; {run.limit()}",
          rate >= 0.6 * ideal and run.gave_up == 0)


def burst(limit: float) -> int:
    """A limiter's burst: a quarter second's worth, 2 at least."""
    return max(2, int(limit / 4))


SILENT_KINDS = {"none": "no header", "zero": "Retry-After: 0",
                "alternate": "Retry-After on every other 429"}


def silent_scenario(mode: Mode, check: Check) -> None:
    """Token buckets whose 429s give no usable hint, at 5-50/s and three service times."""
    cases: list[tuple[str, float, float]] = [
        (kind, rate, 0.05) for kind in SILENT_KINDS
        for rate in ((5.0, 20.0, 50.0) if mode.quiet else (20.0,))]
    cases += [("none", 20.0, 0.3), ("none", 20.0, 0.0)]
    for kind, limit, service in cases:
        # At least 30 s of the limit (60 s at 5/s): the first contact's burst of 429s, before
        # anything is known, is then a small share.
        n = mode.n(max(limit * 30, 300), 30)
        with TokenBucketServer(rate=limit, burst=burst(limit), latency_s=service,
                               headers=False, retry_after=kind) as srv:
            run = drive(srv, n, 64)
        rate, share = srv.answers_per_s(), srv.share(429)
        check(f"{limit:g}/s limit, {SILENT_KINDS[kind]}, service {service:g} s: {rate:.1f}/s = "
              f"{rate / limit:.3f} of the limit, 429 share {share:.3f} ({srv.refused} of "
              f"{len(srv.log)}), {run.gave_up} gave up; {run.limit()}",
              rate >= 0.9 * limit and share <= 0.05 and run.gave_up == 0)


def groups_scenario(mode: Mode, check: Check) -> None:
    """Three call groups in turn, each with a new controller for the same endpoint."""
    limit = 20.0
    key = "benchmark groups"
    forget_learnt(key)
    with TokenBucketServer(rate=limit, burst=burst(limit), latency_s=0.05, headers=False,
                           retry_after="none") as srv:
        figures = []
        gave_up = 0
        for _ in range(3):
            start = time.monotonic()
            run = drive(srv, mode.n(400, 30), 64, key=key)
            figures.append(rate_between(srv, start, time.monotonic()))
            gave_up += run.gave_up
    forget_learnt(key)
    text = "; ".join(f"group {i + 1}: {r:.1f}/s = {r / limit:.3f}, 429 share {s:.3f} of {n}"
                     for i, (r, s, n) in enumerate(figures))
    later = figures[1:]
    check(f"{limit:g}/s limit without headers, 3 call groups: {text}; {gave_up} gave up",
          all(r >= 0.9 * limit and s <= 0.02 for r, s, _ in later) and gave_up == 0)


def rpm_scenario(mode: Mode, check: Check) -> None:
    """LiteLLM's requests per minute, default retry policy: every call answered."""
    per_window, window = (3, 5.0) if mode.smoke else (6, 60.0)
    n = 7 if mode.smoke else 13
    srv = FixedWindowServer(per_window=per_window, window_s=window)
    with srv:
        run = drive(srv, n, 64)
    check(f"{per_window} per {window:g} s window (LiteLLM's rpm), {n} calls: {run.answered} "
          f"answered, {run.gave_up} gave up in {run.elapsed:.0f} s, 429 share "
          f"{srv.share(429):.3f} ({srv.refused} of {len(srv.log)}), at most "
          f"{srv.most_in_a_window} in a window; {run.limit()}",
          run.gave_up == 0 and run.answered == n)


def unlimited_scenario(mode: Mode, check: Check) -> None:
    """Unlimited fixed latency, cap 64."""
    # Long enough a latency that this process's own overhead at 64 in flight stays small.
    latency = 0.5
    with FixedLatencyServer(latency_s=latency) as srv:
        n = mode.n(5120, 64)
        run = drive(srv, n, 64)
    ideal_free = n / (-(-n // 64) * latency)
    rate = n / run.elapsed
    check(f"fixed latency {latency:g} s, cap 64: {rate:.1f}/s = {rate / ideal_free:.3f} of "
          f"ideal ({ideal_free:.0f}/s); {run.limit()}", rate >= 0.95 * ideal_free)


SCENARIOS: dict[str, tuple[Callable[[Mode, Check], None], bool]] = {
    # name: (scenario, whether it runs in busy mode too)
    "slots": (slots_scenario, True),
    "headers": (headers_scenario, True),
    "503": (flaky_scenario, True),
    "silent": (silent_scenario, True),
    "groups": (groups_scenario, True),
    "rpm": (rpm_scenario, False),
    "unlimited": (unlimited_scenario, False),
}


def run_mode(mode: Mode, only: list[str] | None) -> bool:
    """The mode's scenarios (those named in ``only``, when given); True when each met its
    target."""
    ok = True

    def check(line: str, met: bool) -> None:
        nonlocal ok
        ok &= met
        print(f"[{mode.name}] {line} {'ok' if met else 'MISSED'}", flush=True)

    for name, (scenario, busy_too) in SCENARIOS.items():
        if (only and name not in only) or not (mode.quiet or busy_too):
            continue
        scenario(mode, check)
    return ok


def main(argv: list[str] | None = None) -> int:
    """Run the scenarios quiet and busy; exit 1 when a target is missed (not in smoke mode)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes; judge no target")
    parser.add_argument("--scale", type=float, default=1.0, help="share of the full sizes")
    parser.add_argument("--hogs", type=int, default=None,
                        help="CPU-bound processes beside the client in busy mode (default 2; "
                        "0: no busy mode, the smoke mode's default)")
    parser.add_argument("--only", choices=("quiet", "busy"), help="run one mode")
    parser.add_argument("--scenario", action="append", choices=sorted(SCENARIOS),
                        help="run this scenario (repeatable; default: all)")
    args = parser.parse_args(argv)
    global POLICY
    scale = 0.05 if args.smoke else args.scale
    if args.smoke:
        POLICY = RetryPolicy(backoff_base_s=0.05, backoff_max_s=0.5)
    count = args.hogs if args.hogs is not None else (0 if args.smoke else 2)
    # The smoke mode only shows that every scenario runs: one fixed level beside the adaptive.
    levels = (4,) if args.smoke else FIXED
    ok = True
    if args.only != "busy":
        ok &= run_mode(Mode("quiet", scale, True, args.smoke, levels), args.scenario)
    if args.only != "quiet" and count > 0:
        with hogs(count):
            ok &= run_mode(Mode(f"busy, {count} hogs", scale, False, args.smoke, levels),
                           args.scenario)
    if args.smoke:
        return 0
    print("all targets met" if ok else "a target was missed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
