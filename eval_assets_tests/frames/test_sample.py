"""Frame preparation on the bundled sample, checked against the synthesizer's ground truth.

``sample.scene.json`` and ``sample.truth.npz`` describe the RECTIFIED view (an ideal pinhole with
``K_rect``), rendered independently of this code; the recording holds distorted fisheye JPEGs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from eval_assets.frames import (
    PointCloudFrame,
    RectifiedFrame,
    build_pointcloud_frames,
    build_rectified_frames,
    load_points,
    load_rectified_image,
)
from eval_assets.geometry.ranging import range_statistics
from eval_assets.recording import Recording, image_to_rgb

EDGE_MARGIN = 10  # px between a ball's bbox and the image border for "well inside"
MIN_BALL_PIXELS = 200
WINDOW_PAD = 8  # px around the truth bbox searched for the ball's colour


class Prepared:
    """The sample's frames built once for the module, plus its truth."""

    def __init__(self, root: Path, sample_db: Path) -> None:
        self.rect_dir, self.pc_dir = root / "rect", root / "pc"
        with Recording.open(sample_db) as rec:
            self.frames: list[RectifiedFrame] = build_rectified_frames(rec, self.rect_dir)
            self.clouds: list[PointCloudFrame] = build_pointcloud_frames(
                rec, self.frames, self.pc_dir)
            self.raw = [image_to_rgb(rec.message("color_image", f.frame_index))
                        for f in self.frames]
        scene = json.loads(sample_db.with_suffix(".scene.json").read_text())
        self.truth_frames: list[dict[str, Any]] = scene["frames"]
        self.objects = {o["id"]: o for o in scene["objects"]}
        with np.load(sample_db.with_suffix(".truth.npz")) as truth:
            self.id_maps = truth["id_maps"]


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory, sample_db: Path) -> Prepared:
    return Prepared(tmp_path_factory.mktemp("sample_frames"), sample_db)


def _hues(colours: np.ndarray) -> np.ndarray:
    """OpenCV full-range (0-255) hues of ``(N, 3)`` uint8 RGB colours."""
    return cv2.cvtColor(colours.reshape(1, -1, 3), cv2.COLOR_RGB2HSV_FULL)[0, :, 0].astype(int)


def _segment(rgb: np.ndarray, colour: list[int], palette: np.ndarray,
             bbox: list[int]) -> np.ndarray | None:
    """Centroid of the largest blob near ``bbox`` whose hue is nearest ``colour``'s among the
    scene's object colours and whose saturation is above half (shading only darkens a colour;
    the room is grey, so half saturation is the midpoint across an object's edge)."""
    h, w = rgb.shape[:2]
    x0, y0 = max(bbox[0] - WINDOW_PAD, 0), max(bbox[1] - WINDOW_PAD, 0)
    x1, y1 = min(bbox[2] + WINDOW_PAD, w), min(bbox[3] + WINDOW_PAD, h)
    hsv = cv2.cvtColor(np.ascontiguousarray(rgb[y0:y1, x0:x1]), cv2.COLOR_RGB2HSV_FULL)
    hue = hsv[..., 0].astype(int)

    def gap(ref: np.ndarray) -> np.ndarray:
        return np.abs((hue[..., None] - ref + 128) % 256 - 128)

    own = gap(_hues(np.uint8([colour])))[..., 0]
    mask = (own <= gap(_hues(palette)).min(axis=-1)) & (hsv[..., 1] > 128)
    n, labels, stats, _ = cv2.connectedComponentsWithStats(mask.astype(np.uint8), connectivity=8)
    if n <= 1:
        return None
    ys, xs = np.nonzero(labels == 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA])))
    return np.array([xs.mean() + x0, ys.mean() + y0])


def _balls(p: Prepared) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for f in p.frames:
        for o in p.truth_frames[f.frame_index]["objects"]:
            x0, y0, x1, y1 = o["bbox_xyxy"]
            inside = (x0 >= EDGE_MARGIN and y0 >= EDGE_MARGIN and x1 <= f.width - EDGE_MARGIN
                      and y1 <= f.height - EDGE_MARGIN)
            if (p.objects[o["id"]]["shape"] == "ball" and inside
                    and o["visible_pixels"] >= MIN_BALL_PIXELS):
                out.append((f.frame_index, o))
    return out


def test_rectified_balls_sit_where_the_truth_puts_them(prepared: Prepared) -> None:
    p = prepared
    balls = _balls(p)
    assert len(balls) >= 30
    palette = np.array(sorted({tuple(o["rgb"]) for o in p.objects.values()}), dtype=np.uint8)
    rect_err, raw_err, centre_err, biases = [], [], [], []
    for index, o in balls:
        frame = p.frames[index]
        colour = p.objects[o["id"]]["rgb"]
        truth = np.array(o["centroid_px"])
        found = _segment(load_rectified_image(p.rect_dir, frame), colour, palette,
                         o["bbox_xyxy"])
        raw = _segment(p.raw[index], colour, palette, o["bbox_xyxy"])
        assert found is not None and raw is not None
        rect_err.append(float(np.linalg.norm(found - truth)))
        raw_err.append(float(np.linalg.norm(raw - truth)))
        # A sphere's silhouette centroid is not the projection of its centre: off-axis, the
        # silhouette is an ellipse stretched away from the principal point (up to ~6 px for the
        # nearest ball of the sample), and occlusion shifts it further. The truth gives that
        # bias exactly, so the centre check is restricted to balls whose bias is < 0.5 px.
        bias = float(np.linalg.norm(np.array(o["center_px"]) - truth))
        biases.append(bias)
        if bias < 0.5:
            world = np.array([*p.objects[o["id"]]["center_world"], 1.0])
            cam = np.array(p.truth_frames[index]["camera_from_world"]) @ world
            px = np.array(frame.K_rect).reshape(3, 3) @ (cam[:3] / cam[2])
            centre_err.append(float(np.linalg.norm(px[:2] - found)))

    assert max(rect_err) < 1.0, f"rectified centroid errors (px): {sorted(rect_err)[-5:]}"
    assert len(centre_err) >= 20
    assert max(centre_err) < 1.0, f"centre projection errors (px): {sorted(centre_err)[-5:]}"
    # The distorted recording itself misplaces the balls: rectification is what fixes them.
    assert max(raw_err) > 5.0
    assert sum(e > 1.0 for e in raw_err) >= len(raw_err) // 3
    print(f"\n{len(balls)} balls: rectified max {max(rect_err):.3f} px, raw max "
          f"{max(raw_err):.3f} px ({sum(e > 1.0 for e in raw_err)} over 1 px); centre check on "
          f"{len(centre_err)} (bias < 0.5 px) max {max(centre_err):.3f} px; sphere bias max "
          f"{max(biases):.3f} px")


def test_lidar_median_range_matches_surface_distance(prepared: Prepared) -> None:
    p = prepared
    rows = []
    for f, c in zip(p.frames, p.clouds, strict=True):
        if c.status != "ok":
            continue
        objs = p.truth_frames[f.frame_index]["objects"]
        masks = np.stack([p.id_maps[f.frame_index] == o["id"] for o in objs])
        stats = range_statistics(load_points(p.pc_dir, c),
                                 np.array(c.camera_from_cloud).reshape(4, 4),
                                 np.array(f.K_rect).reshape(3, 3), f.width, f.height, masks)
        for o, s in zip(objs, stats, strict=True):
            if s is None or s.count < 5:
                continue
            truth = o["surface_distance_m"]
            rows.append((abs(s.median - truth) / truth, s.count, f.frame_index, o["name"]))
    assert len(rows) >= 100
    failures = [r for r in rows if r[0] > 0.03]
    assert failures == []
    worst = max(rows)
    print(f"\n{len(rows)} objects with >= 5 points: max error {100 * worst[0]:.2f} % "
          f"({worst[3]}, frame {worst[2]}, {worst[1]} points)")


def test_frames_with_late_lidar_are_image_only(prepared: Prepared) -> None:
    p = prepared
    late = {t["index"]: abs(t["lidar_dt"]) for t in p.truth_frames if abs(t["lidar_dt"]) > 0.1}
    assert len(late) == 3
    for c in p.clouds:
        if c.frame_index in late:
            assert c.status == "image_only"
            assert c.reason == f"nearest LiDAR is {late[c.frame_index]:.3f} s away (limit 0.1 s)"
            assert c.points_path is None
        else:
            assert c.status == "ok", c.reason
            assert c.n_points_in_front > 1000
