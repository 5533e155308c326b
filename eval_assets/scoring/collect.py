"""Gather every partition's results for the leaderboard and the report."""

from __future__ import annotations

from collections.abc import Sequence

from eval_assets.jsonio import read_model
from eval_assets.layout import StorageLayout
from eval_assets.schemas.results import CellScores


def load_results(layout: StorageLayout, recordings: Sequence[str],
                 models: Sequence[str]) -> list[CellScores]:
    """The ``results.json`` of every (recording, model) that has one, sorted by model, recording."""
    results = []
    for model in sorted(models):
        for recording in sorted(recordings):
            path = layout.results_file(recording, model)
            if path.is_file():
                results.append(read_model(path, CellScores))
    return results
