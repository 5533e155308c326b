"""Small public datasets on disk for prediction tests, with private files that must never leak."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

CANARY = "CANARY-7f3a9c-PRIVATE-LABEL"


@dataclass(frozen=True)
class TinyDataset:
    """A dataset folder and its cases (question text carries a unique marker per case)."""

    root: Path
    cases: list[dict]

    def marker(self, case_id: str) -> str:
        """The unique text in a case's question, for routing on the fake server."""
        return f"[{case_id}]"


def write_png(path: Path, seed: int, size: tuple[int, int] = (24, 32)) -> bytes:
    """A deterministic small colour PNG."""
    rng = np.random.default_rng(seed)
    image = rng.integers(0, 256, size=(*size, 3), dtype=np.uint8)
    ok, encoded = cv2.imencode(".png", image)
    assert ok
    data = encoded.tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return data


def make_dataset(root: Path, n_frames: int = 2, cases_per_frame: int = 2) -> TinyDataset:
    """``cases.jsonl`` + ``assets/`` (public); ``labels.jsonl`` + ``audit/`` (private, canary)."""
    root.mkdir(parents=True, exist_ok=True)
    cases: list[dict] = []
    labels: list[dict] = []
    for f in range(n_frames):
        index = 100 * (f + 1)
        image = f"assets/frame-{index:06d}.png"
        write_png(root / image, seed=f)
        audit = root / "audit" / f"frame-{index:06d}"
        audit.mkdir(parents=True)
        (audit / "labels.json").write_text(json.dumps({"answer": "yes", "secret": CANARY}))
        for k in range(cases_per_frame):
            case_id = f"frame-{index:06d}-obj{k}-presence"
            cases.append({"id": case_id, "image": image,
                          "question": f"Does the image contain any obj{k}? [{case_id}]",
                          "choices": ["yes", "no"]})
            labels.append({"id": case_id, "answer": f"yes {CANARY}"})
    (root / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (root / "labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in labels))
    (root / "audit" / "run.json").write_text(json.dumps({"generator": CANARY}))
    return TinyDataset(root=root, cases=cases)
