"""Throughput of the predictions runner against a server with a fixed per-request latency.

    python benchmarks/predictions_throughput.py [--latency 0.2] [--seconds 2] [--levels 1,4,16]
    python benchmarks/predictions_throughput.py --smoke   # a few requests: does it still run?

For each concurrency level c, answers a generated public dataset of c * seconds / latency cases
through the real path (OpenAI client, retries, fsynced journal, run folder) against a local
OpenAI-compatible HTTP server that waits ``latency`` seconds before each reply. Prints requests/s
and the ratio to the ideal c / latency; with refill scheduling the ratio stays near 1. Exits
non-zero when the ratio at the highest level is under ``--target`` (default 0.9).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from eval_assets.model_runs.client import ClientSettings, OpenAIVLMClient
from eval_assets.model_runs.runner import run_model
from eval_assets_tests.fakes.openai_server import OpenAICompatibleServer, Reply
from eval_assets_tests.model_runs.helpers import make_dataset


def measure(level: int, latency: float, seconds: float, work: Path) -> tuple[int, float]:
    """Cases answered and wall time at one concurrency level (fresh dataset and run folder)."""
    n_cases = max(level, round(level * seconds / latency))
    dataset = make_dataset(work / f"ds-{level}", n_frames=1, cases_per_frame=n_cases)
    with OpenAICompatibleServer(default=Reply("yes", delay_s=latency)) as server, \
            OpenAIVLMClient(ClientSettings(base_url=server.base_url, model="fake-model",
                                           max_tokens=8, timeout_s=30)) as client:
        start = time.perf_counter()
        result = run_model(dataset.root, client, work / f"run-{level}",
                           max_concurrency=level, describe=False)
        elapsed = time.perf_counter() - start
        assert len(server.requests) == n_cases, "every case must be asked exactly once"
    if not result.summary.complete:
        raise RuntimeError(f"concurrency {level}: {result.summary.answers.error_counts}")
    return n_cases, elapsed


def main() -> int:
    """Run every level, print the table, check the target at the highest level."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2, help="server delay per request (s)")
    parser.add_argument("--seconds", type=float, default=2.0, help="ideal run time per level (s)")
    parser.add_argument("--levels", default="1,4,16", help="comma-separated concurrency levels")
    parser.add_argument("--target", type=float, default=0.9, help="ratio required at the top")
    parser.add_argument("--smoke", action="store_true",
                        help="levels 1,2 of 0.1 s at 20 ms: checks the script still runs (the "
                             "target is not judged)")
    args = parser.parse_args()
    if args.smoke:
        args.latency, args.seconds, args.levels, args.target = 0.02, 0.1, "1,2", 0.0
    levels = [int(x) for x in args.levels.split(",")]
    print(f"server latency {args.latency * 1000:.0f} ms per request")
    print(f"{'concurrency':>11} {'requests':>8} {'wall s':>7} {'req/s':>7} {'ideal':>7} "
          f"{'ratio':>6}")
    ratio = 0.0
    with tempfile.TemporaryDirectory(prefix="predictions-bench-") as tmp:
        for level in levels:
            n, elapsed = measure(level, args.latency, args.seconds, Path(tmp))
            throughput = n / elapsed
            ideal = level / args.latency
            ratio = throughput / ideal
            print(f"{level:>11} {n:>8} {elapsed:>7.2f} {throughput:>7.2f} {ideal:>7.1f} "
                  f"{ratio:>6.1%}")
    if ratio < args.target:
        print(f"FAIL: ratio {ratio:.1%} at concurrency {levels[-1]} is under {args.target:.0%}")
        return 1
    print(f"ok: ratio at concurrency {levels[-1]} is at least {args.target:.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
