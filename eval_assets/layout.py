"""Where every file lives: the one place that decides output folder layout and file names.

Run outputs go under a storage root (``$EVAL_ASSETS_HOME``, default ``./.eval_assets``), which is
git-ignored; bundled inputs stay under ``data/``. Each asset writes into its own folder per
partition so reruns of one recording never touch another's files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

RECORDING_SUFFIX = ".db"
SELECTION_SUFFIX = ".selection.yaml"


def default_storage_root() -> Path:
    """``$EVAL_ASSETS_HOME`` if set, else ``.eval_assets`` under the current directory."""
    return Path(os.environ.get("EVAL_ASSETS_HOME", Path.cwd() / ".eval_assets")).resolve()


def default_recordings_dir() -> Path:
    """``$EVAL_ASSETS_RECORDINGS`` if set, else ``data/recordings`` under the current directory."""
    default = Path.cwd() / "data" / "recordings"
    return Path(os.environ.get("EVAL_ASSETS_RECORDINGS", default)).resolve()


def default_models_file() -> Path:
    """``$EVAL_ASSETS_MODELS`` if set, else the repository's ``data/models.yaml``.

    Anchored to the package, not the working directory: the model partitions are built from it
    when the code location is imported, wherever Dagster is started from.
    """
    default = Path(__file__).resolve().parent.parent / "data" / "models.yaml"
    return Path(os.environ.get("EVAL_ASSETS_MODELS", default)).resolve()


def partition_key_for(path: Path) -> str:
    """The partition key of a recording file: its stem (``sample.db`` → ``sample``)."""
    return path.stem


def selection_file_for(recording: Path) -> Path:
    """The recording's frame selection file beside it: ``hallway.db`` → ``hallway.selection.yaml``.

    Optional: without it the default selection policy applies.
    """
    recording = Path(recording)
    return recording.with_name(recording.stem + SELECTION_SUFFIX)


def list_recordings(recordings_dir: Path) -> list[Path]:
    """Recording files in a folder, sorted by name so partitions are added in a stable order."""
    if not recordings_dir.is_dir():
        return []
    return sorted(p for p in recordings_dir.iterdir()
                  if p.suffix == RECORDING_SUFFIX and p.is_file())


@dataclass(frozen=True)
class StorageLayout:
    """Paths of every stored output, derived from one root."""

    root: Path

    def dagster_home(self) -> Path:
        """The Dagster instance folder used by the CLI and the demo."""
        return self.root / "dagster_home"

    def asset_dir(self, asset: str, partition: str) -> Path:
        """The folder an asset writes for one partition."""
        return self.root / "assets" / asset / partition

    def ingest_dir(self, recording: str) -> Path:
        """Validated inventory of one recording."""
        return self.asset_dir("recording_ingest", recording)

    def rectified_frames_dir(self, recording: str) -> Path:
        """Rectified PNG frames and ``frames.parquet`` of one recording."""
        return self.asset_dir("rectified_frames", recording)

    def pointcloud_frames_dir(self, recording: str) -> Path:
        """Synchronised LiDAR clouds and ``pointcloud_frames.parquet`` of one recording."""
        return self.asset_dir("pointcloud_frames", recording)

    def proposals_dir(self, recording: str) -> Path:
        """Question proposals (``proposals.jsonl`` + ``summary.json``) of one recording."""
        return self.asset_dir("question_proposals", recording)

    def dataset_dir(self, recording: str) -> Path:
        """The published VQA dataset of one recording (public cases and private labels)."""
        return self.root / "datasets" / recording

    def detections_dir(self, recording: str) -> Path:
        """Perception evidence of one recording: ``detections.parquet``, per-frame JSON, masks."""
        return self.asset_dir("detections_masks", recording)

    def predictions_dir(self, recording: str, model: str) -> Path:
        """Run folder of one model on one recording's dataset (journals, answers, summary)."""
        return self.asset_dir("predictions", recording) / model

    def metric_dir(self, metric: str, recording: str, model: str) -> Path:
        """Output folder of one metric asset for one (recording, model) partition."""
        return self.asset_dir(metric, recording) / model

    def results_file(self, recording: str, model: str) -> Path:
        """The combined ``results.json`` (a ``BenchmarkResult``) of one partition."""
        return self.metric_dir("benchmark_results", recording, model) / "results.json"

    def leaderboard_dir(self) -> Path:
        """Leaderboard over every partition (Parquet + JSON)."""
        return self.root / "assets" / "leaderboard"

    def report_file(self) -> Path:
        """The static HTML report."""
        return self.root / "assets" / "report" / "report.html"

    def history_dir(self) -> Path:
        """Every nightly benchmark's results, one folder per night (``YYYY-MM-DD``)."""
        return self.root / "history"

    def nightly_results_file(self, night: str, recording: str, model: str) -> Path:
        """The ``results.json`` (a ``BenchmarkResult``) of one (recording, model) on one night;
        kept for good, so the report can show each model's score across nights."""
        return self.history_dir() / night / recording / model / "results.json"

    def content_hashes_file(self) -> Path:
        """Cache of recording content hashes by (path, size, mtime)."""
        return self.root / "state" / "recording_hashes.json"

    def automation_cursor_file(self) -> Path:
        """The CLI's cursor of Dagster's automation conditions (what it has already handled)."""
        return self.root / "state" / "automation_cursor.txt"

    def vqa_run_dir(self, dataset: str, model: str) -> Path:
        """Run folder of ``eval-assets vqa run`` for a dataset (name-content hash) and a model."""
        return self.root / "runs" / dataset / model


def default_annotations_dir() -> Path:
    """``$EVAL_ASSETS_ANNOTATIONS`` if set, else the repository's ``data/annotations``."""
    default = Path(__file__).resolve().parent.parent / "data" / "annotations"
    return Path(os.environ.get("EVAL_ASSETS_ANNOTATIONS", default)).resolve()


def default_judge_file() -> Path:
    """``$EVAL_ASSETS_JUDGE`` if set, else the repository's ``data/judge.yaml``."""
    default = Path(__file__).resolve().parent.parent / "data" / "judge.yaml"
    return Path(os.environ.get("EVAL_ASSETS_JUDGE", default)).resolve()
