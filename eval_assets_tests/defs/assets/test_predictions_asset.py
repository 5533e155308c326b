"""The ``predictions`` asset materialized for real: one (recording, model) partition, resumed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dagster import (
    AssetKey,
    DagsterInstance,
    MultiPartitionKey,
    MultiToSingleDimensionPartitionMapping,
    materialize,
)

from eval_assets.defs.assets.predictions import model_partitions, predictions
from eval_assets.defs.resources import ProjectStorage, VLMClientResource
from eval_assets.layout import StorageLayout
from eval_assets_tests.model_runs.helpers import CANARY, make_dataset


def _metadata(result) -> dict:
    events = result.get_asset_materialization_events()
    assert len(events) == 1
    return {k: v.value for k, v in events[0].materialization.metadata.items()}


def test_asset_declares_pool_partitions_and_only_public_inputs() -> None:
    assert predictions.op.pool == "vlm_api"
    assert {"random", "blind-smollm2"} <= set(model_partitions.get_partition_keys())
    spec = next(iter(predictions.specs))
    deps = {dep.asset_key: dep.partition_mapping for dep in spec.deps}
    # The public cases of its recording and its own model's entry; never the private labels.
    assert set(deps) == {AssetKey("public_cases"), AssetKey("model_config")}
    for key, dimension in ((AssetKey("public_cases"), "recording"),
                           (AssetKey("model_config"), "model")):
        assert isinstance(deps[key], MultiToSingleDimensionPartitionMapping)
        assert deps[key].partition_dimension_name == dimension


def test_random_partition_materializes_and_resumes(tmp_path: Path) -> None:
    root = tmp_path / "storage"
    layout = StorageLayout(root)
    make_dataset(layout.dataset_dir("rec1"), n_frames=2, cases_per_frame=2)
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("recordings", ["rec1"])
    resources = {"storage": ProjectStorage(storage_root=str(root)),
                 "vlm": VLMClientResource(max_concurrency=2)}
    key = MultiPartitionKey({"recording": "rec1", "model": "random"})

    first = materialize([predictions], partition_key=key, instance=instance, resources=resources)
    assert first.success
    meta = _metadata(first)
    assert meta["complete"] is True and meta["num_answers"] == 4
    # Rotations are on by default (CircularEval in the report): each yes/no case once more.
    assert meta["num_rotations"] == 4 and meta["num_rotations_failed"] == 0
    assert meta["calls_made"] == 4 + 4 + 2 and meta["num_descriptions"] == 2

    out = layout.predictions_dir("rec1", "random")
    answers = [json.loads(line) for line in (out / "answers.jsonl").read_text().splitlines()]
    assert {a["choice"] for a in answers} <= {"yes", "no"} and len(answers) == 4
    rotations = [json.loads(line) for line in (out / "rotations.jsonl").read_text().splitlines()]
    assert [r["choices"] for r in rotations] == [["no", "yes"]] * 4
    assert all(CANARY not in p.read_text() for p in out.iterdir())

    again = materialize([predictions], partition_key=key, instance=instance, resources=resources)
    assert _metadata(again)["calls_made"] == 0 and _metadata(again)["resumed"] == 10


def test_rotations_can_be_switched_off_in_the_resource(tmp_path: Path) -> None:
    root = tmp_path / "storage"
    layout = StorageLayout(root)
    make_dataset(layout.dataset_dir("rec1"), n_frames=1, cases_per_frame=2)
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("recordings", ["rec1"])
    resources = {"storage": ProjectStorage(storage_root=str(root)),
                 "vlm": VLMClientResource(max_concurrency=2, rotations=False)}
    key = MultiPartitionKey({"recording": "rec1", "model": "random"})
    meta = _metadata(materialize([predictions], partition_key=key, instance=instance,
                                 resources=resources))
    assert meta["calls_made"] == 2 + 1 and "num_rotations" not in meta
    assert not (layout.predictions_dir("rec1", "random") / "rotations.jsonl").exists()


def test_missing_dataset_is_a_clear_failure(tmp_path: Path) -> None:
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("recordings", ["rec2"])
    resources = {"storage": ProjectStorage(storage_root=str(tmp_path)), "vlm": VLMClientResource()}
    key = MultiPartitionKey({"recording": "rec2", "model": "random"})
    with pytest.raises(FileNotFoundError, match=r"rec2/cases.jsonl does not exist"):
        materialize([predictions], partition_key=key, instance=instance, resources=resources)


def test_spatial_cases_are_answered_through_the_same_core(tmp_path: Path) -> None:
    from eval_assets_tests.model_runs.helpers import make_spatial_dataset

    root = tmp_path / "storage"
    layout = StorageLayout(root)
    dataset = make_spatial_dataset(layout.dataset_dir("rec1"))
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("recordings", ["rec1"])
    resources = {"storage": ProjectStorage(storage_root=str(root)),
                 "vlm": VLMClientResource(max_concurrency=2, rotations=False)}
    key = MultiPartitionKey({"recording": "rec1", "model": "random"})
    result = materialize([predictions], partition_key=key, instance=instance,
                         resources=resources)
    meta = _metadata(result)
    assert meta["complete"] is True
    assert meta["num_answers"] == len(dataset.cases) + len(dataset.spatial)
    # The preflight probes up to twice the most frames a case shows (6 here): RepeatFrames shows
    # every frame twice, and the random model takes all 12.
    assert meta["spatial_layouts"] == {"parts": 6} and meta["endpoint_max_images"] == 12
    out = layout.predictions_dir("rec1", "random")
    answers = [json.loads(line) for line in (out / "answers.jsonl").read_text().splitlines()]
    assert sum(1 for a in answers if a.get("spatial")) == 6
    assert all(CANARY not in p.read_text() for p in out.iterdir())


def test_a_models_file_entry_switches_the_prompt_controls_on_for_its_model(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The entry's `templates: true` / `repeats: 2` win over the resource's defaults (off)."""
    from eval_assets.defs.partitions import declared_models
    from eval_assets_tests.model_runs.test_prompt_controls import _dataset

    root = tmp_path / "storage"
    layout = StorageLayout(root)
    _dataset(layout.dataset_dir("rec1"), n=2)
    models = tmp_path / "models.yaml"
    models.write_text("models:\n  - name: random\n    serve: random\n    seed: 0\n"
                      "    templates: true\n    repeats: 2\n")
    monkeypatch.setenv("EVAL_ASSETS_MODELS", str(models))
    # declared_models is read once per process: read this file, then the default one again.
    declared_models.cache_clear()
    try:
        instance = DagsterInstance.ephemeral()
        instance.add_dynamic_partitions("recordings", ["rec1"])
        resources = {"storage": ProjectStorage(storage_root=str(root)),
                     "vlm": VLMClientResource(max_concurrency=2, rotations=False, flips=False)}
        key = MultiPartitionKey({"recording": "rec1", "model": "random"})
        assert materialize([predictions], partition_key=key, instance=instance,
                           resources=resources).success
    finally:
        monkeypatch.delenv("EVAL_ASSETS_MODELS")
        declared_models.cache_clear()
    out = layout.predictions_dir("rec1", "random")
    # 2 presence + 2 direction cases, each asked in the two other templates and twice more.
    assert len((out / "templates.jsonl").read_text().splitlines()) == 2 * 4
    assert len((out / "repeats.jsonl").read_text().splitlines()) == 2 * 4
    assert not (out / "structured.jsonl").exists()
