"""Read a dimOS recording (one SQLite file) and validate it before any frame is processed.

Layout (dimOS ``memory2`` SqliteStore): ``_streams(name, config)`` with JSON config holding
``payload_module`` and ``codec_id``; per stream a table ``<name>(id, ts, value, pose_*, tags)``,
the payload in ``<name>_blob(id, data)`` under the same id, and a pose index ``<name>_rtree``.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, NoReturn

import numpy as np

from eval_assets.hashing import file_sha256
from eval_assets.recording.codecs import CODEC_IDS, decode_blob, message_class_for
from eval_assets.recording.errors import (
    CodecError,
    LcmDecodeError,
    LcmFingerprintError,
    RecordingBeingWrittenError,
    RecordingError,
)
from eval_assets.recording.lcm import FINGERPRINTS
from eval_assets.recording.messages import CameraInfo, Image, PointCloud2, TFMessage
from eval_assets.recording.names import (
    CAMERA_INFO_STREAM,
    IMAGE_STREAM,
    LIDAR_FALLBACK_STREAM,
    LIDAR_STREAM,
    TF_STREAM,
)
from eval_assets.recording.sqlite_state import transaction_in_progress

LIDAR_STREAMS: tuple[str, str] = (LIDAR_STREAM, LIDAR_FALLBACK_STREAM)
REQUIRED_STREAMS: tuple[tuple[str, ...], ...] = (
    (IMAGE_STREAM,),
    (CAMERA_INFO_STREAM,),
    (TF_STREAM,),
    LIDAR_STREAMS,
)
"""The streams a usable recording holds: one non-empty stream of each tuple of alternatives
(for the LiDAR, ``pointlio_lidar`` wins over ``lidar``)."""

FIRST_ROWS_TRIED = 16
"""Rows of each required stream tried at open for a first decodable message."""

_NEEDS = "A recording needs color_image, camera_info, tf and pointlio_lidar or lidar."
_RECORD_FIX = (
    "Fix: record with dimOS's memory recorder with the camera, camera_info, TF and LiDAR streams "
    "enabled, or pass a complete recording."
)

# Required stream -> (message class, codecs accepted for it).
_EXPECTED: dict[str, tuple[type, tuple[str, ...]]] = {
    IMAGE_STREAM: (Image, ("jpeg", "lcm")),
    CAMERA_INFO_STREAM: (CameraInfo, ("lcm",)),
    TF_STREAM: (TFMessage, ("lcm",)),
    LIDAR_STREAM: (PointCloud2, ("lcm", "lz4+lcm")),
    LIDAR_FALLBACK_STREAM: (PointCloud2, ("lcm", "lz4+lcm")),
}


@dataclass(frozen=True)
class StreamInfo:
    """One registered stream: its payload type, codec, row count and ts span (None if empty)."""

    name: str
    payload_module: str
    codec_id: str
    count: int
    t_start: float | None
    t_end: float | None


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _is_wal(path: Path) -> bool:
    with path.open("rb") as f:
        head = f.read(20)
    return head[:16] == b"SQLite format 3\x00" and len(head) == 20 and head[18] == 2


def _connect(path: Path) -> sqlite3.Connection:
    """Open ``path`` read-only and run ``PRAGMA quick_check``.

    A file without pending WAL content opens with ``immutable=1``: SQLite then takes no locks and
    creates no ``-wal``/``-shm`` files beside the recording (a plain ``mode=ro`` open of a WAL-mode
    file leaves both behind, and fails in a read-only folder). A non-empty ``-wal`` holds commits
    not yet checkpointed (a recorder that did not close cleanly), so that case uses ``mode=ro`` to
    see them, falling back to ``immutable=1`` (without them) if SQLite cannot open the WAL index.
    """
    uri = path.resolve().as_uri()
    wal = path.with_name(path.name + "-wal")
    pending = wal.exists() and wal.stat().st_size > 0
    conn: sqlite3.Connection | None = None
    if pending:
        try:
            conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, check_same_thread=False)
            rows = conn.execute("PRAGMA quick_check").fetchall()
        except sqlite3.Error as exc:
            if conn is not None:
                conn.close()
            conn = None
            cannot_open = "unable to open" in str(exc) or "readonly" in str(exc)
            if not (isinstance(exc, sqlite3.OperationalError) and cannot_open and _is_wal(path)):
                raise
    if conn is None:
        conn = sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, check_same_thread=False)
        try:
            rows = conn.execute("PRAGMA quick_check").fetchall()
        except sqlite3.Error:
            conn.close()
            raise
    if rows != [("ok",)]:
        conn.close()
        # quick_check can list hundreds of pages in one row: keep the first few, count the rest.
        problems = [line.strip() for r in rows for line in str(r[0]).splitlines()
                    if line.strip() and not line.startswith("***")]
        detail = "; ".join(problems[:3])
        if len(problems) > 3:
            detail += f"; and {len(problems) - 3} more"
        raise sqlite3.DatabaseError(f"database disk image is malformed ({detail})")
    return conn


def _refuse_if_being_written(path: Path) -> None:
    """Raise :class:`RecordingBeingWrittenError` when SQLite shows a transaction in progress.

    Read then, the main file may hold half a transaction: it is unfinished, not corrupt.
    """
    pending = transaction_in_progress(path)
    if pending is not None:
        raise RecordingBeingWrittenError(
            f"{path}: still being written: {pending}. Fix: wait until the recorder has closed "
            "the file, then run again; if no recorder is writing it, open it once with sqlite3 "
            "(read-write), which rolls the unfinished transaction back.",
            path=path,
        )


class Recording:
    """A validated, read-only dimOS recording. Use ``Recording.open(path)``."""

    def __init__(self, path: Path, conn: sqlite3.Connection, allow_pickle: bool) -> None:
        self.path = path
        self.allow_pickle = allow_pickle
        self._conn = conn
        self._lock = threading.RLock()  # one connection shared by threads; sqlite3 is not
        self._sha256: str | None = None
        self._configs: dict[str, tuple[str, str]] = {}
        self._streams: dict[str, StreamInfo] = {}
        self._index: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._lidar_stream = ""

    # --- opening and validation -----------------------------------------------------------------

    @classmethod
    def open(cls, path: str | Path, allow_pickle: bool = False) -> Recording:
        """Open ``path`` read-only and validate it; raises ``RecordingError`` naming the fix."""
        path = Path(path)
        if not path.exists():
            raise RecordingError(
                f"{path}: file not found. Fix: pass the path of an existing recording (*.db).",
                path=path,
            )
        if not path.is_file():
            raise RecordingError(
                f"{path}: is not a file. Fix: pass the path of a recording file (*.db).", path=path
            )
        if path.stat().st_size == 0:
            raise RecordingError(
                f"{path}: file is empty (0 bytes), not a recording. Fix: pass a complete "
                "recording (*.db); the copy or download may have failed.",
                path=path,
            )
        _refuse_if_being_written(path)
        try:
            conn = _connect(path)
        except sqlite3.DatabaseError as exc:
            _refuse_if_being_written(path)  # a writer may have begun since the first look
            raise RecordingError(
                f"{path}: not a readable SQLite recording ({exc}); the file is corrupt, "
                "truncated or not a database. Fix: copy or download the recording again, or pass "
                "a dimOS recording (*.db).",
                path=path,
            ) from exc
        rec = cls(path, conn, allow_pickle)
        try:
            rec._validate()
        except BaseException:
            rec.close()
            raise
        return rec

    def _error(
        self, message: str, stream: str | None = None, row_id: int | None = None
    ) -> NoReturn:
        raise RecordingError(
            f"{self.path}: {message}", path=self.path, stream=stream, row_id=row_id
        )

    def _validate(self) -> None:
        tables = {
            r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        if "_streams" not in tables:
            self._error(
                "table '_streams' is missing, so this is not a dimOS recording. "
                f"{_NEEDS} Fix: pass a recording written by dimOS's memory store or by "
                "eval_assets' RecordingWriter."
            )
        for name, raw in self._conn.execute("SELECT name, config FROM _streams ORDER BY name"):
            self._configs[name] = self._parse_config(name, raw)
        for name, (payload_module, codec_id) in self._configs.items():
            count, t0, t1 = 0, None, None
            if name in tables:
                try:
                    count, t0, t1 = self._conn.execute(
                        f"SELECT COUNT(*), MIN(ts), MAX(ts) FROM {_quote(name)}"
                    ).fetchone()
                except sqlite3.Error as exc:  # e.g. no ts column: not a dimOS stream table
                    if name in _EXPECTED:
                        self._error(
                            f"stream {name!r}: table {name!r} is not a dimOS stream table "
                            f"({exc}). Fix: re-record the stream.",
                            stream=name,
                        )
            self._streams[name] = StreamInfo(name, payload_module, codec_id, count, t0, t1)

        self._lidar_stream = next(
            (s for s in LIDAR_STREAMS if s in self._streams and self._streams[s].count > 0),
            next((s for s in LIDAR_STREAMS if s in self._streams), LIDAR_STREAMS[0]),
        )
        required = self.required_streams
        for name in required:
            self._check_stream(name, tables)
        first = {name: self._first_message(name) for name in required}
        info, image = first[CAMERA_INFO_STREAM], first[IMAGE_STREAM]
        if (info.width, info.height) != (image.width, image.height):
            self._error(
                f"stream 'camera_info' describes {info.width}x{info.height} images but the first "
                f"'color_image' is {image.width}x{image.height}. Fix: record camera_info from the "
                "same camera and resolution as color_image.",
                stream=CAMERA_INFO_STREAM,
            )

    def _parse_config(self, name: str, raw: Any) -> tuple[str, str]:
        try:
            config = json.loads(raw)
            payload_module, codec_id = config["payload_module"], config["codec_id"]
            if not isinstance(payload_module, str) or not isinstance(codec_id, str):
                raise TypeError("payload_module and codec_id must be strings")
        except (TypeError, ValueError, KeyError) as exc:
            self._error(
                f"stream {name!r} has an unreadable _streams.config ({type(exc).__name__}: "
                f"{exc}); it must be JSON with string 'payload_module' and 'codec_id'. Fix: "
                "re-record the stream or repair its _streams row.",
                stream=name,
            )
        return payload_module, codec_id

    def _check_stream(self, name: str, tables: set[str]) -> None:
        shown = "pointlio_lidar or lidar" if name in LIDAR_STREAMS else name
        info = self._streams.get(name)
        if info is None or name not in tables or f"{name}_blob" not in tables:
            what = (
                "is missing"
                if info is None
                else f"is registered in _streams but table {name!r} or {name + '_blob'!r} is "
                "missing"
            )
            self._error(f"stream '{shown}' {what}. {_NEEDS} {_RECORD_FIX}", stream=name)
        assert info is not None
        if info.count == 0:
            self._error(f"stream '{shown}' is empty (0 rows). {_NEEDS} {_RECORD_FIX}", stream=name)
        cls, codecs = _EXPECTED[name]
        if info.codec_id not in CODEC_IDS:
            self._error(
                f"stream {name!r} has unknown codec_id {info.codec_id!r}; known codecs: "
                f"{', '.join(CODEC_IDS)}. Fix: re-record with a dimOS version whose codecs this "
                "reader knows, or convert the stream.",
                stream=name,
            )
        if info.codec_id == "pickle" and not self.allow_pickle:
            self._error(
                f"stream {name!r} uses codec 'pickle', which is refused because unpickling runs "
                "code from the file. Fix: pass allow_pickle=True only if you trust this "
                "recording, or re-record with the lcm/jpeg codecs.",
                stream=name,
            )
        if info.codec_id != "pickle":
            got = message_class_for(info.payload_module)
            if got is not cls:
                self._error(
                    f"stream {name!r} holds payload_module {info.payload_module!r}, expected a "
                    f"{cls.__name__}. Fix: record {name} as {cls.__name__} messages.",
                    stream=name,
                )
            if info.codec_id not in codecs:
                self._error(
                    f"stream {name!r} uses codec {info.codec_id!r}, expected "
                    f"{' or '.join(codecs)} for {cls.__name__}. Fix: re-record {name} with "
                    f"codec {codecs[0]!r}.",
                    stream=name,
                )

    def _first_message(self, name: str) -> Any:
        """The first decodable message of ``name`` among its first :data:`FIRST_ROWS_TRIED`.

        One damaged row at the start is a bad frame for the later stages to skip, not a reason
        to refuse the recording; a stream none of whose first rows decodes is refused with the
        first row's error.
        """
        count = self._streams[name].count
        first_error: RecordingError | None = None
        for index in range(min(count, FIRST_ROWS_TRIED)):
            try:
                msg = self.message(name, index)
            except RecordingError as exc:
                first_error = first_error or exc
                continue
            break
        else:
            assert first_error is not None
            raise first_error
        if self._streams[name].codec_id == "pickle":
            cls = _EXPECTED[name][0]
            if not isinstance(msg, cls):
                self._error(
                    f"stream {name!r} unpickles to {type(msg).__name__}, expected "
                    f"{cls.__name__}. Fix: re-record {name} with the lcm/jpeg codecs.",
                    stream=name,
                )
        return msg

    # --- public API -----------------------------------------------------------------------------

    @property
    def sha256(self) -> str:
        """Hex SHA-256 of the file's bytes (computed once)."""
        if self._sha256 is None:
            self._sha256 = file_sha256(self.path)
        return self._sha256

    @property
    def streams(self) -> dict[str, StreamInfo]:
        """Every stream registered in ``_streams``, by name."""
        return dict(self._streams)

    @property
    def lidar_stream(self) -> str:
        """``"pointlio_lidar"`` when present and non-empty, else ``"lidar"``."""
        return self._lidar_stream

    @property
    def required_streams(self) -> tuple[str, str, str, str]:
        """The streams this recording is read from: image, calibration, TF and its LiDAR."""
        return (IMAGE_STREAM, CAMERA_INFO_STREAM, TF_STREAM, self._lidar_stream)

    def _stream_info(self, stream: str) -> StreamInfo:
        info = self._streams.get(stream)
        if info is None:
            raise KeyError(
                f"{self.path}: no stream {stream!r}; streams: {', '.join(sorted(self._streams))}"
            )
        return info

    def _rows(self, stream: str) -> tuple[np.ndarray, np.ndarray]:
        """(ids, ts) of ``stream`` ordered by (ts, id), cached."""
        self._stream_info(stream)
        with self._lock:
            if stream not in self._index:
                rows = self._conn.execute(
                    f"SELECT id, ts FROM {_quote(stream)} ORDER BY ts, id"
                ).fetchall()
                ids = np.array([r[0] for r in rows], dtype=np.int64)
                ts = np.array([r[1] for r in rows], dtype=np.float64)
                self._index[stream] = (ids, ts)
            return self._index[stream]

    def timestamps(self, stream: str) -> np.ndarray:
        """The ``ts`` of every row of ``stream`` ordered by (ts, id): position = frame index."""
        return self._rows(stream)[1].copy()

    def timestamp(self, stream: str, index: int) -> float:
        """The ``ts`` at position ``index`` of ``stream`` in (ts, id) order (no array copy)."""
        self.row_id(stream, index)  # bounds check
        return float(self._rows(stream)[1][index])

    def row_ids(self, stream: str) -> np.ndarray:
        """The row ``id`` of every row of ``stream`` ordered by (ts, id): position = index."""
        return self._rows(stream)[0].copy()

    def row_id(self, stream: str, index: int) -> int:
        """The row ``id`` at position ``index`` of ``stream`` in (ts, id) order."""
        ids, _ = self._rows(stream)
        if not 0 <= index < len(ids):
            raise IndexError(
                f"{self.path}: stream {stream!r} has {len(ids)} messages, index {index} is out "
                "of range"
            )
        return int(ids[index])

    def payload(self, stream: str, index: int) -> Any:
        """The raw ``<stream>_blob.data`` at position ``index`` (undecoded); None if missing."""
        row_id = self.row_id(stream, index)
        with self._lock:
            row = self._conn.execute(
                f"SELECT data FROM {_quote(stream + '_blob')} WHERE id = ?", (row_id,)
            ).fetchone()
        return None if row is None else row[0]

    def decode(self, stream: str, index: int, data: Any) -> Any:
        """Decode ``data``, the payload of position ``index`` of ``stream`` (see :meth:`payload`).

        Raises :class:`RecordingError` naming the row when it is missing (None) or corrupt.
        """
        row_id = self.row_id(stream, index)
        if data is None:
            self._error(
                f"stream {stream!r} row id {row_id} has no payload in {stream + '_blob'!r}. "
                "Fix: the recording is incomplete; re-record or copy it again.",
                stream=stream,
                row_id=row_id,
            )
        return self._decode(stream, row_id, data)

    def message(self, stream: str, index: int) -> Any:
        """The decoded message at position ``index`` of ``stream`` in (ts, id) order."""
        return self.decode(stream, index, self.payload(stream, index))

    def positions_without_payload(self, stream: str) -> list[int]:
        """Positions (in (ts, id) order) of the rows of ``stream`` that have no blob row."""
        ids, _ = self._rows(stream)
        with self._lock:
            missing = {r[0] for r in self._conn.execute(
                f"SELECT s.id FROM {_quote(stream)} AS s LEFT JOIN {_quote(stream + '_blob')} "
                "AS b ON b.id = s.id WHERE b.id IS NULL")}
        if not missing:
            return []
        return [int(i) for i in np.flatnonzero(np.isin(ids, np.fromiter(missing, np.int64)))]

    def iter_messages(self, stream: str, errors: list[RecordingError] | None = None
                      ) -> Iterator[tuple[float, Any]]:
        """Yield ``(ts, message)`` for every row of ``stream`` in (ts, id) order.

        A row that does not decode raises :class:`RecordingError`; with an ``errors`` list it is
        appended there instead and the row is left out.
        """
        ids, ts = self._rows(stream)
        for i in range(len(ids)):
            try:
                message = self.message(stream, i)
            except RecordingError as exc:
                if errors is None:
                    raise
                errors.append(exc)
                continue
            yield float(ts[i]), message

    def _decode(self, stream: str, row_id: int, data: Any) -> Any:
        info = self._streams[stream]
        if not isinstance(data, bytes):
            self._error(
                f"stream {stream!r} row id {row_id}: blob is {type(data).__name__}, not bytes. "
                "Fix: re-record the stream.",
                stream=stream,
                row_id=row_id,
            )
        try:
            return decode_blob(
                data, info.codec_id, info.payload_module, allow_pickle=self.allow_pickle
            )
        except LcmFingerprintError as exc:
            cls = message_class_for(info.payload_module)
            expected = FINGERPRINTS[cls].hex() if cls is not None else exc.expected.hex()
            self._error(
                f"stream {stream!r} row id {row_id}: LCM fingerprint mismatch, expected "
                f"{expected} ({info.payload_module}), got {exc.got.hex()}. Fix: the payload is "
                "not this message type or was written by an incompatible dimos-lcm; re-record "
                "with a compatible dimOS.",
                stream=stream,
                row_id=row_id,
            )
        except LcmDecodeError as exc:
            self._error(
                f"stream {stream!r} row id {row_id}: payload does not decode ({exc}). Fix: the "
                "blob is truncated or corrupt; copy or re-record the recording.",
                stream=stream,
                row_id=row_id,
            )
        except CodecError as exc:
            self._error(f"stream {stream!r} row id {row_id}: {exc}.", stream=stream, row_id=row_id)

    def close(self) -> None:
        """Close the SQLite connection; further reads fail."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Recording:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Recording({str(self.path)!r}, streams={sorted(self._streams)})"
