"""Fixtures: small real recordings written with the project's writer."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from eval_assets_tests.factories import make_recording


@pytest.fixture
def recording_path(tmp_path: Path) -> Path:
    """A valid 3-frame recording (64x48, pointlio_lidar)."""
    return make_recording(tmp_path / "rec.db")


@pytest.fixture
def edit_db() -> Callable[..., None]:
    """Run SQL statements against a recording, as a damaged or hand-edited file would look."""

    def run(path: Path, *statements: str | tuple[str, tuple[object, ...]]) -> None:
        conn = sqlite3.connect(path)
        try:
            for st in statements:
                if isinstance(st, tuple):
                    conn.execute(*st)
                else:
                    conn.execute(st)
            conn.commit()
        finally:
            conn.close()

    return run
