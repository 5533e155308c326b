"""Progress of long loops, reported to whoever is watching (a terminal, a log, or nobody).

The core calls :func:`task` around any loop that can take more than a few seconds (frames, answers,
judge rows). By default nothing is shown; the command line installs a sink that draws a progress
bar with rate and ETA (:mod:`eval_assets.console`). Assets executed in process by the CLI therefore
show their loops in the terminal, while the same code under the Dagster daemon stays silent.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Protocol, TypeVar

T = TypeVar("T")

class Advance(Protocol):
    """Called with the number of items just finished (default 1); safe to call from any thread."""

    def __call__(self, n: int = 1) -> None: ...


class ProgressSink(Protocol):
    """Something that displays loops: opens one bar per task and advances it."""

    def start(self, label: str, total: int | None) -> object:
        """Begin a task of ``total`` items (None: unknown) and return its handle."""
        ...

    def advance(self, handle: object, n: int) -> None:
        """Mark ``n`` more items of the task as done."""
        ...

    def finish(self, handle: object) -> None:
        """The task ended (finished or failed): remove or complete its bar."""
        ...


_lock = threading.Lock()
_sink: ProgressSink | None = None


def install(sink: ProgressSink | None) -> ProgressSink | None:
    """Route every :func:`task` to ``sink`` (None: show nothing); returns the previous sink."""
    global _sink
    with _lock:
        previous, _sink = _sink, sink
    return previous


def _advance_nothing(n: int = 1) -> None:
    """The advance of a loop nobody watches."""


@contextmanager
def task(label: str, total: int | None) -> Iterator[Advance]:
    """A loop of ``total`` items named ``label``; yields the function that advances it."""
    sink = _sink
    if sink is None:
        yield _advance_nothing
        return
    handle = sink.start(label, total)

    def advance(n: int = 1) -> None:
        sink.advance(handle, n)

    try:
        yield advance
    finally:
        sink.finish(handle)


def track(items: Sequence[T], label: str) -> Iterator[T]:
    """Iterate ``items`` while showing ``label`` with a count of those already processed."""
    with task(label, total=len(items)) as advance:
        for item in items:
            yield item
            advance(1)
