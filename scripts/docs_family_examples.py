"""Write one example image per question family into ``docs/img/families/`` from a dataset.

    .venv/bin/eval-assets vqa generate data/recordings/sample.db --output /tmp/sample-dataset
    .venv/bin/eval-assets recording synthesize /tmp/seed909.db --scene-seed 909
    .venv/bin/eval-assets vqa generate /tmp/seed909.db --output /tmp/seed909-dataset
    .venv/bin/python scripts/docs_family_examples.py /tmp/sample-dataset /tmp/seed909-dataset

Each image is the case's frames side by side (at most four, 240 px tall), as a JPEG small enough
to keep in the repository; the first case of each family in the first dataset that has one is
used, so the same datasets give the same images. ``docs/families.md`` shows them.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import cv2
import numpy as np

OUT = Path(__file__).resolve().parent.parent / "docs" / "img" / "families"
HEIGHT = 240
MAX_FRAMES = 4


def _cases(dataset: Path) -> dict[str, list[str]]:
    """The first case's image paths per family, from the private audit (it names the family)."""
    images: dict[str, list[str]] = {}
    for public, audit in (("cases.jsonl", "labels.jsonl"),
                          ("spatial_cases.jsonl", "spatial_labels.jsonl")):
        if not (dataset / public).is_file():
            continue
        family_of = {}
        for line in (dataset / "audit" / audit).read_text().splitlines():
            row = json.loads(line)
            family_of[row["id"]] = row["family"]
        for line in (dataset / public).read_text().splitlines():
            case = json.loads(line)
            family = family_of.get(case["id"])
            if family is None or family in images:
                continue
            images[family] = case.get("images") or [case["image"]]
    return images


def _strip(dataset: Path, paths: list[str]) -> np.ndarray:
    frames = []
    for rel in paths[:MAX_FRAMES]:
        img = cv2.imread(str(dataset / rel), cv2.IMREAD_COLOR)
        if img is None:
            raise SystemExit(f"{dataset / rel}: not a readable image")
        scale = HEIGHT / img.shape[0]
        frames.append(cv2.resize(img, (round(img.shape[1] * scale), HEIGHT),
                                 interpolation=cv2.INTER_AREA))
    gap = np.full((HEIGHT, 6, 3), 255, np.uint8)
    out = frames[0]
    for f in frames[1:]:
        out = np.hstack([out, gap, f])
    return out


def main() -> None:
    """Write the images; print one line per family."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", type=Path, nargs="+")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    chosen: dict[str, tuple[Path, list[str]]] = {}
    for dataset in args.datasets:
        for family, paths in _cases(dataset).items():
            chosen.setdefault(family, (dataset, paths))
    for family, (dataset, paths) in sorted(chosen.items()):
        target = OUT / f"{family}.jpg"
        cv2.imwrite(str(target), _strip(dataset, paths), [cv2.IMWRITE_JPEG_QUALITY, 80])
        print(f"{family}: {target.relative_to(OUT.parent.parent.parent)} "
              f"({target.stat().st_size // 1024} KiB)")


if __name__ == "__main__":
    main()
