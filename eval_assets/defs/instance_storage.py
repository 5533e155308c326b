"""The instance's run and schedule storages: Dagster's SQLite ones, created one process at a time.

Why: every Dagster process (webserver, daemon, their code servers, ``dagster-celery worker
start``, each run worker) opens the instance's storages when it starts, and on a fresh
``DAGSTER_HOME`` each of them creates the SQLite schema it finds missing. Dagster guards none of
that across processes: started together on a fresh home, the webserver crashed on ``table
instigators already exists`` while the daemon created the same table, and two Celery workers
left ``alembic_version`` with two rows (one process stamped ``head`` after creating the tables,
the other saw the tables without a stamp and stamped the last pre-SQLAlchemy-2 revision), so
every later command failed on "more than one head".

These storages (and :class:`eval_assets.defs.event_log_storage.SqliteEventLogWithoutStatusCache`)
open their database under :func:`schema_lock`, an exclusive ``flock`` on a file in the instance
folder: the first process creates and stamps the schema, the others wait a moment and then find
it complete. An instance already created is only checked, as before. Files and tables are
Dagster's own (``history/runs.db``, ``schedules/schedules.db``): an instance switched to these
classes keeps its history. Like the event log, they open where Dagster's defaults do, once the
instance registers itself, so ``dagster.yaml`` names no absolute path.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Self

from dagster import DagsterInstance
from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage
from dagster._core.storage.schedules.sqlite.sqlite_schedule_storage import SqliteScheduleStorage
from dagster._core.storage.sqlite import create_db_conn_string
from dagster._serdes import ConfigurableClassData

from eval_assets.file_lock import exclusive_lock

SCHEMA_LOCK_FILE = ".eval-assets-schema.lock"


@contextlib.contextmanager
def schema_lock(instance_root: str | Path) -> Iterator[None]:
    """Hold the instance's schema lock: one process at a time creates or checks its databases."""
    with exclusive_lock(Path(instance_root) / SCHEMA_LOCK_FILE):
        yield


class _OpensInHome:
    """What both storages share: built from ``dagster.yaml`` without config, their database
    opened once the instance registers itself (the folder is the instance's)."""

    def __init__(self, inst_data: ConfigurableClassData | None = None) -> None:
        # The database opens in register_instance, when the instance folder is known.
        self._deferred_inst_data = inst_data

    @property
    def inst_data(self) -> ConfigurableClassData | None:
        return self._deferred_inst_data

    @classmethod
    def config_type(cls) -> dict[str, Any]:
        return {}

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData | None, config_value: Mapping[str, Any]
    ) -> Self:
        """Build from ``dagster.yaml`` (no config: the folder is the instance's)."""
        return cls(inst_data=inst_data)


class SqliteRunStorageInHome(_OpensInHome, SqliteRunStorage):
    """Dagster's SQLite run storage in ``<instance root>/history``, made under the lock."""

    def register_instance(self, instance: DagsterInstance) -> None:
        if not hasattr(self, "_conn_string"):
            base_dir = os.path.join(instance.root_directory, "history", "")
            with schema_lock(instance.root_directory):
                # Creates, stamps and indexes a missing schema; the object itself is not kept.
                SqliteRunStorage.from_local(base_dir)
            SqliteRunStorage.__init__(self, create_db_conn_string(base_dir, "runs"),
                                      self._deferred_inst_data)
        super().register_instance(instance)


class SqliteScheduleStorageInHome(_OpensInHome, SqliteScheduleStorage):
    """Dagster's SQLite schedule storage in ``<instance root>/schedules``, made under the lock."""

    def register_instance(self, instance: DagsterInstance) -> None:
        if not hasattr(self, "_conn_string"):
            base_dir = os.path.join(instance.root_directory, "schedules")
            with schema_lock(instance.root_directory):
                SqliteScheduleStorage.from_local(base_dir)
            SqliteScheduleStorage.__init__(self, create_db_conn_string(base_dir, "schedules"),
                                           self._deferred_inst_data)
        super().register_instance(instance)
