"""Floor seen beyond an object through its mask (eval_assets.vqa.background) and the distance
families' guard against it, from hand-built scenes written as stage files (no simulator)."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from eval_assets.atomic import write_bytes_atomic
from eval_assets.frames.pointclouds import encode_points
from eval_assets.geometry.ranging import range_statistics
from eval_assets.perception.evidence_io import write_detections_table, write_frame_detections
from eval_assets.schemas.frames import PointCloudFrame, points_relpath, write_pointcloud_frames
from eval_assets.schemas.perception import Detection, FrameDetections
from eval_assets.schemas.spatial import FrameCamera
from eval_assets.tracks.lift import FLOOR_BAND_M, RANGE_GATE_M
from eval_assets.vqa.background import background_splits, foot_range
from eval_assets.vqa.dataset import FrameInputs, frame_evidence
from eval_assets.vqa.families import (
    DISTANCE_BOUNDARIES_M,
    DISTANCE_CHOICES,
    Answered,
    Decision,
    Rejected,
    bucket_index,
    decide,
)
from eval_assets.vqa.generate import iter_frame_inputs
from eval_assets_tests.vqa.helpers import HEIGHT, WIDTH, box_mask, make_frames_dir

# helpers.make_frames_dir's camera: fx = fy = 50, centre (32, 24).
K = np.array([[50.0, 0.0, 32.0], [0.0, 50.0, 24.0], [0.0, 0.0, 1.0]])
CAMERA_HEIGHT_M = 0.5
# A level camera 0.5 m above the floor looking along world +x: camera x (right) is world -y,
# camera y (down) is world -z, camera z (forward) is world +x.
WORLD_FROM_CAMERA = np.array([[0.0, 0.0, 1.0, 0.0], [-1.0, 0.0, 0.0, 0.0],
                              [0.0, -1.0, 0.0, CAMERA_HEIGHT_M], [0.0, 0.0, 0.0, 1.0]])
# The table's mask: rows 22-37, columns 18-45. Its lowest row's ray meets the floor at
# z = 0.5 * 50 / (37.5 - 24) = 1.85 m: the table stands there.
TABLE = box_mask(18, 22, 46, 38)


def at_depth(u: int, v: int, z: float) -> np.ndarray:
    """The camera-frame point at depth ``z`` through the centre of pixel (u, v)."""
    return np.array([(u + 0.5 - 32.0) * z / 50.0, (v + 0.5 - 24.0) * z / 50.0, z])


def on_floor(u: int, v: int) -> np.ndarray:
    """Where the ray through pixel (u, v) (below the horizon) meets the floor."""
    return at_depth(u, v, CAMERA_HEIGHT_M * 50.0 / (v + 0.5 - 24.0))


def table_top(n: int) -> list[np.ndarray]:
    """``n`` (at most 13) points on the table top, 1.8 m deep, 0.45 m above the floor."""
    return [at_depth(19 + 2 * i, 25, 1.8) for i in range(n)]


def floor_beyond(n: int) -> list[np.ndarray]:
    """``n`` floor points inside the table's mask, 3.3-3.9 m away (rows 30 and 31): where the
    LiDAR, lower than the camera, sees under the table top."""
    pixels = [(18 + 2 * i, 31) for i in range(14)] + [(19 + 4 * i, 30) for i in range(7)]
    return [on_floor(u, v) for u, v in pixels[:n]]


# Floor in front of the table, outside its mask (rows 40-47): what the floor is found by.
FLOOR_IN_FRONT = [on_floor(u, v) for u in range(2, 62, 6) for v in range(40, 48, 2)]


def write_stages(root: Path, points: list[np.ndarray]) -> tuple[Path, Path, Path]:
    """One frame (index 0) showing a table whose mask is :data:`TABLE`, with ``points`` (camera
    frame) as its LiDAR sweep, written as the frames, point-cloud and detections stages."""
    frames_dir, frames = make_frames_dir(root, [0])
    (frame,) = frames
    clouds_dir, dets_dir = root / "clouds", root / "detections"
    cloud = np.array(points, dtype=np.float64)
    rel = points_relpath(0)
    write_bytes_atomic(clouds_dir / rel, encode_points(cloud))
    write_pointcloud_frames(clouds_dir, [PointCloudFrame(
        frame_index=0, image_ts=frame.image_ts, status="ok", reason=None,
        lidar_stream="pointlio_lidar", lidar_ts=frame.image_ts, lidar_dt=0.0,
        cloud_frame_id="camera_optical", camera_from_cloud=np.eye(4).reshape(-1).tolist(),
        points_path=rel, n_points=len(cloud), n_points_in_front=len(cloud))])
    record = FrameDetections(
        frame_index=0, width=WIDTH, height=HEIGHT, queried_names=["table", "mug"],
        detections=[Detection(name="table", label_index=0, box_xyxy=(18.0, 22.0, 46.0, 38.0),
                              score=1.0, mask_area=int(TABLE.sum()), mask_path=None,
                              detector="hand", detector_version="1", segmenter="hand",
                              segmenter_version="1")])
    write_detections_table(dets_dir, [write_frame_detections(dets_dir, record, [TABLE])])
    return frames_dir, clouds_dir, dets_dir


CAMERAS = {0: FrameCamera(world_from_camera=WORLD_FROM_CAMERA.reshape(-1).tolist(),
                          K=K.reshape(-1).tolist(), width=WIDTH, height=HEIGHT,
                          image_ts=1_700_000_000.0)}


def table_distance(root: Path, points: list[np.ndarray], posed: bool = True
                   ) -> tuple[FrameInputs, Decision]:
    """The frame's inputs as the dataset reads them and the table's object_distance decision."""
    stages = write_stages(root, points)
    (inputs,) = iter_frame_inputs(*stages, cameras=CAMERAS if posed else None)
    return inputs, decide("object_distance", ["table"], frame_evidence(inputs))


def answer(decision: Decision) -> str:
    assert isinstance(decision, Answered), decision
    return decision.answer


def rejection(decision: Decision, reason: str) -> str:
    """The detail of a rejection for ``reason``."""
    assert isinstance(decision, Rejected) and decision.reason == reason, decision
    return decision.detail


def test_the_foot_is_where_the_lowest_rows_ray_meets_the_floor() -> None:
    up = WORLD_FROM_CAMERA[2, :3]
    ray_z = CAMERA_HEIGHT_M * 50.0 / (37.5 - 24.0)
    expected = float(np.linalg.norm(at_depth(31, 37, ray_z)))  # middle column of row 37: 31
    assert foot_range(TABLE, K, up, CAMERA_HEIGHT_M) == pytest.approx(expected)
    # A mask whose lowest row lies above the horizon never meets the floor.
    assert foot_range(box_mask(18, 5, 46, 20), K, up, CAMERA_HEIGHT_M) == float("inf")


def test_mostly_floor_beyond_the_table_top_is_rejected_with_the_figures(tmp_path: Path) -> None:
    """5 points on the table top at 1.8 m, 16 on the floor beyond at 3.3-3.9 m: dimOS's median
    answers "3 meters or more"; the table top alone says "1 to under 2 meters"."""
    inputs, decision = table_distance(tmp_path, table_top(5) + floor_beyond(16) + FLOOR_IN_FRONT)
    (stats,) = inputs.ranges
    assert stats is not None and stats.count == 21
    # dimOS's answer: "3 meters or more".
    assert bucket_index(Fraction(stats.median), DISTANCE_BOUNDARIES_M) == 3
    (split,) = inputs.backgrounds
    assert split.background == 16 and split.rest is not None and split.rest.count == 5
    assert split.rest.median == pytest.approx(float(np.linalg.norm(table_top(5)[2])))
    detail = rejection(decision, "background_in_mask")
    assert "16 of the 21 LiDAR points in the mask of 'table' are floor seen beyond it" in detail
    assert "'3 meters or more', without them it answers '1 to under 2 meters'" in detail
    assert f"median {stats.median:.3f} m" in detail


def test_half_and_half_stays_dimos_quartile_rejection(tmp_path: Path) -> None:
    """10 table-top and 10 floor points: dimOS's own rule already refuses (q1 and q3 in
    different buckets), and that is the reason given."""
    _, decision = table_distance(tmp_path, table_top(10) + floor_beyond(10) + FLOOR_IN_FRONT)
    rejection(decision, "quartiles_cross_boundary")


def test_a_clean_mask_is_answered_with_dimos_bucket(tmp_path: Path) -> None:
    """Only the table top in the mask: no background, dimOS's answer."""
    points = table_top(7) + FLOOR_IN_FRONT
    inputs, decision = table_distance(tmp_path, points)
    (split,) = inputs.backgrounds
    assert split.background == 0
    # The point-cloud stage stores float32 coordinates.
    stored = np.array(points, dtype=np.float32).astype(np.float64)
    (dimos,) = range_statistics(stored, np.eye(4), K, WIDTH, HEIGHT, TABLE[None])
    assert dimos is not None and inputs.ranges[0] == dimos
    assert answer(decision) == DISTANCE_CHOICES[
        bucket_index(Fraction(dimos.median), DISTANCE_BOUNDARIES_M)] == "1 to under 2 meters"


def test_floor_beyond_that_moves_nothing_is_answered(tmp_path: Path) -> None:
    """A table top 3.5 m away with floor beyond it at 4.6 m: both say "3 meters or more", so
    the case is asked (the guard costs only cases whose answer would change)."""
    top = [at_depth(20 + 2 * i, 24, 3.5) for i in range(10)]
    beyond = [on_floor(18 + 2 * i, 29) for i in range(5)]
    inputs, decision = table_distance(tmp_path, top + beyond + FLOOR_IN_FRONT)
    assert inputs.backgrounds[0].background == 5
    assert answer(decision) == "3 meters or more"


def test_without_a_camera_pose_dimos_answer_stands(tmp_path: Path) -> None:
    """No pose (no tracks): the floor cannot be found, so the rule is dimOS's alone."""
    inputs, decision = table_distance(tmp_path, table_top(5) + floor_beyond(16)
                                      + FLOOR_IN_FRONT, posed=False)
    assert list(inputs.backgrounds) == []
    assert answer(decision) == "3 meters or more"


def test_only_floor_band_points_beyond_the_gate_are_background() -> None:
    """A low object's own points (in the floor band, near its foot) are not background; floor
    points within the gate of the foot are not either."""
    foot = foot_range(TABLE, K, WORLD_FROM_CAMERA[2, :3], CAMERA_HEIGHT_M)
    near_floor = on_floor(30, 37)  # at the foot itself
    assert np.linalg.norm(near_floor) <= foot + RANGE_GATE_M
    raised = at_depth(30, 29, 3.4)  # beyond the gate, but 0.13 m above the floor
    assert CAMERA_HEIGHT_M - raised[1] > FLOOR_BAND_M
    points = np.array([near_floor, raised, *floor_beyond(3), *FLOOR_IN_FRONT])
    u = np.floor(points[:, 0] * 50 / points[:, 2] + 32).astype(np.int64)
    v = np.floor(points[:, 1] * 50 / points[:, 2] + 24).astype(np.int64)
    (split,) = background_splits(u, v, points, [TABLE], K, WORLD_FROM_CAMERA)
    assert split.background == 3
    assert split.rest is not None and split.rest.count == 2
