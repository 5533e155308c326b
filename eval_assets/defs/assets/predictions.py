"""Stage: answers (and frame descriptions) of every declared model on every recording's dataset."""

# No `from __future__ import annotations`: Dagster checks the context annotation at runtime.

from typing import Any

from dagster import (
    AssetDep,
    AssetExecutionContext,
    MaterializeResult,
    MetadataValue,
    asset,
)

from eval_assets.defs import keys
from eval_assets.defs.automation_conditions import CELL_RECOMPUTE, NIGHT_TAG, OWNERS
from eval_assets.defs.partitions import (
    cell_of,
    model_partitions,
    per_model,
    per_recording,
    recording_model_partitions,
)
from eval_assets.defs.resources import ProjectStorage, VLMClientResource
from eval_assets.layout import RUN_ANSWERS, RUN_ROTATIONS, RUN_SUMMARY
from eval_assets.model_runs.batch import batch_runner_for
from eval_assets.model_runs.runner import run_model
from eval_assets.model_runs.spatial import spatial_line
from eval_assets.schemas.cost import NO_PRICE

__all__ = ["model_partitions", "predictions"]


@asset(
    key=keys.PREDICTIONS,
    partitions_def=recording_model_partitions,
    group_name="predictions",
    # Only the public side of the dataset, and the model's own entry in the models file.
    deps=[AssetDep(keys.PUBLIC_CASES, partition_mapping=per_recording),
          AssetDep(keys.MODEL_CONFIG, partition_mapping=per_model)],
    pool="vlm_api",
    # 5: summary.json's cost counts every call (usage.jsonl, by kind), controls under a budget.
    code_version="5",
    automation_condition=CELL_RECOMPUTE,
    kinds={"openai"},
    owners=OWNERS,
)
def predictions(context: AssetExecutionContext, storage: ProjectStorage,
                vlm: VLMClientResource) -> MaterializeResult:
    """One model's answers to a recording's public cases, resumed from earlier attempts.

    With the ``vlm`` resource's ``rotations`` (on by default) each case is also asked with its
    choices rotated, for CircularEval and position bias in the report (``rotations.jsonl``).

    Calls that still failed after retries stay recorded failures (scored as failed calls, never
    guessed); re-materializing the partition retries only them. A run in which no call succeeded
    (an endpoint that is down or misconfigured) fails the partition instead.
    """
    recording, model = cell_of(context.partition_key)
    layout = storage.layout()
    out_dir = layout.predictions_dir(recording, model)
    night = context.run.tags.get(NIGHT_TAG)
    spec = vlm.model_spec(model)
    # The entry's own prompt controls win over the resource's: they are part of its observed
    # data version (model_config), so setting one in the models file re-runs this model's cells.
    c = spec.prompt_controls(vlm.prompt_controls())
    with vlm.open(model, requery=night) as client:
        # A nightly run of a batch model goes through the Batch API; one that ends before the
        # batch does leaves it in flight for the next tick to collect.
        endpoint = client.settings.endpoint
        batcher = batch_runner_for(
            client.settings.base_url, endpoint.api_key(), max_tokens=endpoint.max_tokens,
            timeout_s=endpoint.timeout_s) if spec.batch and night else None
        result = run_model(layout.dataset_dir(recording), client, out_dir, batch=batcher,
                           rotations=vlm.rotations, flips=vlm.flips,
                           time_flips=vlm.time_flips, repeat_frames=vlm.repeat_frames,
                           time_control_share=vlm.time_control_share,
                           templates=c.templates, repeats=c.repeats,
                           repeat_temperature=c.repeat_temperature, structured=c.structured,
                           prompt_control_cases=c.prompt_control_cases,
                           price=spec.price, budget_usd=spec.budget_usd)
    answers = result.summary.answers
    where = f"{model} on {recording}"
    if result.batch_in_flight is not None:
        context.log.info(f"{where}: batch {result.batch_in_flight} in flight; the next run "
                         f"collects it")
    elif answers.success == 0:
        raise RuntimeError(
            f"{where}: no call succeeded ({answers.error_counts}); see {out_dir / RUN_ANSWERS} "
            f"for the errors, fix the endpoint in the models file or the vlm resource, and "
            f"re-materialize")
    for switch, why in (result.not_asked or {}).items():
        context.log.warning(f"{where}: {switch} was not asked: {why}")
    rotated = result.summary.rotations
    cost = result.summary.cost
    if cost is not None and cost.budget is not None and cost.budget.stopped:
        context.log.warning(
            f"{where}: budget_usd reached: ${cost.budget.spent_usd:.4f} spent of "
            f"${cost.budget.budget_usd:.4f}, {cost.budget.calls_left} calls left; "
            f"re-materialize to continue")
    if not result.summary.complete:
        failed = answers.failed + (rotated.failed if rotated else 0)
        errors = dict(answers.error_counts)
        for category, count in (rotated.error_counts if rotated else {}).items():
            errors[category] = errors.get(category, 0) + count
        context.log.warning(
            f"{where}: {failed} failed answers ({errors}); they are kept as failures; "
            f"re-materialize this partition to retry only them")
    if result.summary.served_mismatch:  # the run's warning, named in the Dagster log too
        context.log.warning(f"{where}: replies from another model than declared: "
                            f"{result.summary.served_models}; see {out_dir / RUN_SUMMARY}")
    spatial = result.summary.spatial
    if spatial is not None and spatial.layouts.get("mosaic"):
        context.log.warning(f"{where}: {spatial_line(spatial)}")
    spatial_meta: dict[str, Any] = {} if spatial is None else {
        "spatial_layouts": MetadataValue.json(spatial.layouts),
        "endpoint_max_images": spatial.endpoint_max_images}
    rotation_meta: dict[str, Any] = {} if rotated is None else {
        "num_rotations": rotated.success, "num_rotations_failed": rotated.failed,
        "rotations": MetadataValue.path(str(out_dir / RUN_ROTATIONS))}
    return MaterializeResult(metadata={
        "complete": result.summary.complete,
        "num_answers": answers.success,
        "num_failed": answers.failed,
        "error_counts": MetadataValue.json(answers.error_counts),
        "unmatched_choices": answers.unmatched_choices,
        "num_descriptions": (result.summary.descriptions.success
                             if result.summary.descriptions else 0),
        "calls_made": result.calls_made,
        "resumed": result.skipped,
        "latency_p50_s": answers.latency_s.p50,
        "total_tokens": answers.tokens.total_tokens,
        "cost_usd": cost.total_usd if cost is not None else NO_PRICE,
        "cost_by_kind": MetadataValue.json(
            {k: v.model_dump(mode="json") for k, v in cost.by_kind.items()}
            if cost is not None else {}),
        "config_hash": result.summary.config_hash,
        "served_models": MetadataValue.json(result.summary.served_models),
        "summary": MetadataValue.path(str(out_dir / RUN_SUMMARY)),
        "answers": MetadataValue.path(str(out_dir / RUN_ANSWERS)),
        **rotation_meta,
        **spatial_meta,
    })
