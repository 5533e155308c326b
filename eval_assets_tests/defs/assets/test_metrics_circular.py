"""The metric assets with rotations: ``vqa_accuracy`` writes CircularEval beside the VQA report,
and ``benchmark_results`` reads it into ``results.json`` (None for a run without rotations)."""

from __future__ import annotations

import json
from pathlib import Path

from dagster import DagsterInstance, MultiPartitionKey, materialize

from eval_assets.defs.assets.metrics import CIRCULAR_FILE, VQA_FILE, _optional_file, vqa_accuracy
from eval_assets.defs.assets.predictions import predictions
from eval_assets.defs.resources import ProjectStorage, VLMClientResource
from eval_assets.layout import StorageLayout
from eval_assets.metrics.circular import CircularReport
from eval_assets.perception import PerceptionConfig
from eval_assets.schemas.results import BenchmarkResult
from eval_assets.vqa.authors import AuthorConfig
from eval_assets.vqa.generate import generate_from_recording
from eval_assets.vqa.labels import read_labels


def _metadata(result) -> dict:
    events = result.get_asset_materialization_events()
    return {k: v.value for e in events for k, v in e.materialization.metadata.items()}


def _materialize(root: Path, sample_db: Path, rotations: bool):
    layout = StorageLayout(root)
    config = PerceptionConfig()
    generate_from_recording(sample_db, layout.dataset_dir("rec"), (0, 8), AuthorConfig(),
                            config.build_detector(), config.build_segmenter())
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("recordings", ["rec"])
    resources = {"storage": ProjectStorage(storage_root=str(root)),
                 "vlm": VLMClientResource(max_concurrency=4, rotations=rotations)}
    key = MultiPartitionKey({"recording": "rec", "model": "random"})
    result = materialize([predictions, vqa_accuracy], partition_key=key, instance=instance,
                         resources=resources)
    assert result.success
    return layout, result


def test_vqa_accuracy_writes_circular_eval_of_the_rotations(tmp_path: Path,
                                                            sample_db: Path) -> None:
    layout, result = _materialize(tmp_path, sample_db, rotations=True)
    folder = layout.metric_dir("vqa_accuracy", "rec", "random")
    report = CircularReport.model_validate_json((folder / CIRCULAR_FILE).read_text())
    labels = read_labels(layout.dataset_dir("rec"))
    o = report.overall
    assert o.n == len(labels) and o.not_asked == 0 and len(report.rows) == len(labels)
    assert o.n_answers == sum(len(lab.choices) for lab in labels)
    # The random baseline is near its chance levels, and its rotation 0 is the VQA accuracy.
    vqa = json.loads((folder / VQA_FILE).read_text())
    assert o.original_accuracy == vqa["overall"]["accuracy"]
    assert o.accuracy is not None and o.accuracy < 0.5 and o.bias.n == o.n_answers
    meta = _metadata(result)
    assert meta["circular_n"] == o.n and meta["circular_accuracy"] == o.accuracy
    assert meta["position_bias_p"] == o.bias.p_value
    assert _optional_file(folder / CIRCULAR_FILE, CircularReport) == report


def test_without_rotations_circular_eval_is_not_measured(tmp_path: Path,
                                                         sample_db: Path) -> None:
    layout, result = _materialize(tmp_path, sample_db, rotations=False)
    folder = layout.metric_dir("vqa_accuracy", "rec", "random")
    assert json.loads((folder / CIRCULAR_FILE).read_text()) == {"reason": "no rotations asked"}
    assert _optional_file(folder / CIRCULAR_FILE, CircularReport) is None
    assert _optional_file(folder / "absent.json", CircularReport) is None
    assert "circular_n" not in _metadata(result)


def test_results_written_before_circular_eval_still_load() -> None:
    assert BenchmarkResult.model_fields["circular"].default is None
