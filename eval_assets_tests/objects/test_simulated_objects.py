"""LiDAR objects on a simulated recording: found where the engine put them, the same on every
run, and asked about with marks drawn on the published images."""

from __future__ import annotations

import json
import math
from pathlib import Path

import cv2
import numpy as np
import pytest
from typer.testing import CliRunner

from eval_assets.cli import app
from eval_assets.frames import build_pointcloud_frames, plan_indices, prepare_rectified_frames
from eval_assets.perception import PerceptionConfig
from eval_assets.perception.evidence_io import build_detections
from eval_assets.recording import Recording
from eval_assets.schemas.objects import marks_relpath
from eval_assets.schemas.spatial import mark_number
from eval_assets.sim.simulate import SimConfig, simulate_recording
from eval_assets.tracks import build_tracks

FRAMES = 24


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return simulate_recording(tmp_path_factory.mktemp("sim") / "sim.db",
                              SimConfig(seed=37, frames=FRAMES)).db


def _stages(db: Path, root: Path) -> tuple[Path, Path, Path]:
    frames_dir, clouds_dir, dets_dir = root / "frames", root / "clouds", root / "dets"
    with Recording.open(db) as rec:
        prepared = prepare_rectified_frames(rec, frames_dir, plan_indices(rec, range(FRAMES)))
        build_pointcloud_frames(rec, prepared.frames, clouds_dir)
    config = PerceptionConfig()
    build_detections(frames_dir, prepared.frames, dets_dir, config.names(),
                     config.build_detector(), config.build_segmenter())
    return frames_dir, clouds_dir, dets_dir


def test_objects_are_where_the_engine_put_them_and_the_same_every_run(
        simulated: Path, tmp_path: Path) -> None:
    frames_dir, clouds_dir, dets_dir = _stages(simulated, tmp_path)
    runs = []
    for out in (tmp_path / "a", tmp_path / "b"):
        with Recording.open(simulated) as rec:
            runs.append(build_tracks(rec, frames_dir, clouds_dir, dets_dir, objects="lidar",
                                     tracks_dir=out))
    assert runs[0].model_dump_json() == runs[1].model_dump_json()
    marks = sorted(p.name for p in (tmp_path / "a" / "marks").iterdir())
    assert marks and all((tmp_path / "a" / "marks" / m).read_bytes()
                         == (tmp_path / "b" / "marks" / m).read_bytes() for m in marks)
    tracks = runs[0]
    assert tracks.objects is not None and tracks.floor_z == pytest.approx(0.0, abs=0.01)
    scene = json.loads(simulated.with_suffix(".scene.json").read_text())
    truth = [np.asarray(o["center_world"]) for o in scene["objects"]]
    truth += [np.asarray(d["center_world"]) for d in scene.get("distractors", [])
              if "center_world" in d]
    askable = [o for o in tracks.objects.objects if o.askable]
    assert len(askable) >= 4
    for obj in askable:
        nearest = min(float(np.linalg.norm((np.asarray(obj.center_world) - c)[:2]))
                      for c in truth)
        assert nearest < 0.35, (obj.number, obj.center_world, nearest)
    # Every track is a LiDAR object's, named only when certain, else marked with its number.
    numbers = {o.number: o for o in askable}
    for track in tracks.tracks:
        assert track.source == "lidar"
        n = mark_number(track.name)
        assert n is None or (n in numbers and numbers[n].name is None), track.name
    # The frame's number image holds the numbers of the objects seen in it.
    first = min(f for t in tracks.tracks for f in t.frames)
    labels = cv2.imread(str(tmp_path / "a" / marks_relpath(first)), cv2.IMREAD_UNCHANGED)
    assert labels.dtype == np.uint16
    seen = {int(mark_number(t.name) or 0) for t in tracks.tracks if first in t.frames}
    assert seen - {0} <= {int(v) for v in np.unique(labels)}


def test_marked_cases_show_their_marks(simulated: Path, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVAL_ASSETS_QUIET_S", "0")
    out = tmp_path / "dataset"
    result = CliRunner().invoke(app, ["vqa", "generate", str(simulated), "--output", str(out)])
    assert result.exit_code == 0, result.output
    cases = [json.loads(line) for line in (out / "spatial_cases.jsonl").read_text().splitlines()]
    marked = [c for c in cases if "object marked" in c["question"]]
    assert marked, "no case about a marked object"
    for case in marked:
        assert case["marks"] == "outline+number"
        changed = []
        for image in case["images"]:
            assert image.startswith("marked/")
            drawn = cv2.imread(str(out / image))
            plain = cv2.imread(str(out / image.replace("marked/", "assets/", 1)))
            assert drawn.shape == plain.shape
            changed.append(bool(np.any(drawn != plain)))
        # A frame may not show the object (egocentric_direction's last image), but one does.
        assert any(changed), case["id"]
    # A case about a named object (or no object) never shows marks.
    for case in cases:
        if "object marked" not in case["question"]:
            assert case.get("marks") is None and not any("marked/" in i for i in case["images"])
    # The model under test sees no private field of a case.
    assert all(set(c) <= {"id", "images", "question", "answer_type", "choices", "unit", "marks"}
               for c in cases)


@pytest.mark.parametrize("problem", ["unreadable", "not a noun", "missing"])
def test_a_bad_reference_folder_is_refused_naming_the_file(
        simulated: Path, tmp_path: Path, problem: str) -> None:
    refs = tmp_path / "objects"
    (refs / "mug").mkdir(parents=True)
    image = np.zeros((40, 40, 3), np.uint8)
    image[10:30, 10:30] = (200, 30, 30)
    cv2.imwrite(str(refs / "mug" / "front.png"), image)
    if problem == "unreadable":
        (refs / "mug" / "side.png").write_bytes(b"\x89PNG not really")
        expected = "side.png"
    elif problem == "not a noun":
        (refs / "object 3").mkdir()
        cv2.imwrite(str(refs / "object 3" / "a.png"), image)
        expected = "object 3"
    else:
        refs = tmp_path / "nowhere"
        expected = "nowhere"
    out = tmp_path / "dataset"
    result = CliRunner().invoke(app, ["vqa", "generate", str(simulated), "--output", str(out),
                                      "--references", str(refs)])
    assert result.exit_code == 2, result.output
    assert expected in result.output and "fix" in result.output.lower()
    assert not out.exists()


def test_taught_names_name_the_catalogue_and_never_wrongly(tmp_path: Path) -> None:
    """The simulator's reference views as taught names: every name given is the engine's name
    of the object within 0.35 m, and most catalogue objects get one (the size gate compares the
    cloud's oriented extent, not its floor-plan square: a turned lego brick is 19 cm, not 30)."""
    from eval_assets.sim.references import ReferenceViews

    db = simulate_recording(tmp_path / "taught.db", SimConfig(seed=41, frames=FRAMES),
                            references=ReferenceViews(views=6)).db
    frames_dir, clouds_dir, dets_dir = _stages(db, tmp_path / "stages")
    namer = PerceptionConfig().build_namer(db)
    assert namer is not None
    with Recording.open(db) as rec:
        tracks = build_tracks(rec, frames_dir, clouds_dir, dets_dir, objects="lidar",
                              namer=namer)
    assert tracks.objects is not None
    scene = json.loads(db.with_suffix(".scene.json").read_text())
    named = [o for o in tracks.objects.objects if o.name is not None]
    for obj in named:
        near = [o["name"] for o in scene["objects"]
                if math.dist(o["center_world"][:2], obj.center_world[:2]) < 0.35]
        assert near == [obj.name], (obj.number, obj.name, near)
    seen = [o for o in tracks.objects.objects if o.askable and o.clean_frames >= 3]
    assert len(named) >= len(seen) / 2, [(o.number, o.name_reason) for o in seen]
