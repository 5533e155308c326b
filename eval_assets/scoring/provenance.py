"""What a score was computed from, by content, and the refusal to score answers to other content.

A metric matches a model's answers to the dataset's labels by case id. A case id names a frame,
not what it shows: when a recording is replaced under the same name, the new dataset's cases take
the old ids, and old answers would be scored against new labels without a word. So:

- a run records the public content it answered (``summary.json``'s ``public_sha256``), and
  :func:`check_answers_match` refuses it against a dataset whose public content is other;
- each metric's folder keeps the :class:`ScoredInputs` it was computed from (``inputs.json``),
  ``benchmark_results`` refuses metric files computed from other inputs, and the results file
  carries the inputs, so the leaderboard and report leave out (as stale) a cell whose answers,
  labels or overrides changed after it was scored (:func:`stale_reason`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from eval_assets.atomic import write_text_atomic
from eval_assets.errors import InputError
from eval_assets.hashing import canonical_json, file_digest, text_sha256
from eval_assets.jsonio import read_model
from eval_assets.layout import (
    RUN_ANSWERS,
    RUN_DESCRIPTIONS,
    RUN_FLIPS,
    RUN_REPEAT_FRAMES,
    RUN_REPEATS,
    RUN_ROTATIONS,
    RUN_STRUCTURED,
    RUN_SUMMARY,
    RUN_TEMPLATES,
    RUN_TIME_FLIPS,
)
from eval_assets.model_runs.runner import public_fingerprint
from eval_assets.schemas.predictions import RunSummary
from eval_assets.schemas.results import ScoredInputs
from eval_assets.vqa.dataset import dataset_fingerprint

SCORED_INPUTS = "inputs.json"
"""Beside each metric's file: the :class:`ScoredInputs` it was computed from."""

# The standing records a metric may read; journals and summary.json are not scored.
_RUN_FILES = (RUN_ANSWERS, RUN_DESCRIPTIONS, RUN_ROTATIONS, RUN_FLIPS, RUN_TIME_FLIPS,
              RUN_REPEAT_FRAMES, RUN_TEMPLATES, RUN_REPEATS, RUN_STRUCTURED)


class StaleInputsError(InputError):
    """Answers or metric files computed from other content than the one they would be scored
    or gathered with; the message says which and what to materialize first."""


# How long a call took says nothing of what was answered, and differs between two runs of the
# same answers: left out, so equal answers give equal results, byte for byte.
_TIMING_FIELDS = ("latency_s", "wall_s")


def predictions_fingerprint(run_dir: Path) -> str:
    """SHA-256 over a run folder's standing records (those present): per file its name, then
    each record as canonical JSON without its timings."""
    parts: list[str] = []
    for name in _RUN_FILES:
        path = Path(run_dir) / name
        if not path.is_file():
            continue
        parts.append(name)
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                for field in _TIMING_FIELDS:
                    record.pop(field, None)
                parts.append(canonical_json(record))
    return text_sha256("\n".join(parts))


def overrides_fingerprint(overrides_file: Path | None) -> str | None:
    """SHA-256 of the label overrides file; None when there is none."""
    if overrides_file is None or not Path(overrides_file).is_file():
        return None
    return file_digest(Path(overrides_file)).hex()


def check_answers_match(dataset_dir: Path, run_dir: Path, where: str) -> None:
    """Refuse a run whose answers were given to other public content than ``dataset_dir``'s.

    ``where`` names the cell in the message (``model on recording``).
    """
    fix = ("materialize this partition's predictions first (answers are journalled by "
           "content: only cases whose content changed are asked), then its metrics")
    summary_path = Path(run_dir) / RUN_SUMMARY
    if not summary_path.is_file():
        raise StaleInputsError(f"{where}: no predictions at {summary_path}; {fix}")
    answered = read_model(summary_path, RunSummary, fix=fix).public_sha256
    current = public_fingerprint(dataset_dir)
    if answered is None:
        raise StaleInputsError(
            f"{where}: {summary_path} does not say which public content it answered (a run "
            f"before public_sha256 was recorded); {fix}")
    if answered != current:
        raise StaleInputsError(
            f"{where}: the predictions answered public cases {answered[:12]}…, but the dataset "
            f"{dataset_dir} now holds {current[:12]}… (the recording or its dataset changed "
            f"since); scoring them would match answers to other images by case id. Fix: {fix}")


def current_inputs(dataset_dir: Path, run_dir: Path, overrides_file: Path | None, *,
                   dataset_sha256: str | None = None) -> ScoredInputs:
    """The inputs as they are now; ``overrides_file`` None for a metric that reads no gold.
    ``dataset_sha256``: the dataset's fingerprint when the caller already took it (one per
    recording, however many models), else it is taken here."""
    dataset = dataset_sha256 or dataset_fingerprint(dataset_dir)
    if dataset is None:
        raise StaleInputsError(f"{dataset_dir}: no published dataset; materialize the "
                               "recording's vqa_dataset first")
    return ScoredInputs(dataset_sha256=dataset, predictions_sha256=predictions_fingerprint(run_dir),
                        overrides_sha256=overrides_fingerprint(overrides_file))


def write_scored_inputs(out_dir: Path, inputs: ScoredInputs) -> Path:
    """Record ``inputs`` beside a metric's file (after it: a crash between the two leaves the
    previous record, which then disagrees with the new inputs and is refused)."""
    path = Path(out_dir) / SCORED_INPUTS
    write_text_atomic(path, inputs.model_dump_json(indent=2) + "\n")
    return path


def read_scored_inputs(out_dir: Path) -> ScoredInputs | None:
    """The inputs a metric's file was computed from; None when not recorded."""
    path = Path(out_dir) / SCORED_INPUTS
    if not path.is_file():
        return None
    return read_model(path, ScoredInputs, fix="materialize the metric again")


def check_gathered(metrics: Sequence[tuple[str, Path, bool]], inputs: ScoredInputs,
                   where: str) -> None:
    """Refuse metric files computed from other inputs than ``inputs``.

    ``metrics`` are (name, folder, reads gold answers): a metric that reads no gold is not
    compared on the overrides.
    """
    stale = []
    for name, out_dir, reads_gold in metrics:
        scored = read_scored_inputs(out_dir)
        expected = inputs if reads_gold else inputs.model_copy(update={"overrides_sha256": None})
        if scored != expected:
            stale.append(name if scored is None else f"{name} ({_difference(scored, expected)})")
    if stale:
        raise StaleInputsError(
            f"{where}: {', '.join(stale)} computed from other inputs than the current dataset, "
            "answers and label overrides; materialize those metrics first (the automation does "
            "so once their inputs are up to date)")


def stale_reason(scored: ScoredInputs | None, current: ScoredInputs) -> str | None:
    """Why a cell's results no longer stand for ``current``; None when they do."""
    if scored is None:
        return "scored before its inputs were recorded; materialize benchmark_results again"
    if scored == current:
        return None
    return f"scored on other {_difference(scored, current)}; pending recomputation"


def _difference(scored: ScoredInputs, current: ScoredInputs) -> str:
    what = {"dataset_sha256": "dataset", "predictions_sha256": "answers",
            "overrides_sha256": "label overrides"}
    return ", ".join(label for field, label in what.items()
                     if getattr(scored, field) != getattr(current, field))
