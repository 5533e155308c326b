"""The dataset writer on small real stage folders: layout, privacy, ids, determinism, atomicity."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from eval_assets.schemas.vqa import Case, Label, Proposal, SourceRecording
from eval_assets.vqa.authors import AuthorConfig, build_author
from eval_assets.vqa.dataset import DatasetExistsError, NothingAnswerableError, mask_rle
from eval_assets.vqa.generate import build_dataset
from eval_assets.vqa.proposals import propose_frames
from eval_assets_tests.vqa.helpers import CANARY, make_stages

SOURCE = SourceRecording(name="tiny.db", sha256="0" * 64)
CANARY_NAME = "canary-name-only-in-the-audit"

def manual(frame_index: int, *items: tuple[str, list[str]]) -> list[Proposal]:
    return [Proposal(frame_index=frame_index, ordinal=i, family=f, object_names=n,
                     author="test") for i, (f, n) in enumerate(items)]


def hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture()
def stages(tmp_path: Path) -> tuple[Path, Path, Path]:
    return make_stages(tmp_path / "stages")


def vocabulary_proposals(frames_dir: Path) -> list[Proposal]:
    from eval_assets.frames import read_rectified_frames

    config = AuthorConfig(vocabulary=["red ball", "blue box", "green cylinder"],
                          max_groups_per_family=4, max_group_size=2)
    return propose_frames(build_author(config), frames_dir, read_rectified_frames(frames_dir),
                          config.max_proposals_per_frame)


def test_layout_answers_and_privacy(stages: tuple[Path, Path, Path], tmp_path: Path) -> None:
    frames_dir, clouds_dir, dets_dir = stages
    proposals = manual(
        0, ("presence", ["red ball"]), ("presence", ["Red Ball"]), ("presence", ["red-ball"]),
        ("presence", ["green cylinder"]), ("object_count", ["blue box"]),
        ("horizontal_direction", ["blue box"]), ("horizontal_direction", ["red ball"]),
        ("object_distance", ["red ball"]), ("closest_object", ["red ball", "yellow box"]),
        ("largest_visible_area", ["red ball", "green cylinder"]), ("image_coverage", ["red ball"]),
        ("presence", ["purple cone"]), ("horizontal_direction", [CANARY_NAME]),
    ) + manual(2, ("object_distance", ["red ball"]), ("presence", ["red ball"]))
    out = tmp_path / "dataset"
    summary = build_dataset(frames_dir, clouds_dir, dets_dir, proposals, out, SOURCE,
                            {"note": "test"})
    assert summary.num_cases == 9
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert files == [
        "assets/frame-000000.png", "assets/frame-000002.png",
        *[f"audit/frame-00000{i}/{n}" for i in (0, 1, 2)
          for n in ("cases.json", "frame.json", "ground_truth.json", "labels.json")],
        "audit/run.json", "cases.jsonl", "labels.jsonl"]
    # Public cases: exactly four keys; the image is a byte copy of the rectified frame.
    lines = (out / "cases.jsonl").read_text().splitlines()
    cases = [json.loads(line) for line in lines]
    assert all(list(c) == ["case_id", "image", "question", "choices"] for c in cases)
    assert (out / "assets/frame-000000.png").read_bytes() == \
        (frames_dir / "images/frame-000000.png").read_bytes()
    labels = {lab["case_id"]: lab for lab in map(json.loads, (out / "labels.jsonl").open())}
    answers = {cid: lab["answer"] for cid, lab in labels.items()}
    assert answers == {
        "frame-000000-red-ball-presence": "yes",
        "frame-000000-red-ball-presence-2": "no",  # "red-ball" slugs like "red ball"
        "frame-000000-green-cylinder-presence": "no",
        "frame-000000-blue-box-object_count": "two",
        "frame-000000-red-ball-horizontal_direction": "left",
        "frame-000000-red-ball-object_distance": "1 to under 2 meters",
        "frame-000000-red-ball-vs-yellow-box-closest_object": "red ball",
        "frame-000000-red-ball-image_coverage": "under 25 percent",
        "frame-000002-red-ball-presence": "yes",
    }
    assert [c["case_id"] for c in cases] == list(labels)  # same stable order
    distance = labels["frame-000000-red-ball-object_distance"]["evidence"]["range_m"]
    assert distance["count"] == 120 and 1.5 < distance["q1"] <= distance["q3"] < 2.0
    # Every rejection is kept with its reason in the private audit.
    gt0 = json.loads((out / "audit/frame-000000/ground_truth.json").read_text())
    reasons = {(r["family"], tuple(r["object_names"])): r["reason"] for r in gt0["rejections"]}
    assert reasons[("presence", ("Red Ball",))] == "duplicate_proposal"
    assert reasons[("horizontal_direction", ("blue box",))] == "multiple_detections"
    assert reasons[("largest_visible_area", ("red ball", "green cylinder"))] == "no_detection"
    assert reasons[("presence", ("purple cone",))] == "name_not_queried"
    gt2 = json.loads((out / "audit/frame-000002/ground_truth.json").read_text())
    assert [r["reason"] for r in gt2["rejections"]] == ["image_only_frame"]
    mask = gt0["detections"][0]["mask_rle"]
    assert sum(mask["counts"][1::2]) == gt0["detections"][0]["mask_area"] == 120
    frame1 = json.loads((out / "audit/frame-000001/frame.json").read_text())
    assert frame1["image"] is None and frame1["num_proposals"] == 0  # no case: no public asset
    run = json.loads((out / "audit/run.json").read_text())
    assert run["source"] == SOURCE.model_dump() and run["frame_indices"] == [0, 1, 2]
    assert run["frames_with_cases"] == [0, 2]
    assert run["config"]["rules"]["area_margin"] == 1.2
    # The canary lives in the evidence (detector version) and never reaches public files.
    # So does a rejected proposal's object name.
    audit = (out / "audit/frame-000000/ground_truth.json").read_text()
    assert CANARY in audit and CANARY_NAME in audit
    public = [out / "cases.jsonl", *sorted((out / "assets").iterdir())]
    for secret in (CANARY, CANARY_NAME):
        assert all(secret.encode() not in p.read_bytes() for p in public)
    for case in cases:
        Case.model_validate(case)
        Label.model_validate(labels[case["case_id"]])
        assert labels[case["case_id"]]["answer"] in case["choices"]


def test_image_coverage_and_largest_area_answers(stages: tuple[Path, Path, Path],
                                                 tmp_path: Path) -> None:
    frames_dir, clouds_dir, dets_dir = stages
    proposals = manual(1, ("image_coverage", ["red ball"]),
                       ("largest_visible_area", ["red ball", "blue box"]))
    out = tmp_path / "dataset"
    build_dataset(frames_dir, clouds_dir, dets_dir, proposals, out, SOURCE, {})
    labels = [json.loads(line) for line in (out / "labels.jsonl").read_text().splitlines()]
    # red ball: 120 of 64*48 = 3072 pixels = 3.9 %; blue box has two detections.
    assert [lab["answer"] for lab in labels] == ["under 25 percent"]
    assert labels[0]["evidence"]["mask_pixels"] == 120
    gt = json.loads((out / "audit/frame-000001/ground_truth.json").read_text())
    assert [r["reason"] for r in gt["rejections"]] == ["multiple_detections"]


def test_reruns_are_byte_identical(stages: tuple[Path, Path, Path], tmp_path: Path) -> None:
    frames_dir, clouds_dir, dets_dir = stages
    runs = []
    for name in ("a", "b"):
        proposals = vocabulary_proposals(frames_dir)
        out = tmp_path / name / "dataset"
        build_dataset(frames_dir, clouds_dir, dets_dir, proposals, out, SOURCE, {"k": [1, 2]})
        runs.append(hashes(out))
    assert runs[0] == runs[1]
    assert len(runs[0]) > 10


def test_destination_must_be_empty(stages: tuple[Path, Path, Path], tmp_path: Path) -> None:
    frames_dir, clouds_dir, dets_dir = stages
    proposals = manual(0, ("presence", ["red ball"]))
    out = tmp_path / "dataset"
    out.mkdir()
    build_dataset(frames_dir, clouds_dir, dets_dir, proposals, out, SOURCE, {})  # empty: fine
    before = hashes(out)
    with pytest.raises(DatasetExistsError, match="not an empty folder"):
        build_dataset(frames_dir, clouds_dir, dets_dir, proposals, out, SOURCE, {})
    assert hashes(out) == before
    # The asset layer replaces a previous materialisation in one swap.
    more = manual(0, ("presence", ["red ball"]), ("presence", ["blue box"]))
    build_dataset(frames_dir, clouds_dir, dets_dir, more, out, SOURCE, {}, replace=True)
    assert len((out / "cases.jsonl").read_text().splitlines()) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dataset", "stages"]  # no temp left


def test_nothing_answerable_publishes_nothing(stages: tuple[Path, Path, Path],
                                              tmp_path: Path) -> None:
    frames_dir, clouds_dir, dets_dir = stages
    proposals = manual(2, ("object_distance", ["red ball"]), ("presence", ["purple cone"]))
    parent = tmp_path / "out"
    parent.mkdir()
    with pytest.raises(NothingAnswerableError, match="image_only_frame"):
        build_dataset(frames_dir, clouds_dir, dets_dir, proposals, parent / "dataset", SOURCE,
                      {}, frame_indices=[2])
    assert list(parent.iterdir()) == []


def test_mask_rle_round_trip() -> None:
    rng = np.random.default_rng(0)
    for mask in (rng.random((5, 7)) > 0.5, np.ones((3, 3), bool), np.zeros((2, 4), bool)):
        rle = mask_rle(mask)
        values = np.concatenate([np.full(c, i % 2 == 1) for i, c in enumerate(rle["counts"])])
        assert np.array_equal(values.reshape(rle["size"]), mask)
