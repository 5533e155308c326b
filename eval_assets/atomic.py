"""Atomic file writes: write beside the target, then rename, so readers never see half a file."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _default_file_mode() -> int:
    # mkstemp creates 0600 files; give outputs the mode a plain open() would (0666 minus umask).
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_bytes_atomic(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` via a temporary file in the same folder and ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _default_file_mode())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_text_atomic(path: Path, text: str) -> Path:
    """UTF-8 text variant of :func:`write_bytes_atomic`."""
    return write_bytes_atomic(path, text.encode("utf-8"))
