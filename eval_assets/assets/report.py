"""Stage: the leaderboard across every partition and the static HTML report."""

# No `from __future__ import annotations`: Dagster checks the context annotation at runtime.

from dagster import (
    AllPartitionMapping,
    AssetDep,
    AssetExecutionContext,
    MaterializeResult,
    MetadataValue,
    asset,
)

from eval_assets.assets.metrics import benchmark_results
from eval_assets.benchmark.collect import load_results, publish_leaderboard, publish_report
from eval_assets.partitions import model_partitions, recordings_partitions
from eval_assets.resources import ProjectStorage

GROUP = "report"


def _results(context: AssetExecutionContext, storage: ProjectStorage):
    recordings = context.instance.get_dynamic_partitions(recordings_partitions.name)
    return load_results(storage.layout(), recordings, model_partitions.get_partition_keys())


@asset(group_name=GROUP,
       deps=[AssetDep(benchmark_results, partition_mapping=AllPartitionMapping())])
def leaderboard(context: AssetExecutionContext, storage: ProjectStorage) -> MaterializeResult:
    """Every model × recording with results, plus pooled all-recordings rows (Parquet + JSON)."""
    results = _results(context, storage)
    if not results:
        raise RuntimeError("no benchmark_results found: materialize predictions and metrics for "
                           "at least one (recording, model) partition first")
    table, parquet, json_path = publish_leaderboard(storage.layout(), results)
    columns = ["model", "recording", "vqa_accuracy", "vqa_ci_low", "vqa_ci_high", "n_cases"]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(f"{v:.3f}" if isinstance(v, float) else str(v) for v in row)
              + " |" for row in table[columns].itertuples(index=False)]
    return MaterializeResult(metadata={
        "rows": len(table), "parquet": MetadataValue.path(str(parquet)),
        "json": MetadataValue.path(str(json_path)),
        "preview": MetadataValue.md("\n".join(lines)),
    })


@asset(group_name=GROUP, deps=[leaderboard])
def report(context: AssetExecutionContext, storage: ProjectStorage) -> MaterializeResult:
    """The static HTML report: headline, charts, metric sections, per-case overlay cards."""
    results = _results(context, storage)
    path = publish_report(storage.layout(), results)
    context.log.info(f"report: {path}")
    return MaterializeResult(metadata={"path": MetadataValue.path(str(path)),
                                       "partitions": len(results)})
