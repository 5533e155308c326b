"""Every asset key of the code location, imported everywhere else in the Dagster layer.

Each key wraps a name the core defines: :mod:`eval_assets.asset_names`, or for a metric its
spec's ``name`` in :data:`eval_assets.scoring.METRICS`. That name is also the asset's folder under
the storage root (:class:`eval_assets.layout.StorageLayout`), so renaming an asset is a change in
one place.
"""

from __future__ import annotations

from dagster import AssetKey

from eval_assets import asset_names as names
from eval_assets import scoring

# Observed inputs: files outside Dagster whose content is their data version.
RECORDING_FILE = AssetKey(names.RECORDING_FILE)
MODEL_CONFIG = AssetKey(names.MODEL_CONFIG)
JUDGE_CONFIG = AssetKey(names.JUDGE_CONFIG)
LABEL_OVERRIDES = AssetKey(names.LABEL_OVERRIDES)

# Per recording.
RECORDING_INGEST = AssetKey(names.RECORDING_INGEST)
RECTIFIED_FRAMES = AssetKey(names.RECTIFIED_FRAMES)
POINTCLOUD_FRAMES = AssetKey(names.POINTCLOUD_FRAMES)
DETECTIONS_MASKS = AssetKey(names.DETECTIONS_MASKS)
OBJECT_TRACKS = AssetKey(names.OBJECT_TRACKS)
QUESTION_PROPOSALS = AssetKey(names.QUESTION_PROPOSALS)
PUBLIC_CASES = AssetKey(names.PUBLIC_CASES)
PRIVATE_LABELS = AssetKey(names.PRIVATE_LABELS)
EVIDENCE_QUALITY = AssetKey(names.EVIDENCE_QUALITY)
RECORDING_CHAIN = (RECORDING_INGEST, RECTIFIED_FRAMES, POINTCLOUD_FRAMES, DETECTIONS_MASKS,
                   OBJECT_TRACKS, QUESTION_PROPOSALS, PUBLIC_CASES, PRIVATE_LABELS,
                   EVIDENCE_QUALITY)
"""The assets of one recording's chain, in graph order: what a run (or a backfill) of one
recording partition materializes."""

# Per (recording, model).
PREDICTIONS = AssetKey(names.PREDICTIONS)
# The metric assets, named by their specs (eval_assets.scoring.METRICS): one per spec, no
# constant per metric; a metric's key is ``METRICS[spec.name]``.
METRICS: dict[str, AssetKey] = {spec.name: AssetKey(spec.name) for spec in scoring.METRICS}
BENCHMARK_RESULTS = AssetKey(names.BENCHMARK_RESULTS)
CELL_ASSETS = (PREDICTIONS, *METRICS.values(), BENCHMARK_RESULTS)
"""The assets of one (recording, model) cell, in order: the ``model_benchmark`` job's selection,
and every cell input of the leaderboard and the report."""

# Across every partition.
LEADERBOARD = AssetKey(names.LEADERBOARD)
REPORT = AssetKey(names.REPORT)


def name(key: AssetKey) -> str:
    """The key's last path element: the asset's name and its folder under the storage root."""
    return key.path[-1]
