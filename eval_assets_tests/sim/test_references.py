"""The simulator's reference views: written beside the recording, all or nothing, the same bytes
every time, and good enough to teach the catalog's names (real PyBullet renders)."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import cv2
import numpy as np
import pytest
from typer.testing import CliRunner

from eval_assets.cli import app
from eval_assets.perception.taught_names import TaughtNames
from eval_assets.recording import Recording
from eval_assets.sim.catalog import CATALOG, DISTRACTORS, CatalogEntry, SimConfigError
from eval_assets.sim.geometry import PinholeCamera
from eval_assets.sim.references import (
    ReferenceViews,
    look_at,
    reference_dir,
    render_body,
    render_object_views,
    render_reference_views,
)
from eval_assets.sim.simulate import SimConfig, SimOutputs, simulate_recording

VIEWS = ReferenceViews(views=6, width=160, height=120)
CONFIG = SimConfig(seed=8, frames=12, lidar_rings=2, lidar_columns=16, distractors=1)
HELD_OUT = PinholeCamera(320, 240, 60.0, 0.05, 30.0)
# Viewpoints the references (every 60° of azimuth, 45° down) do not have: between two of their
# azimuths, at the height of the robot's camera looking nearly level.
HELD_OUT_VIEWPOINTS = [(30.0, 10.0), (210.0, 15.0)]


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> SimOutputs:
    """A short simulated recording of the whole catalog, with its reference views."""
    return simulate_recording(tmp_path_factory.mktemp("sim") / "sim.db", CONFIG, VIEWS)


@pytest.fixture(scope="module")
def taught(simulated: SimOutputs) -> TaughtNames:
    assert simulated.objects_dir is not None
    return TaughtNames.load(simulated.objects_dir)


def _read(path: Path) -> np.ndarray:
    image = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    assert image is not None, path
    return np.asarray(image)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_views_are_written_beside_the_recording(simulated: SimOutputs) -> None:
    scene = json.loads(simulated.scene_json.read_text())
    assert simulated.objects_dir == reference_dir(simulated.db) == simulated.db.with_suffix(
        ".objects")
    assert scene["distractors"], "the scene should hold a distractor"
    folders = sorted(p.name for p in simulated.objects_dir.iterdir())
    assert folders == sorted({o["name"] for o in scene["objects"]})  # no r2d2, no temporaries
    assert not [p for p in simulated.db.parent.iterdir() if p.name.startswith(".")]
    sizes = {o["name"]: o["size"] for o in scene["objects"]}
    for name in folders:
        folder = simulated.objects_dir / name
        assert sorted(p.name for p in folder.iterdir()) == sorted(
            ["object.json"] + [f"view_{k:02d}{s}" for k in range(VIEWS.views)
                               for s in (".png", ".mask.png")])
        record = json.loads((folder / "object.json").read_text())
        assert record["size_m"] == pytest.approx(sizes[name], abs=2e-6)  # the scene's numbers
        for k in range(VIEWS.views):
            image = _read(folder / f"view_{k:02d}.png")
            mask = _read(folder / f"view_{k:02d}.mask.png")
            assert image.shape == (VIEWS.height, VIEWS.width, 3)
            assert mask.shape == image.shape[:2] and set(np.unique(mask)) == {0, 255}
            share = float(np.mean(mask > 0))
            assert 0.05 < share < 0.8, (name, k, share)  # the object fills a good part


def test_the_simulators_views_pass_validation(taught: TaughtNames) -> None:
    assert taught.names == tuple(sorted(CATALOG))
    assert len(taught.references) == len(CATALOG) * VIEWS.views
    assert set(taught.sizes) == set(CATALOG)


def test_same_options_same_bytes(simulated: SimOutputs, taught: TaughtNames,
                                 tmp_path: Path) -> None:
    """Rendering again (alone, in another folder) gives the simulator's files byte for byte."""
    assert simulated.objects_dir is not None
    again = render_reference_views(CATALOG.values(), tmp_path / "again.objects", VIEWS)
    assert _files(again) == _files(simulated.objects_dir)
    assert TaughtNames.load(again).fingerprint() == taught.fingerprint()


def _tally(verdicts: list[tuple[str, str | None]]) -> Counter[str]:
    return Counter("right" if got == want else "unnamed" if got is None else "wrong"
                   for want, got in verdicts)


def test_held_out_views_of_each_object_are_named(taught: TaughtNames) -> None:
    """Each object seen from the robot's height between two reference azimuths, with its
    extent: named right for most, wrong for none."""
    verdicts = []
    for entry in CATALOG.values():
        for image, mask in render_object_views(entry, HELD_OUT_VIEWPOINTS, HELD_OUT, fill=0.5):
            verdicts.append((entry.name, taught.name(image, mask, taught.sizes[entry.name]).name))
    tally = _tally(verdicts)
    assert tally["wrong"] == 0, verdicts
    assert tally["right"] >= 0.75 * len(verdicts), verdicts


def test_the_recordings_own_objects_are_named(simulated: SimOutputs,
                                              taught: TaughtNames) -> None:
    """Objects cut out of the recording's frames by the truth masks (at least 300 pixels),
    with their visual extent as the LiDAR would measure it."""
    scene = json.loads(simulated.scene_json.read_text())
    objects = {o["id"]: o for o in scene["objects"]}
    id_maps = np.load(simulated.truth_npz)["id_maps"]
    verdicts = []
    with Recording.open(simulated.db) as rec:
        for frame in range(id_maps.shape[0]):
            data = np.frombuffer(rec.message("color_image", frame).data, np.uint8)
            decoded = cv2.imdecode(data, cv2.IMREAD_COLOR)
            assert decoded is not None
            image = cv2.cvtColor(decoded, cv2.COLOR_BGR2RGB)
            for i, count in zip(*np.unique(id_maps[frame], return_counts=True), strict=True):
                if i != 255 and count >= 300:
                    obj = objects[int(i)]
                    verdict = taught.name(image, id_maps[frame] == i, obj["size"])
                    verdicts.append((obj["name"], verdict.name))
    tally = _tally(verdicts)
    assert len(verdicts) >= 10, verdicts
    assert tally["wrong"] == 0, verdicts
    assert tally["right"] >= 0.8 * len(verdicts), verdicts


def _plain_box(rgba: tuple[float, float, float, float]) -> tuple[np.ndarray, np.ndarray]:
    """A plain-coloured 30 × 20 × 16 cm box on the floor, seen from the robot's height."""
    import pybullet as p
    import pybullet_data

    client = p.connect(p.DIRECT)
    try:
        p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=client)
        p.loadURDF("plane.urdf", physicsClientId=client)
        half = [0.15, 0.1, 0.08]
        shape = p.createVisualShape(p.GEOM_BOX, halfExtents=half, rgbaColor=rgba,
                                    physicsClientId=client)
        body = p.createMultiBody(0, -1, shape, basePosition=[0, 0, half[2]],
                                 physicsClientId=client)
        pose = look_at(np.array([0.0, 0.0, half[2]]), 30.0, 15.0, 0.9)
        return render_body(p, client, HELD_OUT, pose, body)
    finally:
        p.disconnect(physicsClientId=client)


def test_objects_that_were_not_taught_get_no_name(taught: TaughtNames) -> None:
    for image, mask in render_object_views(DISTRACTORS[0], HELD_OUT_VIEWPOINTS, HELD_OUT,
                                           fill=0.5):
        verdict = taught.name(image, mask)
        assert verdict.name is None and verdict.reason.startswith("below floor"), verdict
    for colour in ((0.2, 0.7, 0.2, 1.0), (0.2, 0.3, 0.8, 1.0)):  # green, blue
        verdict = taught.name(*_plain_box(colour), extent_m=[0.3, 0.2, 0.16])
        assert verdict.name is None, (colour, verdict)


def test_writing_again_replaces_the_folder_whole(tmp_path: Path) -> None:
    out = tmp_path / "r.objects"
    (out / "stale name").mkdir(parents=True)
    (out / "stale name" / "view_00.png").write_bytes(b"old")
    duck = CATALOG["duck"]
    assert render_reference_views([duck, duck], out, ReferenceViews(views=2, width=64,
                                                                    height=48)) == out
    assert sorted(_files(out)) == ["duck/object.json", "duck/view_00.mask.png",
                                   "duck/view_00.png", "duck/view_01.mask.png",
                                   "duck/view_01.png"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.objects"]


def test_a_failed_render_keeps_the_old_folder(tmp_path: Path) -> None:
    out = tmp_path / "r.objects"
    render_reference_views([CATALOG["mug"]], out, ReferenceViews(views=1, width=64, height=48))
    before = _files(out)
    missing = CatalogEntry("ghost", "no/such/model.urdf", 1.0)
    import pybullet as p

    with pytest.raises(p.error, match=r"(?i)cannot load"):
        render_reference_views([CATALOG["duck"], missing], out)
    assert _files(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.objects"]


def test_options_that_cannot_render_are_refused() -> None:
    for bad in ({"views": 0}, {"width": 8}, {"elevation_deg": 90.0}, {"elevation_deg": -5.0}):
        with pytest.raises(SimConfigError, match="Fix:"):
            ReferenceViews(**bad)


def test_the_command_writes_the_views_and_refuses_a_file_in_their_place(tmp_path: Path) -> None:
    args = ["recording", "simulate", str(tmp_path / "r.db"), "--frames", "1", "--objects", "2",
            "--lidar-rings", "2", "--lidar-columns", "16", "--reference-views", "2"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert f"{tmp_path / 'r.objects'}/ (reference views of 2 objects)" in result.output
    assert sorted(p.name for p in (tmp_path / "r.objects").iterdir()) == ["duck", "teddy bear"]
    result = CliRunner().invoke(app, [*args[:-1], "-1"])
    assert result.exit_code == 2 and "--reference-views must be ≥ 0" in result.output
    blocked = tmp_path / "b.db"
    blocked.with_suffix(".objects").write_text("a file")
    result = CliRunner().invoke(app, [*args[:2], str(blocked), *args[3:]])
    assert result.exit_code == 2 and "is a file" in result.output and "Fix:" in result.output
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("b.")) == [
        "b.objects"]


def test_the_reference_elevation_is_one_the_robots_camera_cannot_see() -> None:
    """The camera (pitched 10° down, 60° vertical field) sees at most 40° below the horizon."""
    from eval_assets.sim.simulate import BASE_FROM_CAMERA

    axis = BASE_FROM_CAMERA[:3, 2]  # optical z in base axes
    pitch = math.degrees(math.asin(-axis[2]))
    assert pitch + 30.0 < ReferenceViews().elevation_deg
