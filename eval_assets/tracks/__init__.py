"""3-D object tracks: detections lifted with LiDAR and TF, fused across frames in the world frame.

See ``shared/specs/spatial.md`` ("Object tracks"). :func:`build_tracks` is the entry point;
:mod:`~eval_assets.tracks.lift` lifts one frame, :mod:`~eval_assets.tracks.fuse` fuses and
stores the :class:`~eval_assets.schemas.spatial.ObjectTracks` record.
"""

from eval_assets.tracks.build import build_tracks
from eval_assets.tracks.fuse import fuse_sightings, read_object_tracks, write_object_tracks

__all__ = ["build_tracks", "fuse_sightings", "read_object_tracks", "write_object_tracks"]
