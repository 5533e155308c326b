"""Partitions: recordings (dynamic, one per file stem) × models (from the models file)."""

from __future__ import annotations

from dagster import (
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

# A (recording, model) partition reads its recording's per-recording assets.
per_recording = MultiToSingleDimensionPartitionMapping(partition_dimension_name=RECORDING_DIM)
