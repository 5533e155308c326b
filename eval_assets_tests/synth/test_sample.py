"""The committed sample recording and its truth, checked against each other and regenerated."""

from __future__ import annotations

import colorsys
import json
from collections import Counter
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
from typer.testing import CliRunner

from eval_assets.cli import app
from eval_assets.recording import Recording, image_to_rgb
from eval_assets.recording.messages import CameraInfo, TFMessage
from eval_assets.synth import SceneRaycaster, make_timeline, sample_scene, synthesize_sample
from eval_assets.synth.render import BACKGROUND_ID, fisheye_directions
from eval_assets.synth.sample import sidecar_paths
from eval_assets_tests.synth.compare import byte_differences, compare_samples
from eval_assets_tests.synth.perturb import change_first_object, jitter_raycasting


@pytest.fixture(scope="module")
def truth(sample_db: Path) -> dict[str, Any]:
    scene_json, _ = sidecar_paths(sample_db)
    return json.loads(scene_json.read_text())


@pytest.fixture(scope="module")
def id_maps(sample_db: Path) -> np.ndarray:
    _, truth_npz = sidecar_paths(sample_db)
    with np.load(truth_npz) as npz:
        assert list(npz.keys()) == ["id_maps"]
        return npz["id_maps"]


@pytest.fixture(scope="module")
def recording(sample_db: Path) -> Recording:
    with Recording.open(sample_db) as rec:
        yield rec


def _calibration(
    recording: Recording,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, int]]:
    info = recording.message("camera_info", 0)
    assert isinstance(info, CameraInfo)
    K = np.array(info.K).reshape(3, 3)
    P = np.array(info.P).reshape(3, 4)
    return K, np.array(info.D), P[:, :3], (info.width, info.height)


def _rectify_maps(recording: Recording) -> tuple[np.ndarray, np.ndarray]:
    K, D, K_rect, size = _calibration(recording)
    return cv2.fisheye.initUndistortRectifyMap(K, D, np.eye(3), K_rect, size, cv2.CV_32FC1)


def _untruncated(bbox: list[int], width: int, height: int, margin: int = 2) -> bool:
    u0, v0, u1, v1 = bbox
    return u0 >= margin and v0 >= margin and u1 <= width - margin and v1 <= height - margin


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default sample synthesized afresh on this machine (~5 s), shared by the slow tests."""
    return synthesize_sample(tmp_path_factory.mktemp("regenerated") / "sample.db").db


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 3-frame sample: the baseline the perturbed syntheses are compared with."""
    return synthesize_sample(tmp_path_factory.mktemp("small") / "sample.db", frames=3).db


@pytest.mark.slow
def test_synthesizing_twice_gives_byte_identical_files(regenerated: Path, tmp_path: Path) -> None:
    """On one machine the synthesizer is deterministic to the last byte (other CPUs round ray
    casting differently; the committed sample is compared within tolerances below)."""
    again = synthesize_sample(tmp_path / "sample.db")
    assert byte_differences(again.db, regenerated) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "sample.db", "sample.scene.json", "sample.truth.npz"]


@pytest.mark.slow
def test_regenerating_matches_the_committed_sample(regenerated: Path, sample_db: Path) -> None:
    comparison = compare_samples(regenerated, sample_db)
    assert not comparison, comparison.report()
    print(f"\nregenerated vs committed, {comparison.report()}")


def test_a_short_rerun_is_byte_identical(small: Path, tmp_path: Path) -> None:
    """The strict check at a size the fast suite (``-m "not slow"``) can afford."""
    again = synthesize_sample(tmp_path / "sample.db", frames=3)
    assert byte_differences(again.db, small) == []


def test_cpu_rounding_fails_the_byte_check_but_passes_the_tolerances(
        small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What another CPU does to the sample (hit distances and ray directions a few ulps off) must
    not fail the comparison with the committed sample; it does fail the byte check."""
    jitter_raycasting(monkeypatch, t_ulps=2, direction_ulps=1)
    other_cpu = synthesize_sample(tmp_path / "sample.db", frames=3).db
    assert "  pointlio_lidar: 3 of 3 messages differ" in byte_differences(other_cpu, small)
    comparison = compare_samples(other_cpu, small)
    assert not comparison, comparison.report()
    print(f"\nemulated other CPU vs this one, {comparison.report()}")


@pytest.mark.parametrize(("change", "expected"), [
    ("seed", ["color_image: timestamps differ", "pointlio_lidar: timestamps differ",
              "scene.json: seed differ"]),
    # 2 mm, a tenth of what the robot moves between two TF samples: pixels, points, truth move.
    ("moved 2 mm", [*(f"color_image[{i}]" for i in range(3)),
                    *(f"pointlio_lidar[{i}]" for i in range(3)),
                    "scene.json: objects differ", "scene.json frame 0 object 0"]),
    # Red 215 -> 209 on one ball: no geometry changes, only its pixels and its LiDAR intensity.
    ("recoloured", [*(f"color_image[{i}]" for i in range(3)),
                    *(f"pointlio_lidar[{i}]" for i in range(3)),
                    "scene.json: objects differ"]),
])
def test_a_real_change_fails_both_checks(change: str, expected: list[str], small: Path,
                                         tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ball = sample_scene().objects[0]
    seed = 0
    if change == "seed":
        seed = 1
    elif change == "moved 2 mm":
        change_first_object(monkeypatch, center=(ball.center[0] + 0.002, *ball.center[1:]))
    else:
        change_first_object(monkeypatch, rgb=(ball.rgb[0] - 6, *ball.rgb[1:]))
    changed = synthesize_sample(tmp_path / "sample.db", seed=seed, frames=3)
    assert json.loads(changed.scene_json.read_text())["seed"] == seed
    assert "sample.db and sample.db differ in bytes" in byte_differences(changed.db, small)
    found = compare_samples(changed.db, small).differences
    missing = [e for e in expected if not any(d.startswith(e) for d in found)]
    assert missing == [], "\n".join(found)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_timeline_has_jitter_and_exactly_three_late_scans(seed: int) -> None:
    tl = make_timeline(24, seed)
    image, lidar = np.array(tl.image_ts), np.array(tl.lidar_ts)
    nominal = 1_700_000_000.25 + 0.5 * np.arange(24)
    assert np.all(np.abs(image - nominal) <= 0.02 + 1e-6) and np.std(image - nominal) > 0.005
    nearest = np.array([np.min(np.abs(lidar - t)) for t in image])
    own = np.abs(lidar - image)
    np.testing.assert_array_equal(nearest, own)  # no other scan is closer to any image
    late = own > 0.1
    assert late.sum() == 3
    assert np.all((own[late] >= 0.12) & (own[late] <= 0.2)) and np.all(own[~late] <= 0.05)
    assert np.allclose(np.diff(tl.tf_ts), 0.1) and np.allclose(np.diff(tl.static_tf_ts), 0.2)
    assert tl.tf_ts[0] <= min(lidar.min(), image.min())
    assert tl.tf_ts[-1] >= max(lidar.max(), image.max())


def test_recording_streams_match_the_truth(recording: Recording, truth: dict[str, Any],
                                           sample_db: Path) -> None:
    assert sample_db.stat().st_size <= 6 * 1024 * 1024
    streams = recording.streams
    assert {n: s.codec_id for n, s in streams.items()} == {
        "color_image": "jpeg", "camera_info": "lcm", "tf": "lcm", "pointlio_lidar": "lcm"}
    assert recording.lidar_stream == "pointlio_lidar"
    frames = truth["frames"]
    np.testing.assert_allclose(recording.timestamps("color_image"),
                               [f["image_ts"] for f in frames], rtol=0, atol=1e-6)
    np.testing.assert_allclose(recording.timestamps("pointlio_lidar"),
                               [f["lidar_ts"] for f in frames], rtol=0, atol=1e-6)
    image = recording.message("color_image", 0)
    assert (image.encoding, image.header.frame_id) == ("jpeg", "camera_optical")
    K, D, K_rect, size = _calibration(recording)
    cam = truth["camera"]
    assert size == (cam["width"], cam["height"]) == (640, 480)
    np.testing.assert_allclose(K, cam["K"])
    np.testing.assert_allclose(K_rect, cam["K_rect"])
    np.testing.assert_allclose(D, cam["D"])
    assert max(abs(d) for d in D) > 0.01 and cam["distortion_model"] == "equidistant"
    cloud = recording.message("pointlio_lidar", 0)
    assert cloud.header.frame_id == "mid360_link" and cloud.height == 1
    assert cloud.point_step == 16 and not cloud.is_bigendian
    assert [(f.name, f.offset, f.datatype) for f in cloud.fields] == [
        ("x", 0, 7), ("y", 4, 7), ("z", 8, 7), ("intensity", 12, 7)]


def test_tf_tree_reproduces_the_truth_camera_poses(recording: Recording,
                                                   truth: dict[str, Any]) -> None:
    edges: dict[tuple[str, str], list[tuple[float, np.ndarray]]] = {}
    for ts, msg in recording.iter_messages("tf"):
        assert isinstance(msg, TFMessage) and len(msg.transforms) == 1
        tf = msg.transforms[0]
        assert tf.header.stamp == pytest.approx(ts, abs=1e-6)
        edges.setdefault((tf.header.frame_id, tf.child_frame_id), []).append(
            (ts, tf.transform.matrix()))
    assert set(edges) == {("world", "base_link"), ("base_link", "camera_optical"),
                          ("base_link", "mid360_link")}
    rates = {e: (len(s) - 1) / (s[-1][0] - s[0][0]) for e, s in edges.items()}
    assert rates[("world", "base_link")] == pytest.approx(10.0, rel=0.01)
    assert rates[("base_link", "camera_optical")] == pytest.approx(5.0, rel=0.01)
    assert rates[("base_link", "mid360_link")] == pytest.approx(5.0, rel=0.01)
    base_from_camera = edges[("base_link", "camera_optical")][0][1]
    for frame in truth["frames"]:
        stamps = np.array([t for t, _ in edges[("world", "base_link")]])
        nearest = int(np.argmin(np.abs(stamps - frame["image_ts"])))
        assert abs(stamps[nearest] - frame["image_ts"]) <= 0.05 + 1e-6
        world_from_camera = edges[("world", "base_link")][nearest][1] @ base_from_camera
        expected = np.linalg.inv(np.array(frame["camera_from_world"]))
        # At ≈0.2 m/s, a TF sample ≤ 50 ms from the image is within 1 cm of the true pose.
        assert np.linalg.norm(world_from_camera[:3, 3] - expected[:3, 3]) < 0.012
        np.testing.assert_allclose(world_from_camera[:3, :3], expected[:3, :3], atol=2e-3)


def test_truth_is_consistent_with_the_id_maps(truth: dict[str, Any], id_maps: np.ndarray) -> None:
    cam = truth["camera"]
    width, height = cam["width"], cam["height"]
    K_rect = np.array(cam["K_rect"])
    centers = {o["id"]: np.array(o["center_world"]) for o in truth["objects"]}
    sizes = {o["id"]: np.array(o["size"]) for o in truth["objects"]}
    assert id_maps.shape == (len(truth["frames"]), height, width) and id_maps.dtype == np.uint8
    for frame in truth["frames"]:
        ids = id_maps[frame["index"]]
        present = set(np.unique(ids).tolist()) - {BACKGROUND_ID}
        assert {o["id"] for o in frame["objects"]} == present
        camera_from_world = np.array(frame["camera_from_world"])
        for obj in frame["objects"]:
            vs, us = np.nonzero(ids == obj["id"])
            assert obj["visible_pixels"] == us.size
            assert obj["bbox_xyxy"] == [us.min(), vs.min(), us.max() + 1, vs.max() + 1]
            np.testing.assert_allclose(obj["centroid_px"], [us.mean(), vs.mean()], atol=1e-6)
            c = camera_from_world @ np.append(centers[obj["id"]], 1.0)
            px = K_rect @ (c[:3] / c[2])
            # camera_from_world is stored to 6 decimals: ~1e-3 px of error off to the side.
            np.testing.assert_allclose(obj["center_px"], px[:2], atol=0.01)
            assert obj["center_distance_m"] == pytest.approx(np.linalg.norm(c[:3]), abs=1e-5)
            # The visible surface lies within the object's half-diagonal of its centre (and is
            # nearer, unless the image shows only a far corner of it).
            gap = obj["center_distance_m"] - obj["surface_distance_m"]
            half_diagonal = np.linalg.norm(sizes[obj["id"]]) / 2
            assert abs(gap) < half_diagonal
            if _untruncated(obj["bbox_xyxy"], width, height):
                assert gap > 0.0
            third = "left" if px[0] < width / 3 else "center" if px[0] < 2 * width / 3 else "right"
            assert obj["horizontal_third"] == third


def test_truth_covers_every_answer_the_families_need(truth: dict[str, Any]) -> None:
    buckets, thirds, counts = Counter(), Counter(), set()
    for frame in truth["frames"]:
        counts |= set(Counter(o["name"] for o in frame["objects"]).values())
        for obj in frame["objects"]:
            d = obj["surface_distance_m"]
            buckets[0 if d < 1 else 1 if d < 2 else 2 if d < 3 else 3] += 1
            thirds[obj["horizontal_third"]] += 1
    assert all(buckets[b] >= 4 for b in range(4)), buckets
    assert set(thirds) == {"left", "center", "right"}
    assert {1, 2, 3} <= counts
    assert len(truth["frames"]) == 24


@pytest.mark.slow
def test_distortion_is_real_and_rectification_undoes_it(recording: Recording,
                                                        truth: dict[str, Any],
                                                        id_maps: np.ndarray) -> None:
    """Distorted id maps (ray-cast from the fisheye pixels) move edge objects by several pixels;
    rectifying them with the recorded calibration puts every object back on its true centroid."""
    scene = sample_scene(frames=len(truth["frames"]))
    raycaster = SceneRaycaster(scene)
    fisheye = fisheye_directions(scene.camera)
    map1, map2 = _rectify_maps(recording)
    width, height = scene.camera.width, scene.camera.height
    edge_shift, centre_shift, worst_rectified = 0.0, 0.0, 0.0
    for frame in truth["frames"]:
        world_from_camera = np.linalg.inv(np.array(frame["camera_from_world"]))
        distorted = raycaster.render(world_from_camera, fisheye, colour=False).ids
        rectified = cv2.remap(distorted, map1, map2, cv2.INTER_NEAREST,
                              borderMode=cv2.BORDER_CONSTANT, borderValue=BACKGROUND_ID)
        for obj in frame["objects"]:
            vs, us = np.nonzero(distorted == obj["id"])
            dbox = [us.min(), vs.min(), us.max() + 1, vs.max() + 1]
            if not (_untruncated(obj["bbox_xyxy"], width, height)
                    and _untruncated(dbox, width, height)):
                continue
            shift = float(np.hypot(us.mean() - obj["centroid_px"][0],
                                   vs.mean() - obj["centroid_px"][1]))
            u = obj["centroid_px"][0]
            if u < width / 5 or u > 4 * width / 5:
                edge_shift = max(edge_shift, shift)
            if abs(u - scene.camera.K[0, 2]) < 40 and abs(obj["centroid_px"][1] - 240) < 40:
                centre_shift = max(centre_shift, shift)
            if obj["visible_pixels"] >= 500:
                rv, ru = np.nonzero(rectified == obj["id"])
                err = np.hypot(ru.mean() - obj["centroid_px"][0], rv.mean() - obj["centroid_px"][1])
                worst_rectified = max(worst_rectified, float(err))
                agree = np.sum((rectified == obj["id"]) & (id_maps[frame["index"]] == obj["id"]))
                assert agree / obj["visible_pixels"] > 0.9
    assert edge_shift > 3.0
    assert centre_shift < 1.0  # near the principal point the two images agree
    assert worst_rectified < 0.75


def test_images_show_each_object_in_its_colour(recording: Recording, truth: dict[str, Any],
                                               id_maps: np.ndarray) -> None:
    map1, map2 = _rectify_maps(recording)
    rgb_of = {o["id"]: np.array(o["rgb"]) / 255.0 for o in truth["objects"]}
    kernel = np.ones((7, 7), np.uint8)
    checked = 0
    for frame in truth["frames"][::3]:
        image = image_to_rgb(recording.message("color_image", frame["index"]))
        rect = cv2.remap(image, map1, map2, cv2.INTER_LINEAR)
        hsv = cv2.cvtColor(rect, cv2.COLOR_RGB2HSV_FULL).astype(float) / 255.0
        ids = id_maps[frame["index"]]
        background = cv2.erode((ids == BACKGROUND_ID).astype(np.uint8), kernel).astype(bool)
        background[:60] = False  # the rectified border outside the fisheye's view is black
        assert np.percentile(hsv[..., 1][background], 99) < 0.3
        for obj in frame["objects"]:
            mask = cv2.erode((ids == obj["id"]).astype(np.uint8), kernel).astype(bool)
            if mask.sum() < 300:
                continue
            ref_hue, ref_sat, _ = colorsys.rgb_to_hsv(*rgb_of[obj["id"]])
            hue = np.median(hsv[..., 0][mask])
            assert min(abs(hue - ref_hue), 1 - abs(hue - ref_hue)) < 0.03, obj["name"]
            assert np.median(hsv[..., 1][mask]) > 0.75 * ref_sat, obj["name"]
            checked += 1
    assert checked >= 40


def test_lidar_scans_range_the_objects(recording: Recording, truth: dict[str, Any],
                                       id_maps: np.ndarray) -> None:
    scene = sample_scene()
    camera_from_lidar = np.linalg.inv(scene.base_from_camera) @ scene.base_from_lidar
    K_rect = np.array(truth["camera"]["K_rect"])
    width, height = truth["camera"]["width"], truth["camera"]["height"]
    ranged = 0
    for frame in truth["frames"]:
        if abs(frame["lidar_dt"]) > 0.1:
            continue
        cloud = recording.message("pointlio_lidar", frame["index"])
        xyz = cloud.xyz().astype(float) @ camera_from_lidar[:3, :3].T + camera_from_lidar[:3, 3]
        xyz = xyz[xyz[:, 2] > 0.05]
        uvw = xyz @ K_rect.T
        u = (uvw[:, 0] / uvw[:, 2]).astype(int)
        v = (uvw[:, 1] / uvw[:, 2]).astype(int)
        inside = (u >= 0) & (u < width) & (v >= 0) & (v < height)
        xyz, u, v = xyz[inside], u[inside], v[inside]
        # z-buffer: the nearest point per pixel.
        order = np.lexsort((xyz[:, 2], v * width + u))
        key = (v * width + u)[order]
        keep = order[np.r_[True, key[1:] != key[:-1]]]
        labels = id_maps[frame["index"]][v[keep], u[keep]]
        ranges = np.linalg.norm(xyz[keep], axis=1)
        for obj in frame["objects"]:
            if obj["visible_pixels"] < 800:
                continue
            hit = ranges[labels == obj["id"]]
            assert hit.size >= 5, (frame["index"], obj["name"], hit.size)
            assert np.median(hit) == pytest.approx(obj["surface_distance_m"], rel=0.03)
            ranged += 1
    assert ranged >= 100


def test_cli_synthesizes_a_recording(tmp_path: Path) -> None:
    out = tmp_path / "nested" / "tiny.db"
    result = CliRunner().invoke(
        app, ["recording", "synthesize", str(out), "--frames", "2", "--seed", "3"])
    assert result.exit_code == 0, result.output
    scene_json, truth_npz = sidecar_paths(out)
    assert out.is_file() and truth_npz.is_file()
    data = json.loads(scene_json.read_text())
    assert data["seed"] == 3 and len(data["frames"]) == 2
    assert "tiny.db" in result.output


def test_synthesize_refuses_a_name_without_db_suffix(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"end in \.db"):
        synthesize_sample(tmp_path / "sample.sqlite", frames=1)
