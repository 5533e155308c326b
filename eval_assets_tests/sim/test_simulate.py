"""Simulated recordings: the file, its truth recomputed with PyBullet alone, determinism, bad
input."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
from typer.testing import CliRunner

from eval_assets.cli import app
from eval_assets.frames import build_rectified_frames, load_rectified_image
from eval_assets.recording import Recording
from eval_assets.sim.catalog import CATALOG
from eval_assets.sim.geometry import PinholeCamera, quaternion_matrix
from eval_assets.sim.simulate import (
    BASE_FROM_CAMERA,
    SimConfig,
    SimWorld,
    drive_path,
    image_times,
    simulate_recording,
)
from eval_assets.vqa.spatial.truth import scene_camera

FRAMES = 6
CONFIG = SimConfig(seed=11, frames=FRAMES, lidar_rings=8, lidar_columns=256)


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small simulated recording (6 frames, 640×480, an 8 × 256 LiDAR)."""
    db = tmp_path_factory.mktemp("sim") / "sim.db"
    simulate_recording(db, CONFIG)
    return db


def _scene(db: Path) -> dict[str, Any]:
    return json.loads(db.with_suffix(".scene.json").read_text())


def test_the_recording_opens_with_the_synthesizers_streams(simulated: Path) -> None:
    with Recording.open(simulated) as rec:
        streams = rec.streams
        assert {"color_image", "camera_info", "tf", "pointlio_lidar"} <= set(streams)
        assert streams["color_image"].count == FRAMES
        assert streams["pointlio_lidar"].count == FRAMES
        cloud = rec.message("pointlio_lidar", FRAMES // 2)
        assert cloud.header.frame_id == "mid360_link" and cloud.width > 100
        info = rec.message("camera_info", 0)
        assert (info.width, info.height, info.distortion_model) == (640, 480, "plumb_bob")
        frames = {t.child_frame_id for i in range(12)
                  for t in rec.message("tf", i).transforms}
        assert {"base_link", "camera_optical", "mid360_link"} <= frames


def test_frames_rectify_to_the_recorded_pixels(simulated: Path, tmp_path: Path) -> None:
    """Zero distortion and P = [K | 0]: rectifying is the identity, so the truth maps (made for
    the rendered image) fit the rectified frames pixel for pixel."""
    with Recording.open(simulated) as rec:
        frames = build_rectified_frames(rec, tmp_path, [0, FRAMES - 1])
        for frame in frames:
            raw = rec.message("color_image", frame.frame_index)
            decoded = cv2.cvtColor(cv2.imdecode(np.frombuffer(raw.data, np.uint8), 1),
                                   cv2.COLOR_BGR2RGB)
            assert np.array_equal(load_rectified_image(tmp_path, frame), decoded)
    scene = _scene(simulated)
    assert np.allclose(np.asarray(frames[0].K_rect).reshape(3, 3), scene["camera"]["K_rect"])


def test_truth_files_have_the_synthesizers_format(simulated: Path) -> None:
    scene = _scene(simulated)
    with np.load(simulated.with_suffix(".truth.npz")) as npz:
        id_maps, frame_index = npz["id_maps"], npz["frame_index"]
    assert id_maps.dtype == np.uint8 and id_maps.shape == (FRAMES, 480, 640)
    assert frame_index.tolist() == list(range(FRAMES))
    ids = {o["id"] for o in scene["objects"]}
    assert ids == set(range(len(scene["objects"])))
    assert set(np.unique(id_maps).tolist()) <= ids | {255}
    names = {o["name"] for o in scene["objects"]}
    assert names <= set(CATALOG) and all("_" not in n and "." not in n for n in names)
    for frame in scene["frames"]:
        ids_here = id_maps[frame["index"]]
        for obj in frame["objects"]:
            vs, us = np.nonzero(ids_here == obj["id"])
            assert obj["visible_pixels"] == us.size > 0
            assert obj["bbox_xyxy"] == [us.min(), vs.min(), us.max() + 1, vs.max() + 1]
    assert any(frame["objects"] for frame in scene["frames"])


def _pybullet_box(p: Any, client: int, obj: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Size and world centre of ``obj``'s visual meshes, from its record and PyBullet only.

    The URDF is loaded and its centre-of-mass frame put at the recorded pose (``loadURDF``'s own
    position is the URDF link frame's, not the centre of mass'); each visual mesh is loaded again
    as a static triangle mesh placed at its pose in the object's own (centre-of-mass) frame, so
    PyBullet's own mesh loader and transforms give the box (its AABB of a triangle mesh is exact).
    """
    body = p.loadURDF(obj["urdf"], globalScaling=obj["global_scaling"], useFixedBase=True,
                      physicsClientId=client)
    p.resetBasePositionAndOrientation(body, obj["base_position"], obj["base_orientation"],
                                      physicsClientId=client)
    com_pos, com_orn = p.getBasePositionAndOrientation(body, physicsClientId=client)
    inertial = p.getDynamicsInfo(body, -1, physicsClientId=client)[3:5]
    link = p.multiplyTransforms(com_pos, com_orn, *p.invertTransform(*inertial))
    com_from_world = p.invertTransform(com_pos, com_orn)
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    for shape in p.getVisualShapeData(body, physicsClientId=client):
        scale, mesh, local_pos, local_orn = shape[3:7]
        world = p.multiplyTransforms(*link, local_pos, local_orn)
        in_com = p.multiplyTransforms(*com_from_world, *world)
        shape_id = p.createCollisionShape(p.GEOM_MESH, fileName=mesh.decode(), meshScale=scale,
                                          flags=p.GEOM_FORCE_CONCAVE_TRIMESH,
                                          physicsClientId=client)
        probe = p.createMultiBody(0, shape_id, basePosition=in_com[0],
                                  baseOrientation=in_com[1], physicsClientId=client)
        a, b = p.getAABB(probe, -1, physicsClientId=client)
        lo, hi = np.minimum(lo, a), np.maximum(hi, b)
    center_world = p.multiplyTransforms(com_pos, com_orn, ((lo + hi) / 2).tolist(),
                                        (0, 0, 0, 1))[0]
    return hi - lo, np.asarray(center_world)


def test_sizes_and_centres_recompute_with_pybullet_alone(simulated: Path) -> None:
    import pybullet as p

    client = p.connect(p.DIRECT)
    try:
        import pybullet_data

        p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=client)
        for obj in _scene(simulated)["objects"]:
            size, center = _pybullet_box(p, client, obj)
            assert np.allclose(size, obj["size"], atol=0.01), obj["name"]
            assert np.allclose(center, obj["center_world"], atol=0.01), obj["name"]
            assert max(size) > 0.1  # scaled to be seen, not the bundled 8 cm duck
    finally:
        p.disconnect(physicsClientId=client)


def test_segmented_pixels_back_project_into_their_objects_box(simulated: Path) -> None:
    """Every segmented pixel, back-projected with K, the depth buffer and the camera pose, lies
    in its object's visual box (in the object's frame) within 2 cm."""
    scene = _scene(simulated)
    world = SimWorld(CONFIG, drive_path(CONFIG.path, scene["path"]["t_start"]))
    try:
        cam = scene["camera"]
        camera = PinholeCamera(cam["width"], cam["height"], cam["fov_y_deg"], cam["near"],
                               cam["far"])
        k = camera.K
        checked, worst = 0, -1.0
        for t in image_times(world.path, FRAMES):
            w_cam = world.place_husky(t) @ BASE_FROM_CAMERA
            _, ids, depth = world.render(camera, w_cam)
            for obj in scene["objects"]:
                vs, us = np.nonzero(ids == obj["id"])
                if us.size == 0:
                    continue
                z = depth[vs, us]
                pts = np.stack([(us - k[0, 2]) / k[0, 0] * z, (vs - k[1, 2]) / k[1, 1] * z, z])
                world_pts = w_cam[:3, :3] @ pts + w_cam[:3, 3:4]
                rot = quaternion_matrix(obj["base_orientation"])
                local = rot.T @ (world_pts - np.asarray(obj["center_world"])[:, None])
                outside = np.abs(local) - np.asarray(obj["size"])[:, None] / 2
                assert outside.max() <= 0.02, (obj["name"], float(outside.max()))
                worst = max(worst, float(outside.max()))
                checked += 1
        assert checked >= 2
        print(f"worst distance outside a box: {worst * 1000:.1f} mm over {checked} views")
    finally:
        world.close()


def test_same_seed_same_files_other_seed_other_scene(simulated: Path, tmp_path: Path) -> None:
    again = simulate_recording(tmp_path / "again.db", CONFIG)
    for suffix in (".db", ".scene.json", ".truth.npz"):
        assert again.db.with_suffix(suffix).read_bytes() == \
            simulated.with_suffix(suffix).read_bytes(), suffix
    other = simulate_recording(tmp_path / "other.db", SimConfig(
        seed=12, frames=2, lidar_rings=2, lidar_columns=16))
    assert _scene(other.db)["objects"] != _scene(simulated)["objects"]


def test_the_path_turns_both_ways_stops_and_revisits() -> None:
    for name in ("loop", "figure8"):
        path = drive_path(name, 0.0)
        ts = np.linspace(0.0, path.duration, 2000)
        poses = np.array([path.pose2d(float(t)) for t in ts])
        dyaw = np.diff(np.unwrap(poses[:, 2]))
        assert dyaw.max() > 1e-3 and dyaw.min() < -1e-3, name  # left and right turns
        step = np.hypot(*np.diff(poses[:, :2], axis=0).T)
        assert (step < 1e-9).sum() > 20, name  # a stop
        start, end = poses[: len(ts) // 10, :2], poses[-len(ts) // 10:, :2]
        # A revisit: the end drives over the start again.
        assert min(math.dist(a, b) for a in start[::5] for b in end[::5]) < 0.1, name



def test_the_scene_rebuilds_the_camera_at_every_tf_sample(simulated: Path) -> None:
    """What the motion truth needs: from ``scene.json`` alone, the camera at every TF stamp of
    the recording (world → base_link composed with the recorded mount) and at every image (its
    ``camera_from_world``), on the TF grid the recording uses."""
    scene = _scene(simulated)
    rebuilt = scene_camera(scene)
    assert rebuilt is not None
    camera_at, rate, t0 = rebuilt
    base_from_camera = np.asarray(scene["robot"]["base_from_camera"])
    with Recording.open(simulated) as rec:
        tf = [t for i in range(rec.streams["tf"].count)
              for t in rec.message("tf", i).transforms if t.child_frame_id == "base_link"]
    assert len(tf) > 20
    for k, sample in enumerate(tf):
        stamp = sample.header.stamp
        assert stamp == pytest.approx(t0 + k / rate, abs=1e-6)
        world_from_base = np.eye(4)
        world_from_base[:3, :3] = quaternion_matrix(sample.transform.rotation)
        world_from_base[:3, 3] = sample.transform.translation
        np.testing.assert_allclose(camera_at(stamp), world_from_base @ base_from_camera,
                                   atol=1e-5)
    for frame in scene["frames"]:
        np.testing.assert_allclose(camera_at(frame["image_ts"]),
                                   np.linalg.inv(np.asarray(frame["camera_from_world"])),
                                   atol=1e-5)

# --- bad input: exit 2, a message naming the problem and the fix, nothing written -------------


def _simulate(out: Path, *args: str) -> Any:
    return CliRunner().invoke(app, ["recording", "simulate", str(out), "--lidar-rings", "2",
                                    "--lidar-columns", "16", *args])


def _nothing_written(folder: Path) -> None:
    assert sorted(p.name for p in folder.iterdir()) == []


@pytest.mark.parametrize(("args", "expected"), [
    (["--names", "duck,unicorn"], "unknown object name(s) 'unicorn'"),
    (["--frames", "0"], "--frames must be at least 1"),
    (["--resolution", "320x240"], "--resolution '320x240' is not offered"),
    (["--path", "spiral"], "unknown --path 'spiral'"),
    (["--lidar-fov-deg=20,10"], "elevations must satisfy -90 ≤ lowest ≤ highest ≤ 90"),
    (["--lidar-fov-deg=low"], "is not two numbers; pass the lowest and highest"),
])
def test_bad_options_exit_2_and_write_nothing(tmp_path: Path, args: list[str],
                                              expected: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    result = _simulate(out / "r.db", *args)
    assert result.exit_code == 2, result.output
    assert expected in result.output
    assert "use " in result.output or "pass " in result.output  # the fix
    _nothing_written(out)


def test_a_seed_that_cannot_place_the_objects_exits_2(tmp_path: Path) -> None:
    result = _simulate(tmp_path / "r.db", "--objects", "40", "--names", "table", "--frames", "2")
    assert result.exit_code == 2, result.output
    assert "cannot place 'table'" in result.output
    assert "Fix: pass fewer --objects" in result.output
    _nothing_written(tmp_path)


def test_an_unwritable_output_exits_2(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    result = _simulate(blocker / "r.db", "--frames", "2")
    assert result.exit_code == 2 and "does not exist. Fix: create it" in result.output
    (tmp_path / "taken.scene.json").mkdir()
    result = _simulate(tmp_path / "taken.db", "--frames", "2")
    assert result.exit_code == 2 and "is a folder" in result.output
    assert not (tmp_path / "taken.db").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into any folder")
def test_a_read_only_folder_exits_2(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        result = _simulate(folder / "r.db", "--frames", "2")
        assert result.exit_code == 2 and "is not writable" in result.output
        _nothing_written(folder)
    finally:
        folder.chmod(0o755)


def test_a_failure_midway_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A crash after some frames were written leaves no recording and no truth (old ones kept)."""
    old = simulate_recording(tmp_path / "r.db", SimConfig(frames=1, lidar_rings=2,
                                                          lidar_columns=16))
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    calls = 0

    def failing(self: SimWorld, *args: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise RuntimeError("renderer crashed")
        return original(self, *args)

    original = SimWorld.render
    monkeypatch.setattr(SimWorld, "render", failing)
    with pytest.raises(RuntimeError, match="renderer crashed"):
        simulate_recording(old.db, SimConfig(frames=4, lidar_rings=2, lidar_columns=16))
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
