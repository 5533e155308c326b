"""Audit a published dataset for private data in the files a model under test may see."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from eval_assets.schemas.spatial import SPATIAL_CASES, SPATIAL_LABELS, SpatialCase
from eval_assets.schemas.vqa import (
    DATASET_ASSETS,
    DATASET_AUDIT,
    DATASET_CASES,
    DATASET_LABELS,
    MARKED_ASSETS,
    Case,
)
from eval_assets.vqa.declarations import families

_NUMBER = re.compile(r"(?<![\d.,])(\d+(?:[.,]\d+)?)(?![\d])")
_ASSET = re.compile(r"^frame-\d{6}\.png$")
# A spatial case's images: the frames, or the frames with the marked objects' numbers drawn.
_SPATIAL_FOLDERS = (Path(DATASET_ASSETS), Path(MARKED_ASSETS))
_FRACTION = re.compile(r"^-?\d+\.\d{2,}(e-?\d+)?$")
# Evidence strings shorter than this (a "yes", a digit) legitimately occur in questions/choices.
_MIN_SECRET_LEN = 6


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, float) and not value.is_integer():
        yield json.dumps(value)


def find_leaks(dataset_dir: Path) -> list[str]:
    """Every way the public part of ``dataset_dir`` exposes private data; empty when clean.

    Public files are ``cases.jsonl``, ``spatial_cases.jsonl`` (where published) and
    ``assets/``. Checked: each case has exactly the public fields; every image is a frame PNG
    under ``assets/``; ``assets/`` holds only such PNGs; and no private evidence value (from
    ``labels.jsonl``, ``spatial_labels.jsonl`` or ``audit/``) long enough to be telling appears
    in a public file outside its public question, choice, id and image values — and no
    fractional measurement (a range, a score, a centre) anywhere in it; nor does a numeric
    spatial case's question state its own answer.
    """
    problems: list[str] = []
    cases_path = dataset_dir / DATASET_CASES
    public_text = cases_path.read_text(encoding="utf-8")
    cases: list[Case] = []
    allowed = set(Case.model_fields)
    for number, line in enumerate(public_text.splitlines(), start=1):
        record = json.loads(line)
        extra = sorted(set(record) - allowed)
        if extra:
            problems.append(f"{cases_path}:{number}: fields {extra} are not public")
        # Audit the public part of the line even when it also carries extra fields.
        cases.append(Case.model_validate({k: v for k, v in record.items() if k in allowed}))
    for case in cases:
        image = Path(case.image)
        if image.parent != Path(DATASET_ASSETS) or not _ASSET.match(image.name):
            problems.append(f"{case.id}: image {case.image!r} is not a frame PNG in assets/")
    for folder in (dataset_dir / DATASET_ASSETS, dataset_dir / MARKED_ASSETS):
        for path in sorted(folder.rglob("*")) if folder.is_dir() else []:
            if path.is_file() and (path.parent != folder or not _ASSET.match(path.name)):
                problems.append(f"{path}: only frame-XXXXXX.png files (in {DATASET_ASSETS}/ "
                                f"or {MARKED_ASSETS}/) may be public")
    # What is left of cases.jsonl once the legitimately public values are cut out: only field
    # names and punctuation, so any private value found in it was leaked.
    residual = public_text
    public_values = {s for c in cases for s in (c.question, *c.choices, c.id, c.image)}
    for value in sorted(public_values | set(Case.model_fields), key=len, reverse=True):
        residual = residual.replace(json.dumps(value), "")
    secrets: set[str] = set()
    # Raw JSON, not the label schema: a leak check must still run on a dataset whose public
    # file is malformed. The audit holds every label's evidence (audit/labels.jsonl, per frame).
    for audit_file in sorted((dataset_dir / DATASET_AUDIT).rglob("*.json*")):
        text = audit_file.read_text(encoding="utf-8")
        documents = ([json.loads(line) for line in text.splitlines() if line.strip()]
                     if audit_file.suffix == ".jsonl" else [json.loads(text)])
        for document in documents:
            secrets.update(_strings(document))
    spatial = _spatial_public(dataset_dir, problems)
    secrets.update(_private_answers(dataset_dir))
    for path, text, rest in ((cases_path, public_text, residual), *spatial):
        for secret in sorted(secrets):
            # Fractional measurements (ranges, areas, scores) never occur in our questions or
            # choices, so they are searched for everywhere; text only outside the public values.
            telling = _FRACTION.match(secret) is not None and secret in text
            if telling or (len(secret) >= _MIN_SECRET_LEN and secret in rest):
                problems.append(f"{path}: contains private evidence value {secret!r}")
    return problems


def _numbers(text: str) -> set[str]:
    return {m.replace(",", ".") for m in _NUMBER.findall(text)}


def _wording_numbers(case_id: str) -> set[str]:
    """The numbers every question of the case's family states (its declared wordings: "90 is to
    your right"): a gold equal to one of them is not stated by the question."""
    family = next((s for s in families("spatial") if f"spatial-{s.name}-" in case_id), None)
    if family is None:
        return set()
    return _numbers(family.question) | _numbers(family.paraphrase or "")


def _private_answers(dataset_dir: Path) -> set[str]:
    """The answers of the private label files (a numeric answer is a secret too)."""
    out: set[str] = set()
    for name in (DATASET_LABELS, SPATIAL_LABELS):
        path = dataset_dir / name
        if path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    out.update(_strings(json.loads(line)))
    return out


def _spatial_public(dataset_dir: Path, problems: list[str]) -> list[tuple[Path, str, str]]:
    """Check ``spatial_cases.jsonl``'s fields and images (into ``problems``) and return it as
    ``(path, text, residual)``: its text with the public values cut out; nothing when absent."""
    path = dataset_dir / SPATIAL_CASES
    if not path.is_file():
        return []
    text = path.read_text(encoding="utf-8")
    allowed = set(SpatialCase.model_fields)
    public: set[str] = set(allowed)
    labels = dataset_dir / SPATIAL_LABELS
    answers = ({r["id"]: str(r.get("answer")) for r in map(json.loads, labels.read_text(
        encoding="utf-8").splitlines()) if isinstance(r, dict)} if labels.is_file() else {})
    for number, line in enumerate(text.splitlines(), start=1):
        record = json.loads(line)
        extra = sorted(set(record) - allowed)
        if extra:
            problems.append(f"{path}:{number}: fields {extra} are not public")
        case = SpatialCase.model_validate({k: v for k, v in record.items() if k in allowed})
        for image in case.images:
            if Path(image).parent not in _SPATIAL_FOLDERS or not _ASSET.match(Path(image).name):
                problems.append(f"{case.id}: image {image!r} is not a frame PNG in assets/ or "
                                f"{MARKED_ASSETS}/")
        answer = answers.get(case.id)
        stated = _numbers(case.question) - _wording_numbers(case.id)
        if case.answer_type == "number" and answer is not None and answer in stated:
            problems.append(f"{path}: the question of {case.id!r} states its answer {answer!r}")
        public.update([case.id, case.question, case.answer_type, *case.images,
                       *(case.choices or []), *([case.unit] if case.unit else []),
                       *([case.marks] if case.marks else [])])
    residual = text
    for value in sorted(public, key=len, reverse=True):
        residual = residual.replace(json.dumps(value), "")
    return [(path, text, residual)]
