"""The cross-process file lock, against a second real process holding it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from eval_assets.file_lock import LockBusy, exclusive_lock, lock_holder

# Holds the lock at argv[1], says so, and keeps it until the file argv[2] appears.
HOLDER = """
import sys, time
from pathlib import Path
from eval_assets.file_lock import exclusive_lock
with exclusive_lock(Path(sys.argv[1])):
    print("held", flush=True)
    while not Path(sys.argv[2]).exists():
        time.sleep(0.01)
"""


@contextmanager
def holder_process(lock: Path, release: Path) -> Iterator[subprocess.Popen[str]]:
    """A second Python process that holds ``lock`` until ``release`` exists."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock), str(release)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        release.touch()
        proc.kill()
        proc.wait(timeout=10)


def test_a_held_lock_refuses_without_waiting_and_names_the_holder(tmp_path: Path) -> None:
    lock = tmp_path / "sub" / "x.lock"
    with holder_process(lock, tmp_path / "release") as holder:
        with pytest.raises(LockBusy) as busy, exclusive_lock(lock, wait=False):
            pass
        assert busy.value.holder == holder.pid
        assert busy.value.path == lock
        assert f"process {holder.pid}" in str(busy.value)


def test_a_waiter_is_told_the_holder_once_and_gets_the_lock_when_it_is_released(
        tmp_path: Path) -> None:
    lock, release = tmp_path / "x.lock", tmp_path / "release"
    told: list[int | None] = []
    acquired = threading.Event()

    def contend() -> None:
        with exclusive_lock(lock, on_wait=told.append):
            acquired.set()

    with holder_process(lock, release) as holder:
        waiter = threading.Thread(target=contend)
        waiter.start()
        # The waiter blocks while the other process holds the lock.
        assert not acquired.wait(timeout=0.5)
        assert told == [holder.pid]
        release.touch()
        assert acquired.wait(timeout=10)
        waiter.join(timeout=10)
        holder.wait(timeout=10)
    assert told == [holder.pid]
    assert lock_holder(lock) == os.getpid()  # the last holder's pid (ours) stays in the file


def test_a_killed_holder_leaves_no_stale_lock(tmp_path: Path) -> None:
    lock = tmp_path / "x.lock"
    with holder_process(lock, tmp_path / "never") as holder:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
        started = time.monotonic()
        with exclusive_lock(lock, wait=False):
            assert lock_holder(lock) == os.getpid()
        assert time.monotonic() - started < 1
