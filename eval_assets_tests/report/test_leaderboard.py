"""Leaderboard pooling math, ordering and deterministic files."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from eval_assets.report.leaderboard import (
    ALL_RECORDINGS,
    BASE_COLUMNS,
    build_leaderboard,
    write_leaderboard,
)
from eval_assets_tests.report.builders import THIRDS, judge_scores, result, row, vision_scores

Z = 1.959964


def hand_wilson(correct: int, n: int) -> tuple[float, float]:
    """Wilson score interval written out independently of metrics/vqa.py."""
    p = correct / n
    denom = 1 + Z**2 / n
    centre = (p + Z**2 / (2 * n)) / denom
    half = Z / denom * math.sqrt(p * (1 - p) / n + Z**2 / (4 * n**2))
    return centre - half, centre + half


def two_recordings() -> list:
    """Model m1: 2/3 on rec-a; 1/7 on rec-b with one parse failure and one failed call."""
    a = [row("a1", "presence", "yes", "yes", "rec-a"),
         row("a2", "presence", "no", "no", "rec-a"),
         row("a3", "horizontal_direction", "left", "right", "rec-a", THIRDS)]
    b = [row("b1", "presence", "yes", "yes", "rec-b"),
         row("b2", "presence", "yes", "No.", "rec-b"),
         row("b3", "presence", "no", "yes", "rec-b"),
         row("b4", "presence", "no", "maybe", "rec-b"),
         row("b5", "horizontal_direction", "left", None, "rec-b", THIRDS),
         row("b6", "horizontal_direction", "center", "left", "rec-b", THIRDS),
         row("b7", "horizontal_direction", "right", "left", "rec-b", THIRDS)]
    other = [row("a1", "presence", "yes", "yes", "rec-a"),
             row("a2", "presence", "no", "no", "rec-a")]
    return [result("rec-b", "m1", b), result("rec-a", "m1", a), result("rec-a", "m0", other)]


def test_pooled_row_recomputes_the_wilson_interval_from_pooled_counts() -> None:
    df = build_leaderboard(two_recordings())
    pooled = df[(df.model == "m1") & (df.recording == ALL_RECORDINGS)].iloc[0]
    assert (pooled.n_cases, pooled.correct) == (10, 3)
    assert (pooled.parse_failures, pooled.failed_calls) == (1, 1)
    assert pooled.vqa_accuracy == pytest.approx(0.3)
    low, high = hand_wilson(3, 10)
    assert (pooled.vqa_ci_low, pooled.vqa_ci_high) == (pytest.approx(low), pytest.approx(high))
    assert (round(low, 4), round(high, 4)) == (0.1078, 0.6032)
    # Not the mean of the per-recording accuracies (2/3 and 1/7).
    assert pooled.vqa_accuracy != pytest.approx((2 / 3 + 1 / 7) / 2)
    # Chance: mean of 1/len(choices) per row: 6 yes/no rows and 4 three-way rows.
    assert pooled.chance == pytest.approx((6 * 0.5 + 4 / 3) / 10)


def test_pooled_family_columns_and_pope_come_from_summed_counts() -> None:
    df = build_leaderboard(two_recordings())
    pooled = df[(df.model == "m1") & (df.recording == ALL_RECORDINGS)].iloc[0]
    # presence: a1, a2, b1 correct of 6 rows (b2 "No." is incorrect, b4 is a parse failure).
    assert pooled["presence__n"] == 6
    assert pooled["presence__accuracy"] == pytest.approx(3 / 6)
    low, high = hand_wilson(3, 6)
    assert pooled["presence__ci_low"] == pytest.approx(low)
    assert pooled["presence__ci_high"] == pytest.approx(high)
    assert pooled["horizontal_direction__accuracy"] == pytest.approx(0.0)
    assert pooled["horizontal_direction__chance"] == pytest.approx(1 / 3)
    # POPE: answers yes,no | yes,"No.",yes,"maybe"(-> yes) vs labels yes,no | yes,yes,no,no.
    tp, fp, tn, fn = 2, 2, 1, 1
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    assert pooled.pope_n == tp + fp + tn + fn
    assert pooled.pope_f1 == pytest.approx(2 * precision * recall / (precision + recall))
    assert pooled.pope_accuracy == pytest.approx((tp + tn) / 6)


def test_rows_are_sorted_by_model_with_the_pooled_row_first() -> None:
    df = build_leaderboard(two_recordings())
    assert list(zip(df.model, df.recording, strict=True)) == [
        ("m0", ALL_RECORDINGS), ("m0", "rec-a"),
        ("m1", ALL_RECORDINGS), ("m1", "rec-a"), ("m1", "rec-b")]
    assert list(df.columns[: len(BASE_COLUMNS)]) == list(BASE_COLUMNS)
    assert [c for c in df.columns if c.endswith("__accuracy")] == [
        "presence__accuracy", "horizontal_direction__accuracy"]
    # m0 never saw a horizontal_direction case: NaN accuracy, n = 0.
    m0 = df[(df.model == "m0") & (df.recording == ALL_RECORDINGS)].iloc[0]
    assert math.isnan(m0["horizontal_direction__accuracy"])
    assert m0["horizontal_direction__n"] == 0
    assert df["n_cases"].dtype == np.int64 and df["pope_f1"].dtype == np.float64


def test_other_metrics_pool_by_their_counts() -> None:
    judged = [{"score": 8}, {"score": 6}, {"error": "x", "score": None}]
    rows_a = [row("a1", "presence", "yes", "yes", "rec-a")]
    rows_b = [row("b1", "presence", "yes", "yes", "rec-b")]
    results = [
        result("rec-a", "m", rows_a, mcq={"total_mcq_questions": 4, "num_correct": 1},
               lenient=0.5, judge=judge_scores(judged), vision=vision_scores(4, 0.5, 3)),
        result("rec-b", "m", rows_b, mcq={"total_mcq_questions": 6, "num_correct": 6},
               lenient=1.0, judge=judge_scores([{"score": 10}]), vision=vision_scores(1, 1.0, 0)),
    ]
    pooled = build_leaderboard(results).iloc[0]
    assert pooled.recording == ALL_RECORDINGS
    assert pooled.mcq_pct_correct == pytest.approx(7 / 10)
    assert pooled.mcq_lenient_pct_correct == pytest.approx((2 + 6) / 10)
    assert pooled.judge_mean_score == pytest.approx((8 + 6 + 10) / 3)
    assert (pooled.judge_success, pooled.judge_failed) == (3, 1)
    assert pooled.vision_hallucination_rate == pytest.approx(3 / 5)
    assert pooled.vision_mean_similarity == pytest.approx((0.5 * 4 + 1.0) / 5)
    assert math.isnan(pooled.chair_i)


def test_duplicate_and_reserved_names_are_rejected() -> None:
    r = result("rec-a", "m", [row("a1", "presence", "yes", "yes", "rec-a")])
    with pytest.raises(ValueError, match="both for recording 'rec-a' and model 'm'"):
        build_leaderboard([r, r])
    bad = r.model_copy(update={"recording": ALL_RECORDINGS})
    with pytest.raises(ValueError, match="reserved"):
        build_leaderboard([bad])


def test_written_files_are_byte_identical_and_round_trip(tmp_path) -> None:
    paths = [write_leaderboard(build_leaderboard(two_recordings()), tmp_path / str(i))
             for i in range(2)]
    assert paths[0][0].read_bytes() == paths[1][0].read_bytes()
    assert paths[0][1].read_bytes() == paths[1][1].read_bytes()
    df = build_leaderboard(two_recordings())
    pd.testing.assert_frame_equal(pd.read_parquet(paths[0][0]), df)
    records = json.loads(paths[0][1].read_text())
    assert [r["model"] for r in records] == list(df.model)
    assert records[0]["horizontal_direction__accuracy"] is None  # NaN -> null
    assert list(records[0]) == list(df.columns)
    assert sorted(p.name for p in (tmp_path / "0").iterdir()) == [
        "leaderboard.json", "leaderboard.parquet"]  # no temp files left behind
