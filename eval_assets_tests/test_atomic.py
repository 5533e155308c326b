"""Atomic writes when another process cleans the same folder mid-write."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from eval_assets.atomic import write_chunks_atomic


def test_a_temporary_file_removed_mid_write_is_named_as_such_and_the_target_kept(
        tmp_path: Path) -> None:
    target = tmp_path / "frame-000021-01.png"
    target.write_bytes(b"old")

    def chunks() -> Iterator[bytes]:
        yield b"new, first half"
        # What a concurrent run's cleanup of the folder did to the temporary file.
        for tmp in tmp_path.glob(f".{target.name}.*.tmp"):
            tmp.unlink()
        yield b"second half"

    with pytest.raises(FileNotFoundError) as refused:
        write_chunks_atomic(target, chunks())
    message = str(refused.value)
    assert refused.value.filename == str(target)
    assert "was removed while it was being written, by another process" in message
    assert "Fix: let one run write it, then rerun" in message
    assert target.read_bytes() == b"old"
    assert list(tmp_path.iterdir()) == [target]
