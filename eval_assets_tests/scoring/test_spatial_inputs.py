"""The private side of a dataset's spatial cases: loaded beside dimOS's when present, checked
against the public labels, absent for today's datasets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval_assets.scoring.inputs import load_private_dataset
from eval_assets_tests.model_runs.helpers import make_dataset, make_spatial_dataset


def test_spatial_cases_and_labels_load_beside_dimos_cases(tmp_path: Path) -> None:
    dataset = make_spatial_dataset(tmp_path / "ds")
    (dataset.root / "labels.jsonl").write_text("".join(
        json.dumps({"id": c["id"], "answer": "yes"}) + "\n" for c in dataset.cases))
    data = load_private_dataset(dataset.root)
    assert [lab.id for lab in data.labels] == [c["id"] for c in dataset.cases]
    assert list(data.spatial_cases) == [c["id"] for c in dataset.spatial]
    assert [lab.id for lab in data.spatial_labels] == list(data.spatial_cases)
    pair = next(lab for lab in data.spatial_labels if lab.family == "pair_distance_m")
    assert (pair.answer, pair.unit, pair.answer_type) == ("2.5", "m", "number")


def test_a_dataset_without_spatial_cases_has_none(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds")
    (dataset.root / "labels.jsonl").write_text("".join(
        json.dumps({"id": c["id"], "answer": "yes"}) + "\n" for c in dataset.cases))
    data = load_private_dataset(dataset.root)
    assert data.spatial_cases == {} and data.spatial_labels == []


def _spatial(tmp_path: Path) -> Path:
    dataset = make_spatial_dataset(tmp_path / "ds")
    (dataset.root / "labels.jsonl").write_text("".join(
        json.dumps({"id": c["id"], "answer": "yes"}) + "\n" for c in dataset.cases))
    return dataset.root


def test_the_public_labels_are_the_authority_on_answers(tmp_path: Path) -> None:
    root = _spatial(tmp_path)
    path = root / "spatial_labels.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[0]["answer"] = "46"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ValueError, match=r"answer of 'spatial-size-object_size_cm' is '45' but"):
        load_private_dataset(root)


def test_a_case_without_its_audit_label_is_an_error(tmp_path: Path) -> None:
    root = _spatial(tmp_path)
    path = root / "audit" / "spatial_labels.jsonl"
    path.write_text("".join(path.read_text().splitlines(keepends=True)[1:]))
    with pytest.raises(ValueError, match=r"cases without a label \['spatial-size"):
        load_private_dataset(root)
    path.unlink()
    with pytest.raises(FileNotFoundError, match=r"audit/spatial_labels.jsonl does not exist"):
        load_private_dataset(root)
