"""The name of every asset that is not a metric, defined once.

A name is the asset's key in Dagster (:mod:`eval_assets.defs.keys` wraps each in an ``AssetKey``)
and its folder under the storage root (:class:`eval_assets.layout.StorageLayout`). Metric assets
are named by their metric. Plain strings, so the core names its folders without Dagster.
"""

from __future__ import annotations

# Observed inputs: files outside Dagster whose content is their data version.
RECORDING_FILE = "recording_file"
MODEL_CONFIG = "model_config"
JUDGE_CONFIG = "judge_config"
LABEL_OVERRIDES = "label_overrides"

# Per recording.
RECORDING_INGEST = "recording_ingest"
RECTIFIED_FRAMES = "rectified_frames"
POINTCLOUD_FRAMES = "pointcloud_frames"
DETECTIONS_MASKS = "detections_masks"
OBJECT_TRACKS = "object_tracks"
QUESTION_PROPOSALS = "question_proposals"
PUBLIC_CASES = "public_cases"
PRIVATE_LABELS = "private_labels"
EVIDENCE_QUALITY = "evidence_quality"

# Per (recording, model).
PREDICTIONS = "predictions"
BENCHMARK_RESULTS = "benchmark_results"

# Across every partition.
LEADERBOARD = "leaderboard"
REPORT = "report"
