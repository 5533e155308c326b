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


@pytest.fixture(autouse=True)
def _forget_disposed_dagster_state_storage():
    """Dagster 1.13's ``with DagsterInstance(...)`` sets a process-wide "current definitions state
    storage" that ``dispose()`` does not unset; a later test that loads definitions outside any
    instance would then read a disposed instance. Reset it after each test (private API: there is
    no public one)."""
    yield
    from dagster._core.storage.defs_state.base import _current_storage

    _current_storage.set(None)


@pytest.fixture(autouse=True)
def _private_user_cache(tmp_path_factory: pytest.TempPathFactory,
                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets its own empty user cache (``$EVAL_ASSETS_CACHE``: the judge's kept
    calibrations), so no test reads another's or the developer's."""
    monkeypatch.setenv("EVAL_ASSETS_CACHE", str(tmp_path_factory.mktemp("user-cache")))
