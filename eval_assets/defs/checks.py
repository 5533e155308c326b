"""Asset checks: a dataset must be non-empty and leak-free before any model sees it (blocking);
a model whose answers mostly match no choice is flagged (warning)."""

# No `from __future__ import annotations`: Dagster inspects the context annotation at runtime.

from collections.abc import Callable
from typing import Any

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    MetadataValue,
    PreviewWarning,
    asset_check,
)

from eval_assets.defs import keys
from eval_assets.defs.accepted import quietly
from eval_assets.defs.assets.metrics import VQA_FILE
from eval_assets.defs.partitions import (
    cell_of,
    recording_model_partitions,
    recordings_partitions,
)
from eval_assets.defs.resources import ProjectStorage, ScoringResource
from eval_assets.jsonio import read_model
from eval_assets.metrics.vqa import VqaReport
from eval_assets.schemas.vqa import DATASET_CASES, DATASET_LABELS
from eval_assets.vqa.leakage import find_leaks


def partitioned_check(**kwargs: Any) -> Callable[[Callable[..., AssetCheckResult]],
                                               AssetChecksDefinition]:
    """``asset_check`` with ``partitions_def``, its PreviewWarning silenced at this one call.

    We accept the preview API on purpose: without ``partitions_def`` a check on a partitioned
    asset loads every partition, which is wrong for per-recording checks.
    """
    return lambda fn: quietly(PreviewWarning, lambda: asset_check(**kwargs)(fn))


@partitioned_check(asset=keys.PUBLIC_CASES, partitions_def=recordings_partitions,
                   blocking=True,
                   description="The published dataset has at least one case and one label per "
                               "case.")
def dataset_not_empty(context: AssetCheckExecutionContext,
                      storage: ProjectStorage) -> AssetCheckResult:
    """Cases and labels exist and match one to one."""
    folder = storage.layout().dataset_dir(context.partition_key)
    n_cases = _count_lines(folder / DATASET_CASES)
    n_labels = _count_lines(folder / DATASET_LABELS)
    return AssetCheckResult(passed=n_cases > 0 and n_cases == n_labels,
                            metadata={"cases": n_cases, "labels": n_labels})


@partitioned_check(asset=keys.PUBLIC_CASES, partitions_def=recordings_partitions,
                   blocking=True,
                   description="No private label or audit data in cases.jsonl or assets/.")
def no_label_leakage(context: AssetCheckExecutionContext,
                     storage: ProjectStorage) -> AssetCheckResult:
    """The public files expose nothing from labels.jsonl or audit/."""
    leaks = find_leaks(storage.layout().dataset_dir(context.partition_key))
    return AssetCheckResult(passed=not leaks, metadata={
        "num_problems": len(leaks), "problems": MetadataValue.json(leaks[:20])})


@partitioned_check(asset=keys.VQA_ACCURACY, partitions_def=recording_model_partitions,
                   blocking=False,
                   description="Warns when too many answers match no choice (ScoringResource "
                               "bound).")
def parse_failure_rate_below_bound(context: AssetCheckExecutionContext, storage: ProjectStorage,
                                   scoring: ScoringResource) -> AssetCheckResult:
    """Parse-failure rate of the model's answers at or under ``max_parse_failure_rate``."""
    recording, model = cell_of(context.partition_key)
    folder = storage.layout().metric_dir(keys.name(keys.VQA_ACCURACY), recording, model)
    report = read_model(folder / VQA_FILE, VqaReport)
    rate, bound = report.overall.parse_failure_rate, scoring.max_parse_failure_rate
    # No answered case means no rate (n/a), which is not a failure of this check.
    return AssetCheckResult(passed=rate is None or rate <= bound, severity=AssetCheckSeverity.WARN,
                            metadata={"parse_failure_rate": rate, "bound": bound})


def _count_lines(path) -> int:
    if not path.is_file():
        return 0
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
