"""Observed inputs: the recording files, each model's settings and the judge's settings.

Their data version is a hash of their content, so Dagster itself knows when one changed: a
recording replaced under the same name, an edited model entry or judge config makes exactly the
assets that read it stale, and declarative automation recomputes them. The recordings sensor
reports these observations; "Observe sources" in the UI does the same on demand.
"""

# No `from __future__ import annotations`: Dagster checks the context annotation at runtime.

import hashlib
from collections.abc import Callable
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
from eval_assets.defs.partitions import declared_models, model_partitions, recordings_partitions
from eval_assets.defs.resources import JudgeResource, ProjectStorage
from eval_assets.recording.watch import ContentHashes

GROUP = "inputs"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def recording_versions(storage: ProjectStorage, partitions: list[str]) -> dict[str, str]:
    """Content hash of each partition's recording file that exists (cached by size and mtime)."""
    hashes = ContentHashes(storage.layout().content_hashes_file())
    versions = {}
    for key in partitions:
        path = storage.recording_file(key)
        if path.is_file():
            versions[key] = hashes.sha256(path)
    return versions


def model_versions() -> dict[str, str]:
    """Hash of each declared model's entry: endpoint, model id, generation settings."""
    return {spec.name: _digest(spec.model_dump_json()) for spec in declared_models()}


def judge_version(judge: JudgeResource) -> str:
    """Hash of the judge's validated settings (the config file's content as loaded)."""
    return _digest(judge.load_config().model_dump_json())


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
                         group_name=GROUP, description="A recording file; its data version is "
                         "the SHA-256 of its bytes.")
def recording_file(context, storage: ProjectStorage) -> DataVersionsByPartition:
    """Hash every registered recording that is present in the recordings folder."""
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
