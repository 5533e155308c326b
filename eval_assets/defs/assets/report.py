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

from eval_assets.defs import keys
from eval_assets.defs.automation_conditions import OWNERS, REPORT_SETTLED, SETTLED
from eval_assets.defs.partitions import model_partitions, recordings_partitions
from eval_assets.defs.resources import ProjectStorage, ScoringResource
from eval_assets.publication import record_leaderboard, record_report
from eval_assets.scoring.collect import load_results

# eval_assets.report.publish (and matplotlib with it) is imported inside the two assets: every run
# process, code server and CLI command loads this module, and only the board's runs draw. Defining
# the code location took 1.9 s of CPU instead of 2.4 s (three fresh interpreters each).

GROUP = "report"


def _cell(value: object) -> str:
    if isinstance(value, float):
        return "n/a" if math.isnan(value) else f"{value:.3f}"
    return str(value)


def _expected(context: AssetExecutionContext) -> dict[str, list[str]]:
    """Every recording partition and configured model: cells without results show as missing."""
    return {"recordings": context.instance.get_dynamic_partitions(recordings_partitions.name),
            "models": list(model_partitions.get_partition_keys())}


def _results(context: AssetExecutionContext, storage: ProjectStorage):
    expected = _expected(context)
    return load_results(storage.layout(), expected["recordings"], expected["models"])


# Every cell's chain, not only its results: the settled condition waits while any of them is
# pending. With benchmark_results alone, a label override (or a replaced recording) made the
# board build from the old results before the metrics that read them had even been requested.
@asset(key=keys.LEADERBOARD, group_name=GROUP,
       deps=[AssetDep(k, partition_mapping=AllPartitionMapping()) for k in keys.CELL_ASSETS],
       code_version="10", automation_condition=SETTLED, kinds={"parquet", "json"}, owners=OWNERS)
def leaderboard(context: AssetExecutionContext, storage: ProjectStorage) -> MaterializeResult:
    """Every model × recording with results, plus pooled all-recordings rows (Parquet + JSON),
    and a paired comparison (McNemar, clustered difference interval, MDD) of every two models."""
    results = _results(context, storage)
    if not results:
        raise RuntimeError("no benchmark_results found: materialize predictions and metrics for "
                           "at least one (recording, model) partition first")
    expected = _expected(context)
    from eval_assets.report.publish import publish_leaderboard

    table, parquet, json_path = publish_leaderboard(
        storage.layout(), results, recordings=expected["recordings"], models=expected["models"],
        labels_dir=storage.labels_path())
    record_leaderboard(storage.layout())  # what was published, verified by every run
    columns = ["model", "case_set", "recording", "vqa_accuracy", "vqa_ci_low", "vqa_ci_high",
               "n_cases"]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |"
              for row in table[columns].itertuples(index=False)]
    return MaterializeResult(metadata={
        "rows": len(table), "parquet": MetadataValue.path(str(parquet)),
        "json": MetadataValue.path(str(json_path)),
        "preview": MetadataValue.md("\n".join(lines)),
    })


# The report draws each case from the dataset, the evidence and every model's answers and judge
# verdicts, so those are its declared inputs too, not only the leaderboard.
_EVERY = AllPartitionMapping()


# 13: the cost section counts every call of each run (usage.jsonl).
@asset(key=keys.REPORT, group_name=GROUP, code_version="13",
       automation_condition=REPORT_SETTLED,
       deps=[keys.LEADERBOARD,
             *(AssetDep(k, partition_mapping=_EVERY) for k in (
                 # It reads every cell's results too: so it waits for whatever the
                 # leaderboard still waits for, and never runs before it.
                 *keys.CELL_ASSETS, keys.PUBLIC_CASES, keys.PRIVATE_LABELS,
                 keys.DETECTIONS_MASKS, keys.POINTCLOUD_FRAMES, keys.LABEL_OVERRIDES,
                 keys.EVIDENCE_QUALITY))],
       kinds={"html"}, owners=OWNERS)
def report(context: AssetExecutionContext, storage: ProjectStorage,
           scoring: ScoringResource) -> MaterializeResult:
    """The static HTML report: the answer first (best model, margin, certainty, baselines,
    what to distrust), headline, paired comparisons, charts, metric sections, the label audit,
    and every case browsable by model, family, recording, outcome, right or wrong and the bias
    audit's blind-solvable flag (one overlay per frame)."""
    results = _results(context, storage)
    expected = _expected(context)
    from eval_assets.report.publish import publish_report

    # The leaderboard's table, coverage, comparisons and baselines are read back from its
    # output (this asset runs after it), not rebuilt: no dataset is hashed again here.
    path = publish_report(storage.layout(), results, recordings=expected["recordings"],
                          labels_dir=storage.labels_path(),
                          annotations_dir=scoring.annotations_path())
    record_report(storage.layout())  # what was published, verified by every run
    context.log.info(f"report: {path}")
    return MaterializeResult(metadata={"path": MetadataValue.path(str(path)),
                                       "partitions": len(results)})
