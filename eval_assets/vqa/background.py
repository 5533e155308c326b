"""Floor seen beyond an object through its mask: the LiDAR points a mask takes in that are not
the object, for the distance families' ambiguity guard (:mod:`eval_assets.vqa.families`).

The LiDAR and the camera see from different places: where the camera sees an object, the LiDAR
can see past or under it (between a table's legs, over a low ball) and hit the floor behind. Those
floor points project into the object's mask and, when numerous, carry dimOS's median range of the
mask into another bucket than the object's own surface (simulated seeds 912, 931-942 with the truth
evidence: a table at 2.93 m answered "3 meters or more", a ball at 1.37 m answered "2 to under 3
meters" from floor 2.62 m away).

A mask's point is such *background* when it lies in the floor band (at most
:data:`~eval_assets.tracks.lift.FLOOR_BAND_M` above the frame's floor, as the tracks define it)
and more than :data:`~eval_assets.tracks.lift.RANGE_GATE_M` farther than the object's *foot*:
where the camera ray through the mask's lowest pixel meets the floor. Whatever the object rests
on, its lowest visible point lies on that ray no farther than the floor, so floor far beyond it
is seen past the object, not on it. The range statistics of the remaining points let the family
rules check that dimOS's answer does not rest on that floor. Pure geometry on arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from eval_assets.geometry.ranging import RangeStats, stats_of
from eval_assets.tracks.lift import FLOOR_BAND_M, RANGE_GATE_M, floor_heights


@dataclass(frozen=True)
class BackgroundSplit:
    """One mask's LiDAR points split into floor seen beyond the object and the rest.

    ``background`` counts the mask's points that are floor beyond the object's foot
    (``foot_m``, the floor range of the ray through the mask's lowest pixel; ``inf`` when that
    ray never meets the floor); ``rest`` holds the range statistics of the other points (None
    when none is left).
    """

    background: int
    rest: RangeStats | None
    foot_m: float


def foot_range(mask: np.ndarray, K: np.ndarray, floor_normal: np.ndarray,
               camera_height_m: float) -> float:
    """Range (metres) at which the camera ray through ``mask``'s lowest pixel (the middle pixel
    of its lowest row, at the pixel centre) meets the floor; ``inf`` when it does not (a ray
    at or above the horizon, or a camera not above the floor).

    ``floor_normal`` is the world's up direction in the camera frame; ``camera_height_m`` the
    camera's height above the floor.
    """
    rows = np.flatnonzero(mask.any(axis=1))
    if rows.size == 0 or camera_height_m <= 0:
        return float("inf")
    bottom = int(rows[-1])
    cols = np.flatnonzero(mask[bottom])
    column = int(cols[len(cols) // 2])
    ray = np.linalg.solve(np.asarray(K, dtype=np.float64).reshape(3, 3),
                          np.array([column + 0.5, bottom + 0.5, 1.0]))
    down = float(floor_normal @ ray)
    if down >= 0:
        return float("inf")
    return float(camera_height_m / -down * np.linalg.norm(ray))


def background_splits(u: np.ndarray, v: np.ndarray, xyz: np.ndarray, masks: Sequence[np.ndarray],
                      K: np.ndarray, world_from_camera: np.ndarray) -> list[BackgroundSplit]:
    """Per mask, its points split into floor seen beyond the object and the rest.

    ``(u, v, xyz)`` are the frame's z-buffered camera-frame points (the nearest point per pixel,
    as :func:`eval_assets.tracks.lift.visible_points` and dimOS's ranging keep them);
    ``world_from_camera`` is the rectified camera's pose (4x4). The floor is the one the tracks
    use (:func:`eval_assets.tracks.lift.floor_heights`: the 1st percentile of the points'
    heights).
    """
    pose = np.asarray(world_from_camera, dtype=np.float64).reshape(4, 4)
    points = np.asarray(xyz, dtype=np.float64).reshape(-1, 3)
    heights = floor_heights(points, pose)
    up = pose[2, :3]
    # height_i = up . xyz_i + t_z - floor, so the camera's own height t_z - floor is
    # height_i - up . xyz_i for any point (the floor is not returned on its own).
    camera_height = float(heights[0] - up @ points[0]) if len(points) else 0.0
    ranges = np.linalg.norm(points, axis=1)
    out = []
    for mask in masks:
        m = np.asarray(mask, dtype=bool)
        inside = m[v, u]
        foot = foot_range(m, K, up, camera_height)
        r = ranges[inside]
        beyond = (heights[inside] <= FLOOR_BAND_M) & (r > foot + RANGE_GATE_M)
        out.append(BackgroundSplit(background=int(np.count_nonzero(beyond)),
                                   rest=stats_of(r[~beyond]), foot_m=foot))
    return out
