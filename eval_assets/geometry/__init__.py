"""Pure geometry: camera models, the TF graph and the LiDAR range primitive (no dataset access)."""

from eval_assets.geometry.camera import SUPPORTED_MODELS, CameraModel, canonical_model
from eval_assets.geometry.ranging import (
    RangeStats,
    camera_points,
    range_statistics,
    stats_of,
    zbuffer_projection,
)
from eval_assets.geometry.transforms import TransformGraph, TransformUnavailable, invert_rigid

__all__ = [
    "SUPPORTED_MODELS",
    "CameraModel",
    "RangeStats",
    "TransformGraph",
    "TransformUnavailable",
    "camera_points",
    "canonical_model",
    "invert_rigid",
    "range_statistics",
    "stats_of",
    "zbuffer_projection",
]
