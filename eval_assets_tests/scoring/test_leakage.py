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
