"""Python API: run the asset graph for one recording on a persistent local Dagster instance.

This is what ``eval-assets demo`` / ``eval-assets run`` call; it materializes the same assets the UI
and the sensor do, so every run is visible in ``dagster dev`` afterwards (same ``DAGSTER_HOME``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from eval_assets.layout import StorageLayout, default_storage_root, partition_key_for

DAGSTER_YAML = "telemetry:\n  enabled: false\n"


def ensure_dagster_home(layout: StorageLayout) -> Path:
    """Create the instance folder (telemetry off) and point ``DAGSTER_HOME`` at it."""
    home = layout.dagster_home()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(DAGSTER_YAML)
    os.environ["DAGSTER_HOME"] = str(home)
    return home


@dataclass(frozen=True)
class PipelineRun:
    """Where one run's outputs landed."""

    partition_key: str
    run_id: str
    layout: StorageLayout
    asset_dirs: dict[str, Path]


def run_recording(recording: Path, storage_root: Path | None = None) -> PipelineRun:
    """Materialize every asset of the per-recording pipeline for ``recording``.

    The recording's folder becomes the watched recordings folder for this run and its stem the
    partition key. Raises the first asset failure (a corrupt recording fails at ingest).
    """
    from dagster import DagsterInstance

    from eval_assets.definitions import defs
    from eval_assets.jobs import recording_pipeline_job
    from eval_assets.partitions import recordings_partitions

    recording = recording.resolve()
    if not recording.is_file():
        raise FileNotFoundError(f"{recording}: no such recording file")
    layout = StorageLayout(storage_root.resolve() if storage_root else default_storage_root())
    ensure_dagster_home(layout)
    key = partition_key_for(recording)
    instance = DagsterInstance.get()
    if not instance.has_dynamic_partition(recordings_partitions.name, key):
        instance.add_dynamic_partitions(recordings_partitions.name, [key])
    job = defs.get_job_def(recording_pipeline_job.name)
    storage_config = {"recordings_dir": str(recording.parent), "storage_root": str(layout.root)}
    result = job.execute_in_process(
        run_config={"resources": {"storage": {"config": storage_config}}},
        instance=instance,
        partition_key=key,
    )
    events = result.get_asset_materialization_events()
    built = sorted({ev.asset_key.to_user_string() for ev in events})
    asset_dirs = {name: layout.asset_dir(name, key) for name in built}
    return PipelineRun(
        partition_key=key, run_id=result.run_id, layout=layout, asset_dirs=asset_dirs
    )
