"""Starting model calls as slots free up: a fixed number in flight, or an adaptive controller's."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from eval_assets.model_runs.concurrency import AdaptiveController


def schedule_calls(tasks: Iterator[Callable[[], None]], max_concurrency: int,
              controller: AdaptiveController | None = None) -> None:
    """Run ``tasks`` with ``max_concurrency`` in flight, starting one as soon as one finishes.

    With a ``controller`` the number in flight is its current limit (at most its cap) and each
    start waits for its pacing. Tasks are pulled lazily, so an interruption (Ctrl-C, a failing
    task) starts nothing new; the calls already in flight are let finish and journal their
    records before it propagates.
    """
    workers = max_concurrency if controller is None else controller.cap
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="vlm")
    in_flight: set[Future[None]] = set()

    def settle(timeout: float | None) -> None:
        nonlocal in_flight
        if not in_flight:
            time.sleep(timeout or 0.0)
            return
        done, in_flight = wait(in_flight, timeout=timeout, return_when=FIRST_COMPLETED)
        for future in done:
            future.result()

    try:
        for task in tasks:
            while True:
                limit = max_concurrency if controller is None else controller.slots
                if len(in_flight) >= limit:
                    # A controller's slots also grow when a request starts waiting to retry:
                    # look again every 0.1 s, not only when one finishes.
                    settle(None if controller is None else 0.1)
                    continue
                # acquire() takes the turn when it answers 0 (a paced slot, or the probe of a
                # rate limiter that stopped starts).
                delay = 0.0 if controller is None else controller.acquire()
                if delay <= 0:
                    break
                settle(delay)
            in_flight.add(pool.submit(task))
        while in_flight:
            settle(None)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
