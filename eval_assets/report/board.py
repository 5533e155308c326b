"""The leaderboard asset's output, read back for the report: its table, coverage, paired
comparisons and baselines, so the report neither rebuilds them nor hashes a dataset again.

The board's coverage was checked against every cell's inputs when the board was built
(:func:`eval_assets.report.publish.report_coverage` hashes each recording's dataset once, and
each cell's answers and label overrides): the report takes its verdicts as they are, and checks
again by content what may have changed since, without hashing a dataset: a cell is stale in
the report ("changed after the leaderboard was built") when its result appeared after the board
said it was missing, when its dataset or case count differs from the board's, or when the
inputs its result records (:class:`~eval_assets.schemas.results.ScoredInputs`) are not the
board's dataset fingerprint and the answers and label overrides as they are now
(:func:`changed_inputs`, the board's own check). A file rewritten with the same content (or
merely touched) changes nothing; other content under an old timestamp is still seen. No number
from other content than the board checked is shown as current.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from eval_assets.jsonio import read_json
from eval_assets.layout import StorageLayout, overrides_file_for
from eval_assets.metrics.stats import PairedComparison
from eval_assets.report.baselines import FamilyBaselines
from eval_assets.report.coverage import Coverage, CoverageCell, build_coverage
from eval_assets.report.leaderboard import LEADERBOARD_FORMAT, LEADERBOARD_JSON, LEADERBOARD_PARQUET
from eval_assets.schemas.results import CellScores
from eval_assets.scoring.provenance import current_inputs, stale_reason
from eval_assets.scoring.vqa import report_of

__all__ = ["CHANGED_SINCE_BOARD", "Board", "changed_inputs", "read_board"]

CHANGED_SINCE_BOARD = ("changed after the leaderboard was built (its result, answers, dataset or "
                       "label overrides differ from those the board checked): rematerialize the "
                       "leaderboard, then the report")


@dataclass(frozen=True)
class Board:
    """The leaderboard as its asset wrote it, with the coverage of the results now."""

    table: pd.DataFrame
    coverage: Coverage
    comparisons: list[PairedComparison]
    baselines: list[FamilyBaselines]


def changed_inputs(layout: StorageLayout, results: Sequence[CellScores],
                   labels_dir: Path | None,
                   on_disk: Mapping[str, str]) -> dict[tuple[str, str], str]:
    """The cells whose results were computed from other inputs than the current dataset,
    answers and (with ``labels_dir``) label overrides, each with its reason: their numbers are
    not published until they are recomputed (:mod:`eval_assets.scoring.provenance`).
    ``on_disk``: each recording's published dataset fingerprint
    (:func:`eval_assets.report.publish.dataset_fingerprints`, or the board's)."""
    stale: dict[tuple[str, str], str] = {}
    for r in results:
        if r.recording not in on_disk:
            continue  # no dataset at all: build_coverage says so by the fingerprint
        overrides = overrides_file_for(labels_dir, r.recording) if labels_dir else None
        current = current_inputs(layout.dataset_dir(r.recording),
                                 layout.predictions_dir(r.recording, r.model), overrides,
                                 dataset_sha256=on_disk[r.recording])
        if labels_dir is None and r.inputs is not None:
            current = current.model_copy(update={"overrides_sha256": r.inputs.overrides_sha256})
        reason = stale_reason(r.inputs, current)
        if reason is not None:
            stale[(r.recording, r.model)] = reason
    return stale


def read_board(layout: StorageLayout, results: Sequence[CellScores],
               labels_dir: Path | None = None) -> Board:
    """The leaderboard of ``layout.leaderboard_dir()`` and the coverage of ``results`` under its
    verdicts (see the module docstring); with ``labels_dir`` (the label overrides' folder), a
    cell scored on other label overrides than the file's now is stale too. Raises
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
    cover = document["coverage"]
    cells = {(c.recording, c.model): c for c in
             (CoverageCell.model_validate(raw) for raw in cover["cells"])}
    stale = {key: cell.reason for key, cell in cells.items() if cell.status == "stale"}
    # The board's fingerprint of each recording (taken once when it was built), not a new hash.
    current = {c.recording: c.current_sha256 for c in cells.values() if c.current_sha256}
    checked = [r for r in results
               if (r.recording, r.model) in cells and (r.recording, r.model) not in stale]
    changed = changed_inputs(layout, checked, labels_dir, current)
    for r in checked:  # outside the grid (listed as unexpected) or stale already: as they are
        key = (r.recording, r.model)
        cell = cells[key]
        if (key in changed or cell.status == "missing" or cell.dataset_sha256 != r.dataset_sha256
                or cell.n_cases != len(report_of(r).rows)):
            stale[key] = CHANGED_SINCE_BOARD
    coverage = build_coverage(results, cover["recordings"], cover["models"], current, stale)
    comparisons = [PairedComparison.model_validate(c) for c in
                   (*document["paired_comparisons"], *document["family_comparisons"])]
    return Board(table=pq.read_table(parquet_path).to_pandas(), coverage=coverage,
                 comparisons=comparisons,
                 baselines=[FamilyBaselines.model_validate(b) for b in document["baselines"]])
