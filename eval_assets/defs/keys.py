"""Every asset key of the code location, imported everywhere else in the Dagster layer.

Each key wraps a name the core defines (:mod:`eval_assets.asset_names`), which is also the asset's
folder under the storage root (:class:`eval_assets.layout.StorageLayout`), so renaming an asset is
a change in one place.
"""

from __future__ import annotations

from dagster import AssetKey

from eval_assets import asset_names as names

# Observed inputs: files outside Dagster whose content is their data version.
RECORDING_FILE = AssetKey(names.RECORDING_FILE)
MODEL_CONFIG = AssetKey(names.MODEL_CONFIG)
JUDGE_CONFIG = AssetKey(names.JUDGE_CONFIG)

# Per recording.
RECORDING_INGEST = AssetKey(names.RECORDING_INGEST)
RECTIFIED_FRAMES = AssetKey(names.RECTIFIED_FRAMES)
POINTCLOUD_FRAMES = AssetKey(names.POINTCLOUD_FRAMES)
DETECTIONS_MASKS = AssetKey(names.DETECTIONS_MASKS)
QUESTION_PROPOSALS = AssetKey(names.QUESTION_PROPOSALS)
PUBLIC_CASES = AssetKey(names.PUBLIC_CASES)
PRIVATE_LABELS = AssetKey(names.PRIVATE_LABELS)

# Per (recording, model).
PREDICTIONS = AssetKey(names.PREDICTIONS)
VQA_ACCURACY = AssetKey("vqa_accuracy")
POPE_PRESENCE = AssetKey("pope_presence")
MCQ_AVLM = AssetKey("mcq_avlm")
DESCRIPTION_JUDGE = AssetKey("description_judge")
VISION_SIMILARITY = AssetKey("vision_similarity")
CHAIR_HALLUCINATION = AssetKey("chair_hallucination")
BENCHMARK_RESULTS = AssetKey(names.BENCHMARK_RESULTS)

# Across every partition.
LEADERBOARD = AssetKey(names.LEADERBOARD)
REPORT = AssetKey(names.REPORT)


def name(key: AssetKey) -> str:
    """The key's last path element: the asset's name and its folder under the storage root."""
    return key.path[-1]
