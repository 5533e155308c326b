"""Asset jobs: the per-recording pipeline the demo, the sensor and backfills launch."""

from __future__ import annotations

from dagster import AssetSelection, define_asset_job

FRAMES_GROUP = "frames"

recording_pipeline_job = define_asset_job(
    name="recording_pipeline",
    selection=AssetSelection.groups(FRAMES_GROUP),
    description="Everything that can be built for one recording, from ingest onwards.",
)
