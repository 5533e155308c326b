"""Asset jobs: per recording, per (recording, model), and the cross-partition report."""

from __future__ import annotations

from dagster import AssetSelection, define_asset_job

recording_pipeline_job = define_asset_job(
    name="recording_pipeline",
    selection=AssetSelection.groups("frames", "perception", "vqa"),
    description="Frames, evidence and the public/private dataset of one recording.",
)

model_benchmark_job = define_asset_job(
    name="model_benchmark",
    selection=AssetSelection.groups("predictions", "metrics"),
    description="One model's predictions on one recording's dataset, and every metric of them.",
)

leaderboard_report_job = define_asset_job(
    name="leaderboard_report",
    selection=AssetSelection.groups("report"),
    description="The leaderboard over every partition and the HTML report.",
)
