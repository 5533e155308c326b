"""A write the machine refused, in words: which path, why, and what to do.

A full disk, a quota, a read-only mount or a folder this user may not write surface as an
``OSError`` (ENOSPC, EDQUOT, EROFS, EACCES, EPERM) or, from SQLite (the Dagster instance's
storage), as ``OperationalError: disk I/O error`` / ``database or disk is full`` / ``attempt to
write a readonly database``, possibly wrapped by SQLAlchemy or Dagster. :func:`output_problem`
finds such an error anywhere in an exception's chain and words it with the path (the
``OSError``'s file, which :func:`eval_assets.atomic.naming` and ``naming_database`` fill in,
or for a copy or rename its destination, ``filename2``, the file written; for Dagster's SQLite
storage the instance folder, ``DAGSTER_HOME``; for an error naming no file, the place written
to whose disk has the least free space, measured, never a guess: the command's own output
folders first, ``written``), the cause and the fix. Finished work is never lost: every
output is written atomically and every model call is journalled, so a rerun continues.

A path that runs through a file where a folder must be (``ENOTDIR``, or ``EEXIST`` from making
a folder over a file) is worded by :func:`not_a_folder`, naming ``EVAL_ASSETS_HOME`` when the
path lies under it.
"""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from eval_assets.layout import HOME_ENV, default_storage_root

_CAUSES = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is exhausted",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "this user may not write there",
    errno.EPERM: "writing there is not permitted",
    errno.EIO: "the disk refused the write (an I/O error; a full disk is the usual cause)",
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
    found = _free_bytes(path)
    return "free space unknown" if found is None else f"{found[1] / 1e6:.1f} MB free there now"


def _free_bytes(path: Path) -> tuple[Path, int] | None:
    """The nearest existing folder of ``path`` and the free bytes of its file system."""
    for folder in (path, *path.parents):
        if folder.exists():
            try:
                return folder, shutil.disk_usage(folder).free
            except OSError:
                return None
    return None


def _fullest_disk(written: Sequence[Path] = ()) -> Path:
    """Of the places a command writes (its own outputs, ``written``; the Dagster instance, the
    storage root, the temporary folder, the working folder), the one on the file system with
    the least free space; on a tie the command's own output.

    For an error that names no file: measuring beats guessing the working folder, which may be
    on another disk altogether.
    """
    home = os.environ.get("DAGSTER_HOME")
    places = [Path(p) for p in written] + ([Path(home)] if home else [])
    places += [default_storage_root(), Path(tempfile.gettempdir()), Path.cwd()]
    # The place itself is named (an output folder not made yet too), measured on its disk.
    measured = [(place, found[1]) for place in places
                if (found := _free_bytes(place)) is not None]
    return min(measured, key=lambda found: found[1])[0] if measured else Path.cwd()


_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EIO)


def _fix(code: int, path: Path) -> str:
    if code in _FULL:
        return (f"free space on the disk holding {path} ({_free_space(path)}) or write "
                f"elsewhere (--output / --storage-root / EVAL_ASSETS_HOME)")
    if code == errno.EROFS:
        return f"{path} is on a read-only mount: write elsewhere or remount it read-write"
    return f"make {path.parent} writable for this user or write elsewhere"


DEFAULT_NAME_MAX = 255
"""The longest file or folder name, in bytes, on Linux's common file systems (ext4, xfs, btrfs,
tmpfs); :func:`name_max` asks the file system itself when it can."""


def name_max(folder: Path) -> int:
    """The longest name, in bytes, the file system holding ``folder`` (or its nearest existing
    parent) allows."""
    for place in (folder, *folder.parents):
        if place.exists():
            try:
                return int(os.pathconf(place, "PC_NAME_MAX"))
            except (OSError, ValueError):
                return DEFAULT_NAME_MAX
    return DEFAULT_NAME_MAX


def too_long_name(path: Path) -> str | None:
    """Why ``path`` cannot exist when one of its names is too long for its file system (the
    name shortened, its length and the limit), else None. Checked before the file is touched:
    the system's own refusal, ``[Errno 36] File name too long``, names neither the part nor the
    limit."""
    limit = name_max(path.parent)
    for part in path.parts:
        size = len(os.fsencode(part))
        if size > limit:
            shown = part if len(part) <= 40 else f"{part[:24]}…{part[-12:]}"
            return (f"the name {shown!r} is {size} bytes, longer than the {limit} bytes a file "
                    "or folder name may have here")
    return None


def output_problem(exc: BaseException, written: Sequence[Path] = ()) -> str | None:
    """One line naming the path, the cause and the fix when ``exc`` is a refused write, else
    None. ``written``: the command's output folders (``--output``, ``--storage-root``), measured
    first when the error names no file."""
    for error in _chain(exc):
        if (isinstance(error, OSError) and error.errno == errno.ENAMETOOLONG
                and error.filename is not None):
            named = Path(os.fsdecode(error.filename))
            why = too_long_name(named) or "a name in it is too long for the file system"
            return (f"cannot use {named}: {why} (ENAMETOOLONG); fix: shorten that name (an "
                    "output's name comes from its input's: the recording, dataset or image)")
        if isinstance(error, OSError) and error.errno in _CAUSES:
            code = error.errno
            # A copy's or a rename's error names its source first: the file written is second.
            named = (error.filename2 if error.filename2 is not None and code in _FULL
                     else error.filename)
            where = Path(os.fsdecode(named)) if named is not None else None
            if where is None:
                fullest = _fullest_disk(written)
                return (f"a write failed: {_CAUSES[code]} ({errno.errorcode[code]}: "
                        f"{error.strerror}); the error names no file, and of the disks written "
                        f"to the fullest holds {fullest}; fix: {_fix(code, fullest)}; {_KEPT}")
            return (f"cannot write {where}: {_CAUSES[code]} ({errno.errorcode[code]}: "
                    f"{error.strerror}); fix: {_fix(code, where)}; {_KEPT}")
        if isinstance(error, sqlite3.OperationalError) and any(
                marker in str(error).lower() for marker in _SQLITE_WRITE):
            home = os.environ.get("DAGSTER_HOME")
            if home and _through_sqlalchemy(exc):  # how Dagster's storage reaches SQLite
                return (f"cannot write the SQLite database under {home} (the Dagster "
                        f"instance): {error}; fix: {_fix(errno.ENOSPC, Path(home))}, or make it "
                        f"writable; {_KEPT}")
            # Our own SQLite files name themselves (eval_assets.atomic.naming_database): this
            # one is not known, so the fullest disk is named, measured.
            fullest = _fullest_disk(written)
            return (f"cannot write an SQLite database the error does not name: {error}; of the "
                    f"disks written to the fullest holds {fullest}; fix: "
                    f"{_fix(errno.ENOSPC, fullest)}, or make it writable; {_KEPT}")
    return None


def _through_sqlalchemy(exc: BaseException) -> bool:
    """Whether SQLAlchemy wrapped an error of ``exc``'s chain (Dagster's storage did the write)."""
    return any(type(error).__module__.startswith("sqlalchemy") for error in _chain(exc))


def _file_in_the_way(path: Path) -> Path | None:
    """The nearest of ``path`` and its parents that exists and is not a folder, if any."""
    for place in (path, *path.parents):
        if place.exists():
            return None if place.is_dir() else place
    return None


def not_a_folder(exc: BaseException) -> str | None:
    """One line for a path that runs through a file where a folder must be (``[Errno 20] Not a
    directory``, or a folder made over a file): which file, what named the path
    (``EVAL_ASSETS_HOME`` when the path lies under it) and the fix; else None."""
    for error in _chain(exc):
        if not (isinstance(error, OSError) and error.errno in (errno.ENOTDIR, errno.EEXIST)
                and error.filename is not None):
            continue
        path = Path(os.fsdecode(error.filename)).absolute()
        blocker = _file_in_the_way(path)
        if blocker is None:
            continue
        home = os.environ.get(HOME_ENV)
        if home and (path == Path(home).absolute() or Path(home).absolute() in path.parents):
            return (f"{HOME_ENV}={home} names a file, not a folder ({blocker} is a file), so "
                    f"the storage root cannot be made there. Fix: point {HOME_ENV} at a folder "
                    f"(absent or holding eval-assets' outputs), e.g. `export {HOME_ENV}="
                    f"{blocker}.d`, or unset it to use ./.eval_assets, or pass --storage-root")
        return (f"cannot make {path}: {blocker} is a file, not a folder. Fix: give a folder "
                "path (absent or a folder) for the output, or move that file away")
    return None
