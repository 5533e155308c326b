"""A simulated recording through the chain: ``vqa generate`` with the default evidence and with
the simulator's truth evidence, and the real dimOS loader (marker ``reference``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from eval_assets.cli import app
from eval_assets.recording import Recording
from eval_assets.sim.catalog import CATALOG
from eval_assets.sim.simulate import SimConfig, simulate_recording
from eval_assets_tests import reference
from eval_assets_tests.reference import run_dimos

dimos_python = reference.dimos_python  # the shared session fixture (the dimOS venv's python)
FRAMES = 10


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return simulate_recording(tmp_path_factory.mktemp("sim") / "sim.db",
                              SimConfig(seed=21, frames=FRAMES)).db


@pytest.mark.slow
def test_vqa_generate_runs_with_the_default_evidence(simulated: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The colour/shape detector and its vocabulary on meshes it was not written for: the chain
    runs to a dataset (what it finds is its own business; the truth evidence measures it)."""
    monkeypatch.setenv("EVAL_ASSETS_QUIET_S", "0")
    out = tmp_path / "dataset"
    result = CliRunner().invoke(app, ["vqa", "generate", str(simulated), "--output", str(out)])
    assert result.exit_code == 0, result.output
    assert f"from {FRAMES} frames" in result.output and (out / "cases.jsonl").is_file()


@pytest.mark.slow
def test_vqa_generate_with_the_truth_evidence_answers_presence_exactly(
        simulated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVAL_ASSETS_QUIET_S", "0")
    out = tmp_path / "dataset"
    result = CliRunner().invoke(app, ["vqa", "generate", str(simulated), "--output", str(out),
                                      "--vocabulary", ",".join(CATALOG), "--detector", "truth",
                                      "--segmenter", "truth"])
    assert result.exit_code == 0, result.output
    assert f"from {FRAMES} frames" in result.output and "spatial cases" in result.output
    scene = json.loads(simulated.with_suffix(".scene.json").read_text())
    visible = {f["index"]: {o["name"] for o in f["objects"]} for f in scene["frames"]}
    labels = [json.loads(line) for line in
              (out / "audit" / "labels.jsonl").read_text().splitlines()]
    presence = [lab for lab in labels if lab["family"] == "presence"]
    assert len(presence) == FRAMES * len(CATALOG)
    for lab in presence:
        name = lab["object_names"][0]
        assert lab["answer"] == ("yes" if name in visible[lab["frame_index"]] else "no"), lab
    assert any(lab["answer"] == "yes" for lab in presence)


@pytest.mark.reference
@pytest.mark.slow
def test_dimos_loads_a_simulated_recording(simulated: Path, tmp_path: Path,
                                           dimos_python: Path) -> None:
    """dimOS 0.0.15's own loader reads the frames, with the recorded intrinsics and the LiDAR."""
    script = """
        import sys
        from pathlib import Path
        import numpy as np
        from dimos.evals.vqa.pointcloud_frame import PointCloudFrameLoader

        db, out = sys.argv[1], Path(sys.argv[2])
        with PointCloudFrameLoader(db) as loader:
            for index in map(int, sys.argv[3:]):
                frame = loader.load(index)
                np.save(out / f"{index}.npy", frame.image.data)
                np.save(out / f"{index}.K.npy", np.asarray(frame.camera_info.K).reshape(3, 3))
        print("ok")
    """
    out = tmp_path / "dimos"
    out.mkdir()
    assert run_dimos(dimos_python, script, simulated, out, 0, FRAMES - 1).strip() \
        .endswith("ok")
    scene = json.loads(simulated.with_suffix(".scene.json").read_text())
    with Recording.open(simulated) as rec:
        for index in (0, FRAMES - 1):
            image = np.load(out / f"{index}.npy")
            assert image.shape == (480, 640, 3)
            raw = rec.message("color_image", index)
            assert (raw.width, raw.height) == (640, 480)
            np.testing.assert_allclose(np.load(out / f"{index}.K.npy"), scene["camera"]["K"])
