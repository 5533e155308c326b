"""The leaderboard asset's output, read back for the report: its table, coverage, paired
comparisons and baselines, so the report neither rebuilds them nor hashes a dataset again.

The board's coverage was checked against every cell's inputs when the board was built
(:func:`eval_assets.report.publish.report_coverage` hashes each recording's dataset once, and
each cell's answers and label overrides): the report takes its verdicts as they are. What may
have changed since is cheap to see without hashing anything. A cell is stale in the report
("changed after the leaderboard was built") when its ``results.json``, ``answers.jsonl``,
dataset folder or label overrides file is newer than ``leaderboard.json``, when its result
appeared after the board said it was missing, or when its dataset or case count differs from
the board's: no number from other content than the board checked is shown as current.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from eval_assets.jsonio import read_json
from eval_assets.layout import RUN_ANSWERS, StorageLayout, overrides_file_for
from eval_assets.metrics.stats import PairedComparison
from eval_assets.report.baselines import FamilyBaselines
from eval_assets.report.coverage import Coverage, CoverageCell, build_coverage
from eval_assets.report.leaderboard import LEADERBOARD_FORMAT, LEADERBOARD_JSON, LEADERBOARD_PARQUET
from eval_assets.schemas.results import CellScores
from eval_assets.scoring.vqa import report_of

__all__ = ["CHANGED_SINCE_BOARD", "Board", "read_board"]

CHANGED_SINCE_BOARD = ("changed after the leaderboard was built (its result, answers, dataset or "
                       "label overrides are newer): rematerialize the leaderboard, then the "
                       "report")


@dataclass(frozen=True)
class Board:
    """The leaderboard as its asset wrote it, with the coverage of the results now."""

    table: pd.DataFrame
    coverage: Coverage
    comparisons: list[PairedComparison]
    baselines: list[FamilyBaselines]


def _newer(path: Path, built_ns: int) -> bool:
    return path.exists() and path.stat().st_mtime_ns > built_ns


def read_board(layout: StorageLayout, results: Sequence[CellScores],
               labels_dir: Path | None = None) -> Board:
    """The leaderboard of ``layout.leaderboard_dir()`` and the coverage of ``results`` under its
    verdicts (see the module docstring); with ``labels_dir`` (the label overrides' folder), a
    recording whose overrides file is newer than the board has its cells stale too. Raises
    ``FileNotFoundError`` without a leaderboard and ``ValueError`` for one of another format,
    each naming the fix."""
    folder = layout.leaderboard_dir()
    json_path, parquet_path = folder / LEADERBOARD_JSON, folder / LEADERBOARD_PARQUET
    for path in (json_path, parquet_path):
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no leaderboard; materialize the leaderboard asset "
                                    "before the report")
    document = read_json(json_path)
    if document.get("format") != LEADERBOARD_FORMAT or document.get("coverage") is None:
        raise ValueError(f"{json_path}: format {document.get('format')!r} without the coverage "
                         f"the report needs (expected {LEADERBOARD_FORMAT!r}); rematerialize the "
                         "leaderboard")
    built_ns = json_path.stat().st_mtime_ns
    cover = document["coverage"]
    cells = {(c.recording, c.model): c for c in
             (CoverageCell.model_validate(raw) for raw in cover["cells"])}
    stale = {key: cell.reason for key, cell in cells.items() if cell.status == "stale"}
    for r in results:
        key = (r.recording, r.model)
        cell = cells.get(key)
        if cell is None or key in stale:
            continue  # outside the grid (listed as unexpected), or stale already
        if (cell.status == "missing" or cell.dataset_sha256 != r.dataset_sha256
                or cell.n_cases != len(report_of(r).rows)
                or _newer(layout.results_file(*key), built_ns)
                or _newer(layout.predictions_dir(*key) / RUN_ANSWERS, built_ns)
                or _newer(layout.dataset_dir(r.recording), built_ns)
                or (labels_dir is not None
                    and _newer(overrides_file_for(labels_dir, r.recording), built_ns))):
            stale[key] = CHANGED_SINCE_BOARD
    # The board's fingerprint of each recording (taken once when it was built), not a new hash.
    current = {c.recording: c.current_sha256 for c in cells.values() if c.current_sha256}
    coverage = build_coverage(results, cover["recordings"], cover["models"], current, stale)
    comparisons = [PairedComparison.model_validate(c) for c in
                   (*document["paired_comparisons"], *document["family_comparisons"])]
    return Board(table=pq.read_table(parquet_path).to_pandas(), coverage=coverage,
                 comparisons=comparisons,
                 baselines=[FamilyBaselines.model_validate(b) for b in document["baselines"]])
