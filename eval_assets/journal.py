"""The resume journal: append-only JSONL, one fsynced line per finished call, per run folder.

A record is durable once :meth:`Journal.append` returns, so a run killed at any point (crash,
Ctrl-C, SIGKILL) loses no answer it already received, and the next run skips every key that has a
success. The only damage a kill can do is a torn last line (a write cut short): it is dropped on
open, and the call it described is simply made again. Failures are journalled too, so the run
folder shows what went wrong, but they never count as done: the next run retries them.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Callable, Hashable, Iterator
from pathlib import Path
from typing import Generic, TypeVar

from pydantic import BaseModel, ValidationError

from eval_assets.atomic import naming
from eval_assets.jsonio import parse_model

R = TypeVar("R", bound=BaseModel)

_FIX_LINE = ("delete that line (its call will be made again) or move the file away to start over; "
             "only a torn last line is repaired automatically")


def _fsync_dir(folder: Path) -> None:
    # A new file's directory entry is only durable once the directory itself is synced.
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Journal(Generic[R]):
    """Append-only JSONL of ``model`` records, indexed by ``key``; safe to share between threads.

    For each key the first success wins (later records cannot replace it); until there is one,
    the latest failure is kept.
    """

    def __init__(self, path: Path, model: type[R], key: Callable[[R], Hashable]) -> None:
        self.path = Path(path)
        self._model = model
        self._key = key
        self._lock = threading.Lock()
        self._latest: dict[Hashable, R] = {}
        self.dropped_torn_line = False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        created = not self.path.exists()
        self._repair_and_load()
        self._fh = open(self.path, "ab")  # noqa: SIM115 - held open for the journal's lifetime
        if created:
            _fsync_dir(self.path.parent)

    def _repair_and_load(self) -> None:
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        end = len(data)
        if data and not data.endswith(b"\n"):
            # The last write was cut short. Appending after it would glue the next record onto
            # the fragment: keep it if only its newline is missing, else cut it off.
            end = data.rfind(b"\n") + 1
            tail = data[end:]
            with open(self.path, "r+b") as fh:
                if self._parses(tail):
                    fh.seek(0, os.SEEK_END)
                    fh.write(b"\n")
                    data, end = data + b"\n", len(data) + 1
                else:
                    fh.truncate(end)
                    self.dropped_torn_line = True
                fh.flush()
                os.fsync(fh.fileno())
        for number, line in enumerate(data[:end].splitlines(), start=1):
            if not line.strip():
                continue
            self._index(parse_model(line, self._model, f"{self.path}:{number}", fix=_FIX_LINE))

    def _parses(self, line: bytes) -> bool:
        try:
            self._model.model_validate_json(line)
        except ValidationError:
            return False
        return True

    def _index(self, record: R) -> None:
        key = self._key(record)
        current = self._latest.get(key)
        if current is not None and getattr(current, "status", None) == "success":
            return
        self._latest[key] = record

    def append(self, record: R) -> None:
        """Write one record and fsync it before returning."""
        line = record.model_dump_json().encode("utf-8") + b"\n"
        with self._lock, naming(self.path):
            # One write of the whole line: a kill can tear it, never interleave it with another.
            # A full disk may leave part of it written: that torn line is dropped on reopen.
            self._fh.write(line)
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._index(record)

    def get(self, key: Hashable) -> R | None:
        """The record that stands for ``key`` (first success, else latest failure)."""
        with self._lock:
            return self._latest.get(key)

    def succeeded(self, key: Hashable) -> bool:
        """Whether ``key`` has a successful record (a call that must not be repeated)."""
        record = self.get(key)
        return record is not None and getattr(record, "status", None) == "success"

    def records(self) -> list[R]:
        """The standing record of every key, in first-journalled order."""
        with self._lock:
            return list(self._latest.values())

    def close(self) -> None:
        """Close the file (every record is already on disk)."""
        with self._lock, naming(self.path):
            self._fh.close()

    def __enter__(self) -> Journal[R]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def exclusive_run_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` so two runs never write the same journals at once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RuntimeError(
                f"{path.parent} is being written by another run (lock {path.name} is held); "
                f"wait for it to finish or use another output folder"
            ) from None
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
