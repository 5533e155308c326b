"""Adaptive concurrency against the three paced test servers, over real HTTP (issue 18, item 4).

    python benchmarks/adaptive_concurrency.py           # the targets, about a minute
    python benchmarks/adaptive_concurrency.py --smoke   # tiny sizes, runs end to end only

Each scenario runs the runner's scheduler with an :class:`AdaptiveController` watching one
:class:`ChatClient` (as ``vqa run`` does with no concurrency flag), and prints:

- token bucket (R requests/s, 429 + headers above it): achieved rate / R (target >= 0.90) and
  the share of requests answered 429 (target <= 0.02); then the same bucket sending 429 and
  ``retry-after`` only, shown without a target;
- C slots that queue: median latency / unloaded latency (target <= 1.5) and throughput / the
  slots' throughput C / service time (target >= 0.80);
- unlimited fixed latency, cap 64: throughput / ideal (target >= 0.95), ideal being 64 in flight
  for the whole run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable

from eval_assets.model_runs.concurrency import AdaptiveController, ControllerSettings
from eval_assets.model_runs.runner import _schedule
from eval_assets.openai_chat import ChatClient, RetryPolicy
from eval_assets_tests.fakes.paced_servers import (
    FixedLatencyServer,
    PacedServer,
    SlotServer,
    TokenBucketServer,
)

REQUEST = {"model": "paced", "messages": [{"role": "user", "content": "?"}], "max_tokens": 4}


def drive(server: PacedServer, requests: int, cap: int,
          settings: ControllerSettings) -> tuple[float, list[float], AdaptiveController]:
    """Send ``requests`` calls through the scheduler; (seconds, success latencies, controller)."""
    controller = AdaptiveController(cap, settings)
    latencies: list[float] = []
    policy = RetryPolicy(max_retries=20, backoff_base_s=0.05, backoff_max_s=1.0)
    with ChatClient(server.base_url, timeout_s=60, policy=policy, max_connections=cap) as chat:
        chat.observer = controller.observe

        def task() -> Callable[[], None]:
            def call() -> None:
                result = chat.complete(REQUEST, label="bench", jitter_key=str(time.perf_counter()))
                if result.error_category is None and result.latency_s is not None:
                    latencies.append(result.latency_s)
            return call

        start = time.perf_counter()
        _schedule((task() for _ in range(requests)), cap, controller)
        elapsed = time.perf_counter() - start
    return elapsed, latencies, controller


def main(argv: list[str] | None = None) -> int:
    """Run the three scenarios; exit 1 when a target is missed (not in smoke mode)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes; judge no target")
    args = parser.parse_args(argv)
    scale = 0.1 if args.smoke else 1.0
    settings = ControllerSettings(cooldown_s=0.5 if args.smoke else 2.0)
    ok = True

    rate = 40.0
    with TokenBucketServer(rate=rate, burst=20, latency_s=0.05) as bucket:
        n = max(20, int(600 * scale))
        elapsed, answered, ctl = drive(bucket, n, 64, settings)
    achieved = len(answered) / elapsed  # answered calls only: one that gave up is no throughput
    share = bucket.refused / max(1, bucket.served + bucket.refused)
    print(f"token bucket R={rate:g}/s: {achieved:.1f} req/s = {achieved / rate:.3f} of R, "
          f"429 share {share:.4f} ({bucket.refused} of {bucket.served + bucket.refused}); "
          f"limit {ctl.history().final_limit}, paced {ctl.history().paced_by_headers}")
    ok &= achieved / rate >= 0.90 and share <= 0.02

    # The same bucket without pacing headers (only 429 + retry-after): shown, no target.
    with TokenBucketServer(rate=rate, burst=20, latency_s=0.05, headers=False) as bare:
        n = max(20, int(600 * scale))
        elapsed, answered, ctl = drive(bare, n, 64, settings)
    share = bare.refused / max(1, bare.served + bare.refused)
    print(f"token bucket R={rate:g}/s, 429s alone (no x-ratelimit headers): "
          f"{len(answered) / elapsed / rate:.3f} of R ({n - len(answered)} calls gave up), "
          f"429 share {share:.4f}; "
          f"{ctl.history().retry_episodes} retry episodes (no target)")

    slots, service = 4, 0.1
    with SlotServer(slots=slots, service_s=service) as queue:
        n = max(20, int(500 * scale))
        elapsed, latencies, ctl = drive(queue, n, 64, settings)
    ratio = statistics.median(latencies) / service
    throughput = n / elapsed / (slots / service)
    print(f"slot server C={slots}, {service:g} s: median latency {ratio:.3f}x unloaded, "
          f"throughput {throughput:.3f} of the slots'; limit {ctl.history().final_limit}, "
          f"latency back-offs {ctl.history().latency_backoffs}")
    ok &= ratio <= 1.5 and throughput >= 0.80

    # Long enough a latency that this process's own overhead at 64 in flight stays small.
    latency = 0.5
    with FixedLatencyServer(latency_s=latency) as free:
        n = max(64, int(5120 * scale))
        elapsed, _, ctl = drive(free, n, 64, settings)
    ideal = n / (-(-n // 64) * latency)
    print(f"fixed latency {latency:g} s, cap 64: {n / elapsed:.1f} req/s = "
          f"{n / elapsed / ideal:.3f} of ideal ({ideal:.0f}/s); limit {ctl.history().final_limit}")
    ok &= n / elapsed / ideal >= 0.95

    if args.smoke:
        return 0
    print("all targets met" if ok else "a target was missed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
