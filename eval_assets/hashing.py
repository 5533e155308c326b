"""The project's SHA-256 recipes: of a file, of bytes, of text, and of a value's canonical JSON.

Every content hash (recording identity, dataset fingerprint, request and config hashes) is one of
these, so two modules that hash "the same thing" agree byte for byte. Changing a recipe changes
stored hashes, hence cache keys and code versions: don't.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

CANONICAL_SEPARATORS = (",", ":")
"""No whitespace: the canonical JSON of a value is one compact line with sorted keys."""


def file_digest(path: Path) -> bytes:
    """Raw SHA-256 digest of a file's bytes (read in chunks, never all in memory)."""
    with Path(path).open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").digest()


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file's bytes (read in chunks, never all in memory)."""
    return file_digest(path).hex()


def bytes_sha256(data: bytes) -> str:
    """Hex SHA-256 of ``data`` (bytes already in memory, e.g. a request body or a checked image)."""
    return hashlib.sha256(data).hexdigest()


def text_sha256(text: str) -> str:
    """Hex SHA-256 of ``text`` encoded as UTF-8."""
    return bytes_sha256(text.encode("utf-8"))


def canonical_json(value: Any, *, ensure_ascii: bool = True) -> str:
    """``value`` as JSON with sorted keys and no whitespace (the text the hashes are taken of).

    ``ensure_ascii=False`` keeps non-ASCII characters as they are (a recipe some stored hashes
    were made with; keep each caller's choice, or its hashes change).
    """
    return json.dumps(value, sort_keys=True, separators=CANONICAL_SEPARATORS,
                      ensure_ascii=ensure_ascii)


def canonical_json_sha256(value: Any, *, ensure_ascii: bool = True) -> str:
    """Hex SHA-256 of :func:`canonical_json` of ``value``."""
    return text_sha256(canonical_json(value, ensure_ascii=ensure_ascii))
