"""Shared fixtures: paths of the bundled sample and an isolated Dagster home per test session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLE_DIR = REPO / "data" / "recordings"
SAMPLE_DB = SAMPLE_DIR / "sample.db"

os.environ.setdefault("DAGSTER_DISABLE_TELEMETRY", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session")
def sample_db() -> Path:
    """The committed sample recording."""
    hint = "regenerate it with `eval-assets recording synthesize`"
    assert SAMPLE_DB.is_file(), f"{SAMPLE_DB} is missing: {hint}"
    return SAMPLE_DB
