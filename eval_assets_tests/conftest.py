"""Shared fixtures: paths of the bundled sample and an isolated Dagster home per test session."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from eval_assets.vqa.declarations import BUILT_IN as _FAMILIES  # noqa: F401 (declares every family)

REPO = Path(__file__).resolve().parent.parent
SAMPLE_DIR = REPO / "data" / "recordings"
SAMPLE_DB = SAMPLE_DIR / "sample.db"

pytest_plugins = ("eval_assets_tests.cpu_report",)  # --cpu-report=N

os.environ.setdefault("DAGSTER_DISABLE_TELEMETRY", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _start_rank(item: pytest.Item) -> int:
    """End-to-end tests first, then the other slow ones, then everything else."""
    if item.get_closest_marker("slow") is None:
        return 2
    return 0 if "/e2e/" in item.nodeid else 1


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest first: under pytest-xdist (scripts/run_tests.sh) a worker takes tests in this
    order, so the few minutes-long end-to-end tests start at once and the many short ones fill
    the other workers around them, instead of one long test starting last and running alone.
    The sort is stable: within a rank, collection order."""
    items.sort(key=_start_rank)


@pytest.fixture(scope="session")
def sample_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The committed sample recording, copied (with its scene and truth files) into a folder of
    this session's: under pytest-xdist each worker reads its own copy. A test in another worker
    that opens the committed file (the real dimOS loader does) made SQLite's journal appear
    beside it, and a `vqa generate` reading it at that moment rightly refused a recording that
    "changed while the dataset was generated"."""
    hint = "regenerate it with `eval-assets recording synthesize`"
    assert SAMPLE_DB.is_file(), f"{SAMPLE_DB} is missing: {hint}"
    folder = tmp_path_factory.mktemp("recordings")
    for path in SAMPLE_DIR.glob(f"{SAMPLE_DB.stem}.*"):
        shutil.copy2(path, folder / path.name)  # mtimes too: the file is as old as the commit
    return folder / SAMPLE_DB.name


@pytest.fixture(autouse=True)
def _forget_disposed_dagster_state_storage():
    """Dagster 1.13's ``with DagsterInstance(...)`` sets a process-wide "current definitions state
    storage" that ``dispose()`` does not unset; a later test that loads definitions outside any
    instance would then read a disposed instance. Reset it after each test (private API: there is
    no public one)."""
    yield
    from dagster._core.storage.defs_state.base import _current_storage

    _current_storage.set(None)


@pytest.fixture(scope="session")
def _session_smollm2_weights(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SmolLM2's converted weights, shared by the session's tests (bit-identical to a fresh
    conversion, and 20 s of CPU each)."""
    return tmp_path_factory.mktemp("smollm2-weights")


@pytest.fixture(autouse=True)
def _private_user_cache(tmp_path_factory: pytest.TempPathFactory,
                        monkeypatch: pytest.MonkeyPatch, _session_smollm2_weights: Path) -> None:
    """Each test gets its own user cache (``$EVAL_ASSETS_CACHE``), so no test reads another's
    or the developer's kept calibrations; only SmolLM2's converted weights are shared."""
    root = tmp_path_factory.mktemp("user-cache")
    (root / "smollm2").symlink_to(_session_smollm2_weights, target_is_directory=True)
    monkeypatch.setenv("EVAL_ASSETS_CACHE", str(root))
