"""Hand-built object tracks for the spatial family tests: a z-up world, level cameras."""

from __future__ import annotations

import numpy as np

from eval_assets.schemas.spatial import (
    FrameCamera,
    ObjectTrack,
    ObjectTracks,
    SpatialCase,
    SpatialLabel,
)
from eval_assets.vqa.spatial.evidence import SpatialRejection, TrackIndex
from eval_assets.vqa.spatial.families import spatial_items

# Optical axes in a z-up world for a level camera looking along world +x: optical z = world x,
# optical x (right) = world -y, optical y (down) = world -z.
_LEVEL = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])


def level_camera(frame: int, height_m: float = 0.5, x_m: float = 0.0) -> FrameCamera:
    """Frame ``frame``'s camera at (``x_m``, 0, ``height_m``), level, looking along world +x."""
    m = np.eye(4)
    m[:3, :3] = _LEVEL
    m[:3, 3] = [x_m, 0.0, height_m]
    return FrameCamera(world_from_camera=m.reshape(-1).tolist(),
                       K=[400.0, 0.0, 320.0, 0.0, 400.0, 240.0, 0.0, 0.0, 1.0],
                       width=640, height=480, image_ts=float(frame))


def track(name: str, center: list[float], frames: list[int], *, number: int = 0,
          extent: tuple[float, float, float] = (0.4, 0.3, 0.5), ranges: dict[int, float] | None
          = None, view_spread_deg: float = 200.0, points: int = 200) -> ObjectTrack:
    """A strong, whole, all-round-seen track of ``name`` (``name#number``)."""
    return ObjectTrack(track_id=f"{name}#{number}", name=name, center_world=center,
                       extent_m=list(extent), yaw_rad=0.0, frames=frames,
                       pixels={f: 1000 + 10 * f for f in frames}, points=points,
                       ranges_m=dict(ranges) if ranges is not None else {f: 3.0 for f in frames},
                       whole_frames=frames, view_spread_deg=view_spread_deg)


def tracks_of(*objects: ObjectTrack, frames: int = 6, camera_height_m: float = 0.5,
              floor_z: float | None = 0.0) -> ObjectTracks:
    """The recording's tracks: ``objects`` seen by ``frames`` level cameras at one height."""
    return ObjectTracks(world_frame="world", tracks=list(objects), floor_z=floor_z,
                        cameras={f: level_camera(f, camera_height_m) for f in range(frames)})


def family_items(family: str, *objects: ObjectTrack
                 ) -> tuple[list[tuple[SpatialCase, SpatialLabel]], list[SpatialRejection]]:
    """``family``'s cases and rejections over ``objects`` (:func:`tracks_of`, every frame)."""
    tracks = tracks_of(*objects)
    items = spatial_items(TrackIndex(tracks, tuple(sorted(tracks.cameras))))
    cases = [i for i in items if not isinstance(i, SpatialRejection) and i[1].family == family]
    return cases, [i for i in items if isinstance(i, SpatialRejection) and i.family == family]

