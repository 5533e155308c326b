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


# (id suffix, family, frames shown (indices into the spatial frames), answer type, unit, answer,
#  choices). Frames are listed in time order; each case's question carries its marker.
SPATIAL_ROWS: tuple[tuple[str, str, tuple[int, ...], str, str | None, str,
                          list[str] | None], ...] = (
    ("size", "object_size_cm", (0,), "number", "cm", "45", None),
    ("pair", "pair_distance_m", (0, 1), "number", "m", "2.5", None),
    ("camera", "camera_distance_m", (2,), "number", "m", "1.8", None),
    ("order", "appearance_order", (0, 1, 2), "choice", None, "chair, table",
     ["chair, table", "table, chair"]),
    ("count", "object_count_across_frames", (0, 1, 2, 3, 4, 5), "number", None, "3", None),
    ("direction", "relative_direction", (1, 2, 3, 4), "choice", None, "front-left",
     ["front-left", "front-right", "back-left", "back-right"]),
)
SPATIAL_FRAMES = 6


@dataclass(frozen=True)
class SpatialDataset:
    """A dataset with dimOS's cases and spatial cases (``spatial_cases.jsonl``), and the labels."""

    root: Path
    cases: list[dict]
    spatial: list[dict]
    labels: list[dict]

    def marker(self, case_id: str) -> str:
        """The unique text in a case's question, for routing on the fake server."""
        return f"[{case_id}]"


def make_spatial_dataset(root: Path, rows: tuple = SPATIAL_ROWS, n_frames: int = 2,
                         cases_per_frame: int = 1, size: tuple[int, int] = (24, 32)
                         ) -> SpatialDataset:
    """:func:`make_dataset`'s files plus spatial cases over their own frames (real PNGs,
    ``assets/frame-0010NN.png``), their public labels and their audit labels (which carry the
    canary, as private evidence)."""
    tiny = make_dataset(root, n_frames=n_frames, cases_per_frame=cases_per_frame)
    images = [f"assets/frame-{1000 + i:06d}.png" for i in range(SPATIAL_FRAMES)]
    for i, image in enumerate(images):
        write_png(root / image, seed=100 + i, size=size)
    spatial: list[dict] = []
    audit: list[dict] = []
    for suffix, family, shown, answer_type, unit, answer, choices in rows:
        case_id = f"spatial-{suffix}-{family}"
        case = {"id": case_id, "images": [images[i] for i in shown],
                "question": f"What about the {family.replace('_', ' ')}? [{case_id}]",
                "answer_type": answer_type}
        case.update({"choices": choices} if choices else {"unit": unit})
        spatial.append(case)
        names = ["chair", "table"] if family in ("pair_distance_m", "appearance_order") \
            else ["chair"]
        audit.append({"id": case_id, "answer": answer, "family": family,
                      "answer_type": answer_type, "unit": unit, "choices": choices,
                      "object_names": names, "frame_indices": [1000 + i for i in shown],
                      "evidence": {"tracks": [{"name": n, "center_world": [1.25, -0.5, 0.75],
                                               "secret": CANARY} for n in names]}})
    (root / "spatial_cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in spatial))
    (root / "spatial_labels.jsonl").write_text(
        "".join(json.dumps({"id": a["id"], "answer": a["answer"]}) + "\n" for a in audit))
    (root / "audit" / "spatial_labels.jsonl").write_text(
        "".join(json.dumps(a) + "\n" for a in audit))
    return SpatialDataset(root=root, cases=tiny.cases, spatial=spatial, labels=audit)


def _one_call_per_case() -> tuple[str, ...]:
    from eval_assets.model_runs.run_controls import RUN_CONTROLS

    return tuple(f"--no-{c.flag.removeprefix('--')}" for c in RUN_CONTROLS)


ONE_CALL_PER_CASE = _one_call_per_case()
"""``vqa run`` as dimOS asks, one call per case: the run controls (on by default, as the pipeline
asks them) off."""
