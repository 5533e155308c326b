"""Every asset key of the code location, defined once and imported everywhere else.

Folder names under the storage root follow these keys (:class:`eval_assets.layout.StorageLayout`
receives ``key.path[-1]``), so renaming an asset is a change in one place.
"""

from __future__ import annotations

from dagster import AssetKey

# Observed inputs: files outside Dagster whose content is their data version.
RECORDING_FILE = AssetKey("recording_file")
MODEL_CONFIG = AssetKey("model_config")
JUDGE_CONFIG = AssetKey("judge_config")

# Per recording.
RECORDING_INGEST = AssetKey("recording_ingest")
RECTIFIED_FRAMES = AssetKey("rectified_frames")
POINTCLOUD_FRAMES = AssetKey("pointcloud_frames")
DETECTIONS_MASKS = AssetKey("detections_masks")
QUESTION_PROPOSALS = AssetKey("question_proposals")
PUBLIC_CASES = AssetKey("public_cases")
PRIVATE_LABELS = AssetKey("private_labels")

# Per (recording, model).
PREDICTIONS = AssetKey("predictions")
# The metric assets: one per eval_assets.scoring.METRICS entry, named by it.
VQA_ACCURACY = AssetKey("vqa_accuracy")
CIRCULAR_EVAL = AssetKey("circular_eval")
POPE_PRESENCE = AssetKey("pope_presence")
MCQ_AVLM = AssetKey("mcq_avlm")
DESCRIPTION_JUDGE = AssetKey("description_judge")
VISION_SIMILARITY = AssetKey("vision_similarity")
CHAIR_HALLUCINATION = AssetKey("chair_hallucination")
NUMERIC_ACCURACY = AssetKey("numeric_accuracy")
BENCHMARK_RESULTS = AssetKey("benchmark_results")

# Across every partition.
LEADERBOARD = AssetKey("leaderboard")
REPORT = AssetKey("report")


def name(key: AssetKey) -> str:
    """The key's last path element: the asset's name and its folder under the storage root."""
    return key.path[-1]
