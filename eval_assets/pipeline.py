"""Python API: run the whole chain for one recording on a persistent local Dagster instance.

This is what ``eval-assets demo`` / ``eval-assets run`` call. It launches the same jobs the UI, the
sensors and the nightly schedule launch — ``recording_pipeline`` for the recording, then
``model_benchmark`` for each (recording, model), then ``leaderboard_report`` — so every run is
visible in ``dagster dev`` afterwards (same ``DAGSTER_HOME``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
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
class BenchmarkRun:
    """Where one end-to-end run's outputs landed, and the Dagster runs behind it."""

    recording: str
    models: tuple[str, ...]
    run_ids: tuple[str, ...]
    layout: StorageLayout

    @property
    def report(self) -> Path:
        """The HTML report."""
        return self.layout.report_file()

    @property
    def leaderboard(self) -> Path:
        """The leaderboard folder (Parquet + JSON)."""
        return self.layout.leaderboard_dir()


def run_benchmark(
    recording: Path,
    storage_root: Path | None = None,
    models: Sequence[str] | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> BenchmarkRun:
    """Build the dataset of ``recording``, benchmark ``models`` (default: all configured) on it,
    and refresh the leaderboard and report. Raises on the first failed run.

    The recording's folder serves as the recordings folder for these runs and its stem is the
    partition key.
    """
    from dagster import DagsterInstance, MultiPartitionKey

    from eval_assets.definitions import defs
    from eval_assets.jobs import leaderboard_report_job, model_benchmark_job, recording_pipeline_job
    from eval_assets.partitions import (
        MODEL_DIM,
        RECORDING_DIM,
        model_partitions,
        recordings_partitions,
    )

    recording = recording.resolve()
    if not recording.is_file():
        raise FileNotFoundError(f"{recording}: no such recording file")
    known = model_partitions.get_partition_keys()
    chosen = tuple(models) if models else tuple(known)
    unknown = sorted(set(chosen) - set(known))
    if unknown:
        raise ValueError(f"models {unknown} are not declared in the models file; known: {known}")
    layout = StorageLayout(storage_root.resolve() if storage_root else default_storage_root())
    ensure_dagster_home(layout)
    key = partition_key_for(recording)
    run_config = {"resources": {"storage": {"config": {
        "recordings_dir": str(recording.parent), "storage_root": str(layout.root)}}}}
    run_ids: list[str] = []
    with DagsterInstance.get() as instance:
        if not instance.has_dynamic_partition(recordings_partitions.name, key):
            instance.add_dynamic_partitions(recordings_partitions.name, [key])

        def launch(job_name: str, partition_key: str | None, label: str) -> None:
            progress(f"running {label}")
            result = defs.get_job_def(job_name).execute_in_process(
                run_config=run_config, instance=instance, partition_key=partition_key)
            run_ids.append(result.run_id)

        launch(recording_pipeline_job.name, key, f"{recording_pipeline_job.name} [{key}]")
        for model in chosen:
            pkey = MultiPartitionKey({RECORDING_DIM: key, MODEL_DIM: model})
            launch(model_benchmark_job.name, pkey, f"{model_benchmark_job.name} [{key}, {model}]")
        launch(leaderboard_report_job.name, None, leaderboard_report_job.name)
    return BenchmarkRun(recording=key, models=chosen, run_ids=tuple(run_ids), layout=layout)
