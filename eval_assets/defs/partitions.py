"""Partitions: recordings (dynamic, one per file stem) × models (from the models file)."""

from __future__ import annotations

import warnings

from dagster import (
    BetaWarning,
    DynamicPartitionsDefinition,
    MultiPartitionsDefinition,
    MultiToSingleDimensionPartitionMapping,
    StaticPartitionsDefinition,
)

from eval_assets.layout import default_models_file
from eval_assets.predictions.client import load_model_specs

RECORDING_DIM = "recording"
MODEL_DIM = "model"

recordings_partitions = DynamicPartitionsDefinition(name="recordings")

# Built when the code location loads: editing data/models.yaml adds a model partition on reload.
model_partitions = StaticPartitionsDefinition(
    [spec.name for spec in load_model_specs(default_models_file())])

recording_model_partitions = MultiPartitionsDefinition(
    {RECORDING_DIM: recordings_partitions, MODEL_DIM: model_partitions})

# A (recording, model) partition reads its recording's per-recording assets. The mapping is a Beta
# API that we accept on purpose: it is Dagster's only way to map one dimension of a multi-partition
# onto a single-dimension upstream, so its BetaWarning is silenced here and nowhere else.
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", category=BetaWarning)
    per_recording = MultiToSingleDimensionPartitionMapping(partition_dimension_name=RECORDING_DIM)
