"""The persistent local Dagster instance that ``eval-assets run`` / ``demo`` / ``ui`` use.

Under the storage root, so every local run is visible in the UI afterwards (same
``DAGSTER_HOME``). Many processes share one instance folder: its storages create their schema
one process at a time (``eval_assets.defs.instance_storage``), :func:`prepare_dagster_home`
creates it before any Dagster process starts, and :func:`run_lock` lets one ``eval-assets run``
at a time work on it.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from eval_assets.atomic import write_text_atomic
from eval_assets.errors import InputError
from eval_assets.file_lock import LockBusy, exclusive_lock
from eval_assets.layout import StorageLayout

# The event log is Dagster's SQLite one without the stored partition-status summary, which can
# lose a materialization under the daemon (why: ``eval_assets.defs.event_log_storage``).
EVENT_LOG_STORAGE_YAML = """\
event_log_storage:
  module: eval_assets.defs.event_log_storage
  class: SqliteEventLogWithoutStatusCache
"""

# Dagster's SQLite run and schedule storages, whose schema one process at a time creates (why:
# ``eval_assets.defs.instance_storage``).
RUN_STORAGE_YAML = """\
run_storage:
  module: eval_assets.defs.instance_storage
  class: SqliteRunStorageInHome
"""
SCHEDULE_STORAGE_YAML = """\
schedule_storage:
  module: eval_assets.defs.instance_storage
  class: SqliteScheduleStorageInHome
"""
STORAGE_STANZAS = {"run_storage": RUN_STORAGE_YAML, "event_log_storage": EVENT_LOG_STORAGE_YAML,
                   "schedule_storage": SCHEDULE_STORAGE_YAML}

# The daemon's runs fork from a warm worker that imported the code location once, instead of a
# fresh interpreter importing it per run (why: ``eval_assets.defs.warm_runs``).
WARM_RUN_LAUNCHER_YAML = """\
run_launcher:
  module: eval_assets.defs.warm_runs
  class: WarmRunLauncher
"""

# Runs of one partition queue behind each other (the run queue's per-value tag limit): two runs
# never write the same partition's folders at once, under the daemon or from the UI.
DAGSTER_YAML = """\
telemetry:
  enabled: false
run_coordinator:
  module: dagster._core.run_coordinator
  class: QueuedRunCoordinator
  config:
    dequeue_interval_seconds: 1
concurrency:
  runs:
    max_concurrent_runs: 4
    tag_concurrency_limits:
      - key: dagster/partition
        value:
          applyLimitPerUniqueValue: true
        limit: 1
  pools:
    default_limit: 4
""" + RUN_STORAGE_YAML + EVENT_LOG_STORAGE_YAML + SCHEDULE_STORAGE_YAML + WARM_RUN_LAUNCHER_YAML

RUN_LOCK_FILE = "eval-assets-run.lock"
# The instance's SQLite databases and their alembic version tables (one row each when sound).
SCHEMA_DATABASES = ("history/runs.db", "history/runs/index.db", "schedules/schedules.db")


def ensure_dagster_home(layout: StorageLayout) -> Path:
    """Create the instance folder (telemetry off) and point ``DAGSTER_HOME`` at it.

    An existing ``dagster.yaml`` is kept as it is (it may carry a user's settings), except that
    one naming no unified ``storage`` gets the stanza of each storage it does not name
    (:data:`STORAGE_STANZAS`) appended.
    """
    home = layout.dagster_home()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        write_text_atomic(config, DAGSTER_YAML)
    else:
        text = config.read_text()
        missing = [stanza for key, stanza in STORAGE_STANZAS.items()
                   if f"\n{key}:" not in f"\n{text}"]
        if missing and "\nstorage:" not in f"\n{text}":
            write_text_atomic(config, text.rstrip("\n") + "\n" + "".join(missing))
    os.environ["DAGSTER_HOME"] = str(home)
    return home


def prepare_dagster_home(layout: StorageLayout) -> Path:
    """:func:`ensure_dagster_home`, then create (or check) its storages' schema now, before any
    Dagster process is started on it. Raises :class:`InputError` for a schema with two heads."""
    from dagster import DagsterInstance

    home = ensure_dagster_home(layout)
    # Checked first too: Dagster's own error for such a database names neither file nor fix.
    _refuse_two_heads(home)
    # Opening the instance opens every storage, each under the schema lock.
    with DagsterInstance.from_config(str(home)):
        pass
    _refuse_two_heads(home)
    return home


def _refuse_two_heads(home: Path) -> None:
    doubled = {name: heads for name, heads in schema_heads(home).items() if len(heads) > 1}
    if doubled:
        name, heads = next(iter(doubled.items()))
        latest = _dagster_schema_head()
        stale = [rev for rev in heads if rev != latest] if latest in heads else heads[1:]
        where = " OR ".join(f"version_num = '{rev}'" for rev in stale)
        raise InputError(
            f"{home / name} has {len(heads)} schema heads {heads}: Dagster processes created it "
            "at the same time before this instance's storages took a lock, and every Dagster "
            "command on it fails. Fix: stop every Dagster process on it, then delete "
            f"{home} if it holds no run you need; otherwise keep Dagster's own revision "
            f"({latest}) with: sqlite3 {home / name} \"DELETE FROM alembic_version WHERE {where}\"")


def _dagster_schema_head() -> str | None:
    """The newest schema revision this Dagster's SQLite storages know (one script set for all)."""
    from alembic.script import ScriptDirectory
    from dagster._core.storage.runs.sqlite import sqlite_run_storage
    from dagster._core.storage.sql import get_alembic_config

    config = get_alembic_config(sqlite_run_storage.__file__)
    return ScriptDirectory.from_config(config).get_current_head()


def schema_heads(home: Path) -> dict[str, list[str]]:
    """The alembic revisions stamped in each of the instance's databases that exists."""
    heads: dict[str, list[str]] = {}
    for name in SCHEMA_DATABASES:
        path = home / name
        if path.is_file():
            with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
                heads[name] = [row[0] for row in
                               conn.execute("SELECT version_num FROM alembic_version")]
    return heads


class RunInProgress(InputError):
    """Another ``eval-assets run`` works on this instance and this one was told not to wait."""


@contextlib.contextmanager
def run_lock(home: Path, *, wait: bool = True,
             on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold ``<home>/eval-assets-run.lock``: one ``eval-assets run`` at a time on an instance.

    Two runs on one instance would write the same partitions' folders and files at once (one
    run's cleanup removing the other's half-written frame). A second run waits, after one line
    to ``on_wait`` naming the first's pid; with ``wait=False`` it raises :class:`RunInProgress`
    naming the pid and the fix. The lock ends with its process, killed or not.
    """
    lock_file = home / RUN_LOCK_FILE

    def say_waiting(holder: int | None) -> None:
        if on_wait is not None:
            on_wait(f"waiting for eval-assets run (pid {_pid(holder)}) on {home} to finish ...")

    try:
        with exclusive_lock(lock_file, wait=wait, on_wait=say_waiting):
            yield
    except LockBusy as busy:
        raise RunInProgress(
            f"another eval-assets run (pid {_pid(busy.holder)}) is working on the instance "
            f"{home} (lock {lock_file}). Fix: wait for it to finish (rerun without --no-wait "
            "and unset EVAL_ASSETS_NO_WAIT, and this run waits for it), or give this run its "
            "own --storage-root.") from None


def _pid(holder: int | None) -> str:
    return str(holder) if holder is not None else "unknown"


def log_file_for(layout: StorageLayout) -> Path:
    """A new log file for one local run, named by its start time."""
    folder = layout.logs_dir()
    folder.mkdir(parents=True, exist_ok=True)
    return folder / time.strftime("run-%Y%m%d-%H%M%S.log", time.gmtime())
