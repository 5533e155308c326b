"""Adaptive concurrency against paced test servers over real HTTP, quiet and beside a busy client
(issue 18 item 4, issue 27 item 2).

    python benchmarks/adaptive_concurrency.py                  # quiet, then beside 2 CPU hogs
    python benchmarks/adaptive_concurrency.py --hogs 8 --scale 0.5
    python benchmarks/adaptive_concurrency.py --smoke          # tiny sizes, quiet only, no target

Each scenario runs the runner's scheduler with an :class:`AdaptiveController` watching one
:class:`ChatClient` with the default retry policy (as ``vqa run`` does with no concurrency flag
and no retry setting), and reads its figures from the server's own log (:class:`PacedServer`):

- slots: 4 slots of 0.2 s (ideal 20 answers/s). Quiet: answers/s >= 0.90 of ideal; in every
  mode also >= 0.90 of the best fixed concurrency (4, 6, 8, 16 in flight) measured beside it;
- 50/s limit: a token bucket with OpenAI's pacing headers: answers/s >= 0.90 of 50/s;
- 503s: the slots answering 30 % of requests at once 503 with ``Retry-After: 2``: answers/s
  >= 0.60 of the slots' 20/s, and no call gives up;
- ``Retry-After: 0``, and a limiter with no header at all (40/s): <= 5 % of replies 429 and no
  call gives up;
- quiet only: unlimited fixed latency, cap 64: >= 0.95 of 64 in flight for the whole run.

Busy mode starts ``--hogs`` CPU-bound processes (default 2) beside this one: the client's own
threads then wait for CPU, which must not read as the server's queue.
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

from eval_assets.model_runs.concurrency import AdaptiveController
from eval_assets.model_runs.scheduling import schedule_calls
from eval_assets.openai_chat import ChatClient, RetryPolicy
from eval_assets_tests.fakes.paced_servers import (
    FixedLatencyServer,
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
        rate = (f", learned {history.learned_rate_per_s:.1f}/s"
                if history.learned_rate_per_s is not None else "")
        return f"limit {history.final_limit} (max {history.max_limit}){rate}"


POLICY = RetryPolicy()
"""The retry policy of every call: the default (the smoke mode's backoffs are shorter)."""


def drive(server: PacedServer, requests: int, cap: int, adaptive: bool = True) -> Drive:
    """Send ``requests`` calls through the scheduler, adaptive under ``cap`` or ``cap`` fixed."""
    controller = AdaptiveController(cap) if adaptive else None
    answered = gave_up = 0
    with ChatClient(server.base_url, timeout_s=60, max_connections=cap, policy=POLICY) as chat:
        if controller is not None:
            chat.observer = controller.observe
            chat.retry_wait = controller.wait_to_retry

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


def run_mode(mode: str, scale: float, quiet: bool, fixed_levels: tuple[int, ...] = FIXED) -> bool:
    """Every scenario once; True when each met its target."""
    ok = True

    def check(line: str, met: bool) -> None:
        nonlocal ok
        ok &= met
        print(f"[{mode}] {line} {'ok' if met else 'MISSED'}", flush=True)

    slots, service = 4, 0.2
    ideal = slots / service
    n = max(20, int(300 * scale))
    fixed: dict[int, float] = {}
    for concurrency in fixed_levels:
        with SlotServer(slots=slots, service_s=service) as srv:
            drive(srv, n, concurrency, adaptive=False)
        fixed[concurrency] = srv.answers_per_s()
    with SlotServer(slots=slots, service_s=service) as srv:
        run = drive(srv, n, 64)
    rate = srv.answers_per_s()
    best = max(fixed.values())
    waits = statistics.median(w for _, s, w in srv.log if s == 200)
    fixed_text = ", ".join(f"{c}: {r:.1f}" for c, r in fixed.items())
    check(f"slots {slots} x {service:g} s: adaptive {rate:.1f}/s = {rate / ideal:.3f} of ideal, "
          f"{rate / best:.3f} of the best fixed ({fixed_text} /s); server queue wait median "
          f"{waits * 1000:.0f} ms; {run.limit()}",
          rate >= 0.9 * best and (not quiet or rate >= 0.9 * ideal))

    limit = 50.0
    with TokenBucketServer(rate=limit, burst=20, latency_s=0.05) as srv:
        run = drive(srv, max(30, int(750 * scale)), 64)
    rate = srv.answers_per_s()
    check(f"{limit:g}/s limit with headers: {rate:.1f}/s = {rate / limit:.3f} of the limit, 429 "
          f"share {srv.share(429):.3f}, {run.gave_up} gave up; {run.limit()}",
          rate >= 0.9 * limit and run.gave_up == 0)

    with FlakySlotServer(slots=slots, service_s=service, error_share=0.3,
                         retry_after="2") as srv:
        run = drive(srv, max(20, int(300 * scale)), 64)
    rate = srv.answers_per_s()
    check(f"30 % 503 with Retry-After: 2: {rate:.1f}/s = {rate / ideal:.3f} of the slots' "
          f"{ideal:g}/s, 503 share {srv.share(503):.3f}, {run.gave_up} gave up; {run.limit()}",
          rate >= 0.6 * ideal and run.gave_up == 0)

    for kind, label in (("zero", "Retry-After: 0"), ("none", "no pacing header at all")):
        bucket = 40.0
        with TokenBucketServer(rate=bucket, burst=20, latency_s=0.05, headers=False,
                               retry_after=kind) as srv:
            run = drive(srv, max(30, int(600 * scale)), 64)
        share = srv.share(429)
        check(f"{bucket:g}/s limit, {label}: {srv.answers_per_s():.1f}/s, 429 share "
              f"{share:.3f} ({srv.refused} of {len(srv.log)}), {run.gave_up} gave up; "
              f"{run.limit()}", share <= 0.05 and run.gave_up == 0)

    if quiet:
        # Long enough a latency that this process's own overhead at 64 in flight stays small.
        latency = 0.5
        with FixedLatencyServer(latency_s=latency) as srv:
            n = max(64, int(5120 * scale))
            run = drive(srv, n, 64)
        ideal_free = n / (-(-n // 64) * latency)
        rate = n / run.elapsed
        check(f"fixed latency {latency:g} s, cap 64: {rate:.1f}/s = {rate / ideal_free:.3f} of "
              f"ideal ({ideal_free:.0f}/s); {run.limit()}", rate >= 0.95 * ideal_free)
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
        ok &= run_mode("quiet", scale, quiet=True, fixed_levels=levels)
    if args.only != "quiet" and count > 0:
        with hogs(count):
            ok &= run_mode(f"busy, {count} hogs", scale, quiet=False, fixed_levels=levels)
    if args.smoke:
        return 0
    print("all targets met" if ok else "a target was missed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
