"""Observed inputs: the recording files, each model's settings, the judge's settings and each
recording's label overrides.

Their data version is a hash of their content, so Dagster itself knows when one changed: a
recording replaced under the same name, an edited ``<name>.selection.yaml`` beside it, an edited
model entry or judge config, a new label override makes exactly the assets that read it stale,
and declarative automation recomputes them. The recordings sensor reports these observations;
"Observe sources" in the UI does the same on demand.
"""

# No `from __future__ import annotations`: Dagster checks the context annotation at runtime.

from collections.abc import Callable
from pathlib import Path
from typing import Any

from dagster import (
    AssetObservation,
    BetaWarning,
    DataVersion,
    DataVersionsByPartition,
    SourceAsset,
    observable_source_asset,
)
from dagster._core.definitions.data_version import DATA_VERSION_TAG

from eval_assets.defs import keys
from eval_assets.defs.accepted import quietly
from eval_assets.defs.partitions import (
    current_model_specs,
    model_partitions,
    recordings_partitions,
)
from eval_assets.defs.resources import JudgeResource, ProjectStorage
from eval_assets.frames.selection import selection_digest
from eval_assets.hashing import file_sha256, text_sha256
from eval_assets.layout import selection_file_for
from eval_assets.recording.watch import ContentHashes, FileState

GROUP = "inputs"


def recording_version(hashes: ContentHashes, path: Path, state: FileState | None = None) -> str:
    """The data version of a recording partition: what it is made of.

    The SHA-256 of the ``.db`` file when it has no selection file beside it; with one
    (``<name>.selection.yaml``), the hash of both files' hashes, so editing the selection makes
    the recording's frames and everything after them stale.
    """
    version = hashes.sha256(path, state)
    selection = selection_digest(selection_file_for(path))
    if selection is None:
        return version
    return text_sha256(f"recording:{version}\nselection:{selection}")


def recording_versions(storage: ProjectStorage, partitions: list[str]) -> dict[str, str]:
    """Data version of each partition's recording that exists (hashes cached by size, mtime)."""
    hashes = ContentHashes(storage.layout().content_hashes_file())
    versions = {}
    for key in partitions:
        path = storage.recording_file(key)
        if path.is_file():
            versions[key] = recording_version(hashes, path)
    return versions


def model_versions() -> dict[str, str]:
    """Hash of each declared model's entry (endpoint, model id, generation settings), as the
    models file says now: editing an entry makes that model's cells stale without a reload."""
    return {spec.name: text_sha256(spec.model_dump_json()) for spec in current_model_specs()}


def judge_version(judge: JudgeResource) -> str:
    """Hash of the judge's validated settings (the config file's content as loaded)."""
    return text_sha256(judge.load_config().model_dump_json())


NO_OVERRIDES = "no-overrides"
"""The data version of a recording without an overrides file."""


def overrides_version(path: Path) -> str:
    """The data version of a recording's label overrides: the SHA-256 of its overrides file.

    Any appended line changes it, so the metrics that read labels are recomputed for that
    recording (every model), and nothing else: not its cases, not the models' answers.
    """
    return file_sha256(path) if path.is_file() else NO_OVERRIDES


def overrides_versions(storage: ProjectStorage, partitions: list[str]) -> dict[str, str]:
    """Data version of each partition's label overrides (every partition has one)."""
    return {key: overrides_version(storage.overrides_file(key)) for key in partitions}


def observation(key, version: str, partition: str | None = None) -> AssetObservation:
    """An observation carrying a data version, as a sensor reports it."""
    return AssetObservation(asset_key=key, partition=partition, tags={DATA_VERSION_TAG: version})


def observed_input(**kwargs: Any) -> Callable[[Callable[..., Any]], SourceAsset]:
    """``observable_source_asset``, its BetaWarning silenced at this one call.

    Accepted on purpose: an observable source asset is how Dagster learns a data version for a
    file it does not produce, which is what makes a replaced recording stale.
    """
    return lambda fn: quietly(BetaWarning, lambda: observable_source_asset(**kwargs)(fn))


@observed_input(key=keys.RECORDING_FILE, partitions_def=recordings_partitions,
                         group_name=GROUP, description="A recording file and its optional frame "
                         "selection file; its data version is the SHA-256 of the recording's "
                         "bytes, combined with the selection file's when there is one.")
def recording_file(context, storage: ProjectStorage) -> DataVersionsByPartition:
    """Hash every registered recording (and selection file) present in the recordings folder."""
    partitions = context.instance.get_dynamic_partitions(recordings_partitions.name)
    return DataVersionsByPartition(recording_versions(storage, partitions))


@observed_input(key=keys.MODEL_CONFIG, partitions_def=model_partitions,
                         group_name=GROUP, description="A model's entry in the models file.")
def model_config(context) -> DataVersionsByPartition:
    """Hash every declared model's settings."""
    return DataVersionsByPartition(model_versions())


@observed_input(key=keys.JUDGE_CONFIG, group_name=GROUP,
                         description="The judge config file (data/judge.yaml).")
def judge_config(context, judge: JudgeResource) -> DataVersion:
    """Hash the judge's settings."""
    return DataVersion(judge_version(judge))


@observed_input(key=keys.LABEL_OVERRIDES, partitions_def=recordings_partitions,
                group_name=GROUP, description="Human corrections of a recording's gold answers "
                "(data/labels/<recording>.overrides.jsonl, written by `eval-assets labels "
                "override`); its data version is the SHA-256 of that file. Read by the metrics "
                "that score against gold answers, never by the cases or the predictions.")
def label_overrides(context, storage: ProjectStorage) -> DataVersionsByPartition:
    """Hash every registered recording's overrides file."""
    partitions = context.instance.get_dynamic_partitions(recordings_partitions.name)
    return DataVersionsByPartition(overrides_versions(storage, partitions))
