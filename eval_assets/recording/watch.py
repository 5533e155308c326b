"""Watching a recordings folder: when a file is finished, and what its content is.

A recorder writes a ``.db`` for minutes. A file is *settled* when nothing has written to it for a
while (its modification time is older than the quiet period) and SQLite has nothing pending beside
it (no rollback ``-journal``, no non-empty ``-wal``). Only then is it read, validated and hashed;
until then it is neither a partition nor corrupt, just not finished.

Hashing a large recording on every look would be wasteful, so :class:`ContentHashes` remembers
each file's hash by (size, modification time) and hashes again only when either changes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from eval_assets.hashing import file_sha256
from eval_assets.jsonio import read_json, write_json

DEFAULT_QUIET_S = 10.0
"""Seconds without a write before a recording counts as finished."""


@dataclass(frozen=True)
class FileState:
    """What the filesystem says about a recording right now."""

    size: int
    mtime_ns: int
    pending_journal: bool

    def settled(self, quiet_s: float, now: float | None = None) -> bool:
        """No write for ``quiet_s`` seconds and no SQLite journal waiting to be applied."""
        now = time.time() if now is None else now
        return not self.pending_journal and now - self.mtime_ns / 1e9 >= quiet_s


def file_state(path: Path) -> FileState:
    """Size, modification time and whether a rollback journal or unmerged WAL sits beside it."""
    stat = path.stat()
    journal = path.with_name(path.name + "-journal")
    wal = path.with_name(path.name + "-wal")
    pending = journal.exists() or (wal.exists() and wal.stat().st_size > 0)
    for side in (journal, wal):
        # A writer appending to its journal is still writing the recording.
        if side.exists():
            stat_mtime = max(stat.st_mtime_ns, side.stat().st_mtime_ns)
            return FileState(stat.st_size, stat_mtime, pending)
    return FileState(stat.st_size, stat.st_mtime_ns, pending)


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
