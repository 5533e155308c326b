"""The hash recipes: each equals the plain hashlib/json recipe it replaced, byte for byte."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from eval_assets.hashing import (
    bytes_sha256,
    canonical_json,
    canonical_json_sha256,
    file_digest,
    file_sha256,
    text_sha256,
)


def test_file_hash_is_the_sha256_of_the_bytes_across_chunks(tmp_path: Path) -> None:
    data = bytes(range(256)) * 20_000  # 5 MB: several read chunks
    path = tmp_path / "blob.bin"
    path.write_bytes(data)
    assert file_sha256(path) == hashlib.sha256(data).hexdigest()
    assert file_digest(path) == hashlib.sha256(data).digest()


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty"
    path.write_bytes(b"")
    assert file_sha256(path) == hashlib.sha256(b"").hexdigest()


def test_text_hash_is_of_utf8() -> None:
    assert text_sha256("café") == hashlib.sha256("café".encode()).hexdigest()


def test_bytes_hash_is_of_the_bytes() -> None:
    assert bytes_sha256(b"\x89PNG\x00\xff") == hashlib.sha256(b"\x89PNG\x00\xff").hexdigest()


def test_canonical_json_sorts_keys_without_whitespace() -> None:
    value = {"b": [1, 2], "a": {"d": "é", "c": None}}
    assert canonical_json(value) == '{"a":{"c":null,"d":"\\u00e9"},"b":[1,2]}'
    assert canonical_json(value, ensure_ascii=False) == '{"a":{"c":null,"d":"é"},"b":[1,2]}'
    expected = json.dumps(value, sort_keys=True, separators=(",", ":"))
    assert canonical_json_sha256(value) == hashlib.sha256(expected.encode()).hexdigest()
    assert canonical_json_sha256(value) != canonical_json_sha256(value, ensure_ascii=False)
