"""Atomic file writes: write beside the target, then rename, so readers never see half a file.

A write the machine refuses (a full disk, a read-only or unwritable folder) raises an ``OSError``
that names the target path (:func:`naming`), so the message says where; the target keeps its old
content, so nothing finished is lost and a rerun continues.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path


def _read_umask() -> int:
    # os.umask can only be read by setting it; do it once at import, before any worker threads.
    umask = os.umask(0)
    os.umask(umask)
    return umask


# mkstemp creates 0600 files; outputs get the mode a plain open() would give (0666 minus umask).
_FILE_MODE = 0o666 & ~_read_umask()


@contextlib.contextmanager
def naming(path: Path) -> Iterator[None]:
    """Re-raise an ``OSError`` that names no file (``write``/``fsync`` on a full disk say only
    "No space left on device") as the same error naming ``path``."""
    try:
        yield
    except OSError as exc:
        if exc.filename is not None or exc.errno is None:
            raise
        # OSError(errno, ...) builds the errno's subclass (PermissionError for EACCES, ...).
        raise OSError(exc.errno, exc.strerror, str(path)) from exc


# SQLite's words for a write the machine refused, and the errno each stands for.
_SQLITE_REFUSALS = (("database or disk is full", errno.ENOSPC),
                    ("readonly database", errno.EROFS),
                    ("disk i/o error", errno.EIO))


@contextlib.contextmanager
def naming_database(path: Path) -> Iterator[None]:
    """Re-raise SQLite's "database or disk is full" (read-only, disk I/O error) on ``path`` as
    an ``OSError`` naming ``path``: SQLite's own error names no file, so a message would have to
    guess which disk is full."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        text = str(exc).lower()
        code = next((code for marker, code in _SQLITE_REFUSALS if marker in text), None)
        if code is None:
            raise
        raise OSError(code, str(exc), str(path)) from exc


def write_bytes_atomic(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` via a temporary file in the same folder and ``os.replace``."""
    return write_chunks_atomic(path, [data])


def write_chunks_atomic(path: Path, chunks: Iterable[bytes]) -> Path:
    """:func:`write_bytes_atomic` for content produced piece by piece (never all in memory);
    if producing a chunk raises, ``path`` is left as it was."""
    with naming(path):
        return _write_chunks(path, chunks)


def _write_chunks(path: Path, chunks: Iterable[bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            for chunk in chunks:
                fh.write(chunk)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _FILE_MODE)
        os.replace(tmp, path)
    except FileNotFoundError as exc:
        if exc.filename != tmp:
            raise
        # Our own temporary file vanished under us: something else cleaned the folder while we
        # wrote (another process writing the same output).
        raise FileNotFoundError(
            exc.errno, f"its temporary file {Path(tmp).name} was removed while it was being "
            "written, by another process cleaning or writing the same folder (two runs on the "
            "same output at once?); the file keeps its previous content. Fix: let one run "
            "write it, then rerun", str(path)) from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


# A temporary file younger than this may still be renamed into place by the process writing it
# (another run writing the same folder); an older one is the leftover of an interrupted write.
# A write refreshes its file's time with every chunk, and renames right after the last one.
IN_FLIGHT_S = 600.0


def in_flight(path: Path) -> bool:
    """Whether ``path`` is a temporary file of an atomic write that may still be in progress:
    cleaning a folder skips those (removing one fails the other writer) and removes older ones."""
    if not (path.name.startswith(".") and path.name.endswith(".tmp")):
        return False
    try:
        return time.time() - path.stat().st_mtime < IN_FLIGHT_S
    except FileNotFoundError:
        return False


def write_text_atomic(path: Path, text: str) -> Path:
    """UTF-8 text variant of :func:`write_bytes_atomic`."""
    return write_bytes_atomic(path, text.encode("utf-8"))
