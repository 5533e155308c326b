"""The names inside a dimOS recording of the robot: its streams and its TF frames.

The reader, the frame stages and the writers of synthetic recordings
(:mod:`eval_assets.synth.sample`, :mod:`eval_assets.synth.stream`,
:mod:`eval_assets.sim.simulate`) take them from here, so every recording they write names its
streams and frames as the robot does (``tf``: ``world → base_link``, ``base_link →
camera_optical`` and ``base_link → mid360_link``; the Mid-360's scans in ``pointlio_lidar``),
and as :data:`eval_assets.recording.reader.LIDAR_STREAMS` prefers.
"""

from __future__ import annotations

__all__ = ["BASE_FRAME", "CAMERA_FRAME", "CAMERA_INFO_STREAM", "IMAGE_STREAM",
           "LIDAR_FALLBACK_STREAM", "LIDAR_FRAME", "LIDAR_STREAM", "TF_STREAM", "WORLD_FRAME"]

WORLD_FRAME = "world"
BASE_FRAME = "base_link"
CAMERA_FRAME = "camera_optical"
LIDAR_FRAME = "mid360_link"
IMAGE_STREAM = "color_image"
CAMERA_INFO_STREAM = "camera_info"
TF_STREAM = "tf"
LIDAR_STREAM = "pointlio_lidar"
LIDAR_FALLBACK_STREAM = "lidar"
"""Read where a recording has no (or an empty) :data:`LIDAR_STREAM`; never written."""
