"""A write the machine refused, in words: which path, why, and what to do.

A full disk, a quota, a read-only mount or a folder this user may not write surface as an
``OSError`` (ENOSPC, EDQUOT, EROFS, EACCES, EPERM) or, from SQLite (the Dagster instance's
storage), as ``OperationalError: disk I/O error`` / ``database or disk is full`` / ``attempt to
write a readonly database``, possibly wrapped by SQLAlchemy or Dagster. :func:`output_problem`
finds such an error anywhere in an exception's chain and words it with the path (the
``OSError``'s file, which :func:`eval_assets.atomic.naming` fills in, or for SQLite the
instance folder, ``DAGSTER_HOME``), the cause and the fix. Finished work is never lost: every
output is written atomically and every model call is journalled, so a rerun continues.
"""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

_CAUSES = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is exhausted",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "this user may not write there",
    errno.EPERM: "writing there is not permitted",
}
_SQLITE_WRITE = ("disk i/o error", "database or disk is full", "readonly database")
_KEPT = "finished work is kept: rerun the same command to continue"


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, its causes and contexts, and SQLAlchemy's ``orig``, each once."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        orig = getattr(current, "orig", None)
        todo += [current.__cause__, current.__context__,
                 orig if isinstance(orig, BaseException) else None]


def _free_space(path: Path) -> str:
    """Free bytes on the file system holding ``path`` (its nearest existing folder), in words."""
    for folder in (path, *path.parents):
        if folder.exists():
            try:
                free = shutil.disk_usage(folder).free
            except OSError:
                return "free space unknown"
            return f"{free / 1e6:.1f} MB free there now"
    return "free space unknown"


def _fix(code: int, path: Path) -> str:
    if code in (errno.ENOSPC, errno.EDQUOT):
        return (f"free space on the disk holding {path} ({_free_space(path)}) or write "
                f"elsewhere (--output / --storage-root / EVAL_ASSETS_HOME)")
    if code == errno.EROFS:
        return f"{path} is on a read-only mount: write elsewhere or remount it read-write"
    return f"make {path.parent} writable for this user or write elsewhere"


def output_problem(exc: BaseException) -> str | None:
    """One line naming the path, the cause and the fix when ``exc`` is a refused write, else
    None."""
    for error in _chain(exc):
        if isinstance(error, OSError) and error.errno in _CAUSES:
            code = error.errno
            where = Path(os.fsdecode(error.filename)) if error.filename is not None else None
            if where is None:
                return (f"a write failed: {_CAUSES[code]} ({errno.errorcode[code]}: "
                        f"{error.strerror}); fix: {_fix(code, Path.cwd())}; {_KEPT}")
            return (f"cannot write {where}: {_CAUSES[code]} ({errno.errorcode[code]}: "
                    f"{error.strerror}); fix: {_fix(code, where)}; {_KEPT}")
        if isinstance(error, sqlite3.OperationalError) and any(
                marker in str(error).lower() for marker in _SQLITE_WRITE):
            home = os.environ.get("DAGSTER_HOME")
            where = Path(home) if home else Path.cwd()
            return (f"cannot write the SQLite database under {where} (the Dagster instance): "
                    f"{error}; fix: {_fix(errno.ENOSPC, where)}, or make it writable; {_KEPT}")
    return None
