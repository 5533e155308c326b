"""Cross-process exclusive locks on a file (``fcntl.flock``), with the holder's pid inside.

A lock is held by an open file description, so it is released when its holder closes the file
or dies (a killed process leaves no stale lock behind), and two opens in one process are two
contenders. The file itself is never deleted or replaced: a replaced file is a new inode, and a
process that opened the new one would hold "the" lock beside one that still holds the old.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from pathlib import Path


class LockBusy(Exception):
    """Another process holds the lock at ``path`` (its pid ``holder``, when it wrote one)."""

    def __init__(self, path: Path, holder: int | None) -> None:
        self.path = path
        self.holder = holder
        who = f"process {holder}" if holder is not None else "another process"
        super().__init__(f"{path} is locked by {who}")


def lock_holder(path: Path) -> int | None:
    """The pid the lock file at ``path`` names, or ``None`` (no file, empty or unreadable).

    Only meaningful while the lock is held: the last holder's pid stays in the file after it
    ends, and a new holder writes its own just after it takes the lock.
    """
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


@contextlib.contextmanager
def exclusive_lock(path: Path, *, wait: bool = True,
                   on_wait: Callable[[int | None], None] | None = None) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing) for the ``with`` block.

    When another process holds it: with ``wait`` call ``on_wait(holder_pid)`` once and block
    until it is free; without, raise :class:`LockBusy` naming the holder. The holder's pid is
    written into the file once the lock is taken.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = lock_holder(path)
            if not wait:
                raise LockBusy(path, holder) from None
            if on_wait is not None:
                on_wait(holder)
            fcntl.flock(fd, fcntl.LOCK_EX)
        # Written in place, not atomically (see the module docstring: the inode is the lock).
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        yield
    finally:
        os.close(fd)  # releases the lock
