"""The metric assets made from ``METRICS``: ``vqa_accuracy`` and ``circular_eval`` on a real run
(with and without rotations), and ``benchmark_results`` gathering every metric's file."""

from __future__ import annotations

import json
from pathlib import Path

from dagster import DagsterInstance, MultiPartitionKey, materialize

from eval_assets.defs import keys
from eval_assets.defs.assets.metrics import METRIC_ASSETS, benchmark_results
from eval_assets.defs.assets.predictions import predictions
from eval_assets.defs.definitions import defs
from eval_assets.defs.resources import ProjectStorage, VLMClientResource
from eval_assets.layout import StorageLayout
from eval_assets.metrics.circular import CircularReport
from eval_assets.perception import PerceptionConfig
from eval_assets.schemas.results import CellScores, NotMeasured
from eval_assets.scoring import METRICS
from eval_assets.scoring.circular import CIRCULAR
from eval_assets.scoring.inputs import load_private_dataset
from eval_assets.scoring.mcq import MCQ
from eval_assets.scoring.numeric import NUMERIC, numeric_cases
from eval_assets.scoring.pope import POPE
from eval_assets.scoring.provenance import current_inputs, write_scored_inputs
from eval_assets.scoring.vqa import VQA, report_of
from eval_assets.vqa.authors import AuthorConfig
from eval_assets.vqa.generate import generate_from_recording
from eval_assets.vqa.labels import read_labels

# The metric assets are made from the registry, one per spec, found by the spec's name.
vqa_accuracy, circular_eval, pope_presence, mcq_avlm, numeric_accuracy = (
    METRIC_ASSETS[spec.name] for spec in (VQA, CIRCULAR, POPE, MCQ, NUMERIC))


def _metadata(result, key) -> dict:
    events = result.get_asset_materialization_events()
    return {k: v.value for e in events if e.asset_key == key
            for k, v in e.materialization.metadata.items()}


def _materialize(root: Path, sample_db: Path, rotations: bool, assets: list):
    layout = StorageLayout(root)
    config = PerceptionConfig()
    generate_from_recording(sample_db, layout.dataset_dir("rec"), (0, 8), AuthorConfig(),
                            config.build_detector(), config.build_segmenter())
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("recordings", ["rec"])
    resources = {"storage": ProjectStorage(storage_root=str(root)),
                 "vlm": VLMClientResource(max_concurrency=4, rotations=rotations)}
    key = MultiPartitionKey({"recording": "rec", "model": "random"})
    result = materialize([predictions, *assets], partition_key=key, instance=instance,
                         resources=resources)
    assert result.success
    return layout, result


def test_metrics_names_are_the_metric_asset_keys() -> None:
    names = [spec.name for spec in METRICS]
    assert names == list(METRIC_ASSETS)
    assert names == [a.key.to_user_string() for a in METRIC_ASSETS.values()]
    graph = defs.resolve_asset_graph()
    in_group = sorted(k.to_user_string() for k in graph.get_all_asset_keys()
                      if graph.get(k).group_name == "metrics" and k != keys.BENCHMARK_RESULTS)
    assert sorted(names) == in_group
    assert len(set(spec.file for spec in METRICS)) == len(METRICS)


def test_circular_eval_scores_the_rotations_and_results_gather_every_metric(
        tmp_path: Path, sample_db: Path) -> None:
    layout, result = _materialize(tmp_path, sample_db, True, [
        vqa_accuracy, circular_eval, pope_presence, mcq_avlm, numeric_accuracy])
    folder = layout.metric_dir("circular_eval", "rec", "random")
    report = CircularReport.model_validate_json((folder / CIRCULAR.file).read_text())
    labels = read_labels(layout.dataset_dir("rec"))
    o = report.overall
    assert o.n == len(labels) and o.not_asked == 0 and len(report.rows) == len(labels)
    assert o.n_answers == sum(len(lab.choices) for lab in labels)
    # The random baseline is near its chance levels, and its rotation 0 is the VQA accuracy.
    vqa = json.loads((layout.metric_dir("vqa_accuracy", "rec", "random") / VQA.file).read_text())
    assert o.original_accuracy == vqa["overall"]["accuracy"]
    assert o.accuracy is not None and o.accuracy < 0.5 and o.bias.n == o.n_answers
    meta = _metadata(result, keys.METRICS[CIRCULAR.name])
    assert meta["circular_n"] == o.n and meta["circular_accuracy"] == o.accuracy
    assert meta["position_bias_p"] == o.bias.p_value
    # Eight frames give motion cases (numbers from TF): every one is scored, and the random
    # baseline, which never answers with a number, has each counted unparseable, never guessed.
    numeric = json.loads((layout.metric_dir("numeric_accuracy", "rec", "random")
                          / NUMERIC.file).read_text())
    cases = numeric_cases(load_private_dataset(layout.dataset_dir("rec")))
    assert cases and numeric["n"] == len(cases) and numeric["unparseable"] == len(cases)
    assert "not_measured" not in _metadata(result, keys.METRICS[NUMERIC.name])


def test_without_rotations_circular_eval_is_not_measured(tmp_path: Path,
                                                         sample_db: Path) -> None:
    layout, result = _materialize(tmp_path, sample_db, False, [vqa_accuracy, circular_eval])
    folder = layout.metric_dir("circular_eval", "rec", "random")
    assert json.loads((folder / CIRCULAR.file).read_text()) == {"reason": "no rotations asked"}
    assert "circular_n" not in _metadata(result, keys.METRICS[CIRCULAR.name])


def test_results_gather_each_metric_file_by_name(tmp_path: Path, sample_db: Path) -> None:
    layout, _ = _materialize(tmp_path, sample_db, False, [])
    # Every metric's file as an earlier run left it, with the inputs it was computed from: the
    # results copy them, keyed by name.
    scored_from = current_inputs(layout.dataset_dir("rec"),
                                 layout.predictions_dir("rec", "random"), None)
    for spec in METRICS:
        path = layout.metric_dir(spec.name, "rec", "random") / spec.file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"reason": f"{spec.name} skipped"}))
        write_scored_inputs(path.parent, scored_from)
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("recordings", ["rec"])
    key = MultiPartitionKey({"recording": "rec", "model": "random"})
    materialize([vqa_accuracy], partition_key=key, instance=instance,
                resources={"storage": ProjectStorage(storage_root=str(tmp_path))})
    assert materialize([benchmark_results], partition_key=key, instance=instance,
                       resources={"storage": ProjectStorage(storage_root=str(tmp_path))}).success
    cell = CellScores.model_validate_json(layout.results_file("rec", "random").read_text())
    assert list(cell.scores) == [spec.name for spec in METRICS]
    vqa_report = report_of(cell)
    assert vqa_report.overall.n == cell.predictions.cases
    assert CIRCULAR.outcome(cell) == NotMeasured(reason="circular_eval skipped")
    assert cell.inputs == scored_from
    # The offline model answers as itself: its replies are counted, none is another model's.
    assert list(cell.served_models or {}) == ["random"] and cell.served_mismatch is False


def test_a_metric_refuses_answers_to_other_public_content(tmp_path: Path,
                                                          sample_db: Path) -> None:
    """A recording replaced under the same name: its new cases take the old ids. The answers
    given to the old images are refused, not matched to the new labels by id."""
    layout, _ = _materialize(tmp_path, sample_db, False, [])
    image = next((layout.dataset_dir("rec") / "assets").glob("*.png"))
    image.write_bytes(image.read_bytes() + b"\0")  # the same name, other content
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("recordings", ["rec"])
    key = MultiPartitionKey({"recording": "rec", "model": "random"})
    result = materialize([vqa_accuracy], partition_key=key, instance=instance, raise_on_error=False,
                         resources={"storage": ProjectStorage(storage_root=str(tmp_path))})
    assert not result.success
    failure = result.get_step_failure_events()[0].step_failure_data.error
    assert failure is not None and failure.cause is not None
    assert failure.cause.cls_name == "StaleInputsError"
    assert "materialize this partition's predictions first" in failure.cause.message
    assert not (layout.metric_dir("vqa_accuracy", "rec", "random") / VQA.file).exists()


def test_results_refuse_a_metric_file_from_other_answers(tmp_path: Path,
                                                         sample_db: Path) -> None:
    layout, _ = _materialize(tmp_path, sample_db, False, [vqa_accuracy, pope_presence])
    answers = layout.predictions_dir("rec", "random") / "answers.jsonl"
    # The answers changed since they were scored (a rerun asked a failed case again, say).
    answers.write_text(answers.read_text().replace('"raw_response":"', '"raw_response":"x', 1))
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("recordings", ["rec"])
    key = MultiPartitionKey({"recording": "rec", "model": "random"})
    result = materialize([benchmark_results], partition_key=key, instance=instance,
                         raise_on_error=False,
                         resources={"storage": ProjectStorage(storage_root=str(tmp_path))})
    assert not result.success
    error = result.get_step_failure_events()[0].step_failure_data.error
    assert error is not None and error.cause is not None
    message = error.cause.message
    assert "vqa_accuracy (answers)" in message and "pope_presence (answers)" in message
    assert "circular_eval, " in message  # never scored: nothing says what it was computed from
    assert "materialize those metrics first" in message
    assert not layout.results_file("rec", "random").exists()
