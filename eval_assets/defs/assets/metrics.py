"""Stage: every metric of a (recording, model) partition, then the combined results file.

One asset per :data:`eval_assets.scoring.METRICS` entry (:data:`METRIC_ASSETS`, registered
directly in the code location), all made by :func:`metric_asset`: it
loads the partition's run and private dataset (and what the metric needs: annotations, the judge,
the similarity scorer), calls the spec's Dagster-free ``score`` and writes its result, or its
not-measured record, to the spec's file in the metric's folder. ``benchmark_results`` gathers
every metric's file into one :class:`~eval_assets.schemas.results.CellScores` per partition.
"""

# No `from __future__ import annotations`: Dagster checks the context annotation at runtime.

from contextlib import ExitStack
from pathlib import Path
from typing import Any

from dagster import (
    AssetDep,
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    MaterializeResult,
    MetadataValue,
    asset,
)
from pydantic import BaseModel

from eval_assets.atomic import write_text_atomic
from eval_assets.defs import keys
from eval_assets.defs.automation_conditions import CELL_RECOMPUTE, NIGHT_TAG, OWNERS
from eval_assets.defs.partitions import (
    cell_of,
    per_recording,
    recording_model_partitions,
)
from eval_assets.defs.resources import JudgeResource, ProjectStorage, ScoringResource
from eval_assets.jsonio import read_json
from eval_assets.model_runs.preflight import load_capabilities
from eval_assets.publication import record_results
from eval_assets.schemas.results import CellScores, NotMeasured
from eval_assets.scoring import METRICS
from eval_assets.scoring.inputs import (
    PrivateDataset,
    load_annotations,
    load_private_dataset,
    load_run,
)
from eval_assets.scoring.provenance import (
    check_answers_match,
    check_gathered,
    current_inputs,
    write_scored_inputs,
)
from eval_assets.scoring.spec import JudgeHandle, Markdown, MetricSpec, ScoringInputs, Similarity
from eval_assets.scoring.vqa import VQA, prediction_counts, report_of
from eval_assets.served_model import served_in_run
from eval_assets.vqa.overrides import INVALID, ORPHANED

GROUP = "metrics"
INPUTS: list[AssetKey | AssetDep] = [
    keys.PREDICTIONS, AssetDep(keys.PRIVATE_LABELS, partition_mapping=per_recording)]
RESULTS_VERSION = "5"  # results.json: identity, counts, scores keyed by metric name, inputs
SCORING_VERSION = "1"
"""The metric assets' own part of their code version (beside each spec's): 1 = each metric's
folder records the inputs it was computed from (``inputs.json``)."""


def _partition(context: AssetExecutionContext) -> tuple[str, str]:
    return cell_of(context.partition_key)


def _write(path: Path, document: BaseModel) -> Path:
    write_text_atomic(path, document.model_dump_json(indent=2) + "\n")
    return path


def _metadata_value(value: Any) -> Any:
    if isinstance(value, Markdown):
        return MetadataValue.md(str(value))
    if isinstance(value, Path):
        return MetadataValue.path(str(value))
    if isinstance(value, dict):
        return MetadataValue.json(value)
    return value


def _overrides_metadata(context: AssetExecutionContext, data: PrivateDataset) -> dict[str, Any]:
    """How many label overrides were applied, orphaned and invalid; each one not applied is
    logged with its file, case, answer and fix."""
    resolution = data.overrides
    if resolution is None or not resolution.states:
        return {}
    for problem in resolution.problems():
        context.log.warning(problem)
    return {"overrides_applied": resolution.count("applied"),
            "overrides_orphaned": resolution.count(*ORPHANED),
            "overrides_invalid": resolution.count(*INVALID)}


def _score(context: AssetExecutionContext, spec: MetricSpec[Any]) -> MaterializeResult:
    """Score one partition with ``spec`` and write its file; the asset body of every metric."""
    recording, model = _partition(context)
    resources = context.resources
    layout = resources.storage.layout()
    out_dir = layout.metric_dir(spec.name, recording, model)
    dataset_dir, run_dir = layout.dataset_dir(recording), layout.predictions_dir(recording, model)
    # Answers to other public content (a recording replaced under the same name) share case ids
    # with the new labels: never score them, whatever the order the runs came in.
    check_answers_match(dataset_dir, run_dir, f"{spec.name}: {model} on {recording}")
    overrides = resources.storage.overrides_file(recording) if "labels" in spec.needs else None
    scored_from = current_inputs(dataset_dir, run_dir, overrides)
    with ExitStack() as stack:
        judge = None
        if "judge" in spec.needs:
            judge_resource: JudgeResource = resources.judge
            config, client = stack.enter_context(judge_resource.judge())
            judge = JudgeHandle(config, client, judge_resource.self_judging_models(config))
        scoring: ScoringResource | None = getattr(resources, "scoring", None)
        similarity = None
        if "similarity" in spec.needs and scoring is not None:
            similarity = Similarity(scoring.scorer(), scoring.embedder,
                                    scoring.hallucination_threshold)
        annotations = (load_annotations(scoring.annotations_path(), recording,
                                        layout.dataset_dir(recording))
                       if "annotations" in spec.needs and scoring is not None else None)
        inputs = ScoringInputs(
            recording=recording, model=model,
            data=load_private_dataset(dataset_dir, overrides),
            run=load_run(run_dir), run_dir=run_dir, out_dir=out_dir,
            annotations=None if annotations is None else annotations.by_frame,
            judge=judge, similarity=similarity)
        if annotations is not None and annotations.unmatched:
            # Never attached to another image: the annotated image is not in this dataset.
            inputs.notes["annotations_unmatched"] = len(annotations.unmatched)
            inputs.notes["annotations_unmatched_frames"] = sorted(
                row.frame_index for row in annotations.unmatched)
            inputs.warnings.extend(
                f"{annotations.source}: the annotation of frame_index {row.frame_index} "
                f"(image {row.image_sha256}) matches no frame of {recording}'s dataset (the "
                "recording was replaced or its selection changed); not used"
                for row in annotations.unmatched)
        outcome = spec.score(inputs)
    path = _write(out_dir / spec.file, outcome)
    write_scored_inputs(out_dir, scored_from)
    for line in inputs.warnings:
        context.log.warning(line)
    meta: dict[str, Any] = {"path": path} | _overrides_metadata(context, inputs.data)
    if isinstance(outcome, NotMeasured):
        meta["not_measured"] = outcome.reason
    else:
        meta |= spec.metadata(outcome)
    meta |= inputs.notes
    return MaterializeResult(metadata={k: _metadata_value(v) for k, v in meta.items()
                                       if v is not None})


def metric_asset(spec: MetricSpec[Any]) -> AssetsDefinition:
    """The per-(recording, model) asset of one metric: same partitions, group, automation and
    owners for all; the judge's config is a dependency of a metric that needs the judge, the
    recording's label overrides of one that scores against gold answers."""
    resources = {"storage"}
    if spec.needs & {"annotations", "similarity"}:
        resources.add("scoring")
    if "judge" in spec.needs:
        resources.add("judge")
    deps = [*INPUTS, keys.JUDGE_CONFIG] if "judge" in spec.needs else list(INPUTS)
    if "labels" in spec.needs:
        deps.append(AssetDep(keys.LABEL_OVERRIDES, partition_mapping=per_recording))

    @asset(key=AssetKey(spec.name), partitions_def=recording_model_partitions,
           group_name=GROUP, deps=deps, code_version=f"{spec.version}.{SCORING_VERSION}",
           automation_condition=CELL_RECOMPUTE, kinds={"json"}, owners=OWNERS,
           required_resource_keys=resources, description=spec.description)
    def _metric(context: AssetExecutionContext) -> MaterializeResult:
        return _score(context, spec)

    return _metric


METRIC_ASSETS: dict[str, AssetsDefinition] = {spec.name: metric_asset(spec) for spec in METRICS}
"""One asset per registered metric, by its name (its asset key), in the registry's order:
registered in the code location directly (``definitions.py``), so a new metric's module is all
it takes; a mapping, which ``load_assets_from_modules`` does not collect a second time."""


@asset(key=keys.BENCHMARK_RESULTS, partitions_def=recording_model_partitions, group_name=GROUP,
       deps=[AssetKey(spec.name) for spec in METRICS], code_version=RESULTS_VERSION,
       automation_condition=CELL_RECOMPUTE, kinds={"json"}, owners=OWNERS)
def benchmark_results(context: AssetExecutionContext, storage: ProjectStorage) -> MaterializeResult:
    """Every metric of the partition in one ``CellScores`` (``results.json``): identity,
    prediction counts, and each metric's file keyed by its name."""
    recording, model = _partition(context)
    layout = storage.layout()
    dataset_dir, run_dir = layout.dataset_dir(recording), layout.predictions_dir(recording, model)
    inputs = current_inputs(dataset_dir, run_dir, storage.overrides_file(recording))
    # Every metric file must come from these very inputs: one left from before a change would
    # put a number from other content into the results.
    check_gathered([(spec.name, layout.metric_dir(spec.name, recording, model),
                     "labels" in spec.needs) for spec in METRICS],
                   inputs, f"benchmark_results: {model} on {recording}")
    data, run = load_private_dataset(dataset_dir), load_run(run_dir)
    scores = {spec.name: read_json(layout.metric_dir(spec.name, recording, model) / spec.file)
              for spec in METRICS}
    capabilities = load_capabilities(run_dir)
    served = served_in_run(f"{model} on {recording}", [*run.answers.values(),
                           *run.descriptions.values()],
                           capabilities.listed_models if capabilities is not None else None)
    if served.warning is not None:
        context.log.warning(served.warning)
    cell = CellScores(recording=recording, model=model,
                      dataset_sha256=inputs.dataset_sha256,
                      predictions=prediction_counts(data, run,
                          VQA.result_model.model_validate(scores[VQA.name])),
                      scores=scores, inputs=inputs,
                      served_models=served.served_models or None,
                      served_mismatch=served.mismatch if served.served_models else None)
    path = _write(layout.results_file(recording, model), cell)
    record_results(layout, recording, model)  # what was published, verified by every run
    meta = {"vqa_accuracy": report_of(cell).overall.accuracy,
            "path": MetadataValue.path(str(path))}
    night = context.run.tags.get(NIGHT_TAG)
    if night:  # a nightly run keeps its results for good, beside the current ones
        kept = _write(layout.nightly_results_file(night, recording, model), cell)
        meta["nightly"] = MetadataValue.path(str(kept))
    return MaterializeResult(metadata=meta)
