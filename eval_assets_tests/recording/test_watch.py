"""A recording is read only once it is finished; its content hash is cached by size and mtime."""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from pathlib import Path

from eval_assets.hashing import file_sha256
from eval_assets.recording.watch import ContentHashes, file_state


def test_a_fresh_file_is_not_settled_until_quiet(tmp_path: Path, sample_db: Path) -> None:
    db = tmp_path / "rec.db"
    shutil.copy(sample_db, db)
    state = file_state(db)
    assert not state.settled(quiet_s=10.0)
    assert state.settled(quiet_s=10.0, now=time.time() + 11.0)


def test_a_pending_rollback_journal_or_wal_keeps_it_unsettled(tmp_path: Path,
                                                               sample_db: Path) -> None:
    db = tmp_path / "rec.db"
    shutil.copy(sample_db, db)
    old = time.time() - 3600
    os.utime(db, (old, old))
    assert file_state(db).settled(quiet_s=10.0)
    journal = db.with_name(db.name + "-journal")
    # A PERSIST-mode journal after its commit: the header zeroed, nothing pending.
    journal.write_bytes(b"\0" * 512)
    os.utime(journal, (old, old))
    assert file_state(db).settled(quiet_s=10.0)
    # A journal with a header (nonce, sizes) holds a transaction not yet committed.
    journal.write_bytes(b"\0" * 12 + b"\x01" * 16 + b"\0" * 484)
    os.utime(journal, (old, old))
    assert not file_state(db).settled(quiet_s=10.0)
    journal.unlink()
    wal = db.with_name(db.name + "-wal")
    wal.write_bytes(b"")
    os.utime(wal, (old, old))
    assert file_state(db).settled(quiet_s=10.0)  # an empty WAL holds nothing
    wal.write_bytes(b"\1" * 1024)
    assert not file_state(db).settled(quiet_s=10.0)


def test_a_writer_holding_a_wal_open_is_seen(tmp_path: Path) -> None:
    db = tmp_path / "live.db"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE t (x)")
    conn.execute("INSERT INTO t VALUES (1)")
    conn.commit()
    try:
        assert file_state(db).pending_journal
    finally:
        conn.close()
    assert not file_state(db).pending_journal  # closing checkpoints and removes the WAL


def test_hashes_are_cached_by_size_and_mtime(tmp_path: Path, sample_db: Path) -> None:
    db = tmp_path / "rec.db"
    shutil.copy(sample_db, db)
    cache = ContentHashes(tmp_path / "hashes.json")
    first = cache.sha256(db)
    assert first == file_sha256(sample_db)
    assert ContentHashes(tmp_path / "hashes.json").sha256(db) == first  # read back from disk
    with db.open("r+b") as f:  # same size, new bytes, new mtime: hashed again
        f.seek(100)
        f.write(b"\xff")
    os.utime(db, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    assert cache.sha256(db) != first
