"""Errors raised for unusable recordings and undecodable payloads."""

from __future__ import annotations

from pathlib import Path

from eval_assets.errors import InputError


class RecordingError(InputError):
    """A recording cannot be used; the message names the file, the stream and the fix.

    ``path``, ``stream`` and ``row_id`` are kept as attributes so callers (asset checks, audits)
    can report them without parsing the message.
    """

    def __init__(
        self,
        message: str,
        *,
        path: Path | str | None = None,
        stream: str | None = None,
        row_id: int | None = None,
    ) -> None:
        super().__init__(message)
        self.path = Path(path) if path is not None else None
        self.stream = stream
        self.row_id = row_id


class RecordingBeingWrittenError(RecordingError):
    """The recording is still being written (SQLite shows a transaction in progress): it is
    neither finished nor corrupt. Wait for the recorder to close it, then read it again."""


class LcmDecodeError(ValueError):
    """LCM bytes do not decode: truncated, inconsistent lengths or trailing garbage."""


class LcmFingerprintError(LcmDecodeError):
    """The 8-byte fingerprint does not match the expected message type."""

    def __init__(self, message: str, *, expected: bytes, got: bytes) -> None:
        super().__init__(message)
        self.expected = expected
        self.got = got


class CodecError(ValueError):
    """A blob cannot be decoded with its stream's codec (unknown, refused or unavailable)."""
