"""Asset checks: a dataset must be non-empty and leak-free before any model sees it (blocking);
a model whose answers mostly match no choice is flagged (warning); a model whose nightly results
really changed since the previous night is flagged (warning, ``nightly_drift``); every board the
daemon builds first finds every published dataset, results file and board file as its asset
published it, by content (blocking, ``published_files_intact``)."""

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
from eval_assets.defs.automation_conditions import NIGHT_TAG
from eval_assets.defs.partitions import (
    cell_of,
    recording_model_partitions,
    recordings_partitions,
)
from eval_assets.defs.resources import ProjectStorage, ScoringResource
from eval_assets.jsonio import read_model
from eval_assets.metrics.drift import NightDrift
from eval_assets.metrics.vqa import VqaReport
from eval_assets.publication import verify_publications
from eval_assets.report.history import load_history, night_cell_drift
from eval_assets.schemas.vqa import DATASET_CASES, DATASET_LABELS
from eval_assets.scoring.vqa import VQA
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


@partitioned_check(asset=keys.METRICS[VQA.name], partitions_def=recording_model_partitions,
                   blocking=False,
                   description="Warns when too many answers match no choice (ScoringResource "
                               "bound).")
def parse_failure_rate_below_bound(context: AssetCheckExecutionContext, storage: ProjectStorage,
                                   scoring: ScoringResource) -> AssetCheckResult:
    """Parse-failure rate of the model's answers at or under ``max_parse_failure_rate``."""
    recording, model = cell_of(context.partition_key)
    folder = storage.layout().metric_dir(VQA.name, recording, model)
    report = read_model(folder / VQA.file, VqaReport)
    rate, bound = report.overall.parse_failure_rate, scoring.max_parse_failure_rate
    # No answered case means no rate (n/a), which is not a failure of this check.
    return AssetCheckResult(passed=rate is None or rate <= bound, severity=AssetCheckSeverity.WARN,
                            metadata={"parse_failure_rate": rate, "bound": bound})


@partitioned_check(asset=keys.BENCHMARK_RESULTS, partitions_def=recording_model_partitions,
                   blocking=False,
                   description="Warns when the model's kept nightly results changed for real since "
                               "its previous night on this recording (overall or in a family): "
                               "McNemar p < 0.05 after Benjamini-Hochberg adjustment over the "
                               "night's families x recordings x models, the frame-clustered "
                               "bootstrap interval excludes 0 and the change is at least the "
                               "minimum detectable difference at the level the adjustment "
                               "tested at.")
def nightly_drift(context: AssetCheckExecutionContext,
                  storage: ProjectStorage) -> AssetCheckResult:
    """The run's night (its night tag; else the latest kept night) against the previous night.

    The p-values are adjusted over every cell of that night (all recordings and models), so the
    check reads the whole night's history, not only its own cell's.
    """
    recording, model = cell_of(context.partition_key)
    history = load_history(storage.layout().history_dir())
    night = context.run.tags.get(NIGHT_TAG) or max(
        (h.night for h in history if (h.result.recording, h.result.model) == (recording, model)),
        default=None)
    # Only this night's comparison: kept nights after it (a backfill of an old night) are not
    # this run's business.
    drift = [d for rec, d in (night_cell_drift(history, night) if night else [])
             if rec == recording and d.model == model]
    flagged = [d for d in drift if d.flagged]
    return AssetCheckResult(
        passed=not flagged, severity=AssetCheckSeverity.WARN,
        description=_drift_summary(night, drift, flagged),
        metadata={"night": night or "none", "nights_compared": (
            f"{drift[0].night_before} -> {drift[0].night_after}" if drift else "none"),
            "n_common": drift[0].n_common if drift else 0,
            "flagged": MetadataValue.json([_drift_json(d) for d in flagged]),
            "comparisons": MetadataValue.md(_drift_table(drift))})


@asset_check(asset=keys.LEADERBOARD, blocking=True,
             description="Every published dataset (public cases, private labels), results file, "
                         "the leaderboard and the report is, by content, what its asset "
                         "published; else the report is not built on it (each damaged file is "
                         "named with the assets that rebuild it).")
def published_files_intact(context: AssetCheckExecutionContext,
                           storage: ProjectStorage) -> AssetCheckResult:
    """Each publication record of the storage root against its files now
    (:mod:`eval_assets.publication`)."""
    damaged = verify_publications(storage.layout())
    fixes = sorted({f"materialize {', '.join(d.record.assets)}{d.record.partition_text()}"
                    for d in damaged})
    return AssetCheckResult(
        passed=not damaged,
        description=("every published file is as published" if not damaged else
                     f"{len(damaged)} published files are not as published; fix: "
                     + "; ".join(fixes) + " (each rebuilds its files from their inputs), or "
                     "`eval-assets run` the recording, which does so"),
        metadata={"num_damaged": len(damaged),
                  "damaged": MetadataValue.json([d.describe() for d in damaged[:50]])})


def _drift_summary(night: str | None, drift: list[NightDrift], flagged: list[NightDrift]) -> str:
    if not drift:
        return (f"night {night}: no earlier kept night to compare with" if night
                else "no kept nightly results yet")
    if not flagged:
        return (f"{drift[0].night_before} -> {drift[0].night_after}: no real change "
                f"({len(drift)} comparisons)")
    parts = [f"{d.family} {d.difference * 100:+.1f} pts (MDD {d.mdd * 100:.1f})"
             for d in flagged if d.difference is not None and d.mdd is not None]
    return f"{drift[0].night_before} -> {drift[0].night_after}: drift in " + "; ".join(parts)


def _drift_json(d: NightDrift) -> dict[str, object]:
    return d.model_dump(mode="json", include={
        "family", "night_before", "night_after", "n_common", "difference", "ci_low", "ci_high",
        "mcnemar_p", "mcnemar_p_adjusted", "p_adjustment", "n_tests", "mdd"})


def _pts(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:+.1f}"


def _drift_table(drift: list[NightDrift]) -> str:
    lines = ["| family | n common / frames | difference [95% CI], pts | McNemar p (raw) "
             "| BH p | MDD, pts | flagged |", "|---|---|---|---|---|---|---|"]
    for d in drift:
        mdd = "n/a" if d.mdd is None else f"{d.mdd * 100:.1f}"
        adjusted = "n/a" if d.mcnemar_p_adjusted is None else f"{d.mcnemar_p_adjusted:.4f}"
        lines.append(f"| {d.family} | {d.n_common} / {d.n_frames} | {_pts(d.difference)} "
                     f"[{_pts(d.ci_low)}, {_pts(d.ci_high)}] | {d.mcnemar_p:.4f} | {adjusted} "
                     f"| {mdd} | {'yes' if d.flagged else 'no'} |")
    return "\n".join(lines) if drift else "No earlier night to compare with."


def _count_lines(path) -> int:
    if not path.is_file():
        return 0
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
