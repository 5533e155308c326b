"""Stage: the leaderboard across every partition and the static HTML report."""

# No `from __future__ import annotations`: Dagster checks the context annotation at runtime.

import math

from dagster import (
    AllPartitionMapping,
    AssetDep,
    AssetExecutionContext,
    MaterializeResult,
    MetadataValue,
    asset,
)

from eval_assets.benchmark.collect import load_results
from eval_assets.defs.assets.metrics import benchmark_results
from eval_assets.defs.partitions import model_partitions, recordings_partitions
from eval_assets.defs.resources import ProjectStorage
from eval_assets.report.publish import publish_leaderboard, publish_report

GROUP = "report"


def _cell(value: object) -> str:
    if isinstance(value, float):
        return "n/a" if math.isnan(value) else f"{value:.3f}"
    return str(value)


def _results(context: AssetExecutionContext, storage: ProjectStorage):
    recordings = context.instance.get_dynamic_partitions(recordings_partitions.name)
    return load_results(storage.layout(), recordings, model_partitions.get_partition_keys())


@asset(group_name=GROUP,
       deps=[AssetDep(benchmark_results, partition_mapping=AllPartitionMapping())])
def leaderboard(context: AssetExecutionContext, storage: ProjectStorage) -> MaterializeResult:
    """Every model × recording with results, plus pooled all-recordings rows (Parquet + JSON),
    and a paired comparison (McNemar, clustered difference interval, MDD) of every two models."""
    results = _results(context, storage)
    if not results:
        raise RuntimeError("no benchmark_results found: materialize predictions and metrics for "
                           "at least one (recording, model) partition first")
    table, parquet, json_path = publish_leaderboard(storage.layout(), results)
    columns = ["model", "recording", "vqa_accuracy", "vqa_ci_low", "vqa_ci_high", "n_cases"]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |"
              for row in table[columns].itertuples(index=False)]
    return MaterializeResult(metadata={
        "rows": len(table), "parquet": MetadataValue.path(str(parquet)),
        "json": MetadataValue.path(str(json_path)),
        "preview": MetadataValue.md("\n".join(lines)),
    })


@asset(group_name=GROUP, deps=[leaderboard])
def report(context: AssetExecutionContext, storage: ProjectStorage) -> MaterializeResult:
    """The static HTML report: headline, paired comparisons, charts, metric sections, and every
    case browsable by model, family, recording and outcome (one overlay per frame)."""
    results = _results(context, storage)
    path = publish_report(storage.layout(), results)
    context.log.info(f"report: {path}")
    return MaterializeResult(metadata={"path": MetadataValue.path(str(path)),
                                       "partitions": len(results)})
