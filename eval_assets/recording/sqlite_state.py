"""SQLite's own view of whether a database file is still being written.

A recorder writes its ``.db`` for minutes, in whatever journal mode it chose. Read mid-write, the
file is not corrupt, it is unfinished, and saying "corrupt, copy it again" would be wrong. What
SQLite itself leaves beside or on the file tells the two apart without writing anything:

- rollback journal (``DELETE``, ``TRUNCATE``, ``PERSIST``): a ``-journal`` with content and a
  header that is not zeroed holds a transaction not yet committed; the main file may hold half
  of it. (``TRUNCATE`` leaves an empty journal and ``PERSIST`` a zeroed header after a commit.)
- ``WAL``: a non-empty ``-wal`` holds commits not yet checkpointed; a writer that closes its
  connection checkpoints and removes it.
- any mode, ``MEMORY``/``OFF`` included: a writer spilling pages into the main file holds an
  exclusive lock, so a read-only connection cannot take a shared lock ("database is locked").

:func:`write_in_progress` says which, or None. It never writes and never creates a file beside
the database (the lock probe runs only on rollback-mode files, which a read-only open leaves
alone).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

JOURNAL_HEADER = 28  # bytes of a rollback journal's header that a commit zeroes in PERSIST mode
_SQLITE_MAGIC = b"SQLite format 3\x00"


def _journal_pending(journal: Path) -> bool:
    try:
        with journal.open("rb") as f:
            head = f.read(JOURNAL_HEADER)
    except OSError:
        return False  # removed between the listing and the read: the transaction ended
    return bool(head) and any(head)


def _rollback_mode(path: Path) -> bool:
    """Header bytes 18-19 are 1 in rollback-journal mode and 2 in WAL mode."""
    try:
        with path.open("rb") as f:
            head = f.read(20)
    except OSError:
        return False
    return len(head) == 20 and head[:16] == _SQLITE_MAGIC and head[18] == 1


def _locked_by_writer(path: Path) -> bool:
    """True when a shared lock cannot be had right now: a writer holds the file exclusively."""
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=0,
                           check_same_thread=False)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError as exc:
        return "locked" in str(exc) or "busy" in str(exc)
    except sqlite3.DatabaseError:
        return False  # not a database, or damaged: that is for the integrity check to say
    finally:
        conn.close()
    return False


def transaction_in_progress(path: Path) -> str | None:
    """Why the main file may hold half a transaction right now, or None.

    A pending rollback journal, or a writer's exclusive lock. (Commits waiting in a WAL are not
    such a case: the main file is consistent and a reader sees them.)
    """
    path = Path(path)
    journal = path.with_name(path.name + "-journal")
    if journal.exists() and _journal_pending(journal):
        return (f"the rollback journal {journal.name} holds a transaction not yet committed "
                "(a recorder is writing it, or stopped mid-write)")
    if _rollback_mode(path) and _locked_by_writer(path):
        return "a writer holds an exclusive lock on it (pages of a transaction are being written)"
    return None


def write_in_progress(path: Path) -> str | None:
    """Why SQLite says ``path`` is still being written, or None when it says nothing is pending.

    :func:`transaction_in_progress`, or commits waiting in a non-empty ``-wal``. The reason names
    the file that shows it, so a user can see it too.
    """
    path = Path(path)
    pending = transaction_in_progress(path)
    if pending is not None:
        return pending
    wal = path.with_name(path.name + "-wal")
    try:
        wal_size = wal.stat().st_size if wal.exists() else 0
    except OSError:
        wal_size = 0
    if wal_size > 0:
        return (f"the write-ahead log {wal.name} holds {wal_size} bytes not yet checkpointed "
                "(a recorder has the file open)")
    return None
