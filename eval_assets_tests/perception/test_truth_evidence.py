"""The ``truth`` detector and segmenter: exact on simulated and synthesized recordings, refused
on anything else."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from eval_assets.cli import app
from eval_assets.frames import RectifiedFrame, build_rectified_frames
from eval_assets.perception import (
    ConfigurationError,
    PerceptionConfig,
    TruthDetector,
    TruthSegmenter,
    build_detections,
    load_mask,
)
from eval_assets.perception.truth_evidence import TruthFrameError
from eval_assets.recording import Recording
from eval_assets.sim.simulate import SimConfig, simulate_recording
from eval_assets.synth.stream import synthesize_recording
from eval_assets_tests.factories import make_recording

TRUTH = PerceptionConfig(detector="truth", segmenter="truth")


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A simulated and a synthesized recording, with their truth beside them."""
    folder = tmp_path_factory.mktemp("truth-evidence")
    sim = simulate_recording(folder / "sim.db", SimConfig(seed=4, frames=5, lidar_rings=2,
                                                          lidar_columns=16)).db
    synth = synthesize_recording(folder / "synth.db", profile="sample", scene_seed=9,
                                 frames=4).db
    return {"simulated": sim, "synthesized": synth}


def _rectified(db: Path, out: Path) -> list[RectifiedFrame]:
    with Recording.open(db) as rec:
        return build_rectified_frames(rec, out)


@pytest.mark.parametrize("kind", ["simulated", "synthesized"])
def test_truth_evidence_is_exactly_the_truth(recordings: dict[str, Path], kind: str,
                                            tmp_path: Path) -> None:
    db = recordings[kind]
    scene = json.loads(db.with_suffix(".scene.json").read_text())
    with np.load(db.with_suffix(".truth.npz")) as npz:
        id_maps = npz["id_maps"]
    names = [*sorted({o["name"] for o in scene["objects"]}), "unicorn"]
    frames = _rectified(db, tmp_path / "frames")
    stored = build_detections(tmp_path / "frames", frames, tmp_path / "dets", names,
                              TRUTH.build_detector(db), TRUTH.build_segmenter(db))
    seen = 0
    for record, truth in zip(stored, scene["frames"], strict=True):
        assert record.frame_index == truth["index"]
        expected = sorted((o["name"], o["bbox_xyxy"]) for o in truth["objects"])
        got = sorted((d.name, [int(v) for v in d.box_xyxy]) for d in record.detections)
        assert got == expected
        by_box = {tuple(o["bbox_xyxy"]): o["id"] for o in truth["objects"]}
        for det in record.detections:
            oid = by_box[tuple(int(v) for v in det.box_xyxy)]
            assert np.array_equal(load_mask(tmp_path / "dets", det), id_maps[record.frame_index]
                                  == oid)
            assert det.score == 1.0 and det.detector == det.segmenter == "truth"
            seen += 1
    assert seen > 0


def test_a_recording_without_truth_is_refused_naming_the_file(tmp_path: Path) -> None:
    db = make_recording(tmp_path / "real.db")
    with pytest.raises(ConfigurationError) as err:
        TRUTH.build_detector(db)
    message = str(err.value)
    assert str(tmp_path / "real.scene.json") in message and "does not exist" in message
    assert "choose detector `color` or `moondream`" in message
    with pytest.raises(ConfigurationError, match="no recording was given"):
        TRUTH.build_detector()


def test_vqa_generate_with_truth_on_a_real_recording_exits_2(tmp_path: Path) -> None:
    db = make_recording(tmp_path / "real.db", n_frames=2)
    result = CliRunner().invoke(app, ["vqa", "generate", str(db), "--output",
                                      str(tmp_path / "out"), "--detector", "truth",
                                      "--segmenter", "truth"])
    assert result.exit_code == 2, result.output
    assert "real.scene.json does not exist" in result.output
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_truth_of_another_recording_is_refused(recordings: dict[str, Path],
                                               tmp_path: Path) -> None:
    """The simulated truth copied beside a different simulated recording: the times disagree."""
    other = simulate_recording(tmp_path / "other.db", SimConfig(
        seed=4, frames=7, lidar_rings=2, lidar_columns=16)).db
    for suffix in (".scene.json", ".truth.npz"):
        shutil.copy(recordings["simulated"].with_suffix(suffix), other.with_suffix(suffix))
    frames = _rectified(other, tmp_path / "frames")
    detector = TRUTH.build_detector(other)
    assert isinstance(detector, TruthDetector)
    with pytest.raises(TruthFrameError, match="belong to another recording"):
        detector.bind_frame(frames[1])
    with pytest.raises(TruthFrameError, match="no truth map for frame 6"):
        detector.bind_frame(frames[6])


def test_a_frame_without_a_truth_map_names_the_fix(tmp_path: Path) -> None:
    db = synthesize_recording(tmp_path / "sparse.db", profile="sample", scene_seed=9, frames=4,
                              truth_every=2).db
    frames = _rectified(db, tmp_path / "frames")
    segmenter = TRUTH.build_segmenter(db)
    assert isinstance(segmenter, TruthSegmenter)
    segmenter.bind_frame(frames[2])
    with pytest.raises(TruthFrameError, match=r"no truth map for frame 1.*--truth-every 1"):
        segmenter.bind_frame(frames[1])


def test_the_truth_segmenter_needs_the_truth_detector() -> None:
    with pytest.raises(ConfigurationError, match="set detector to 'truth' too"):
        PerceptionConfig(detector="color", segmenter="truth")
    # The other way round is allowed: a real segmenter prompted with exact boxes.
    assert PerceptionConfig(detector="truth", segmenter="box_region").segmenter == "box_region"
