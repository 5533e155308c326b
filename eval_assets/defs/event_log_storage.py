"""The instance's event log: Dagster's SQLite event log without the stored partition-status cache.

Why: Dagster (1.13) keeps, per partitioned asset, a stored summary of which partitions are
materialized, and updates it incrementally: "fetch the materializations after the summary's
``latest_storage_id``". The update reads the asset's last materialization id from an asset
record the automation daemon loaded earlier in its tick, but the last *planned* id live; when a
run materializes one partition and another run plans a second in between, the new summary's
``latest_storage_id`` jumps past a materialization it never fetched, and that partition stays
"missing" in the summary for good. Measured on the daemon with 10 recordings × 5 models
(``benchmarks/graph_scale_daemon.py``): the stored summary of ``benchmark_results`` held 48 of
50 materialized cells, so the leaderboard and the report, which wait until no cell is pending,
were never built. (``eval_assets_tests/defs/test_event_log_storage.py`` reproduces the race.)

This storage neither reads nor writes that summary: every evaluation computes a partitioned
asset's materialized, failed and in-progress partitions from the event log itself (indexed
queries, a few milliseconds per asset at 250 cells), so the answer is always the event log's.
Everything else, files included, is Dagster's ``SqliteEventLogStorage`` unchanged: an instance
switched to it keeps its history.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from dagster import DagsterInstance, Field, StringSource
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage
from dagster._serdes import ConfigurableClassData

from eval_assets.defs.instance_storage import schema_lock


class SqliteEventLogWithoutStatusCache(SqliteEventLogStorage):
    """Dagster's SQLite event log whose partition status always comes from the events.

    Without ``base_dir`` in its config, it lives where Dagster's default one does,
    ``<instance root>/history/runs``: the folder is only known when the instance registers
    itself, so the storage opens then (``dagster.yaml`` needs no absolute path, and an instance
    folder can be moved), under the instance's schema lock.
    """

    def __init__(self, base_dir: str | None, inst_data: ConfigurableClassData | None = None
                 ) -> None:
        self._deferred_inst_data = inst_data
        if base_dir is not None:
            super().__init__(base_dir=base_dir, inst_data=inst_data)

    def register_instance(self, instance: DagsterInstance) -> None:
        if not hasattr(self, "_base_dir"):
            # One process at a time creates the index shard's schema (why:
            # eval_assets.defs.instance_storage).
            with schema_lock(instance.root_directory):
                super().__init__(
                    base_dir=os.path.join(instance.root_directory, "history", "runs", ""),
                    inst_data=self._deferred_inst_data)
        super().register_instance(instance)

    def can_read_asset_status_cache(self) -> bool:
        return False

    def can_write_asset_status_cache(self) -> bool:
        return False

    @classmethod
    def config_type(cls) -> dict[str, Field]:
        return {"base_dir": Field(StringSource, is_required=False)}

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData | None, config_value: Mapping[str, Any]
    ) -> SqliteEventLogWithoutStatusCache:
        """Build from ``dagster.yaml`` (``base_dir`` optional, see the class)."""
        return cls(base_dir=config_value.get("base_dir"), inst_data=inst_data)
