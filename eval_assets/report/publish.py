"""Gather every partition's evidence from storage and write the leaderboard and the report.

The Dagster ``leaderboard`` and ``report`` assets call these; the functions themselves are plain.
Both take the expected recordings and models (every recording partition, every configured model)
so that a cell without results is reported missing rather than silently absent, and compare each
result's ``dataset_sha256`` with the recording's current dataset (``dataset_fingerprints``) so a
result for an older dataset is reported stale and left out.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from eval_assets.jsonio import read_json
from eval_assets.layout import (
    AVLM_JUDGE_PREDICTIONS,
    RUN_CONFIG,
    StorageLayout,
    overrides_file_for,
)
from eval_assets.report.baselines import baseline_models, blind_models, family_baselines
from eval_assets.report.board import (
    Board,
    PublishedFrom,
    changed_inputs,
    contents_now,
    read_board,
)
from eval_assets.report.cards import build_case_cards, build_frame_images, gold_corrections
from eval_assets.report.concurrency_section import load_concurrency
from eval_assets.report.cost_section import CellCost, cell_costs, judge_costs
from eval_assets.report.coverage import Coverage, build_coverage
from eval_assets.report.endpoints_section import ModelEndpoint, load_endpoints
from eval_assets.report.evidence_section import load_evidence_quality
from eval_assets.report.frame_files import frame_files, write_report_with_files
from eval_assets.report.history import NightResult, load_history
from eval_assets.report.html import render_report
from eval_assets.report.label_audit import LabelAudit, build_label_audit
from eval_assets.report.leaderboard import build_leaderboard, paired_comparisons, write_leaderboard
from eval_assets.report.spatial_cards import load_spatial_cards
from eval_assets.schemas.concurrency import ConcurrencyHistory
from eval_assets.schemas.endpoint import LOCAL_MODEL_NAMES
from eval_assets.schemas.evidence_quality import EvidenceQuality
from eval_assets.schemas.report import CaseCard, FrameImage
from eval_assets.schemas.results import CellScores
from eval_assets.scoring.inputs import (
    Annotations,
    ModelRun,
    load_private_dataset,
    load_run,
    unmatched_annotations,
)
from eval_assets.scoring.judge import JUDGE
from eval_assets.scoring.vqa import report_of
from eval_assets.vqa.dataset import dataset_fingerprint

__all__ = [
    "REPORT_TITLE",
    "ReportInputs",
    "dataset_fingerprint",
    "dataset_fingerprints",
    "gather_report_inputs",
    "local_models",
    "publish_leaderboard",
    "publish_report",
    "render_inputs",
    "report_cards",
    "report_coverage",
    "report_label_audit",
]

REPORT_TITLE = "eval_assets benchmark report"


def report_cards(layout: StorageLayout, results: Sequence[CellScores],
                 labels_dir: Path | None = None,
                 runs: Mapping[tuple[str, str], ModelRun] | None = None,
                 ) -> tuple[list[CaseCard], list[FrameImage]]:
    """A card for every case and model in ``results``, and one overlay per frame they refer to;
    with ``labels_dir`` (the label overrides' folder), a card whose gold answer a human
    corrected says so. ``runs``: each cell's answers when the caller read them already."""
    cards: list[CaseCard] = []
    frames: list[FrameImage] = []
    runs = runs if runs is not None else load_runs(layout, results)
    for recording in sorted({r.recording for r in results}):
        mine = [r for r in results if r.recording == recording]
        answers = {r.model: list(runs[(recording, r.model)].answers.values()) for r in mine}
        judged = {}
        for r in mine:
            path = layout.metric_dir(JUDGE.name, recording, r.model) / AVLM_JUDGE_PREDICTIONS
            if path.is_file():
                judged[r.model] = read_json(path)["results"]
        dataset = layout.dataset_dir(recording)
        overrides = None if labels_dir is None else overrides_file_for(labels_dir, recording)
        corrections = (gold_corrections(load_private_dataset(dataset, overrides).overrides)
                       if overrides is not None and overrides.is_file() else None)
        these = build_case_cards(dataset, answers, {r.model: report_of(r).rows for r in mine},
                                 judge_results=judged, recording=recording,
                                 corrections=corrections)
        cards += these
        frames += build_frame_images(
            dataset, {c.frame_index for c in these},
            detections_dir=layout.detections_dir(recording),
            pointcloud_dir=layout.pointcloud_frames_dir(recording), recording=recording)
    return cards, frames


def load_runs(layout: StorageLayout,
              results: Sequence[CellScores]) -> dict[tuple[str, str], ModelRun]:
    """Each cell's final answers and descriptions, read once for every part of the report."""
    return {(r.recording, r.model): load_run(layout.predictions_dir(r.recording, r.model))
            for r in results}


def report_label_audit(layout: StorageLayout, results: Sequence[CellScores],
                       labels_dir: Path) -> LabelAudit:
    """The label audit of ``results``, each recording's overrides read from ``labels_dir``."""
    datasets = {rec: load_private_dataset(layout.dataset_dir(rec),
                                          overrides_file_for(labels_dir, rec))
                for rec in sorted({r.recording for r in results})}
    return build_label_audit(results, datasets)


# Multi-frame cards per recording: each embeds its frames, so the report shows a sample.
SPATIAL_CARDS_PER_RECORDING = 24


def spatial_report_cards(layout: StorageLayout, run_dirs: Mapping[tuple[str, str], Path],
                         files: dict[str, bytes] | None = None,
                         runs: Mapping[tuple[str, str], ModelRun] | None = None) -> list[str]:
    """The multi-frame case cards of every recording of ``run_dirs`` ((recording, model) ->
    run folder), with each model's replies; the first cases of each dataset. With ``files``,
    their strip images are added to it and linked (see ``spatial_cards.spatial_card``).
    ``runs``: each cell's answers when the caller read them already."""
    cards: list[str] = []
    for recording in sorted({rec for rec, _ in run_dirs}):
        replies = {model: {case_id: a.raw_response if a.status == "success" else None
                           for case_id, a in (runs[(rec, model)] if runs is not None
                                              else load_run(run_dir)).answers.items()}
                   for (rec, model), run_dir in sorted(run_dirs.items()) if rec == recording}
        cards += load_spatial_cards(layout.dataset_dir(recording),
                                    layout.detections_dir(recording), replies,
                                    limit=SPATIAL_CARDS_PER_RECORDING, files=files)
    return cards


def local_models(runs: Iterable[tuple[str, Path]]) -> list[str]:
    """The models (of ``(model, run folder)`` pairs) whose run a local model served (the random
    guesser, the blind model: :data:`~eval_assets.schemas.endpoint.LOCAL_MODEL_NAMES`, read
    from the run's ``config.json``): the report counts them as baselines."""
    found = set()
    for model, run_dir in runs:
        path = Path(run_dir) / RUN_CONFIG
        if path.is_file():
            client = json.loads(path.read_text("utf-8")).get("client") or {}
            if client.get("serve") in LOCAL_MODEL_NAMES and not client.get("base_url"):
                found.add(model)
    return sorted(found)


def dataset_fingerprints(layout: StorageLayout, recordings: Iterable[str]) -> dict[str, str]:
    """The current dataset fingerprint of each recording that has a published dataset."""
    out = {}
    for recording in sorted(set(recordings)):
        sha = dataset_fingerprint(layout.dataset_dir(recording))
        if sha is not None:
            out[recording] = sha
    return out


def report_coverage(layout: StorageLayout, results: Sequence[CellScores], *,
                    recordings: Sequence[str] | None = None,
                    models: Sequence[str] | None = None,
                    current_fingerprints: Mapping[str, str] | None = None,
                    stale_cells: Collection[tuple[str, str]] = (),
                    labels_dir: Path | None = None) -> Coverage:
    """``build_coverage`` of ``results`` over the expected ``recordings`` x ``models`` (default:
    those in ``results``); ``current_fingerprints`` default to the published datasets'. Cells in
    ``stale_cells``, and those whose inputs changed since they were scored
    (:func:`changed_inputs`), are stale."""
    return _coverage_and_contents(layout, results, recordings, models, current_fingerprints,
                                  stale_cells, labels_dir)[0]


def _coverage_and_contents(
        layout: StorageLayout, results: Sequence[CellScores], recordings: Sequence[str] | None,
        models: Sequence[str] | None, current_fingerprints: Mapping[str, str] | None,
        stale_cells: Collection[tuple[str, str]], labels_dir: Path | None,
) -> tuple[Coverage, dict[tuple[str, str], PublishedFrom]]:
    """:func:`report_coverage`, and each result's fingerprints it was checked with (what the
    board records its ok cells were published from)."""
    # Each recording's dataset is hashed once here, for the coverage and for every model's cell.
    on_disk = dataset_fingerprints(
        layout, {*(recordings or ()), *(r.recording for r in results)})
    if current_fingerprints is None:
        current_fingerprints = on_disk
    now = contents_now(layout, results, labels_dir, on_disk)
    stale = changed_inputs(results, now)
    for cell in stale_cells:
        stale.setdefault(cell, "marked stale by the caller")
    return build_coverage(results, recordings, models, current_fingerprints, stale), now


def publish_leaderboard(layout: StorageLayout, results: Sequence[CellScores], *,
                        recordings: Sequence[str] | None = None,
                        models: Sequence[str] | None = None,
                        current_fingerprints: Mapping[str, str] | None = None,
                        stale_cells: Collection[tuple[str, str]] = (),
                        labels_dir: Path | None = None,
                        ) -> tuple[pd.DataFrame, Path, Path]:
    """Build and write the leaderboard (Parquet rows; JSON rows, methods, ranking on the common
    cases, coverage matrix, paired comparisons, and what each ok cell was published from, by
    content: :class:`~eval_assets.report.board.PublishedFrom`, which the report compares with
    the same fingerprints then). See ``report_coverage`` for the keywords."""
    coverage, now = _coverage_and_contents(layout, results, recordings, models,
                                           current_fingerprints, stale_cells, labels_dir)
    kinds = baseline_models((r.model, layout.predictions_dir(r.recording, r.model))
                            for r in results if coverage.usable(r))
    table = build_leaderboard(results, coverage=coverage, baselines=kinds)
    blind = sorted(m for m, kind in kinds.items() if kind == "blind")
    published = [now[(c.recording, c.model)] for c in coverage.with_status("ok")]
    parquet, json_path = write_leaderboard(
        table, layout.leaderboard_dir(), paired_comparisons(results, coverage=coverage),
        coverage, family_baselines(results, coverage=coverage, blind=blind), published)
    return table, parquet, json_path


@dataclass(frozen=True)
class ReportInputs:
    """Everything the report shows, gathered once (:func:`gather_report_inputs`): the
    leaderboard asset's output and every file the sections read, each read one time."""

    board: Board
    results: list[CellScores]  # every result loaded; the board's coverage says which are usable
    cards: list[CaseCard]
    frames: list[FrameImage]
    files: dict[str, bytes]  # the images the page links, written beside it
    spatial_cards: list[str]
    history: list[NightResult]
    endpoints: list[ModelEndpoint]
    costs: list[CellCost]
    concurrency: dict[str, ConcurrencyHistory]
    blind: list[str]
    local: list[str]  # the models a local model served (random, blind): baselines
    label_audit: LabelAudit | None
    evidence_quality: list[EvidenceQuality]
    dropped_annotations: dict[str, Annotations] | None


def gather_report_inputs(layout: StorageLayout, results: Sequence[CellScores], *,
                         recordings: Sequence[str] | None = None,
                         history_dir: Path | None = None,
                         labels_dir: Path | None = None,
                         annotations_dir: Path | None = None) -> ReportInputs:
    """The report's inputs: the leaderboard asset's output (:func:`board.read_board`: its
    table, comparisons, baselines, and its coverage verdicts applied to ``results``) and, for
    the usable cells, each run's answers read once and shared by the case cards and the
    multi-frame cards. See :func:`publish_report` for the keywords."""
    board = read_board(layout, results, labels_dir)
    usable = [r for r in results if board.coverage.usable(r)]
    run_dirs = {(r.recording, r.model): layout.predictions_dir(r.recording, r.model)
                for r in usable}
    runs = load_runs(layout, usable)
    cards, frames = report_cards(layout, usable, labels_dir, runs)
    # Every image the page links, written beside it: the case browser's frames and the
    # multi-frame strips (inlined as base64, the strips added ~100 kB per recording of 4 frames:
    # 731 kB of JPEG at 10 recordings x 5 models).
    files = frame_files(frames)
    spatial_cards = spatial_report_cards(layout, run_dirs, files, runs)
    used_recordings = sorted({r.recording for r in usable})
    return ReportInputs(
        board=board, results=list(results), cards=cards, frames=frames, files=files,
        spatial_cards=spatial_cards,
        history=list(load_history(layout.history_dir() if history_dir is None
                                  else history_dir)),
        endpoints=load_endpoints([(r.model, layout.predictions_dir(r.recording, r.model))
                                  for r in usable]),
        costs=cell_costs(usable, run_dirs, judge_costs(layout, usable)),
        concurrency=load_concurrency((f"{model} on {recording}", run_dir)
                                     for (recording, model), run_dir in run_dirs.items()),
        blind=list(blind_models((m, d) for (_, m), d in run_dirs.items())),
        local=local_models((m, d) for (_, m), d in run_dirs.items()),
        label_audit=None if labels_dir is None else report_label_audit(layout, usable,
                                                                        labels_dir),
        evidence_quality=list(load_evidence_quality(
            layout, sorted(recordings if recordings is not None else used_recordings))),
        dropped_annotations=None if annotations_dir is None
        else dict(unmatched_annotations(annotations_dir, used_recordings, layout)))


def render_inputs(inputs: ReportInputs, generated_at: str | None = None) -> str:
    """The report page of ``inputs`` (frames linked as files beside it)."""
    board = inputs.board
    return render_report(board.table, inputs.results, inputs.cards, REPORT_TITLE,
                         frames=inputs.frames, comparisons=board.comparisons,
                         coverage=board.coverage, baselines=board.baselines,
                         history=inputs.history, generated_at=generated_at,
                         endpoints=inputs.endpoints, costs=inputs.costs,
                         concurrency=inputs.concurrency, blind=inputs.blind,
                         baseline_models=inputs.local,
                         frames_beside=True, label_audit=inputs.label_audit,
                         spatial_cards=inputs.spatial_cards,
                         evidence_quality=inputs.evidence_quality,
                         dropped_annotations=inputs.dropped_annotations)


def publish_report(layout: StorageLayout, results: Sequence[CellScores], *,
                   recordings: Sequence[str] | None = None,
                   history_dir: Path | None = None,
                   generated_at: str | None = None,
                   labels_dir: Path | None = None,
                   annotations_dir: Path | None = None) -> Path:
    """Render the static HTML report of ``results`` from the leaderboard already published in
    ``layout`` (its coverage, comparisons, baselines and table: :mod:`eval_assets.report.board`)
    to ``layout.report_file()``, with the frames it links as files beside it
    (:mod:`eval_assets.report.frame_files`). ``recordings``: every expected recording (the
    evidence quality section; default those of ``results``); each model across nights comes
    from ``history_dir`` (default ``layout.history_dir()``). With ``labels_dir`` (the label
    overrides' folder) the report has a "Label audit" section; with ``annotations_dir`` (the
    human annotations' folder) "Not computed" lists the annotations that match no frame of
    their recording's dataset."""
    inputs = gather_report_inputs(layout, results, recordings=recordings,
                                  history_dir=history_dir, labels_dir=labels_dir,
                                  annotations_dir=annotations_dir)
    return write_report_with_files(render_inputs(inputs, generated_at), layout.report_file(),
                                   inputs.files)
