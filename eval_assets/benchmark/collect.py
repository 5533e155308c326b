"""Gather every partition's results and evidence for the leaderboard and the report."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from eval_assets.benchmark.inputs import load_run
from eval_assets.layout import StorageLayout
from eval_assets.metrics.predictions import InferenceLayout
from eval_assets.report.cards import build_case_cards
from eval_assets.report.html import render_report, write_report
from eval_assets.report.leaderboard import build_leaderboard, write_leaderboard
from eval_assets.schemas.report import CaseCard
from eval_assets.schemas.results import BenchmarkResult

REPORT_TITLE = "eval_assets benchmark report"
CARDS_PER_MODEL = 8


def load_results(layout: StorageLayout, recordings: Sequence[str],
                 models: Sequence[str]) -> list[BenchmarkResult]:
    """The ``results.json`` of every (recording, model) that has one, sorted by model, recording."""
    results = []
    for model in sorted(models):
        for recording in sorted(recordings):
            path = layout.results_file(recording, model)
            if path.is_file():
                results.append(BenchmarkResult.model_validate_json(path.read_text("utf-8")))
    return results


def case_cards(layout: StorageLayout, results: Sequence[BenchmarkResult],
               per_model: int = CARDS_PER_MODEL) -> list[CaseCard]:
    """Per-case cards (overlays of boxes, masks, LiDAR) for every recording in ``results``."""
    cards: list[CaseCard] = []
    for recording in sorted({r.recording for r in results}):
        mine = [r for r in results if r.recording == recording]
        answers = {r.model: list(load_run(layout.predictions_dir(recording, r.model))
                                 .answers.values()) for r in mine}
        judged = {}
        for r in mine:
            path = InferenceLayout(layout.metric_dir("description_judge", recording, r.model))
            if path.judge_predictions.is_file():
                judged[r.model] = json.loads(path.judge_predictions.read_text("utf-8"))["results"]
        cards += build_case_cards(
            layout.dataset_dir(recording), answers, {r.model: r.vqa.rows for r in mine},
            detections_dir=layout.detections_dir(recording),
            pointcloud_dir=layout.pointcloud_frames_dir(recording),
            judge_results=judged, limit_per_model=per_model, recording=recording)
    return cards


def publish_leaderboard(layout: StorageLayout,
                        results: Sequence[BenchmarkResult]) -> tuple[pd.DataFrame, Path, Path]:
    """Build and write the leaderboard (Parquet + JSON)."""
    table = build_leaderboard(results)
    parquet, json_path = write_leaderboard(table, layout.leaderboard_dir())
    return table, parquet, json_path


def publish_report(layout: StorageLayout, results: Sequence[BenchmarkResult]) -> Path:
    """Render the static HTML report of ``results`` to ``layout.report_file()``."""
    table = build_leaderboard(results)
    html = render_report(table, results, case_cards(layout, results), REPORT_TITLE)
    return write_report(html, layout.report_file())
