"""The leakage audit behind the blocking asset check."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from eval_assets.vqa.leakage import find_leaks


def _first_fraction(value) -> str:
    """The first non-integer measurement in an evidence record, as JSON writes it."""
    if isinstance(value, float) and not value.is_integer():
        return json.dumps(value)
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    for item in items:
        found = _first_fraction(item)
        if found:
            return found
    return ""


def _copy(dataset: Path, tmp_path: Path) -> Path:
    out = tmp_path / "copy"
    shutil.copytree(dataset, out)
    return out


def test_a_generated_dataset_is_clean(sample_dataset: Path) -> None:
    assert find_leaks(sample_dataset) == []


def test_private_evidence_value_in_cases_is_found(sample_dataset: Path, tmp_path: Path) -> None:
    dataset = _copy(sample_dataset, tmp_path)
    labels = [json.loads(line)
              for line in (dataset / "audit" / "labels.jsonl").read_text().splitlines()]
    distance = next(lab for lab in labels if lab["family"] == "object_distance")
    secret = _first_fraction(distance["evidence"])
    cases = (dataset / "cases.jsonl").read_text().splitlines()
    first = json.loads(cases[0])
    first["question"] += f" (hint: {secret})"
    # Keep the public fields exact so only the content check can catch it.
    cases[0] = json.dumps(first)
    (dataset / "cases.jsonl").write_text("\n".join(cases) + "\n")
    assert any(secret in p and "private evidence" in p for p in find_leaks(dataset))
    # A raw answer field is a structural leak regardless of content.
    first = json.loads(cases[1])
    first["answer"] = "yes"
    cases[1] = json.dumps(first)
    (dataset / "cases.jsonl").write_text("\n".join(cases) + "\n")
    assert any("'answer'" in p for p in find_leaks(dataset))


def test_extra_public_file_is_found(sample_dataset: Path, tmp_path: Path) -> None:
    dataset = _copy(sample_dataset, tmp_path)
    (dataset / "assets" / "labels.json").write_text("{}")
    assert any("labels.json" in p for p in find_leaks(dataset))


def _rewrite_spatial(root: Path, change) -> None:
    path = root / "spatial_cases.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    change(rows)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_spatial_cases_are_audited_too(tmp_path: Path) -> None:
    from eval_assets_tests.model_runs.helpers import make_spatial_dataset

    root = make_spatial_dataset(tmp_path / "ds").root
    assert find_leaks(root) == []
    # A track centre from audit/spatial_labels.jsonl in a question: private evidence.
    _rewrite_spatial(root, lambda rows: rows[1].update(question=rows[1]["question"]
                                                       + " (near x = 1.25)"))
    assert any("spatial_cases.jsonl: contains private evidence value '1.25'" in p
               for p in find_leaks(root))
    # A number case whose question states its own answer; a private field; a foreign image.
    _rewrite_spatial(root, lambda rows: rows[0].update(question="Is it 45 cm long?",
                                                       answer="45",
                                                       images=["audit/x.png"]))
    problems = find_leaks(root)
    assert any("states its answer '45'" in p for p in problems)
    assert any("spatial_cases.jsonl:1: fields ['answer'] are not public" in p for p in problems)
    assert any("image 'audit/x.png' is not a frame PNG in assets/" in p for p in problems)
