"""Datasets cross both ways with the real dimOS 0.0.15 (from the registry, in its own venv).

- dimOS's ``load_suite`` loads the dataset we generate from the sample, with our ids, prompts and
  images, and its ``grade_choice`` scores each case's answer 1 and every other choice 0.
- A dataset written by dimOS's own generator is answered by ``eval-assets vqa run`` and scored
  by our metrics; per case, our verdict on the model's replies equals dimOS's grader's.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eval_assets.cli import app
from eval_assets.jsonio import read_jsonl
from eval_assets.model_runs.prompts import question_text
from eval_assets.perception import PerceptionConfig
from eval_assets.schemas.vqa import Case
from eval_assets.scoring.inputs import load_private_dataset, load_run
from eval_assets.scoring.vqa import score_vqa
from eval_assets.vqa.authors import AuthorConfig
from eval_assets.vqa.generate import generate_from_recording
from eval_assets.vqa.labels import read_labels
from eval_assets_tests.model_runs.helpers import ONE_CALL_PER_CASE
from eval_assets_tests.reference import dimos_python, run_dimos

__all__ = ["dimos_python"]  # the fixture, imported for pytest

pytestmark = [pytest.mark.reference, pytest.mark.slow]

DRIVER = (Path(__file__).parent / "dimos_driver.py").read_text(encoding="utf-8")
FRAMES = [0, 8, 16]


def dimos(python: Path, *args: object) -> dict:
    return json.loads(run_dimos(python, DRIVER, *args).strip().splitlines()[-1])


@pytest.fixture(scope="module")
def our_dataset(sample_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ours") / "dataset"
    models = PerceptionConfig()
    generate_from_recording(sample_db, out, FRAMES, AuthorConfig(), models.build_detector(),
                            models.build_segmenter())
    return out


def test_dimos_loads_and_grades_our_dataset(our_dataset: Path, dimos_python: Path,
                                            tmp_path: Path) -> None:
    cases = read_jsonl(our_dataset / "cases.jsonl", Case)
    labels = {lab.id: lab for lab in read_labels(our_dataset)}
    loaded = dimos(dimos_python, "load", our_dataset)["cases"]
    assert [c["id"] for c in loaded] == [c.id for c in cases]
    # dimOS's prompt for each case is the one our runner sends.
    assert [c["inputs"] for c in loaded] == [question_text(c.question, c.choices) for c in cases]
    # Every selected frame has its image, answered or not.
    assert sorted(p.name for p in (our_dataset / "assets").iterdir()) == \
        [f"frame-{i:06d}.png" for i in FRAMES]
    # Each choice as the reply: dimOS scores the label's answer 1, every other choice 0.
    replies = {f"{c.id}#{k}": choice for c in cases for k, choice in enumerate(c.choices)}
    for k in range(max(len(c.choices) for c in cases)):
        batch = {c.id: c.choices[k] for c in cases if k < len(c.choices)}
        path = tmp_path / f"replies-{k}.json"
        path.write_text(json.dumps(batch))
        scores = dimos(dimos_python, "grade", our_dataset, path)["scores"]
        assert scores == {cid: float(labels[cid].answer == reply)
                          for cid, reply in batch.items()}
    assert len(replies) > 2 * len(cases)
    assert Counter(lab.family for lab in labels.values()).keys() >= {"presence", "object_count"}


def test_we_answer_and_score_a_dataset_written_by_dimos(sample_db: Path, dimos_python: Path,
                                                        tmp_path: Path) -> None:
    dataset = tmp_path / "dimos-dataset"
    made = dimos(dimos_python, "generate", sample_db, dataset, ",".join(map(str, FRAMES)))
    assert made["cases"] > 0
    assert not (dataset / "audit" / "labels.jsonl").exists()  # dimOS writes no sidecar
    # Our loader rebuilds each label (family from dimOS's audit, frame from the id).
    labels = read_labels(dataset)
    rows = [json.loads(line) for line in (dataset / "labels.jsonl").read_text().splitlines()]
    assert [(lab.id, lab.answer) for lab in labels] == [(r["id"], r["answer"]) for r in rows]
    assert {lab.family for lab in labels} <= {"presence", "horizontal_direction", "object_count"}
    assert all(lab.id.startswith(f"frame-{lab.frame_index:06d}-") for lab in labels)
    # dimOS's slug collapses and strips ("Blue  Box!" -> blue-box); names come from its audit.
    by_id = {lab.id: lab for lab in labels}
    assert by_id["frame-000000-blue-box-presence"].object_names == ["Blue  Box!"]
    assert by_id["frame-000000-blue-box-presence"].evidence["primitive"] == "object_detector"
    # `eval-assets vqa run` answers it; our metrics score it.
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(app, ["vqa", "run", str(dataset), "--model", "random",
                                      "--output", str(run_dir), "--no-describe",
                                      *ONE_CALL_PER_CASE])
    assert result.exit_code == 0, result.output
    data, run = load_private_dataset(dataset), load_run(run_dir)
    report = score_vqa(data, run, "sample")
    assert report.overall.n == len(labels)
    # Per case, our verdict equals dimOS's grader on the same replies.
    replies = {cid: a.raw_response or "" for cid, a in run.answers.items()}
    path = tmp_path / "replies.json"
    path.write_text(json.dumps(replies))
    theirs = dimos(dimos_python, "grade", dataset, path)["scores"]
    ours = {row.case_id: float(row.status == "correct") for row in report.rows}
    assert ours == theirs
    assert report.overall.correct == sum(theirs.values())
