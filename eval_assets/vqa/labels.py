"""The private side of a dataset, ours or dimOS's: every case's :class:`Label`.

Our generator writes each case's full label (family, frame, object names, evidence) to
``audit/labels.jsonl``. dimOS's generator writes only ``labels.jsonl`` (id, answer) and its audit
(``audit/frame-*/ground_truth.json`` rows with the proposal and the answer's evidence), so for
its datasets the label is rebuilt from those: the family and frame from the audit, else from the
case id (``frame-{index:06d}-{slug}-{family}[-n]``) and the image path. Either way
``labels.jsonl`` is the authority on answers: a sidecar that disagrees with it is an error.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eval_assets.jsonio import read_json, read_jsonl
from eval_assets.schemas.vqa import (
    AUDIT_LABELS,
    DATASET_AUDIT,
    DATASET_CASES,
    DATASET_LABELS,
    Case,
    Label,
    PrivateLabel,
    audit_frame_relpath,
)
from eval_assets.vqa.declarations import family_names


def _id_pattern() -> re.Pattern[str]:
    """A dimOS case id, its frame and family (a declared single-image family, read when asked
    so a family declared after import is known)."""
    return re.compile(r"^frame-(?P<frame>\d+)-.+-(?P<family>"
                      + "|".join(map(re.escape, family_names("dimos"))) + r")(?:-\d+)?$")

_IMAGE = re.compile(r"(?:^|/)frame-(?P<frame>\d+)\.[A-Za-z]+$")


def _frame_of(case: Case) -> int | None:
    match = _id_pattern().match(case.id) or _IMAGE.search(case.image)
    return int(match.group("frame")) if match else None


def _answered_rows(dataset_dir: Path, frame_index: int) -> dict[str, dict[str, Any]]:
    """dimOS's audit of one frame: case id -> its answered ground-truth row.

    dimOS assigns ids in the order of the answered rows, and lists the frame's cases in that
    order in ``cases.json``, so the two zip together.
    """
    folder = dataset_dir / audit_frame_relpath(frame_index)
    try:
        rows = read_json(folder / "ground_truth.json")
        cases = read_json(folder / "cases.json")
    except (OSError, ValueError):
        return {}
    answered = [r for r in rows if isinstance(r, dict) and r.get("status") == "answered"]
    if len(answered) != len(cases):
        return {}
    return {c["id"]: r for c, r in zip(cases, answered, strict=True)
            if isinstance(c, dict) and isinstance(c.get("id"), str)}


def _dict_or_empty(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _rebuilt(case: Case, label: PrivateLabel, dataset_dir: Path,
             audit: dict[int, dict[str, dict[str, Any]]]) -> Label:
    frame = _frame_of(case)
    if frame is None:
        raise ValueError(
            f"{dataset_dir / DATASET_CASES}: case {case.id!r} names no frame (its id is not "
            "frame-NNNNNN-<objects>-<family> and its image is not frame-NNNNNN.png), and the "
            f"dataset has no {DATASET_AUDIT}/{AUDIT_LABELS}; regenerate it with eval-assets or "
            "dimOS")
    if frame not in audit:
        audit[frame] = _answered_rows(dataset_dir, frame)
    row = audit[frame].get(case.id, {})
    proposal = _dict_or_empty(row.get("proposal"))
    answer = _dict_or_empty(row.get("answer"))
    match = _id_pattern().match(case.id)
    family = proposal.get("family") or (match.group("family") if match else None)
    if family not in family_names("dimos"):
        raise ValueError(
            f"{dataset_dir / DATASET_CASES}: the family of case {case.id!r} is unknown (not in "
            f"its audit row, not at the end of its id; families: {list(family_names('dimos'))}); "
            "regenerate the dataset")
    return Label(id=case.id, answer=label.answer, family=family, frame_index=frame,
                 object_names=[str(n) for n in proposal.get("object_names", [])],
                 choices=list(case.choices), evidence=dict(answer.get("evidence", {})))


def read_labels(dataset_dir: Path, cases: Sequence[Case] | None = None) -> list[Label]:
    """Every case's full label, in ``labels.jsonl`` order, for our datasets and dimOS's.

    ``cases`` are the dataset's public cases when the caller has already read them.

    Raises ``ValueError`` naming the file and the fix when a label names no public case, when an
    answer is not one of its case's choices, or when our sidecar disagrees with ``labels.jsonl``.
    """
    dataset_dir = Path(dataset_dir)
    if cases is None:
        cases = read_jsonl(dataset_dir / DATASET_CASES, Case)
    by_id = {c.id: c for c in cases}
    public = read_jsonl(dataset_dir / DATASET_LABELS, PrivateLabel)
    labels_path = dataset_dir / DATASET_LABELS
    unknown = [lab.id for lab in public if lab.id not in by_id]
    if unknown:
        raise ValueError(f"{labels_path}: labels for unknown cases {unknown[:3]}; the dataset "
                         "folder is inconsistent, regenerate it")
    for lab in public:
        if lab.answer not in by_id[lab.id].choices:
            raise ValueError(f"{labels_path}: the answer {lab.answer!r} of case {lab.id!r} is not "
                             f"one of its choices {by_id[lab.id].choices}; regenerate the dataset")
    sidecar = dataset_dir / DATASET_AUDIT / AUDIT_LABELS
    if not sidecar.is_file():
        audit: dict[int, dict[str, dict[str, Any]]] = {}
        return [_rebuilt(by_id[lab.id], lab, dataset_dir, audit) for lab in public]
    full = {lab.id: lab for lab in read_jsonl(sidecar, Label)}
    disagree = [lab.id for lab in public
                if lab.id not in full or full[lab.id].answer != lab.answer]
    if disagree or len(full) != len(public):
        raise ValueError(
            f"{sidecar} does not match {labels_path} (cases {disagree[:3] or 'extra in the audit'}"
            "); one of them was edited by hand. Regenerate the dataset")
    return [full[lab.id] for lab in public]
