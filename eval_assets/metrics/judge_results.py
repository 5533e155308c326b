"""The judge's output documents: per-row results, AVLM's statistics, and the summary.

``llm_judge_predictions.json`` (statistics, results, failures, metadata) and
``llm_judge_results.json`` (the summary, per class) keep AVLM's keys and arithmetic; failures are
counted, never averaged, and with nothing scored the score fields are null (AVLM's 0 in
compatibility mode).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from eval_assets.metrics.avlm_rows import PredictionRow
from eval_assets.metrics.judge_calibration import CalibrationReport
from eval_assets.metrics.judge_reply import JudgeOutcome


@dataclass(frozen=True)
class JudgedRow:
    """A row and its outcome."""

    row: PredictionRow
    outcome: JudgeOutcome



def result_record(judged: JudgedRow, model_used: str) -> dict[str, Any]:
    """One entry of ``results``: AVLM's keys, plus ``error_category`` and ``attempts``.

    A score that AVLM compatibility coerced also lists how (``avlm_coercions``, last key).
    """
    row, out = judged.row, judged.outcome
    if out.ok:
        record = {
            "score": out.score, "reasoning": out.reasoning, "strengths": out.strengths,
            "weaknesses": out.weaknesses, "metadata_alignment": out.metadata_alignment,
            "index": row.index, "id": row.id, "gt": row.ground_truth, "pred": row.prediction,
            "conversation": row.prompt_turns(), "metadata": row.metadata,
            "model_used": model_used, "metadata_mode_used": out.metadata_mode_used,
            "class": row.question_class, "attempts": out.attempts,
        }
        if out.coercions:
            record["avlm_coercions"] = list(out.coercions)
        return record
    return {
        "index": row.index, "id": row.id, "error": out.error, "error_category": out.error_category,
        "score": None, "gt": row.ground_truth, "pred": row.prediction,
        "conversation": row.prompt_turns(), "metadata": row.metadata,
        "inference_status": row.inference_status, "class": row.question_class,
        "attempts": out.attempts,
    }


def _is_failure(result: Mapping[str, Any]) -> bool:
    # AVLM's own files mark failures with score 0; ours with an error and a null score.
    return bool(result.get("error")) or not result.get("score")


def score_distribution(scores: Sequence[int]) -> dict[str, int]:
    """AVLM's buckets: 9-10, 8, 7, 6, 1-5."""
    return {
        "excellent_9_10": sum(1 for s in scores if s >= 9),
        "good_8": sum(1 for s in scores if s == 8),
        "fair_7": sum(1 for s in scores if s == 7),
        "poor_6": sum(1 for s in scores if s == 6),
        "very_poor_1_5": sum(1 for s in scores if 1 <= s <= 5),
    }


def judge_statistics(results: Sequence[Mapping[str, Any]], *,
                     avlm_compat: bool = False) -> dict[str, Any]:
    """The ``statistics`` block of ``llm_judge_predictions.json`` (AVLM keys and arithmetic).

    With nothing scored the score fields are null; AVLM writes 0 there, which compatibility mode
    keeps.
    """
    scores = [int(r["score"]) for r in results if not _is_failure(r)]
    explicit = sum(1 for r in results if r.get("error"))
    stats: dict[str, Any] = {
        "total_entries": len(results),
        "successful_evaluations": len(scores),
        "failed_evaluations": len(results) - len(scores),
        "explicit_errors": explicit,
        "invalid_responses": len(results) - len(scores) - explicit,
        "success_rate": len(scores) / len(results) * 100 if results else 0,
    }
    if scores:
        stats.update({
            "mean_score": statistics.mean(scores),
            "median_score": statistics.median(scores),
            "std_dev": statistics.stdev(scores) if len(scores) > 1 else 0,
            "min_score": min(scores), "max_score": max(scores),
            "score_distribution": score_distribution(scores),
        })
    else:
        empty = 0 if avlm_compat else None
        stats.update({"mean_score": empty, "median_score": empty, "std_dev": empty,
                      "min_score": empty, "max_score": empty,
                      "score_distribution": score_distribution([])})
    return stats


def _median(scores: Sequence[int]) -> float | int:
    ordered = sorted(scores)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2


def _summary(results: Sequence[Mapping[str, Any]], avlm_compat: bool) -> dict[str, Any]:
    scores = [int(r["score"]) for r in results if not _is_failure(r)]
    empty = 0 if avlm_compat else None
    return {
        "total_judged": len(results),
        "num_success": len(scores),
        "num_failed": len(results) - len(scores),
        "mean_score": sum(scores) / len(scores) if scores else empty,
        "median_score": _median(scores) if scores else empty,
        "min_score": min(scores) if scores else empty,
        "max_score": max(scores) if scores else empty,
        "score_distribution": score_distribution(scores),
    }


def summarize_judge_results(results: Sequence[Mapping[str, Any]], *,
                            avlm_compat: bool = False) -> dict[str, Any]:
    """The ``llm_judge_results.json`` summary; failures are counted, never averaged.

    With nothing scored, mean, median, min and max are null (AVLM's 0 in compatibility mode).
    """
    summary = _summary(results, avlm_compat)
    by_class: dict[Any, list[Mapping[str, Any]]] = {}
    for result in results:
        by_class.setdefault(result.get("class"), []).append(result)
    summary["per_class"] = {cls: _summary(group, avlm_compat) for cls, group in by_class.items()}
    return summary


def coercion_counts(judged: Sequence[JudgedRow]) -> dict[str, Any]:
    """AVLM-compatibility coercions: rows coerced, and rows per kind (a row may have two kinds)."""
    by_kind: dict[str, int] = {}
    rows = 0
    for item in judged:
        if item.outcome.ok and item.outcome.coercions:
            rows += 1
            for kind in item.outcome.coercions:
                by_kind[kind] = by_kind.get(kind, 0) + 1
    return {"rows": rows, "by_kind": dict(sorted(by_kind.items()))}


def judge_predictions_document(judged: Sequence[JudgedRow], *, model_used: str,
                               metadata: Mapping[str, Any],
                               avlm_compat: bool = False) -> dict[str, Any]:
    """The ``llm_judge_predictions.json`` document: statistics, results, failures, metadata.

    In compatibility mode an ``avlm_coercions`` block follows AVLM's keys.
    """
    results = [result_record(item, model_used) for item in judged]
    failures = [{"index": r["index"], "id": r["id"], "error": r["error"],
                 "category": r["error_category"]} for r in results if r.get("error")]
    counts: dict[str, int] = {}
    for failure in failures:
        counts[failure["category"]] = counts.get(failure["category"], 0) + 1
    document = {
        "statistics": judge_statistics(results, avlm_compat=avlm_compat),
        "results": results,
        "failures": failures,
        "error_counts_by_category": counts,
        "metadata": dict(metadata),
    }
    if avlm_compat:
        document["avlm_coercions"] = coercion_counts(judged)
    return document


def withheld_status(calibration: CalibrationReport) -> str:
    """The status of a judge whose scores are withheld, with its agreement."""
    return f"withheld: judge failed calibration (agreement {calibration.agreement or 0:.0%})"


def judge_status(calibration: CalibrationReport, num_success: int) -> str:
    """``scored``, ``nothing scored`` or ``withheld: judge failed calibration (agreement X%)``."""
    if calibration.withheld:
        return withheld_status(calibration)
    return "scored" if num_success else "nothing scored"
