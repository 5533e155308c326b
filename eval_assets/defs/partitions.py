"""Partitions: recordings (dynamic, one per file stem) × models (from the models file).

The models file is read here and nowhere else in the Dagster layer: the model partitions, the
client settings of each model and the self-judging check all use :func:`declared_models`.
"""

from __future__ import annotations

from functools import cache

from dagster import (
    BetaWarning,
    DynamicPartitionsDefinition,
    MultiPartitionKey,
    MultiPartitionsDefinition,
    MultiToSingleDimensionPartitionMapping,
    StaticPartitionsDefinition,
)

from eval_assets.defs.accepted import quietly
from eval_assets.layout import default_models_file
from eval_assets.schemas.predictions import ModelSpec, load_model_specs

RECORDING_DIM = "recording"
MODEL_DIM = "model"


@cache
def declared_models() -> tuple[ModelSpec, ...]:
    """The models under test, from ``$EVAL_ASSETS_MODELS`` / ``data/models.yaml`` (read once)."""
    return tuple(load_model_specs(default_models_file()))


def current_model_specs() -> tuple[ModelSpec, ...]:
    """The declared models' entries as the models file says now (read at each call).

    A long-lived process (the daemon's code server, which evaluates the recordings sensor) keeps
    :func:`declared_models` from when it loaded; an edited entry must still be seen there, since
    the runs it causes (new processes) read the file afresh. Only models that are partitions
    count: adding or removing one needs a reload of the code location.
    """
    names = set(model_partitions.get_partition_keys())
    return tuple(spec for spec in load_model_specs(default_models_file()) if spec.name in names)


def declared_model(name: str) -> ModelSpec:
    """The declared model called ``name``; the error lists the declared names and the file."""
    for spec in declared_models():
        if spec.name == name:
            return spec
    raise ValueError(f"model {name!r} is not declared in {default_models_file()}; declared: "
                     f"{[s.name for s in declared_models()]}")


RECORDINGS = "recordings"
"""The name of the recordings' dynamic partitions, which the sensor and the local runner add to."""
recordings_partitions = DynamicPartitionsDefinition(name=RECORDINGS)

# Built when the code location loads: editing the models file adds a model partition on reload.
model_partitions = StaticPartitionsDefinition([spec.name for spec in declared_models()])

recording_model_partitions = MultiPartitionsDefinition(
    {RECORDING_DIM: recordings_partitions, MODEL_DIM: model_partitions})

# A (recording, model) partition reads its recording's per-recording assets and its model's
# config. The mapping is a Beta API that we accept on purpose: it is Dagster's only way to map one
# dimension of a multi-partition onto a single-dimension upstream, so its BetaWarning is silenced
# here and nowhere else.
per_recording = quietly(BetaWarning, lambda: MultiToSingleDimensionPartitionMapping(
    partition_dimension_name=RECORDING_DIM))
per_model = quietly(BetaWarning, lambda: MultiToSingleDimensionPartitionMapping(
    partition_dimension_name=MODEL_DIM))


def cell_of(partition_key: str) -> tuple[str, str]:
    """``(recording, model)`` of a (recording, model) partition key, however the run got it.

    Automation, backfills and the UI hand the asset a :class:`MultiPartitionKey`; a run launched
    with only the ``dagster/partition`` tag (``dagster job execute -j model_benchmark --tags
    '{"dagster/partition": "random|alpha"}'``) hands it the plain string, whose dimensions are
    joined in name order: ``<model>|<recording>``. Both are read here; any other shape is a clear
    error naming the expected one.
    """
    if isinstance(partition_key, MultiPartitionKey):
        dims = partition_key.keys_by_dimension
    else:
        parts = str(partition_key).split("|")
        if len(parts) != 2 or not all(parts):
            raise ValueError(
                f"partition key {partition_key!r} is not a (recording, model) cell: expected "
                f"'<{MODEL_DIM}>|<{RECORDING_DIM}>' (dimensions in name order), e.g. "
                f"'random|sample'")
        dims = recording_model_partitions.get_partition_key_from_str(
            str(partition_key)).keys_by_dimension
    return dims[RECORDING_DIM], dims[MODEL_DIM]
