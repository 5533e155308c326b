"""Starting model calls as slots free up: a fixed number in flight, or an adaptive controller's."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TypeVar

from eval_assets.model_runs.concurrency import AdaptiveController

T = TypeVar("T")
R = TypeVar("R")

Gate = Callable[[Iterator[Callable[[], None]]], Iterator[Callable[[], None]]]
"""What lets a stage's calls start (a run's budget:
:meth:`eval_assets.model_runs.budget.Budget.gate`): given the tasks, yields those that may run,
lazily."""


def schedule_calls(tasks: Iterator[Callable[[], None]], max_concurrency: int,
              controller: AdaptiveController | None = None) -> None:
    """Run ``tasks`` with ``max_concurrency`` in flight, starting one as soon as one finishes.

    With a ``controller`` the number in flight is its current limit (at most its cap) and each
    start waits for its pacing; at the end the controller leaves what it learnt for the next
    call group of its endpoint (:meth:`AdaptiveController.remember`). Tasks are pulled lazily,
    so an interruption (Ctrl-C, a failing task) starts nothing new; the calls already in flight
    are let finish and journal their records before it propagates.
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
        if controller is not None:
            controller.remember()


class PacedGate:
    """A stage's gate (or none) whose calls a run's controller also paces: :func:`ask_each`
    starts them at its limit and pace, as the run's answers were (a later call group of the
    endpoint starts from what they learnt, not with a burst of 429s)."""

    def __init__(self, controller: AdaptiveController, inner: Gate | None = None) -> None:
        self.controller = controller
        self.inner = inner

    def __call__(self, tasks: Iterator[Callable[[], None]]) -> Iterator[Callable[[], None]]:
        return tasks if self.inner is None else self.inner(tasks)


def ask_each(items: Sequence[T], call: Callable[[T], R], keep: Callable[[R], None],
             max_concurrency: int, gate: Gate | None = None) -> int:
    """``keep(call(item))`` for each of ``items`` with ``max_concurrency`` in flight, each
    started only when ``gate`` lets it; returns how many were asked.

    Without a gate the replies are kept in the order of ``items``; through one, as they come
    (the gate pulls the calls one at a time, as each fits). Through a :class:`PacedGate` its
    controller sets the number in flight and paces the starts.
    """
    if gate is None:
        with ThreadPoolExecutor(max_workers=max(1, max_concurrency),
                                thread_name_prefix="ask") as pool:
            for reply in pool.map(call, items):
                keep(reply)
        return len(items)
    asked = 0
    lock = threading.Lock()

    def task(item: T) -> Callable[[], None]:
        def run() -> None:
            nonlocal asked
            keep(call(item))
            with lock:
                asked += 1
        return run

    controller = gate.controller if isinstance(gate, PacedGate) else None
    schedule_calls(gate(task(item) for item in items), max(1, max_concurrency), controller)
    return asked
