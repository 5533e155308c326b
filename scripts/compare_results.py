"""Compare a demo's outputs before and after the scoring layer became one module per metric.

    python scripts/compare_results.py OLD_ASSETS NEW_ASSETS

OLD_ASSETS holds the outputs of the old shape (``results.json`` with one field per metric),
NEW_ASSETS those of the new one (``scores`` keyed by metric name). Every number of every
``results.json`` is compared through the old -> new field mapping, every value of
``leaderboard.json`` and ``leaderboard.parquet`` by row and column, every metric file by content,
and the report's visible text line by line. Prints each difference, what only the new outputs
have (a new metric), and exits 1 when any old value differs or is missing.
"""

from __future__ import annotations

import difflib
import html
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

# Old results.json field -> new path inside it (a None old value is a not-measured record now).
RESULT_FIELDS = {
    "recording": ("recording",), "model": ("model",), "dataset_sha256": ("dataset_sha256",),
    "predictions": ("predictions",), "vqa": ("scores", "vqa_accuracy"),
    "circular": ("scores", "circular_eval"), "pope": ("scores", "pope_presence"),
    "mcq": ("scores", "mcq_avlm", "strict"),
    "mcq_lenient_pct_correct": ("scores", "mcq_avlm", "lenient_pct_correct"),
    "judge": ("scores", "description_judge"), "vision": ("scores", "vision_similarity"),
    "chair": ("scores", "chair_hallucination"),
}
# Old metric file (relative to the assets root, first folder) -> new folder.
MOVED_FILES = {("vqa_accuracy", "circular.json"): "circular_eval"}
# Files that record how a run went, not what it measured.
UNCOMPARED = {".judge.lock", ".run.lock"}


_STORAGE_PATH = re.compile(r"^/.*?/assets/")


def leaves(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every scalar of a JSON document with its path; an absolute path into a storage root is
    taken relative to it (the two demos ran in different folders)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, (*path, str(key)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from leaves(item, (*path, str(i)))
    elif isinstance(value, str):
        yield path, _STORAGE_PATH.sub("<storage>/assets/", value)
    else:
        yield path, value


def get(document: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        document = document[key]
    return document


def compare_values(label: str, old: Any, new: Any, diffs: list[str]) -> int:
    """Compare two JSON values leaf by leaf (floats exactly); return how many leaves matched."""
    old_leaves, new_leaves = dict(leaves(old)), dict(leaves(new))
    for path, value in old_leaves.items():
        if path not in new_leaves:
            diffs.append(f"{label}/{'/'.join(path)}: {value!r} -> (missing)")
        elif new_leaves[path] != value or type(new_leaves[path]) is not type(value):
            diffs.append(f"{label}/{'/'.join(path)}: {value!r} -> {new_leaves[path]!r}")
    for path in new_leaves.keys() - old_leaves.keys():
        diffs.append(f"{label}/{'/'.join(path)}: (absent) -> {new_leaves[path]!r}")
    return len(old_leaves)


def compare_results(old_root: Path, new_root: Path, diffs: list[str], notes: list[str]) -> int:
    compared = 0
    for old_file in sorted((old_root / "benchmark_results").rglob("results.json")):
        rel = old_file.relative_to(old_root)
        old = json.loads(old_file.read_text())
        new = json.loads((new_root / rel).read_text())
        for field, path in RESULT_FIELDS.items():
            value = get(new, path)
            if old[field] is None:
                if set(value) != {"reason"}:
                    diffs.append(f"{rel}:{field}: None -> {value!r} (expected not measured)")
                continue
            compared += compare_values(f"{rel}:{field}", old[field], value, diffs)
        extra = set(new["scores"]) - {p[1] for p in RESULT_FIELDS.values() if len(p) > 1}
        notes += [f"{rel}: new metric {name}: {json.dumps(new['scores'][name])}"
                  for name in sorted(extra)]
    return compared


def compare_leaderboard(old_root: Path, new_root: Path, diffs: list[str],
                        notes: list[str]) -> int:
    old = json.loads((old_root / "leaderboard" / "leaderboard.json").read_text())
    new = json.loads((new_root / "leaderboard" / "leaderboard.json").read_text())
    compared = 0
    for key in ("format", "ranking", "coverage", "paired_comparisons"):
        compared += compare_values(f"leaderboard.json:{key}", old[key], new[key], diffs)
    for key, text in old["methods"].items():
        compared += compare_values(f"leaderboard.json:methods/{key}", text,
                                   new["methods"].get(key), diffs)
    notes += [f"leaderboard.json: new method {k!r}" for k in new["methods"].keys()
              - old["methods"].keys()]

    def by_row(rows: list[dict]) -> dict[tuple, dict]:
        return {(r["recording"], r["model"], r["case_set"]): r for r in rows}

    old_rows, new_rows = by_row(old["rows"]), by_row(new["rows"])
    if list(old_rows) != list(new_rows):
        diffs.append(f"leaderboard rows: {list(old_rows)} -> {list(new_rows)}")
    for key, row in old_rows.items():
        new_row = new_rows.get(key, {})
        for column, value in row.items():
            compared += 1
            if column not in new_row or new_row[column] != value:
                diffs.append(f"leaderboard {key} {column}: {value!r} -> "
                             f"{new_row.get(column, '(missing)')!r}")
        added = [c for c in new_row if c not in row]
        if added:
            notes.append(f"leaderboard {key}: new columns " + ", ".join(
                f"{c}={new_row[c]!r}" for c in added))
    old_pq = pd.read_parquet(old_root / "leaderboard" / "leaderboard.parquet")
    new_pq = pd.read_parquet(new_root / "leaderboard" / "leaderboard.parquet")
    try:
        pd.testing.assert_frame_equal(old_pq, new_pq[list(old_pq.columns)], check_exact=True)
        compared += old_pq.size
    except AssertionError as exc:
        diffs.append(f"leaderboard.parquet: {exc}")
    return compared


def compare_metric_files(old_root: Path, new_root: Path, metrics: list[str],
                         diffs: list[str], notes: list[str]) -> int:
    compared = 0
    for metric in metrics:
        for old_file in sorted(p for p in (old_root / metric).rglob("*") if p.is_file()):
            if old_file.name in UNCOMPARED:
                continue
            rel = old_file.relative_to(old_root / metric)
            folder = MOVED_FILES.get((metric, old_file.name), metric)
            new_file = new_root / folder / rel
            label = f"{metric}/{rel}" + (f" (now {folder}/{rel})" if folder != metric else "")
            if not new_file.is_file():
                diffs.append(f"{label}: missing")
                continue
            compared += 1
            if old_file.suffix == ".json":
                compare_values(label, json.loads(old_file.read_text()),
                               json.loads(new_file.read_text()), diffs)
            elif old_file.read_bytes() != new_file.read_bytes():
                diffs.append(f"{label}: content differs")
    for metric in metrics + sorted({*MOVED_FILES.values()}) + ["numeric_accuracy"]:
        for new_file in sorted(p for p in (new_root / metric).rglob("*") if p.is_file()):
            rel = new_file.relative_to(new_root)
            old_metric = next((m for (m, name), f in MOVED_FILES.items()
                               if f == metric and name == new_file.name), metric)
            if not (old_root / old_metric / new_file.relative_to(new_root / metric)).exists():
                notes.append(f"new file {rel}: {new_file.read_text()[:160].strip()!r}")
    return compared


def visible_text(document: str) -> list[str]:
    """The report's visible text, one line per block element; scripts and styles dropped."""
    document = re.sub(r"<(script|style)\b.*?</\1>", "", document, flags=re.S)
    document = re.sub(r"<(br|/a|/p|/h[1-6]|/tr|/li|/section|/div|/th|/td|/summary)\b[^>]*>",
                      "\n", document)
    text = html.unescape(re.sub(r"<[^>]+>", "", document))
    return [line.strip() for line in text.splitlines() if line.strip()]


def compare_report(old_root: Path, new_root: Path, diffs: list[str], notes: list[str]) -> int:
    old = (old_root / "report" / "report.html").read_text()
    new = (new_root / "report" / "report.html").read_text()
    old_lines, new_lines = visible_text(old), visible_text(new)
    present = set(new_lines)
    for line in difflib.unified_diff(old_lines, new_lines, "old report", "new report",
                                     lineterm="", n=1):
        removed = line.startswith("-") and not line.startswith("---")
        if removed and line[1:] in present:
            notes.append(f"report: moved (same text, another place): {line[1:]}")
        else:
            (diffs if removed else notes).append(f"report: {line}")
    # The case browser's data and every image are in script blocks: compare them as well.
    def blocks(document: str) -> list[str]:
        return re.findall(r'<script type="application/json" id="[^"]+">(.*?)</script>',
                          document, flags=re.S)
    if blocks(old) != blocks(new):
        diffs.append("report: case or frame data differs")
    if re.findall(r"<img[^>]*>", old) != re.findall(r"<img[^>]*>", new):
        diffs.append("report: an image (chart or overlay) differs")
    return len(old_lines)


def main(old_root: Path, new_root: Path) -> int:
    diffs: list[str] = []
    notes: list[str] = []
    metrics = ["vqa_accuracy", "pope_presence", "mcq_avlm", "description_judge",
               "vision_similarity", "chair_hallucination"]
    counts = {
        "results.json leaves": compare_results(old_root, new_root, diffs, notes),
        "leaderboard values": compare_leaderboard(old_root, new_root, diffs, notes),
        "metric files": compare_metric_files(old_root, new_root, metrics, diffs, notes),
        "report text lines": compare_report(old_root, new_root, diffs, notes),
    }
    for what, n in counts.items():
        print(f"compared {n:,} {what}")
    print(f"\nold values that differ or are missing: {len(diffs)}")
    for line in diffs:
        print("  " + line)
    print(f"\nonly in the new outputs: {len(notes)}")
    for line in notes:
        print("  " + line)
    return 1 if diffs else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
