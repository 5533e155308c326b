"""Write dimOS-compatible recordings (one SQLite file) deterministically and atomically.

The schema is dimOS ``memory2``'s SqliteStore: ``_streams(name TEXT PRIMARY KEY, config TEXT NOT
NULL)`` with the config JSON its registry writes, per stream ``<name>`` (metadata),
``<name>_blob`` (payload, same id) and the ``<name>_rtree`` pose index. Differences, on purpose:
``ts`` is not UNIQUE (several TF edges share a stamp; readers order by (ts, id)) and ``tags`` is
JSON text rather than ``jsonb`` (the standard library's SQLite may predate 3.45; dimOS reads tags
with ``json(tags)``, which accepts both).

Determinism: a fixed page size, one transaction, no wall-clock values, tags serialised with sorted
keys; the same calls give a byte-identical file.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar

from eval_assets.atomic import naming_database
from eval_assets.recording.codecs import (
    PAYLOAD_MODULES,
    WRITABLE_CODECS,
    encode_blob,
    message_class_for,
)
from eval_assets.recording.messages import Image

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PAGE_SIZE = 4096


def stream_config(payload_module: str, codec_id: str) -> str:
    """The ``_streams.config`` JSON dimOS's SqliteStore writes for a stream (same keys, order)."""
    config = {
        "payload_module": payload_module,
        "codec_id": codec_id,
        "eager_blobs": False,
        "page_size": 256,
        "blob_store": {
            "class": "dimos.memory2.blobstore.sqlite.SqliteBlobStore",
            "config": {"path": None},
        },
        "vector_store": {
            "class": "dimos.memory2.vectorstore.sqlite.SqliteVectorStore",
            "config": {"path": None},
        },
        "notifier": {"class": "dimos.memory2.notifier.subject.SubjectNotifier", "config": {}},
    }
    return json.dumps(config)


def _sidecars(path: Path) -> list[Path]:
    return [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]


P = ParamSpec("P")
R = TypeVar("R")


def _names_its_file(method: Callable[Concatenate[RecordingWriter, P], R],
                    ) -> Callable[Concatenate[RecordingWriter, P], R]:
    """SQLite's "database or disk is full" (and kin) inside ``method`` names the recording
    (:func:`~eval_assets.atomic.naming_database`): its disk is the one that is full."""

    @functools.wraps(method)
    def wrapper(self: RecordingWriter, *args: P.args, **kwargs: P.kwargs) -> R:
        with naming_database(self.path):
            return method(self, *args, **kwargs)

    return wrapper


class RecordingWriter:
    """Write streams of messages into a new recording at ``path``.

    Rows go to ``path + ".tmp"``; ``close()`` commits, checkpoints the WAL and renames the file
    into place, so ``path`` never holds a partial recording.
    """

    def __init__(self, path: str | Path, overwrite: bool = False) -> None:
        self.path = Path(path)
        if self.path.exists() and not overwrite:
            raise FileExistsError(
                f"{self.path}: already exists; RecordingWriter never replaces a recording "
                "silently. Fix: choose a new path or pass overwrite=True."
            )
        if not self.path.parent.is_dir():
            raise FileNotFoundError(
                f"{self.path}: folder {self.path.parent} does not exist. Fix: create it first."
            )
        self._tmp = self.path.with_name(self.path.name + ".tmp")
        for stale in _sidecars(self._tmp):  # leftovers of a crashed earlier writer
            stale.unlink(missing_ok=True)
        with naming_database(self.path):
            self._conn: sqlite3.Connection | None = sqlite3.connect(self._tmp,
                                                                    isolation_level=None)
            self._conn.execute(f"PRAGMA page_size = {_PAGE_SIZE}")
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("BEGIN")
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS _streams (name TEXT PRIMARY KEY, config TEXT NOT NULL)"
            )
        self._streams: dict[str, tuple[type, str]] = {}

    def _live(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError(f"{self.path}: RecordingWriter is closed")
        return self._conn

    @_names_its_file
    def add_stream(self, name: str, message_type: type | str, codec_id: str) -> None:
        """Register stream ``name`` of ``message_type`` (class or dimOS payload_module string)
        stored with ``codec_id`` (``"jpeg"`` for colour images, ``"lcm"`` otherwise)."""
        conn = self._live()
        if not _IDENT.match(name) or name.startswith("sqlite_"):
            raise ValueError(
                f"stream name {name!r} is not a valid identifier (letters, digits, _; dimOS "
                "rejects others)"
            )
        if name in self._streams:
            raise ValueError(f"{self.path}: stream {name!r} is already registered")
        if isinstance(message_type, str):
            payload_module = message_type
            cls = message_class_for(payload_module)
            if cls is None:
                raise ValueError(
                    f"payload_module {payload_module!r} is not a message this writer encodes; "
                    f"use one of {sorted(PAYLOAD_MODULES.values())}"
                )
        else:
            if message_type not in PAYLOAD_MODULES:
                raise ValueError(
                    f"message class {message_type!r} is not writable; use one of "
                    f"{[c.__name__ for c in PAYLOAD_MODULES]}"
                )
            cls, payload_module = message_type, PAYLOAD_MODULES[message_type]
        if codec_id not in WRITABLE_CODECS:
            raise ValueError(
                f"codec {codec_id!r} is not writable (lz4+lcm needs lz4, pickle is never "
                f"written); use one of {', '.join(WRITABLE_CODECS)}"
            )
        if codec_id == "jpeg" and cls is not Image:
            raise ValueError(f"codec 'jpeg' is for Image streams, not {cls.__name__}")
        q = f'"{name}"'
        conn.execute(
            "INSERT INTO _streams (name, config) VALUES (?, ?)",
            (name, stream_config(payload_module, codec_id)),
        )
        conn.execute(
            f"CREATE TABLE {q} ("
            "    id      INTEGER PRIMARY KEY AUTOINCREMENT,"
            "    ts      REAL    NOT NULL,"
            "    value   NUMERIC,"
            "    pose_x  REAL, pose_y REAL, pose_z REAL,"
            "    pose_qx REAL, pose_qy REAL, pose_qz REAL, pose_qw REAL,"
            "    tags    BLOB    DEFAULT (jsonb('{}'))"
            ")"
        )
        conn.execute(
            f'CREATE VIRTUAL TABLE "{name}_rtree" USING rtree('
            "    id, x_min, x_max, y_min, y_max, z_min, z_max)"
        )
        conn.execute(f'CREATE TABLE "{name}_blob" (id INTEGER PRIMARY KEY, data BLOB NOT NULL)')
        self._streams[name] = (cls, codec_id)

    @_names_its_file
    def write(
        self,
        name: str,
        ts: float,
        message: Any,
        pose: Sequence[float] | None = None,
        tags: Mapping[str, Any] | None = None,
    ) -> int:
        """Append ``message`` at epoch seconds ``ts`` to stream ``name``; returns its row id.

        ``pose`` is ``(x, y, z, qx, qy, qz, qw)`` of the robot (indexed in ``<name>_rtree``).
        """
        conn = self._live()
        if name not in self._streams:
            raise KeyError(f"{self.path}: stream {name!r} is not registered; call add_stream")
        cls, codec_id = self._streams[name]
        if type(message) is not cls:
            raise TypeError(
                f"stream {name!r} holds {cls.__name__} messages, got {type(message).__name__}"
            )
        ts = float(ts)
        if not math.isfinite(ts):
            raise ValueError(f"stream {name!r}: ts must be finite, got {ts}")
        if pose is not None:
            pose = tuple(float(v) for v in pose)
            if len(pose) != 7 or not all(math.isfinite(v) for v in pose):
                raise ValueError(
                    f"stream {name!r}: pose must be 7 finite floats (x, y, z, qx, qy, qz, qw), "
                    f"got {pose}"
                )
        blob = encode_blob(message, codec_id)
        tags_json = json.dumps(dict(tags), sort_keys=True) if tags else "{}"
        cur = conn.execute(
            f'INSERT INTO "{name}" (ts, value, pose_x, pose_y, pose_z, pose_qx, pose_qy, '
            "pose_qz, pose_qw, tags) VALUES (?, NULL, ?, ?, ?, ?, ?, ?, ?, ?)",
            (ts, *(pose if pose is not None else (None,) * 7), tags_json),
        )
        row_id = cur.lastrowid
        assert row_id is not None
        conn.execute(f'INSERT INTO "{name}_blob" (id, data) VALUES (?, ?)', (row_id, blob))
        if pose is not None:
            x, y, z = pose[:3]
            conn.execute(
                f'INSERT INTO "{name}_rtree" (id, x_min, x_max, y_min, y_max, z_min, z_max) '
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (row_id, x, x, y, y, z, z),
            )
        return row_id

    @_names_its_file
    def close(self) -> None:
        """Commit, checkpoint the WAL into the file and rename it to ``path`` (atomic)."""
        if self._conn is None:
            return
        conn, self._conn = self._conn, None
        try:
            conn.execute("COMMIT")
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if busy:
                raise RuntimeError(f"{self._tmp}: WAL checkpoint was blocked by another reader")
        except BaseException:
            conn.close()
            self._discard()
            raise
        conn.close()
        for sidecar in _sidecars(self._tmp)[1:]:  # empty after TRUNCATE; SQLite removes them
            sidecar.unlink(missing_ok=True)
        os.replace(self._tmp, self.path)

    def abort(self) -> None:
        """Drop everything written so far; ``path`` is left untouched."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self._discard()

    def _discard(self) -> None:
        for sidecar in _sidecars(self._tmp):
            sidecar.unlink(missing_ok=True)

    def __enter__(self) -> RecordingWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
