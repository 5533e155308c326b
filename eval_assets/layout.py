"""Where every file lives: the one place that decides output folder layout and file names.

Run outputs go under a storage root (``$EVAL_ASSETS_HOME``, default ``./.eval_assets``), which is
git-ignored; bundled inputs stay under ``data/``. Each asset writes into its own folder per
partition (named by :mod:`eval_assets.asset_names`) so reruns of one recording never touch
another's files. The names of the files inside those folders are defined below, once each; the
module that writes a file imports its name from here.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from eval_assets import asset_names as names

RECORDING_SUFFIX = ".db"
SELECTION_SUFFIX = ".selection.yaml"
# Human corrections of gold answers, one file per recording (eval_assets.vqa.overrides).
OVERRIDES_SUFFIX = ".overrides.jsonl"

# recording_ingest: the validated inventory.
INVENTORY_FILE = "inventory.json"
# rectified_frames: PNGs under images/, their table, what was selected and what was skipped.
RECTIFIED_TABLE = "frames.parquet"
SELECTION_FILE = "selection.json"
SKIPPED_FRAMES_FILE = "skipped_frames.json"
IMAGES_DIR = "images"
# pointcloud_frames: one cloud per frame under points/, and their table.
POINTCLOUD_TABLE = "pointcloud_frames.parquet"
POINTS_DIR = "points"
# detections_masks: the detections table, per-frame JSON and masks.
DETECTIONS_TABLE = "detections.parquet"
FRAMES_DIR = "frames"
MASKS_DIR = "masks"
# object_tracks: world-frame objects fused from detections, LiDAR and TF (schemas.spatial).
TRACKS_FILE = "tracks.json"
# evidence_quality: the detector's evidence and the gold answers against the recording's truth.
EVIDENCE_QUALITY_FILE = "evidence_quality.json"
# question_proposals.
PROPOSALS_FILE = "proposals.jsonl"
PROPOSALS_SUMMARY = "summary.json"
# public_cases and private_labels: a dataset folder in dimOS's layout, and our private audit.
DATASET_CASES = "cases.jsonl"
DATASET_LABELS = "labels.jsonl"
DATASET_ASSETS = "assets"
DATASET_AUDIT = "audit"
AUDIT_RUN = "run.json"
# Our sidecar: one full Label per case (dimOS has no such file and ignores it).
AUDIT_LABELS = "labels.jsonl"
# The spatial families (beyond dimOS, eval_assets.schemas.spatial): a second public file of cases,
# its public labels, and the full labels in the audit. dimOS never reads them.
SPATIAL_CASES = "spatial_cases.jsonl"
SPATIAL_LABELS = "spatial_labels.jsonl"
AUDIT_SPATIAL_LABELS = "spatial_labels.jsonl"
AUDIT_FRAME_FILES = ("frame.json", "ground_truth.json", "cases.json", "labels.json")
# Our per-frame sidecar: what the detector was asked and every detection (masks as RLE).
AUDIT_FRAME_EVIDENCE = "evidence.json"
# predictions: a run folder (one per recording × model, or per `eval-assets vqa run`).
RUN_CONFIG = "config.json"
RUN_ANSWERS = "answers.jsonl"
RUN_DESCRIPTIONS = "descriptions.jsonl"
RUN_ROTATIONS = "rotations.jsonl"
RUN_SUMMARY = "summary.json"
RUN_ENDPOINT = "endpoint.json"  # what the endpoint can do (eval_assets.model_runs.preflight)
RUN_ANSWERS_JOURNAL = "answers.journal.jsonl"
RUN_DESCRIPTIONS_JOURNAL = "descriptions.journal.jsonl"
RUN_ROTATIONS_JOURNAL = "rotations.journal.jsonl"
# FlipEval: left/right cases asked again about the mirrored image (eval_assets.model_runs.flips).
RUN_FLIPS = "flips.jsonl"
RUN_FLIPS_JOURNAL = "flips.journal.jsonl"
# TimeFlip and RepeatFrames: multi-frame cases asked again with their frames reversed, or each
# shown twice (eval_assets.model_runs.time_controls).
RUN_TIME_FLIPS = "time_flips.jsonl"
RUN_TIME_FLIPS_JOURNAL = "time_flips.journal.jsonl"
RUN_REPEAT_FRAMES = "repeat_frames.jsonl"
RUN_REPEAT_FRAMES_JOURNAL = "repeat_frames.journal.jsonl"
# The prompt controls: dimOS cases asked in other templates, repeated at a temperature above 0,
# or with a JSON schema (eval_assets.model_runs.prompt_controls).
RUN_TEMPLATES = "templates.jsonl"
RUN_TEMPLATES_JOURNAL = "templates.journal.jsonl"
RUN_REPEATS = "repeats.jsonl"
RUN_REPEATS_JOURNAL = "repeats.journal.jsonl"
RUN_STRUCTURED = "structured.jsonl"
RUN_STRUCTURED_JOURNAL = "structured.journal.jsonl"
RUN_LOCK = ".run.lock"
# Every call the run folder's runs made, one line each, as it was sent: what the server billed
# (eval_assets.model_runs.ledger).
RUN_USAGE = "usage.jsonl"
# mcq_avlm and description_judge: an AVLM inference folder, in AVLM's own names so that AVLM's
# tools read it: the rows scored, then each scorer's outputs in its sub-folder.
AVLM_PREDICTIONS = "predictions.jsonl"
AVLM_MCQ_RESULTS = "mcq/mcq_results.json"
AVLM_MCQ_LENIENT_RESULTS = "mcq/mcq_lenient_results.json"
AVLM_JUDGE_PREDICTIONS = "llm_judge/llm_judge_predictions.json"
AVLM_JUDGE_RESULTS = "llm_judge/llm_judge_results.json"
# benchmark_results, and each night's copy under history/.
RESULTS_FILE = "results.json"
# leaderboard.
LEADERBOARD_PARQUET = "leaderboard.parquet"
LEADERBOARD_JSON = "leaderboard.json"
# report.
REPORT_FILE = "report.html"


HOME_ENV = "EVAL_ASSETS_HOME"
"""The variable naming the storage root."""


def default_storage_root() -> Path:
    """``$EVAL_ASSETS_HOME`` if set, else ``.eval_assets`` under the current directory."""
    return Path(os.environ.get(HOME_ENV, Path.cwd() / ".eval_assets")).resolve()


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
    """The partition key of a recording file: its stem (``sample.db`` → ``sample``), in NFC.

    NFC because a name typed on one system and copied from another may spell ``é`` as one code
    point or as ``e`` + a combining accent (macOS writes NFD): the two print alike, so they
    must be one partition, not two that no one can tell apart.
    """
    return unicodedata.normalize("NFC", path.stem)


def recording_name_clashes(paths: Iterable[Path]) -> dict[str, list[Path]]:
    """The partition keys that more than one of ``paths`` normalise to, with those files.

    Such files print alike but are different files on Linux: which one a partition means
    would be a guess, so every door refuses them all (:func:`name_clash_message`).
    """
    by_key: dict[str, list[Path]] = {}
    for path in paths:
        by_key.setdefault(partition_key_for(path), []).append(path)
    return {key: sorted(found) for key, found in by_key.items() if len(found) > 1}


def name_clash_message(key: str, paths: Sequence[Path]) -> str:
    """Why the files ``paths`` (one partition ``key``) are refused, each named distinguishably.

    The names are shown as Python escapes too (``'caf\\xe9.db'``, ``'cafe\\u0301.db'``): printed
    plainly they look the same, which is the problem.
    """
    folder = paths[0].parent
    named = " and ".join(f"{p.name} ({p.name!a})" for p in paths)
    return (f"{folder}: {named} are {len(paths)} files with the same name once Unicode-"
            f"normalised (NFC), so they would be one recording {key!r}; fix: rename or remove "
            "all but one of them (e.g. keep the one in NFC)")


def find_recording_file(recordings_dir: Path, key: str) -> Path:
    """The file of partition ``key`` in ``recordings_dir``, whichever Unicode form its name has.

    ``<key>.db`` when it exists, else the one file whose name normalises to ``key`` (a name
    written in NFD); else ``<key>.db`` (missing: the caller's error names it).
    """
    exact = recordings_dir / f"{key}{RECORDING_SUFFIX}"
    if exact.is_file():
        return exact
    matches = [p for p in list_recordings(recordings_dir) if partition_key_for(p) == key]
    return matches[0] if len(matches) == 1 else exact


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
        return self.asset_dir(names.RECORDING_INGEST, recording)

    def rectified_frames_dir(self, recording: str) -> Path:
        """Rectified PNG frames and ``frames.parquet`` of one recording."""
        return self.asset_dir(names.RECTIFIED_FRAMES, recording)

    def evidence_quality_dir(self, recording: str) -> Path:
        """The evidence-quality record of one recording (``evidence_quality.json``)."""
        return self.asset_dir(names.EVIDENCE_QUALITY, recording)

    def pointcloud_frames_dir(self, recording: str) -> Path:
        """Synchronised LiDAR clouds and ``pointcloud_frames.parquet`` of one recording."""
        return self.asset_dir(names.POINTCLOUD_FRAMES, recording)

    def tracks_dir(self, recording: str) -> Path:
        """World-frame object tracks (``tracks.json``) of one recording."""
        return self.asset_dir(names.OBJECT_TRACKS, recording)

    def proposals_dir(self, recording: str) -> Path:
        """Question proposals (``proposals.jsonl`` + ``summary.json``) of one recording."""
        return self.asset_dir(names.QUESTION_PROPOSALS, recording)

    def dataset_dir(self, recording: str) -> Path:
        """The published VQA dataset of one recording (public cases and private labels)."""
        return self.root / "datasets" / recording

    def detections_dir(self, recording: str) -> Path:
        """Perception evidence of one recording: ``detections.parquet``, per-frame JSON, masks."""
        return self.asset_dir(names.DETECTIONS_MASKS, recording)

    def predictions_dir(self, recording: str, model: str) -> Path:
        """Run folder of one model on one recording's dataset (journals, answers, summary)."""
        return self.asset_dir(names.PREDICTIONS, recording) / model

    def metric_dir(self, metric: str, recording: str, model: str) -> Path:
        """Output folder of one metric asset for one (recording, model) partition."""
        return self.asset_dir(metric, recording) / model

    def results_file(self, recording: str, model: str) -> Path:
        """The combined ``results.json`` (a ``CellScores``) of one partition."""
        return self.metric_dir(names.BENCHMARK_RESULTS, recording, model) / RESULTS_FILE

    def leaderboard_dir(self) -> Path:
        """Leaderboard over every partition (Parquet + JSON)."""
        return self.root / "assets" / names.LEADERBOARD

    def report_file(self) -> Path:
        """The static HTML report."""
        return self.root / "assets" / names.REPORT / REPORT_FILE

    def history_dir(self) -> Path:
        """Every nightly benchmark's results, one folder per night (``YYYY-MM-DD``)."""
        return self.root / "history"

    def nightly_results_file(self, night: str, recording: str, model: str) -> Path:
        """The ``results.json`` (a ``CellScores``) of one (recording, model) on one night;
        kept for good, so the report can show each model's score across nights."""
        return self.history_dir() / night / recording / model / RESULTS_FILE

    def logs_dir(self) -> Path:
        """The Dagster event log of each ``eval-assets run``, one file per run."""
        return self.root / "logs"

    def content_hashes_file(self) -> Path:
        """Cache of recording content hashes by (path, size, mtime)."""
        return self.root / "state" / "recording_hashes.json"

    def automation_cursor_file(self) -> Path:
        """The CLI's cursor of Dagster's automation conditions (what it has already handled)."""
        return self.root / "state" / "automation_cursor.txt"

    def publications_dir(self) -> Path:
        """What each asset published, by content (:mod:`eval_assets.publication`)."""
        return self.root / "state" / "publications"

    def publication_file(self, asset: str, recording: str | None = None,
                         model: str | None = None) -> Path:
        """The publication record of ``asset``'s partition: its recording's, its (recording,
        model) cell's, or (neither) the unpartitioned asset's."""
        if recording is None:
            return self.publications_dir() / f"{asset}.json"
        folder = self.publications_dir() / asset
        return (folder / f"{recording}.json" if model is None
                else folder / recording / f"{model}.json")

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


def default_labels_dir() -> Path:
    """``$EVAL_ASSETS_LABELS`` if set, else the repository's ``data/labels``: where each
    recording's label overrides are kept (a bundled input, like the annotations)."""
    default = Path(__file__).resolve().parent.parent / "data" / "labels"
    return Path(os.environ.get("EVAL_ASSETS_LABELS", default)).resolve()


def overrides_file_for(labels_dir: Path, recording: str) -> Path:
    """The label overrides of one recording: ``<labels_dir>/<recording>.overrides.jsonl``."""
    return Path(labels_dir) / f"{recording}{OVERRIDES_SUFFIX}"
