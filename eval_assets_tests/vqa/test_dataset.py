"""The dataset writer on small real stage folders: layout, privacy, ids, determinism, atomicity."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from eval_assets.schemas.vqa import Case, Label, PrivateLabel, Proposal, SourceRecording
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
    # dimOS's layout: an image per selected frame, answered or not; our extras in the audit.
    assert files == [
        "assets/frame-000000.png", "assets/frame-000001.png", "assets/frame-000002.png",
        "audit/bias.json", "audit/bias.jsonl",
        *[f"audit/frame-00000{i}/{n}" for i in (0, 1, 2)
          for n in ("cases.json", "evidence.json", "frame.json", "ground_truth.json",
                    "labels.json")],
        "audit/labels.jsonl", "audit/run.json", "cases.jsonl", "labels.jsonl"]
    # Public cases: exactly dimOS's four keys; the image is a byte copy of the rectified frame.
    lines = (out / "cases.jsonl").read_text().splitlines()
    cases = [json.loads(line) for line in lines]
    assert all(list(c) == ["id", "image", "question", "choices"] for c in cases)
    assert (out / "assets/frame-000000.png").read_bytes() == \
        (frames_dir / "images/frame-000000.png").read_bytes()
    # labels.jsonl: exactly dimOS's two keys; everything else in audit/labels.jsonl.
    public_labels = [json.loads(line) for line in (out / "labels.jsonl").open()]
    assert all(list(lab) == ["id", "answer"] for lab in public_labels)
    labels = {lab["id"]: lab for lab in map(json.loads, (out / "audit/labels.jsonl").open())}
    assert [(lab["id"], lab["answer"]) for lab in labels.values()] == \
        [(lab["id"], lab["answer"]) for lab in public_labels]
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
    assert [c["id"] for c in cases] == list(labels)  # same stable order
    # Order-free families keep the proposal's order in the choices; only the id sorts.
    assert labels["frame-000000-red-ball-vs-yellow-box-closest_object"]["choices"] == \
        ["red ball", "yellow box"]
    distance = labels["frame-000000-red-ball-object_distance"]["evidence"]["range_m"]
    assert distance["count"] == 120 and 1.5 < distance["q1"] <= distance["q3"] < 2.0
    # Every proposal is a row of the private audit (dimOS's keys), rejections with their reason.
    gt0 = json.loads((out / "audit/frame-000000/ground_truth.json").read_text())
    assert len(gt0) == 13 and [r["ordinal"] for r in gt0] == list(range(13))
    reasons = {(r["proposal"]["family"], tuple(r["proposal"]["object_names"])): r["reason_code"]
               for r in gt0 if r["status"] == "rejected"}
    assert reasons[("presence", ("Red Ball",))] == "duplicate_proposal"
    assert reasons[("horizontal_direction", ("blue box",))] == "multiple_detections"
    assert reasons[("largest_visible_area", ("red ball", "green cylinder"))] == "no_detection"
    assert reasons[("presence", ("purple cone",))] == "name_not_queried"
    assert all(set(r) == {"proposal", "status", "reason", "ordinal", "author", "reason_code"}
               for r in gt0 if r["status"] == "rejected")
    answered = [r for r in gt0 if r["status"] == "answered"]
    assert [r["id"] for r in answered] == [c["id"] for c in cases if "000000" in c["id"]]
    assert all(set(r["answer"]) == {"question", "choices", "answer", "evidence"}
               for r in answered)
    gt2 = json.loads((out / "audit/frame-000002/ground_truth.json").read_text())
    assert [r.get("reason_code") for r in gt2] == ["image_only_frame", None]
    evidence0 = json.loads((out / "audit/frame-000000/evidence.json").read_text())
    mask = evidence0["detections"][0]["mask_rle"]
    assert sum(mask["counts"][1::2]) == evidence0["detections"][0]["mask_area"] == 120
    frame1 = json.loads((out / "audit/frame-000001/frame.json").read_text())
    assert list(frame1)[:5] == ["frame_index", "image", "timestamp", "question_count",
                                "rejected_question_count"]
    assert frame1["image"] == "assets/frame-000001.png" and frame1["num_proposals"] == 0
    run = json.loads((out / "audit/run.json").read_text())
    assert list(run)[:7] == ["generation", "configuration", "families", "models",
                             "frame_count", "question_count", "rejected_question_count"]
    assert run["generation"]["dataset"] == "tiny.db" and run["frame_count"] == 3
    assert run["question_count"] == 9
    assert run["source"] == SOURCE.model_dump() and run["frame_indices"] == [0, 1, 2]
    assert run["frames_with_cases"] == [0, 2]
    assert run["config"]["rules"]["area_margin"] == 1.2
    # Per family, the gold answers' distribution and the share a guess of the commonest scores.
    answers = run["answers_per_family"]
    assert {f: a["n"] for f, a in answers.items()} == run["cases_per_family"]
    for family, balance in answers.items():
        golds = [lab["answer"] for lab in labels.values() if lab["family"] == family]
        assert balance["answers"] == {a: golds.count(a) for a in balance["answers"]}
        assert balance["majority_share"] == round(golds.count(balance["majority"]) / len(golds), 4)
    assert run["spatial_answers_per_family"] == {}  # no tracks given: no spatial cases
    # The canary lives in the evidence (detector version) and never reaches public files.
    # So does a rejected proposal's object name.
    audit = (out / "audit/frame-000000/evidence.json").read_text()
    assert CANARY in audit
    assert CANARY_NAME in (out / "audit/frame-000000/ground_truth.json").read_text()
    public = [out / "cases.jsonl", *sorted((out / "assets").iterdir())]
    for secret in (CANARY, CANARY_NAME):
        assert all(secret.encode() not in p.read_bytes() for p in public)
    for case, public_label in zip(cases, public_labels, strict=True):
        Case.model_validate(case)
        PrivateLabel.model_validate(public_label)
        Label.model_validate(labels[case["id"]])
        assert labels[case["id"]]["answer"] in case["choices"]


def test_image_coverage_and_largest_area_answers(stages: tuple[Path, Path, Path],
                                                 tmp_path: Path) -> None:
    frames_dir, clouds_dir, dets_dir = stages
    proposals = manual(1, ("image_coverage", ["red ball"]),
                       ("largest_visible_area", ["red ball", "blue box"]))
    out = tmp_path / "dataset"
    build_dataset(frames_dir, clouds_dir, dets_dir, proposals, out, SOURCE, {})
    labels = [json.loads(line) for line in (out / "audit/labels.jsonl").read_text().splitlines()]
    # red ball: 120 of 64*48 = 3072 pixels = 3.9 %; blue box has two detections.
    assert [lab["answer"] for lab in labels] == ["under 25 percent"]
    assert labels[0]["evidence"]["mask_pixels"] == 120
    gt = json.loads((out / "audit/frame-000001/ground_truth.json").read_text())
    assert [r.get("reason_code") for r in gt] == [None, "multiple_detections"]


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


def test_every_case_has_a_private_bias_line_and_pruning_is_in_the_fingerprint(
        stages: tuple[Path, Path, Path], tmp_path: Path) -> None:
    from eval_assets.vqa.bias import BiasConfig, read_bias_cases, read_bias_summary
    from eval_assets.vqa.dataset import dataset_fingerprint
    from eval_assets.vqa.leakage import find_leaks

    frames_dir, clouds_dir, dets_dir = stages
    proposals = vocabulary_proposals(frames_dir)
    plain = tmp_path / "plain"
    build_dataset(frames_dir, clouds_dir, dets_dir, proposals, plain, SOURCE, {})
    ids = [json.loads(line)["id"] for line in (plain / "cases.jsonl").read_text().splitlines()]
    bias = read_bias_cases(plain)
    assert bias is not None and list(bias) == ids
    # The audit is private: never in a file a model under test sees, and no leak found.
    for public in ("cases.jsonl", "labels.jsonl"):
        text = (plain / public).read_text()
        assert "bias_score" not in text and "flagged" not in text
    assert find_leaks(plain) == []
    run = json.loads((plain / "audit/run.json").read_text())
    assert run["config"]["bias"] == BiasConfig().model_dump(mode="json")

    def pruned_build(name: str, threshold: float) -> Path:
        out = tmp_path / name
        build_dataset(frames_dir, clouds_dir, dets_dir, proposals, out, SOURCE, {},
                      bias=BiasConfig(prune=True, threshold=threshold, prune_floor=1))
        return out

    low, lower = pruned_build("low", 0.3), pruned_build("lower", 0.1)
    summary = read_bias_summary(low)
    assert summary is not None and summary.pruning is not None and summary.pruning.pruned
    gone = {p.id for p in summary.pruning.pruned}
    kept = [json.loads(line)["id"] for line in (low / "cases.jsonl").read_text().splitlines()]
    assert gone.isdisjoint(kept) and set(kept) | gone == set(ids)
    assert list(read_bias_cases(low) or {}) == kept
    # Each pruned case's ground-truth row says so; the frame's counts follow.
    rows = [r for f in sorted((low / "audit").glob("frame-*/ground_truth.json"))
            for r in json.loads(f.read_text())]
    assert {r["id"] for r in rows if r.get("reason_code") == "bias_pruned"} == gone
    run = json.loads((low / "audit/run.json").read_text())
    assert run["question_count"] == len(kept)
    assert run["rejections_per_reason"]["bias_pruned"] == len(gone)
    # The answer distributions count the cases published, not those pruned.
    assert {f: a["n"] for f, a in run["answers_per_family"].items()} == run["cases_per_family"]
    fingerprints = {dataset_fingerprint(d) for d in (plain, low, lower)}
    assert len(fingerprints) == 3
    # The fingerprint covers the audit itself, not only the cases it leaves.
    before = dataset_fingerprint(plain)
    path = plain / "audit/bias.jsonl"
    path.write_text(path.read_text().replace('"flagged": false', '"flagged": true', 1))
    assert dataset_fingerprint(plain) != before
