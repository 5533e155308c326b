"""The names inside a dimOS recording of the robot: its TF frames and its LiDAR stream.

The writers of synthetic recordings (:mod:`eval_assets.synth.sample`,
:mod:`eval_assets.synth.stream`, :mod:`eval_assets.sim.simulate`) take them from here, so every
recording they write names its frames and scan stream as the robot does (``tf``: ``world →
base_link``, ``base_link → camera_optical`` and ``base_link → mid360_link``; the Mid-360's scans
in ``pointlio_lidar``), and as :data:`eval_assets.recording.reader.LIDAR_STREAMS` prefers.
"""

from __future__ import annotations

__all__ = ["BASE_FRAME", "CAMERA_FRAME", "LIDAR_FRAME", "LIDAR_STREAM", "WORLD_FRAME"]

WORLD_FRAME = "world"
BASE_FRAME = "base_link"
CAMERA_FRAME = "camera_optical"
LIDAR_FRAME = "mid360_link"
LIDAR_STREAM = "pointlio_lidar"
