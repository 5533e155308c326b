"""What a person sees in the terminal: one line per finished stage, bars for long loops, errors.

Everything goes to standard error so that standard output keeps only results (``report: PATH``)
for scripts. Bars are drawn by rich only when standard error is a terminal; piped to a file or a
CI log they become one summary line per loop instead of hundreds of redraws.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from eval_assets import progress

_LOOP_LINE_MIN_S = 2.0
"""A loop that took less than this prints no summary line: it is not worth a line of its own."""


def make_console(stream: IO[str] | None = None) -> Console:
    """The stderr console every command writes to (no colour codes when not a terminal)."""
    return Console(file=stream or sys.stderr, highlight=False, soft_wrap=True)


def format_seconds(seconds: float) -> str:
    """``0.4 s``, ``12.3 s``, ``2 min 05 s``: short and aligned enough for a log line."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s"


@dataclass
class _Loop:
    label: str
    total: int | None
    started: float
    done: int = 0
    task_id: TaskID | None = None


class _RateColumn(ProgressColumn):
    """Items per second of a task, from rich's own speed estimate."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"{speed:.1f}/s" if speed else "-/s", style="progress.data.speed")


class RichProgressSink:
    """A :class:`eval_assets.progress.ProgressSink` drawing rich bars with count, rate and ETA.

    When the console is not a terminal there are no bars; a loop that lasted more than a couple of
    seconds prints one line with its count, time and rate when it ends.
    """

    def __init__(self, console: Console) -> None:
        self.console = console
        self._lock = threading.Lock()
        self._progress: Progress | None = None
        self._active = 0

    def _bars(self) -> Progress:
        if self._progress is None:
            self._progress = Progress(
                TextColumn("  {task.description}"), BarColumn(bar_width=30),
                MofNCompleteColumn(), _RateColumn(), TimeElapsedColumn(), TextColumn("ETA"),
                TimeRemainingColumn(), console=self.console, transient=True)
            self._progress.start()
        return self._progress

    def start(self, label: str, total: int | None) -> object:
        """Open a bar (terminal) or start the clock (log) for one loop."""
        loop = _Loop(label, total, time.perf_counter())
        if self.console.is_terminal:
            with self._lock:
                loop.task_id = self._bars().add_task(escape(label), total=total)
                self._active += 1
        return loop

    def advance(self, handle: object, n: int) -> None:
        """Count ``n`` more items done."""
        assert isinstance(handle, _Loop)
        with self._lock:
            handle.done += n
            if handle.task_id is not None and self._progress is not None:
                self._progress.advance(handle.task_id, n)

    def finish(self, handle: object) -> None:
        """Remove the bar; print the loop's summary when it took a noticeable time."""
        assert isinstance(handle, _Loop)
        elapsed = time.perf_counter() - handle.started
        with self._lock:
            if handle.task_id is not None and self._progress is not None:
                self._progress.remove_task(handle.task_id)
                self._active -= 1
                if self._active == 0:
                    self._progress.stop()
                    self._progress = None
        if elapsed >= _LOOP_LINE_MIN_S and handle.done:
            rate = handle.done / elapsed
            total = f"/{handle.total}" if handle.total is not None else ""
            self.console.print(f"    {escape(handle.label)}: {handle.done}{total} in "
                               f"{format_seconds(elapsed)} ({rate:.1f}/s)")


@contextmanager
def showing_progress(console: Console) -> Iterator[RichProgressSink]:
    """Route every :func:`eval_assets.progress.task` of the block to bars on ``console``."""
    sink = RichProgressSink(console)
    previous = progress.install(sink)
    try:
        yield sink
    finally:
        progress.install(previous)


def print_error(console: Console, message: str, *, hint: str = "") -> None:
    """An error a person can act on: the message (file, field, fix) and an optional hint."""
    console.print(f"[bold red]error:[/] {escape(message)}")
    if hint:
        console.print(f"  {escape(hint)}", style="dim")
