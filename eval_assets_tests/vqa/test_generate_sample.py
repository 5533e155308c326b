"""End to end on the bundled sample: labels against the scene truth, privacy, determinism, CLI."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from eval_assets.cli import app
from eval_assets.metrics.vqa import match_choice
from eval_assets.perception import ColorShapeParams, PerceptionConfig
from eval_assets.vqa.authors import AuthorConfig
from eval_assets.vqa.dataset import DatasetSummary
from eval_assets.vqa.families import COUNT_CHOICES, DISTANCE_CHOICES, bucket_index
from eval_assets.vqa.generate import generate_from_recording

REPO = Path(__file__).resolve().parents[2]
SCENE = REPO / "data" / "recordings" / "sample.scene.json"


def generate(sample_db: Path, out: Path, frames: list[int]) -> DatasetSummary:
    models = PerceptionConfig()  # the offline default: colour/shape detector, region masks
    return generate_from_recording(sample_db, out, frames, AuthorConfig(),
                                   models.build_detector(), models.build_segmenter())


def hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def sample_dataset(sample_db: Path, tmp_path_factory: pytest.TempPathFactory
                   ) -> tuple[Path, DatasetSummary]:
    out = tmp_path_factory.mktemp("sample") / "dataset"
    return out, generate(sample_db, out, list(range(24)))


def expected_answer(label: dict[str, Any], objects: list[dict[str, Any]], width: int,
                    height: int, min_pixels: int) -> str:
    """The answer the scene truth gives, counting objects with at least ``min_pixels``."""
    def visible(name: str) -> list[dict[str, Any]]:
        return [o for o in objects if o["name"] == name and o["visible_pixels"] >= min_pixels]

    names, family = label["object_names"], label["family"]
    if family == "presence":
        return "yes" if visible(names[0]) else "no"
    if family == "object_count":
        n = len(visible(names[0]))
        return COUNT_CHOICES[min(n, 4) - 1] if n else "none"
    if family == "closest_object":
        return min(names, key=lambda n: min(o["surface_distance_m"] for o in visible(n)))
    if family == "largest_visible_area":
        return max(names, key=lambda n: sum(o["visible_pixels"] for o in visible(n)))
    (obj,) = visible(names[0]) or [None]
    if obj is None:
        return "not visible"
    if family == "horizontal_direction":
        return str(obj["horizontal_third"])
    if family == "object_distance":
        return DISTANCE_CHOICES[bucket_index(obj["surface_distance_m"], (1, 2, 3))]
    assert family == "image_coverage"
    percent = 100 * obj["visible_pixels"] / (width * height)
    bounds = (25, 50, 75) if len(label["choices"]) == 4 else (15, 35, 65, 85)
    return str(label["choices"][bucket_index(percent, bounds)])


@pytest.mark.slow
def test_every_label_agrees_with_the_scene_truth(
        sample_dataset: tuple[Path, DatasetSummary]) -> None:
    out, summary = sample_dataset
    scene = json.loads(SCENE.read_text())
    width, height = scene["camera"]["width"], scene["camera"]["height"]
    truth = {f["index"]: f["objects"] for f in scene["frames"]}
    labels = [json.loads(line) for line in (out / "audit/labels.jsonl").read_text().splitlines()]
    assert len(labels) == summary.num_cases > 500
    assert set(summary.cases_per_family) == {
        "presence", "horizontal_direction", "object_count", "image_coverage",
        "largest_visible_area", "object_distance", "closest_object"}
    # The detector reports regions of at least min_area_px pixels: a sliver smaller than that
    # (an object cut by the image border) is invisible to any evidence.
    min_pixels = ColorShapeParams().min_area_px
    report: dict[str, Counter[str]] = {"visible >= min area": Counter(), "visible > 0": Counter()}
    wrong: list[tuple[str, str, str]] = []
    for label in labels:
        objects = truth[label["frame_index"]]
        for key, threshold in (("visible >= min area", min_pixels), ("visible > 0", 1)):
            ok = label["answer"] == expected_answer(label, objects, width, height, threshold)
            report[key]["agree" if ok else "disagree"] += 1
            if not ok and threshold == min_pixels:
                wrong.append((label["id"], label["answer"],
                              expected_answer(label, objects, width, height, threshold)))
    print(f"\nagreement with scene truth: {dict(report)}")
    print(f"cases per family: {summary.cases_per_family}")
    print(f"rejections per reason: {summary.rejections_per_reason}")
    assert wrong == []
    assert report["visible > 0"]["agree"] >= 0.99 * len(labels)
    answers = Counter(lab["answer"] for lab in labels if lab["family"] == "presence")
    assert answers["yes"] > 0 and answers["no"] > 0  # real "no" answers, unlike dimOS


@pytest.mark.slow
def test_audit_accounts_for_every_proposal(sample_dataset: tuple[Path, DatasetSummary]) -> None:
    out, summary = sample_dataset
    assert summary.num_frames == 24
    run = json.loads((out / "audit/run.json").read_text())
    assert run["frame_indices"] == list(range(24))
    assert len(run["source"]["sha256"]) == 64 and run["source"]["name"] == "sample.db"
    reasons: Counter[str] = Counter()
    n_cases = n_proposals = 0
    for index in run["frame_indices"]:
        folder = out / f"audit/frame-{index:06d}"
        gt = json.loads((folder / "ground_truth.json").read_text())
        cases = json.loads((folder / "cases.json").read_text())
        rejected = [r for r in gt if r["status"] == "rejected"]
        assert [r["id"] for r in gt if r["status"] == "answered"] == [c["id"] for c in cases]
        reasons.update(r["reason_code"] for r in rejected)
        n_cases += len(cases)
        n_proposals += len(gt)
        frame = json.loads((folder / "frame.json").read_text())
        assert (frame["question_count"], frame["rejected_question_count"]) == \
            (len(cases), len(rejected))
        if frame["pointcloud_status"] == "image_only":
            assert "LiDAR" in frame["pointcloud_reason"]
        evidence = json.loads((folder / "evidence.json").read_text())
        assert all(d["detector"] and d["detector_version"] for d in evidence["detections"])
    assert dict(sorted(reasons.items())) == run["rejections_per_reason"]
    assert (n_cases, n_proposals) == (run["question_count"], run["num_proposals"])
    assert sum(reasons.values()) == run["rejected_question_count"]
    for reason in ("no_detection", "multiple_detections", "image_only_frame"):
        assert reasons[reason] > 0


@pytest.mark.slow
def test_public_files_hold_nothing_private(sample_dataset: tuple[Path, DatasetSummary]) -> None:
    out, _ = sample_dataset
    text = (out / "cases.jsonl").read_text()
    cases = [json.loads(line) for line in text.splitlines()]
    assert all(list(c) == ["id", "image", "question", "choices"] for c in cases)
    for marker in ("hsv-shape", "answer", "evidence", "surface_distance", "mask", "detector"):
        assert marker not in text
    for case in cases:  # every published choice is matchable by the scoring matcher
        for choice in case["choices"]:
            assert match_choice(choice, case["choices"]).choice == choice
            assert match_choice(f"{choice.upper()}.", case["choices"]).choice == choice
    images = {c["image"] for c in cases}
    # One asset per selected frame (dimOS), including frames without a case.
    assert images <= {f"assets/{p.name}" for p in (out / "assets").iterdir()}
    assert len(list((out / "assets").iterdir())) == 24
    assert all(p.suffix == ".png" for p in (out / "assets").iterdir())


def test_two_runs_are_byte_identical(sample_db: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "one" / "dataset", tmp_path / "two" / "dataset"
    generate(sample_db, first, [0, 8, 16])
    generate(sample_db, second, [0, 8, 16])
    assert hashes(first) == hashes(second)
    # cases, labels, audit labels, run.json; per frame 5 audit files + asset; the spatial
    # cases, labels, audit labels and rejections; the blind-solvability audit (2); per frame
    # its marked image (marked/, beside dimOS's assets/), the sample having marked objects
    assert len(hashes(first)) == 4 + 3 * 6 + 4 + 2 + 3
    assert sorted(p for p in hashes(first) if p.startswith("marked/")) == [
        f"marked/frame-{i:06d}.png" for i in (0, 8, 16)]


def test_cli_generate_and_refuse_a_non_empty_output(sample_db: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    result = runner.invoke(app, ["vqa", "generate", str(sample_db), "--image-index", "3"])
    assert result.exit_code == 0, result.output
    default = tmp_path / "state" / "eval_assets" / "sample-frames"
    assert str(default) in result.output
    # Each family's count comes with its answers and the commonest one's share.
    assert re.search(r"^  presence: \d+ \(answers (yes|no) \d+.*; most common \d+%", result.output,
                     re.MULTILINE), result.output
    assert json.loads((default / "audit/run.json").read_text())["frame_indices"] == [3]
    again = runner.invoke(app, ["vqa", "generate", str(sample_db), "--image-index", "3"])
    assert again.exit_code == 2  # the output folder exists: bad input
    assert "not an empty folder" in again.output
    out = tmp_path / "ranged"
    ranged = runner.invoke(app, ["vqa", "generate", str(sample_db), "--start", "20",
                                 "--stop", "24", "--stride", "2", "--output", str(out)])
    assert ranged.exit_code == 0, ranged.output
    assert json.loads((out / "audit/run.json").read_text())["frame_indices"] == [20, 22]
    both = runner.invoke(app, ["vqa", "generate", str(sample_db), "--image-index", "1",
                               "--start", "2", "--output", str(tmp_path / "x")])
    assert both.exit_code == 2 and "not both" in both.output


@pytest.mark.slow
def test_every_sample_case_has_a_bias_score(sample_dataset: tuple[Path, DatasetSummary]) -> None:
    from eval_assets.vqa.bias import read_bias_cases, read_bias_summary

    out, summary = sample_dataset
    ids = [json.loads(line)["id"] for name in ("cases.jsonl", "spatial_cases.jsonl")
           for line in (out / name).read_text().splitlines()]
    bias = read_bias_cases(out)
    assert bias is not None and list(bias) == ids
    audit = read_bias_summary(out)
    assert audit is not None and audit.pruning is None
    assert set(audit.families) == set(summary.cases_per_family) | set(
        summary.spatial_cases_per_family)
    for family, f in audit.families.items():
        print(f"{family}: n {f.n}, scored {f.n_scored}, mean {f.mean_bias_score}, "
              f"flagged {f.flagged_share}, blind upper bound {f.blind_upper_bound}")
    # The sample's scene makes presence answerable from the name alone (each frame shows
    # mostly the same objects): the audit must see it.
    assert (audit.families["presence"].flagged_share or 0) > 0.5


@pytest.mark.slow
def test_cli_prune_bias_keeps_the_audit_consistent(sample_db: Path, tmp_path: Path) -> None:
    from eval_assets.scoring.inputs import load_private_dataset
    from eval_assets.vqa.bias import read_bias_summary
    from eval_assets.vqa.leakage import find_leaks

    out = tmp_path / "pruned"
    result = CliRunner().invoke(app, ["vqa", "generate", str(sample_db), "--start", "0",
                                      "--stop", "24", "--stride", "2", "--output", str(out),
                                      "--prune-bias", "--prune-floor", "3"])
    assert result.exit_code == 0, result.output
    assert "blind solvability" in result.output and "pruned" in result.output
    audit = read_bias_summary(out)
    assert audit is not None and audit.pruning is not None and audit.pruning.pruned
    assert audit.config.prune and audit.config.prune_floor == 3
    run = json.loads((out / "audit/run.json").read_text())
    cases = (out / "cases.jsonl").read_text().splitlines()
    assert run["question_count"] == len(cases) == sum(run["cases_per_family"].values())
    gone = {p.id for p in audit.pruning.pruned}
    answered = 0
    for index in run["frame_indices"]:
        folder = out / f"audit/frame-{index:06d}"
        gt = json.loads((folder / "ground_truth.json").read_text())
        frame_cases = json.loads((folder / "cases.json").read_text())
        assert [r["id"] for r in gt if r["status"] == "answered"] == \
            [c["id"] for c in frame_cases]
        assert not gone & {c["id"] for c in frame_cases}
        frame = json.loads((folder / "frame.json").read_text())
        assert frame["question_count"] == len(frame_cases)
        assert frame["rejected_question_count"] == sum(r["status"] == "rejected" for r in gt)
        answered += len(frame_cases)
    assert answered == len(cases)
    assert find_leaks(out) == []
    data = load_private_dataset(out)  # the scorer still loads it
    assert len(data.labels) == len(cases)
    assert not gone & ({lab.id for lab in data.labels} | {lab.id for lab in data.spatial_labels})
    bad = CliRunner().invoke(app, ["vqa", "generate", str(sample_db), "--image-index", "1",
                                   "--bias-threshold", "1.5", "--output", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "--bias-threshold" in bad.output
