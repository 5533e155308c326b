"""The leaderboard: one row per (recording, model) plus one pooled "all recordings" row per model.

Pooled rows are recomputed from pooled counts (correct / n, a Wilson interval of the pooled
counts, POPE from the summed confusion matrix), never averaged from per-recording percentages:
an average of percentages weights a 3-case recording like a 300-case one.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from eval_assets.atomic import write_bytes_atomic, write_text_atomic
from eval_assets.metrics.vqa import VqaGroupStats, wilson_interval
from eval_assets.schemas.results import BenchmarkResult
from eval_assets.schemas.vqa import FAMILY_NAMES

__all__ = [
    "ALL_RECORDINGS",
    "BASE_COLUMNS",
    "FAMILY_STATS",
    "LEADERBOARD_JSON",
    "LEADERBOARD_PARQUET",
    "PooledVqa",
    "build_leaderboard",
    "family_column",
    "leaderboard_families",
    "pool_vqa",
    "write_leaderboard",
]

ALL_RECORDINGS = "all recordings"
LEADERBOARD_PARQUET = "leaderboard.parquet"
LEADERBOARD_JSON = "leaderboard.json"

# Fixed column order; the per-family columns follow, families in FAMILY_NAMES order.
BASE_COLUMNS: tuple[str, ...] = (
    "recording",
    "model",
    "vqa_accuracy",
    "vqa_ci_low",
    "vqa_ci_high",
    "n_cases",
    "correct",
    "parse_failures",
    "failed_calls",
    "parse_failure_rate",
    "chance",
    "pope_f1",
    "pope_accuracy",
    "pope_n",
    "mcq_pct_correct",
    "mcq_lenient_pct_correct",
    "mcq_total",
    "judge_mean_score",
    "judge_success",
    "judge_failed",
    "vision_mean_similarity",
    "vision_hallucination_rate",
    "vision_n_frames",
    "chair_i",
    "chair_s",
    "chair_n_captions",
)
FAMILY_STATS: tuple[str, ...] = ("accuracy", "n", "ci_low", "ci_high", "chance")
_INT_COLUMNS = {
    "n_cases", "correct", "parse_failures", "failed_calls", "pope_n", "mcq_total",
    "judge_success", "judge_failed", "vision_n_frames", "chair_n_captions",
}


def family_column(family: str, stat: str) -> str:
    """The leaderboard column of one family statistic, e.g. ``presence__accuracy``."""
    return f"{family}__{stat}"


def leaderboard_families(df: pd.DataFrame) -> list[str]:
    """Families that have columns in ``df``, in the order they appear."""
    suffix = "__accuracy"
    return [c[: -len(suffix)] for c in df.columns if c.endswith(suffix)]


class PooledVqa:
    """VQA counts summed over groups, with accuracy and interval recomputed from the sums."""

    def __init__(self, groups: Iterable[VqaGroupStats]) -> None:
        groups = list(groups)
        self.n = sum(g.n for g in groups)
        self.correct = sum(g.correct for g in groups)
        self.parse_failures = sum(g.parse_failures for g in groups)
        self.failed_calls = sum(g.failed_calls for g in groups)
        self.accuracy = self.correct / self.n if self.n else math.nan
        self.ci_low, self.ci_high = (
            wilson_interval(self.correct, self.n) if self.n else (math.nan, math.nan)
        )
        self.parse_failure_rate = self.parse_failures / self.n if self.n else math.nan
        # chance is a per-row mean, so weighting by n gives the pooled per-row mean exactly.
        self.chance = (
            math.fsum(g.chance * g.n for g in groups) / self.n if self.n else math.nan
        )


def pool_vqa(groups: Iterable[VqaGroupStats]) -> PooledVqa:
    """Pool VQA group statistics (one per recording, say) into one."""
    return PooledVqa(groups)


def _nan_if_none(value: float | None) -> float:
    return math.nan if value is None else float(value)


def _pope_columns(results: Sequence[BenchmarkResult]) -> dict[str, float]:
    popes = [r.pope for r in results if r.pope is not None]
    if not popes:
        return {"pope_f1": math.nan, "pope_accuracy": math.nan, "pope_n": 0}
    tp, fp = sum(p.tp for p in popes), sum(p.fp for p in popes)
    tn, fn = sum(p.tn for p in popes), sum(p.fn for p in popes)
    n = tp + fp + tn + fn
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    # Same zero-denominator rule as metrics/pope.py: 0.0, not NaN, when defined but empty.
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"pope_f1": f1, "pope_accuracy": (tp + tn) / n if n else 0.0, "pope_n": n}


def _mcq_columns(results: Sequence[BenchmarkResult]) -> dict[str, float]:
    counted = [r for r in results if int(r.mcq.get("total_mcq_questions", 0) or 0) > 0]
    total = sum(int(r.mcq["total_mcq_questions"]) for r in counted)
    if not total:
        return {"mcq_pct_correct": math.nan, "mcq_lenient_pct_correct": math.nan,
                "mcq_total": 0}
    correct = sum(int(r.mcq.get("num_correct", 0)) for r in counted)
    lenient = math.nan
    if all(r.mcq_lenient_pct_correct is not None for r in counted):
        # Lenient shares strict's denominator (metrics/mcq.py), so pct * total is a count.
        lenient_correct = sum(
            round(float(r.mcq_lenient_pct_correct) * int(r.mcq["total_mcq_questions"]))
            for r in counted
        )
        lenient = lenient_correct / total
    return {"mcq_pct_correct": correct / total, "mcq_lenient_pct_correct": lenient,
            "mcq_total": total}


def _judge_columns(results: Sequence[BenchmarkResult]) -> dict[str, float]:
    judges = [r.judge for r in results if r.judge is not None]
    success = sum(j.num_success for j in judges)
    failed = sum(j.num_failed for j in judges)
    # mean_score is sum / num_success, so weighting by num_success recovers the pooled mean.
    scored = [j for j in judges if j.num_success and j.mean_score is not None]
    mean = (math.fsum(float(j.mean_score) * j.num_success for j in scored)
            / sum(j.num_success for j in scored)) if scored else math.nan
    return {"judge_mean_score": mean, "judge_success": success, "judge_failed": failed}


def _vision_columns(results: Sequence[BenchmarkResult]) -> dict[str, float]:
    visions = [r.vision for r in results if r.vision is not None]
    frames = sum(v.n_frames for v in visions)
    if not frames:
        return {"vision_mean_similarity": math.nan, "vision_hallucination_rate": math.nan,
                "vision_n_frames": 0}
    with_mean = [v for v in visions if v.n_frames and v.mean_similarity is not None]
    mean = (math.fsum(float(v.mean_similarity) * v.n_frames for v in with_mean)
            / sum(v.n_frames for v in with_mean)) if with_mean else math.nan
    return {
        "vision_mean_similarity": mean,
        "vision_hallucination_rate": sum(v.n_hallucinations for v in visions) / frames,
        "vision_n_frames": frames,
    }


def _chair_columns(results: Sequence[BenchmarkResult]) -> dict[str, float]:
    chairs = [r.chair for r in results if r.chair is not None]
    captions = sum(c.n_captions for c in chairs)
    if not chairs:
        return {"chair_i": math.nan, "chair_s": math.nan, "chair_n_captions": 0}
    if len(chairs) == 1:
        c = chairs[0]
        return {"chair_i": c.chair_i, "chair_s": c.chair_s, "chair_n_captions": c.n_captions}
    # CHAIR_s is a per-caption rate, so rate * captions is a count; CHAIR_i needs mention counts,
    # which ChairScores does not keep, so it is not pooled rather than averaged wrongly.
    bad = sum(round(c.chair_s * c.n_captions) for c in chairs)
    return {"chair_i": math.nan, "chair_s": bad / captions if captions else math.nan,
            "chair_n_captions": captions}


def _row(recording: str, model: str, overall: PooledVqa,
         by_family: dict[str, PooledVqa], group: Sequence[BenchmarkResult],
         families: Sequence[str]) -> dict[str, Any]:
    row: dict[str, Any] = {
        "recording": recording,
        "model": model,
        "vqa_accuracy": overall.accuracy,
        "vqa_ci_low": overall.ci_low,
        "vqa_ci_high": overall.ci_high,
        "n_cases": overall.n,
        "correct": overall.correct,
        "parse_failures": overall.parse_failures,
        "failed_calls": overall.failed_calls,
        "parse_failure_rate": overall.parse_failure_rate,
        "chance": overall.chance,
        **_pope_columns(group),
        **_mcq_columns(group),
        **_judge_columns(group),
        **_vision_columns(group),
        **_chair_columns(group),
    }
    for family in families:
        stats = by_family.get(family)
        for stat in FAMILY_STATS:
            value = getattr(stats, stat) if stats is not None else math.nan
            row[family_column(family, stat)] = value if stats is not None or stat != "n" else 0
    return row


def _ordered_families(results: Sequence[BenchmarkResult]) -> list[str]:
    seen = {f for r in results for f in r.vqa.by_family}
    known = [f for f in FAMILY_NAMES if f in seen]
    return known + sorted(seen - set(known))


def build_leaderboard(results: Sequence[BenchmarkResult]) -> pd.DataFrame:
    """One row per (recording, model) and one pooled ``ALL_RECORDINGS`` row per model.

    Rows are sorted by model, then the pooled row first, then recordings by name. Missing metrics
    are NaN; counts are int64. Columns: ``BASE_COLUMNS`` followed by ``{family}__{stat}`` for each
    family seen (``FAMILY_STATS``: accuracy, n, ci_low, ci_high, chance). Raises ``ValueError``
    when two results share a (recording, model) pair or a recording is named ``ALL_RECORDINGS``.
    """
    seen: dict[tuple[str, str], int] = {}
    for i, r in enumerate(results):
        key = (r.recording, r.model)
        if key in seen:
            raise ValueError(
                f"results #{seen[key]} and #{i} are both for recording {r.recording!r} and model "
                f"{r.model!r}; pass one BenchmarkResult per (recording, model)")
        if r.recording == ALL_RECORDINGS:
            raise ValueError(
                f"result #{i}: recording name {ALL_RECORDINGS!r} is reserved for pooled rows; "
                "rename the recording")
        seen[key] = i
    families = _ordered_families(results)
    rows: list[dict[str, Any]] = []
    for model in sorted({r.model for r in results}):
        group = sorted((r for r in results if r.model == model), key=lambda r: r.recording)
        by_family = {
            f: pool_vqa(r.vqa.by_family[f] for r in group if f in r.vqa.by_family)
            for f in families if any(f in r.vqa.by_family for r in group)
        }
        rows.append(_row(ALL_RECORDINGS, model, pool_vqa(r.vqa.overall for r in group),
                         by_family, group, families))
        for r in group:
            fam = {f: pool_vqa([s]) for f, s in r.vqa.by_family.items()}
            rows.append(_row(r.recording, model, pool_vqa([r.vqa.overall]), fam, [r], families))
    columns = list(BASE_COLUMNS) + [family_column(f, s) for f in families for s in FAMILY_STATS]
    df = pd.DataFrame(rows, columns=columns)
    for column in columns[2:]:  # recording and model keep pandas' default string dtype
        if column in _INT_COLUMNS or column.endswith("__n"):
            df[column] = df[column].astype(np.int64)
        else:
            df[column] = df[column].astype(np.float64)
    return df.reset_index(drop=True)


def _json_value(value: Any) -> Any:
    if isinstance(value, float | np.floating):
        return None if math.isnan(value) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value


def leaderboard_json(df: pd.DataFrame) -> str:
    """The leaderboard as indented JSON records (NaN -> null), columns in table order."""
    records = [
        {column: _json_value(value) for column, value in zip(df.columns, row, strict=True)}
        for row in df.itertuples(index=False, name=None)
    ]
    return json.dumps(records, ensure_ascii=False, indent=2, allow_nan=False) + "\n"


def write_leaderboard(df: pd.DataFrame, out_dir: Path) -> tuple[Path, Path]:
    """Write ``leaderboard.parquet`` and ``leaderboard.json`` into ``out_dir``, atomically.

    Both are byte-identical for identical frames: parquet without the index, with fixed
    compression; JSON with fixed key order.
    """
    out_dir = Path(out_dir)
    table = pa.Table.from_pandas(df, preserve_index=False)
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd", compression_level=3)
    parquet_path = write_bytes_atomic(out_dir / LEADERBOARD_PARQUET, buf.getvalue())
    json_path = write_text_atomic(out_dir / LEADERBOARD_JSON, leaderboard_json(df))
    return parquet_path, json_path
