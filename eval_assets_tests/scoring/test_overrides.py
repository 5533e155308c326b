"""Label overrides: recorded with the case's content hash, applied by content, orphans reported."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eval_assets.cli import app
from eval_assets.errors import InputError
from eval_assets.layout import StorageLayout, overrides_file_for
from eval_assets.schemas.vqa import DATASET_CASES
from eval_assets.scoring.inputs import load_private_dataset, load_run
from eval_assets.scoring.vqa import score_vqa
from eval_assets.vqa.overrides import case_content_sha256, read_overrides, record_override
from eval_assets_tests.scoring.conftest import answer, labels_of, write_run


@pytest.fixture
def dataset(sample_dataset: Path, tmp_path: Path) -> Path:
    """A copy of the sample dataset this test may change."""
    return Path(shutil.copytree(sample_dataset, tmp_path / "datasets" / "sample"))


def _other(label) -> str:
    return next(c for c in label.choices if c != label.answer)


def test_an_override_changes_the_gold_answer_and_the_score(dataset: Path, tmp_path: Path) -> None:
    labels = labels_of(dataset)
    target = labels[0]
    overrides = tmp_path / "labels" / "sample.overrides.jsonl"
    record = record_override(dataset, overrides, labels, case_id=target.id,
                             answer=_other(target).upper(), by="ana", reason="it is a ball",
                             at="2026-12-04T10:00:00Z")
    assert (record.old_answer, record.new_answer) == (target.answer, _other(target))
    cases = {c["id"]: c for c in map(json.loads, (dataset / DATASET_CASES).read_text()
                                     .splitlines())}
    line = json.loads(overrides.read_text())
    assert line == {"case_id": target.id, "content_sha256": record.content_sha256,
                    "old_answer": target.answer, "new_answer": _other(target), "by": "ana",
                    "reason": "it is a ball", "at": "2026-12-04T10:00:00Z"}
    assert cases[target.id]["image"].startswith("assets/")

    # A model that answers every case as the sensor labelled it loses exactly that one.
    run = load_run(write_run(tmp_path / "run", [answer(lab.id, lab.answer) for lab in labels], []))
    before = score_vqa(load_private_dataset(dataset), run, "sample").overall.correct
    data = load_private_dataset(dataset, overrides)
    after = score_vqa(data, run, "sample").overall.correct
    assert (before, after) == (len(labels), len(labels) - 1)
    assert data.overrides is not None and data.overrides.summary() == "1 applied, 0 orphaned"
    assert {lab.id: lab.answer for lab in data.labels}[target.id] == _other(target)
    # No file: nothing to apply, and the sensor's labels are untouched.
    empty = load_private_dataset(dataset, tmp_path / "none.overrides.jsonl")
    assert empty.labels == labels and empty.overrides is not None and not empty.overrides.states


def test_bad_corrections_are_refused_naming_the_flag(dataset: Path, tmp_path: Path) -> None:
    labels = labels_of(dataset)
    path = tmp_path / "o.jsonl"
    common = {"by": "ana", "reason": "r"}
    with pytest.raises(InputError, match="--case 'frame-999999-x-presence' is not a case"):
        record_override(dataset, path, labels, case_id="frame-999999-x-presence", answer="yes",
                        **common)
    with pytest.raises(InputError, match=r"--answer 'maybe' is not one of the choices"):
        record_override(dataset, path, labels, case_id=labels[0].id, answer="maybe", **common)
    with pytest.raises(InputError, match="already its gold answer"):
        record_override(dataset, path, labels, case_id=labels[0].id, answer=labels[0].answer,
                        **common)
    with pytest.raises(InputError, match="--reason is empty"):
        record_override(dataset, path, labels, case_id=labels[0].id, answer=_other(labels[0]),
                        by="ana", reason=" ")
    assert not path.exists()
    path.write_text('{"case_id": "x"}\n')
    with pytest.raises(InputError, match=r"o.jsonl:1 .*content_sha256"):
        read_overrides(path)


def test_changed_or_missing_cases_orphan_their_overrides(dataset: Path, tmp_path: Path) -> None:
    labels = labels_of(dataset)
    path = tmp_path / "o.jsonl"
    first, second, third = labels[0], labels[1], labels[2]
    for lab in (first, second, third):
        record_override(dataset, path, labels, case_id=lab.id, answer=_other(lab), by="ana",
                        reason="r")
    # The same case corrected twice: the later one is in force, the earlier superseded.
    record_override(dataset, path, labels, case_id=third.id, answer=third.answer, by="bo",
                    reason="the sensor was right")
    lines = (dataset / DATASET_CASES).read_text().splitlines()
    kept = []
    for line in lines:
        case = json.loads(line)
        if case["id"] == first.id:
            continue  # gone
        if case["id"] == second.id:
            case["question"] = case["question"] + " (reworded)"  # changed content
        kept.append(json.dumps(case))
    (dataset / DATASET_CASES).write_text("\n".join(kept) + "\n")
    (dataset / "labels.jsonl").write_text("".join(
        line + "\n" for line in (dataset / "labels.jsonl").read_text().splitlines()
        if json.loads(line)["id"] != first.id))
    sidecar = dataset / "audit" / "labels.jsonl"
    sidecar.write_text("".join(line + "\n" for line in sidecar.read_text().splitlines()
                               if json.loads(line)["id"] != first.id))
    data = load_private_dataset(dataset, path)
    assert data.overrides is not None
    states = [(s.override.case_id, s.state) for s in data.overrides.states]
    assert states == [(first.id, "case_missing"), (second.id, "content_changed"),
                      (third.id, "superseded"), (third.id, "matches_gold")]
    answers = {lab.id: lab.answer for lab in data.labels}
    assert answers[second.id] == second.answer and answers[third.id] == third.answer
    assert data.overrides.summary() == "0 applied, 2 orphaned, 1 matches gold, 1 superseded"


def test_new_image_bytes_change_the_content_hash(dataset: Path) -> None:
    labels = labels_of(dataset)
    data = load_private_dataset(dataset)
    case = data.cases[labels[0].id]
    before = case_content_sha256(dataset, case)
    image = dataset / case.image
    image.write_bytes(image.read_bytes() + b"\0")
    assert case_content_sha256(dataset, case) != before


def test_the_command_line_records_lists_and_exits_2_on_bad_input(
        sample_dataset: Path, tmp_path: Path) -> None:
    layout = StorageLayout(tmp_path / "home")
    shutil.copytree(sample_dataset, layout.dataset_dir("sample"))
    labels = labels_of(layout.dataset_dir("sample"))
    where = ["--storage-root", str(layout.root), "--labels-dir", str(tmp_path / "labels")]
    runner = CliRunner()
    bad = runner.invoke(app, ["labels", "override", "--recording", "sample", "--case",
                              labels[0].id, "--answer", "maybe", "--by", "ana", "--reason", "r",
                              *where])
    assert bad.exit_code == 2, bad.output
    assert "--answer 'maybe'" in bad.output and "cases.jsonl" in bad.output
    ok = runner.invoke(app, ["labels", "override", "--recording", "sample", "--case",
                             labels[0].id, "--answer", _other(labels[0]), "--by", "ana",
                             "--reason", "a ball, not a box", *where])
    assert ok.exit_code == 0, ok.output
    assert read_overrides(overrides_file_for(tmp_path / "labels", "sample"))[0].by == "ana"
    listed = runner.invoke(app, ["labels", "list", *where])
    assert listed.exit_code == 0, listed.output
    assert "1 applied, 0 orphaned" in listed.output and labels[0].id in listed.output
    missing = runner.invoke(app, ["labels", "override", "--recording", "nope", "--case", "c",
                                  "--answer", "a", "--by", "ana", "--reason", "r", *where])
    assert missing.exit_code == 2 and "no published dataset" in missing.output


def test_a_hand_edited_answer_that_is_not_a_choice_is_reported_not_applied(
        dataset: Path, tmp_path: Path) -> None:
    labels = labels_of(dataset)
    first, second = labels[0], labels[1]
    path = tmp_path / "labels" / "sample.overrides.jsonl"
    # A valid correction of each case, then a hand edit of the second: a copy of its line with
    # an answer the case does not offer (the hash still matches, so only the answer is wrong).
    record_override(dataset, path, labels, case_id=first.id, answer=_other(first), by="ana",
                    reason="r")
    record_override(dataset, path, labels, case_id=second.id, answer=_other(second), by="ana",
                    reason="r")
    edited = json.loads(path.read_text().splitlines()[1]) | {"new_answer": "maybe", "by": "bo"}
    path.write_text(path.read_text() + json.dumps(edited) + "\n")

    data = load_private_dataset(dataset, path)
    assert data.overrides is not None
    states = [(s.override.case_id, s.state) for s in data.overrides.states]
    assert states == [(first.id, "applied"), (second.id, "applied"),
                      (second.id, "not_a_choice")]
    # Not applied, and it supersedes nothing: the earlier valid correction stays in force.
    answers = {lab.id: lab.answer for lab in data.labels}
    assert answers[first.id] == _other(first) and answers[second.id] == _other(second)
    assert "maybe" not in answers.values()
    assert data.overrides.summary() == "2 applied, 0 orphaned, 1 invalid (answer not a choice)"
    (problem,) = data.overrides.problems()
    choices = data.cases[second.id].choices
    for part in (str(path), repr(second.id), "'maybe'", str(list(choices)), "by bo",
                 "not applied", "Fix:", "eval-assets labels override"):
        assert part in problem, (part, problem)
    # Scoring reads the labels in force and runs: no raw validation error on the next run.
    run = load_run(write_run(tmp_path / "run", [answer(lab.id, lab.answer) for lab in labels], []))
    assert score_vqa(data, run, "sample").overall.correct == len(labels) - 2


def test_the_list_command_names_an_invalid_override_and_its_fix(
        sample_dataset: Path, tmp_path: Path) -> None:
    layout = StorageLayout(tmp_path / "home")
    shutil.copytree(sample_dataset, layout.dataset_dir("sample"))
    dataset = layout.dataset_dir("sample")
    labels = labels_of(dataset)
    path = overrides_file_for(tmp_path / "labels", "sample")
    record_override(dataset, path, labels, case_id=labels[0].id, answer=_other(labels[0]),
                    by="ana", reason="r")
    line = json.loads(path.read_text()) | {"new_answer": _other(labels[0]).upper() + "!"}
    path.write_text(json.dumps(line) + "\n")
    listed = CliRunner().invoke(app, ["labels", "list", "--storage-root", str(layout.root),
                                      "--labels-dir", str(tmp_path / "labels")])
    assert listed.exit_code == 0, listed.output
    assert "0 applied, 0 orphaned, 1 invalid (answer not a choice)" in listed.output
    assert "is not one of the case's choices" in listed.output and "Fix:" in listed.output
    assert "Traceback" not in listed.output


def test_an_override_on_an_edited_dataset_is_refused_with_a_fix_that_works(
        sample_dataset: Path, tmp_path: Path) -> None:
    # Before: "ValueError: ... one of them was edited by hand. Regenerate the dataset", exit 1,
    # and `eval-assets run` regenerates nothing: Dagster still holds the dataset materialized.
    layout = StorageLayout(tmp_path / "home")
    dataset = Path(shutil.copytree(sample_dataset, layout.dataset_dir("sample")))
    labels = labels_of(dataset)
    public = dataset / "labels.jsonl"
    lines = [json.loads(line) for line in public.read_text().splitlines()]
    lines[0]["answer"] = _other(labels[0])  # a gold answer edited by hand after publishing
    public.write_text("".join(json.dumps(line) + "\n" for line in lines))
    args = ["labels", "override", "--recording", "sample", "--case", labels[1].id, "--answer",
            _other(labels[1]), "--by", "ana", "--reason", "r", "--storage-root",
            str(layout.root), "--labels-dir", str(tmp_path / "labels")]
    result = CliRunner().invoke(app, args)
    flat = " ".join(result.output.split())
    assert result.exit_code == 2, flat
    assert f"{dataset} is not as it was published (" in flat and labels[0].id in flat
    assert "no override was recorded" in flat and "ValueError" not in flat
    assert "regenerate" not in flat.lower()
    assert (f"Fix: publish it again from the recording: `DAGSTER_HOME={layout.dagster_home()} "
            "dagster asset wipe public_cases private_labels --noprompt`, then `eval-assets run "
            "<sample's recording file>`") in flat
    assert not (tmp_path / "labels").exists()
    # A case whose label went missing from both label files is as plainly refused.
    public.write_text("".join(json.dumps(line) + "\n" for line in lines[1:]))
    audit = dataset / "audit" / "labels.jsonl"
    audit.write_text("".join(line + "\n" for line in audit.read_text().splitlines()[1:]))
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 2 and "cases without a label in labels.jsonl" in again.output
