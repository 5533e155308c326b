"""Watching a recordings folder: when a file is finished, and what its content is.

A recorder writes a ``.db`` for minutes. A file is *settled* when nothing has written to it for a
while (its modification time is older than the quiet period) and SQLite has nothing pending
(:mod:`eval_assets.recording.sqlite_state`: no uncommitted rollback journal, no non-empty WAL, no
writer's lock). The recordings sensor also requires the same size and modification time at two
of its ticks at least the quiet period apart (a copy that preserves an old mtime is caught so).
Only then is it read, validated and hashed; until then it is neither a partition nor corrupt,
just not finished.

Hashing a large recording on every look would be wasteful, so :class:`ContentHashes` remembers
each file's hash by (size, modification time) and hashes again only when either changes.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

from eval_assets.hashing import file_sha256
from eval_assets.jsonio import read_json, write_json
from eval_assets.recording.sqlite_state import write_in_progress

DEFAULT_QUIET_S = 30.0
"""Seconds a recording must stay unchanged before it counts as finished (``$EVAL_ASSETS_QUIET_S``
overrides it). Longer than a recorder's pauses: a writer that closes its file during a pause
leaves a valid but half recording that nothing else tells from a finished one."""


FUTURE_TOLERANCE_S = 2.0
"""A modification time at most this far ahead of the clock counts as now (timestamp rounding)."""


def quiet_seconds() -> float:
    """The quiet period: ``$EVAL_ASSETS_QUIET_S`` or :data:`DEFAULT_QUIET_S`."""
    return float(os.environ.get("EVAL_ASSETS_QUIET_S", DEFAULT_QUIET_S))


@dataclass(frozen=True)
class FileState:
    """What the filesystem and SQLite say about a recording right now."""

    size: int
    mtime_ns: int
    writing: str | None = None  # SQLite's reason it is being written (None: nothing pending)

    @property
    def pending_journal(self) -> bool:
        """SQLite shows a write in progress (journal, WAL or a writer's lock)."""
        return self.writing is not None

    @property
    def fingerprint(self) -> str:
        """Size and modification time (of the file and its journal/WAL): equal at two looks
        means nothing wrote in between."""
        return f"{self.size}:{self.mtime_ns}"

    def settled(self, quiet_s: float, now: float | None = None) -> bool:
        """No write for ``quiet_s`` seconds and nothing pending in SQLite's view.

        A file dated in the future (:meth:`future_s`) is never settled by its age: its time says
        nothing about when it was last written (the sensor's two looks decide instead).
        """
        now = time.time() if now is None else now
        return self.writing is None and now - self.mtime_ns / 1e9 >= quiet_s

    def future_s(self, now: float | None = None) -> float:
        """How many seconds the modification time is ahead of ``now`` (0: not in the future).

        A writer whose clock is ahead (another machine, a network share) or a copy that kept
        such a time dates a file in the future; up to :data:`FUTURE_TOLERANCE_S` ahead is the
        filesystem's own rounding, not that.
        """
        now = time.time() if now is None else now
        ahead = self.mtime_ns / 1e9 - now
        return ahead if ahead > FUTURE_TOLERANCE_S else 0.0


def recently_written(state: FileState, quiet_s: float, now: float | None = None) -> str | None:
    """Why ``state``'s file may still be being written, going by its time; None: it is not.

    ``last written 3 s ago`` within the quiet period, or ``dated 3573 s in the future`` (then its
    time cannot tell); what SQLite says pending is :attr:`FileState.writing`, checked apart.
    """
    now = time.time() if now is None else now
    ahead = state.future_s(now)
    if ahead:
        return (f"its modification time is {ahead:.0f} s in the future, so it cannot tell "
                "whether a recorder is still writing it")
    age = max(0.0, now - state.mtime_ns / 1e9)
    if age < quiet_s:
        return (f"it was last written {age:.0f} s ago, less than the {quiet_s:g} s a recording "
                "must stay unchanged to count as finished")
    return None


def changed_since(before: FileState, path: Path) -> str | None:
    """How ``path`` changed since ``before`` was taken (size, time), or None when it did not."""
    after = file_state(path)
    if after.fingerprint == before.fingerprint:
        return None
    if after.size != before.size:
        return f"its size went from {before.size} to {after.size} bytes"
    return "its modification time changed"


def sidecars(path: Path) -> tuple[Path, Path]:
    """The rollback journal and the WAL beside a recording: writing either writes it."""
    return path.with_name(path.name + "-journal"), path.with_name(path.name + "-wal")


def file_state(path: Path) -> FileState:
    """Size, latest modification time (the journal's or WAL's too) and SQLite's view."""
    stat = path.stat()
    mtime = stat.st_mtime_ns
    for side in sidecars(path):
        # A writer appending to its journal is still writing the recording.
        with contextlib.suppress(OSError):
            mtime = max(mtime, side.stat().st_mtime_ns)
    return FileState(stat.st_size, mtime, write_in_progress(path))


class ContentHashes:
    """File content hashes cached by (path, size, mtime) in one JSON file."""

    def __init__(self, cache_file: Path) -> None:
        self.cache_file = Path(cache_file)
        try:
            self._entries: dict[str, dict[str, object]] = read_json(self.cache_file)
        except (FileNotFoundError, ValueError):
            self._entries = {}  # a lost cache only costs one more hash per file

    def sha256(self, path: Path, state: FileState | None = None) -> str:
        """The content hash of ``path``, hashing only when its size or mtime changed."""
        state = state or file_state(path)
        key = str(Path(path).resolve())
        entry = self._entries.get(key)
        if entry and entry.get("size") == state.size and entry.get("mtime_ns") == state.mtime_ns:
            return str(entry["sha256"])
        digest = file_sha256(path)
        self._entries[key] = {"size": state.size, "mtime_ns": state.mtime_ns, "sha256": digest}
        self.cache_file.parent.mkdir(parents=True, exist_ok=True)
        write_json(self.cache_file, self._entries, indent=1, sort_keys=True, newline=False)
        return digest
