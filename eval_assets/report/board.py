"""The leaderboard asset's output, read back for the report: its table, coverage, paired
comparisons and baselines, so the report does not rebuild them.

The board's coverage was checked against every cell's inputs when the board was built
(:func:`eval_assets.report.publish.report_coverage`: each cell's results must record the
dataset, answers and label overrides as they were then, :func:`changed_inputs`), and the board
records, per ok cell, what it published from by content (:class:`PublishedFrom`: the results'
fingerprint, and the dataset's, answers' and label overrides' as they were). The report takes
the board's verdicts as they are and marks an ok cell stale ("changed after the leaderboard was
built (other ...)", naming what) when any of those fingerprints differs now: results rescored,
answers re-run, a dataset re-published (each recording's dataset is hashed once per report to
see it), label overrides edited; and a result the board said was missing is stale too. Identity
is content only: a file rewritten with the same content (or merely touched) changes nothing,
and other content under an old timestamp is still seen. No number from other content than the
board published is shown as current.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict, Field

from eval_assets.hashing import canonical_json_sha256
from eval_assets.jsonio import read_json
from eval_assets.layout import StorageLayout, overrides_file_for
from eval_assets.metrics.stats import PairedComparison
from eval_assets.report.baselines import FamilyBaselines
from eval_assets.report.coverage import Coverage, CoverageCell, build_coverage
from eval_assets.report.leaderboard import LEADERBOARD_FORMAT, LEADERBOARD_JSON, LEADERBOARD_PARQUET
from eval_assets.schemas.results import CellScores, ScoredInputs
from eval_assets.scoring.provenance import (
    overrides_fingerprint,
    predictions_fingerprint,
    stale_reason,
)
from eval_assets.vqa.dataset import dataset_fingerprint

__all__ = [
    "CHANGED_SINCE_BOARD",
    "Board",
    "PublishedFrom",
    "changed_inputs",
    "changed_since_board",
    "contents_now",
    "read_board",
    "results_fingerprint",
]

CHANGED_SINCE_BOARD = "changed after the leaderboard was built"
_FIX = "rematerialize the leaderboard, then the report"
# What each fingerprint of a cell stands for, in a stale cell's reason.
_WHAT = {"results_sha256": "results", "predictions_sha256": "answers",
         "dataset_sha256": "dataset", "overrides_sha256": "label overrides"}


def changed_since_board(what: str) -> str:
    """A stale cell's reason: it ``what`` (e.g. ``other answers``) since the board was built."""
    return f"{CHANGED_SINCE_BOARD} ({what}): {_FIX}"


@dataclass(frozen=True)
class Board:
    """The leaderboard as its asset wrote it, with the coverage of the results now."""

    table: pd.DataFrame
    coverage: Coverage
    comparisons: list[PairedComparison]
    baselines: list[FamilyBaselines]


class PublishedFrom(BaseModel):
    """What one cell's numbers come from, by content: the board records it for each ok cell
    (``published_from`` in ``leaderboard.json``) and the report compares it with the same
    fingerprints taken again (:func:`contents_now`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    recording: str
    model: str
    results_sha256: str = Field(description="the cell's results (:func:`results_fingerprint`)")
    dataset_sha256: str | None = Field(
        description="the recording's published dataset; None: none was published")
    predictions_sha256: str = Field(description="the run's standing records (its answers)")
    overrides_sha256: str | None = Field(
        description="the recording's label overrides file; None: no such file. Without a labels "
        "folder, the overrides the results record")


def results_fingerprint(result: CellScores) -> str:
    """SHA-256 of a cell's results by content (canonical JSON of every field), so the same
    results rewritten in another layout or under another timestamp keep it."""
    return canonical_json_sha256(result.model_dump(mode="json"))


def contents_now(layout: StorageLayout, results: Sequence[CellScores], labels_dir: Path | None,
                 datasets: Mapping[str, str]) -> dict[tuple[str, str], PublishedFrom]:
    """Each result's fingerprints as they are now: its own, and its run's answers', its
    recording's dataset's (``datasets``: taken once per recording by the caller; absent: no
    dataset) and (with ``labels_dir``) label overrides'. Without ``labels_dir`` the overrides
    are not read: those the result records stand for them."""
    now = {}
    for r in results:
        if labels_dir is not None:
            overrides = overrides_fingerprint(overrides_file_for(labels_dir, r.recording))
        else:
            overrides = r.inputs.overrides_sha256 if r.inputs is not None else None
        now[(r.recording, r.model)] = PublishedFrom(
            recording=r.recording, model=r.model, results_sha256=results_fingerprint(r),
            dataset_sha256=datasets.get(r.recording),
            predictions_sha256=predictions_fingerprint(
                layout.predictions_dir(r.recording, r.model)),
            overrides_sha256=overrides)
    return now


def changed_inputs(results: Sequence[CellScores],
                   now: Mapping[tuple[str, str], PublishedFrom]) -> dict[tuple[str, str], str]:
    """The cells whose results were computed from other inputs than the dataset, answers and
    label overrides as they are ``now`` (:func:`contents_now`), each with its reason: their
    numbers are not published until they are recomputed
    (:mod:`eval_assets.scoring.provenance`). A recording without a dataset is skipped:
    ``build_coverage`` says so by the fingerprint."""
    stale: dict[tuple[str, str], str] = {}
    for r in results:
        key = (r.recording, r.model)
        current = now[key]
        if current.dataset_sha256 is None:
            continue
        reason = stale_reason(r.inputs, ScoredInputs(
            dataset_sha256=current.dataset_sha256, predictions_sha256=current.predictions_sha256,
            overrides_sha256=current.overrides_sha256))
        if reason is not None:
            stale[key] = reason
    return stale


def _changes(was: PublishedFrom, now: PublishedFrom) -> str | None:
    """``other results, answers``: what differs between two records of a cell; None if none."""
    what = [label for field, label in _WHAT.items() if getattr(was, field) != getattr(now, field)]
    return f"other {', '.join(what)}" if what else None


def read_board(layout: StorageLayout, results: Sequence[CellScores],
               labels_dir: Path | None = None) -> Board:
    """The leaderboard of ``layout.leaderboard_dir()`` and the coverage of ``results`` under its
    verdicts, a cell stale when anything it was published from differs now (see the module
    docstring); with ``labels_dir`` (the label overrides' folder) the overrides are compared
    too. Raises ``FileNotFoundError`` without a leaderboard and ``ValueError`` for one of
    another format or without ``published_from``, each naming the fix."""
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
    if "published_from" not in document:
        raise ValueError(f"{json_path}: no 'published_from' (a board written before it recorded "
                         "what each cell was published from, so a change since cannot be "
                         "told); rematerialize the leaderboard")
    cover = document["coverage"]
    cells = {(c.recording, c.model): c for c in
             (CoverageCell.model_validate(raw) for raw in cover["cells"])}
    published = {(p.recording, p.model): p for p in
                 (PublishedFrom.model_validate(raw) for raw in document["published_from"])}
    stale = {key: cell.reason for key, cell in cells.items() if cell.status == "stale"}
    # Outside the grid (listed as unexpected) or stale already: as the board left them.
    checked = [r for r in results
               if (r.recording, r.model) in cells and (r.recording, r.model) not in stale]
    for r in checked:
        if cells[(r.recording, r.model)].status == "missing":
            stale[(r.recording, r.model)] = changed_since_board("a result it did not have")
    was_ok = [r for r in checked if (r.recording, r.model) not in stale]
    # A re-published dataset keeps its folder and may keep its timestamps: only its content
    # tells, so each recording with an ok cell is hashed once here.
    datasets = {rec: sha for rec in sorted({r.recording for r in was_ok})
                if (sha := dataset_fingerprint(layout.dataset_dir(rec))) is not None}
    for key, now in contents_now(layout, was_ok, labels_dir, datasets).items():
        was = published.get(key)
        what = "no record of what it was published from" if was is None else _changes(was, now)
        if what is not None:
            stale[key] = changed_since_board(what)
    # The board's fingerprint of each recording, as the board's verdicts were made with it.
    current = {c.recording: c.current_sha256 for c in cells.values() if c.current_sha256}
    coverage = build_coverage(results, cover["recordings"], cover["models"], current, stale)
    comparisons = [PairedComparison.model_validate(c) for c in
                   (*document["paired_comparisons"], *document["family_comparisons"])]
    return Board(table=pq.read_table(parquet_path).to_pandas(), coverage=coverage,
                 comparisons=comparisons,
                 baselines=[FamilyBaselines.model_validate(b) for b in document["baselines"]])
