"""The persistent local Dagster instance that ``eval-assets run`` / ``demo`` use, and its logs.

Under the storage root, so every local run is visible in ``dagster dev`` afterwards (same
``DAGSTER_HOME``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from eval_assets.atomic import write_text_atomic
from eval_assets.layout import StorageLayout

# The event log is Dagster's SQLite one without the stored partition-status summary, which can
# lose a materialization under the daemon (why: ``eval_assets.defs.event_log_storage``).
EVENT_LOG_STORAGE_YAML = """\
event_log_storage:
  module: eval_assets.defs.event_log_storage
  class: SqliteEventLogWithoutStatusCache
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
""" + EVENT_LOG_STORAGE_YAML


def ensure_dagster_home(layout: StorageLayout) -> Path:
    """Create the instance folder (telemetry off) and point ``DAGSTER_HOME`` at it.

    An existing ``dagster.yaml`` is kept as it is (it may carry a user's settings), except that
    one naming no event log storage gets :data:`EVENT_LOG_STORAGE_YAML` appended.
    """
    home = layout.dagster_home()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        write_text_atomic(config, DAGSTER_YAML)
    else:
        text = config.read_text()
        if "event_log_storage" not in text and "\nstorage:" not in f"\n{text}":
            write_text_atomic(config, text.rstrip("\n") + "\n" + EVENT_LOG_STORAGE_YAML)
    os.environ["DAGSTER_HOME"] = str(home)
    return home


def log_file_for(layout: StorageLayout) -> Path:
    """A new log file for one local run, named by its start time."""
    folder = layout.logs_dir()
    folder.mkdir(parents=True, exist_ok=True)
    return folder / time.strftime("run-%Y%m%d-%H%M%S.log", time.gmtime())
