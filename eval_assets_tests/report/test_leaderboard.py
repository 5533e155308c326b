"""Leaderboard pooling math, frame-clustered intervals, paired comparisons, deterministic files."""

from __future__ import annotations

import json
import math
import random
from typing import Any

import numpy as np
import pandas as pd
import pytest

from eval_assets.metrics.baselines import FREQUENCY_BASELINE
from eval_assets.metrics.stats import wilson_interval
from eval_assets.report.coverage import build_coverage
from eval_assets.report.leaderboard import (
    ALL_RECORDINGS,
    ANSWERED,
    BASE_COLUMNS,
    LEADERBOARD_FORMAT,
    build_leaderboard,
    mcq_measured,
    paired_comparisons,
    ranking,
    write_leaderboard,
)
from eval_assets_tests.report.builders import (
    THIRDS,
    YES_NO,
    judge_scores,
    result,
    row,
    vision_scores,
)

Z = 1.959964


def hand_wilson(correct: int, n: int) -> tuple[float, float]:
    """Wilson score interval written out independently of metrics/vqa.py."""
    p = correct / n
    denom = 1 + Z**2 / n
    centre = (p + Z**2 / (2 * n)) / denom
    half = Z / denom * math.sqrt(p * (1 - p) / n + Z**2 / (4 * n**2))
    return centre - half, centre + half


def pooled_row(df: pd.DataFrame, model: str, case_set: str = ANSWERED) -> pd.Series:
    """The pooled all-recordings row of ``model`` on ``case_set``."""
    return df[(df.model == model) & (df.recording == ALL_RECORDINGS)
              & (df.case_set == case_set)].iloc[0]


def two_recordings() -> list:
    """Model m1: 2/3 on rec-a; 1/7 on rec-b with one parse failure and one failed call.

    Every case is on its own frame (frame_index = its position), except where a test says so.
    """
    a = [row("a1", "presence", "yes", "yes", "rec-a", frame_index=1),
         row("a2", "presence", "no", "no", "rec-a", frame_index=2),
         row("a3", "horizontal_direction", "left", "right", "rec-a", THIRDS, 3)]
    b = [row("b1", "presence", "yes", "yes", "rec-b", frame_index=1),
         row("b2", "presence", "yes", "No.", "rec-b", frame_index=2),
         row("b3", "presence", "no", "yes", "rec-b", frame_index=3),
         row("b4", "presence", "no", "maybe", "rec-b", frame_index=4),
         row("b5", "horizontal_direction", "left", None, "rec-b", THIRDS, 5),
         row("b6", "horizontal_direction", "center", "left", "rec-b", THIRDS, 6),
         row("b7", "horizontal_direction", "right", "left", "rec-b", THIRDS, 7)]
    other = [row("a1", "presence", "yes", "yes", "rec-a", frame_index=1),
             row("a2", "presence", "no", "no", "rec-a", frame_index=2)]
    return [result("rec-b", "m1", b), result("rec-a", "m1", a), result("rec-a", "m0", other)]


def test_pooled_row_recomputes_the_interval_from_pooled_cases() -> None:
    df = build_leaderboard(two_recordings())
    pooled = pooled_row(df, "m1")
    assert (pooled.n_cases, pooled.correct, pooled.n_frames) == (10, 3, 10)
    assert (pooled.parse_failures, pooled.failed_calls) == (1, 1)
    assert pooled.vqa_accuracy == pytest.approx(0.3)
    # Ten frames of one case each: design effect 10 / 9 (small-sample factor), so the interval
    # is the hand-written Wilson interval of 3 of 10 at n = 9.
    assert pooled.design_effect == pytest.approx(10 / 9)
    low, high = hand_wilson(2.7, 9)
    assert (pooled.vqa_ci_low, pooled.vqa_ci_high) == (pytest.approx(low), pytest.approx(high))
    assert (round(low, 4), round(high, 4)) == (0.1021, 0.6175)  # by hand: 0.3598 ± 0.2577
    # Not the mean of the per-recording accuracies (2/3 and 1/7).
    assert pooled.vqa_accuracy != pytest.approx((2 / 3 + 1 / 7) / 2)
    # Chance: mean of 1/len(choices) per row: 6 yes/no rows and 4 three-way rows.
    assert pooled.chance == pytest.approx((6 * 0.5 + 4 / 3) / 10)


def test_pooled_family_columns_and_pope_come_from_summed_counts() -> None:
    df = build_leaderboard(two_recordings())
    pooled = pooled_row(df, "m1")
    # presence: a1, a2, b1 correct of 6 rows (b2 "No." is incorrect, b4 is a parse failure),
    # each on its own frame: Wilson at n = 6 / (6/5).
    assert pooled["presence__n"] == 6
    assert pooled["presence__accuracy"] == pytest.approx(3 / 6)
    low, high = hand_wilson(2.5, 5)
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
    assert (pooled.pope_precision, pooled.pope_recall) == (pytest.approx(precision),
                                                           pytest.approx(recall))


def test_cases_of_one_frame_widen_the_interval() -> None:
    # 3 frames of 8 cases, frames all right, all right, all wrong: 16 of 24.
    rows = [row(f"f{f}-{c}", "presence", "yes", "yes" if f < 2 else "no", "rec", frame_index=f)
            for f in range(3) for c in range(8)]
    pooled = build_leaderboard([result("rec", "m", rows)]).iloc[0]
    assert (pooled.n_cases, pooled.correct, pooled.n_frames) == (24, 16, 3)
    assert pooled.design_effect == pytest.approx(8 * 3 / 2)
    low, high = wilson_interval(2 / 3 * 2, 2)  # n_eff = 24 / 12 = 2
    assert (pooled.vqa_ci_low, pooled.vqa_ci_high) == (pytest.approx(low), pytest.approx(high))
    naive = hand_wilson(16, 24)
    assert pooled.vqa_ci_high - pooled.vqa_ci_low > 2 * (naive[1] - naive[0])


def test_empty_denominators_are_nan_never_zero() -> None:
    # A model that always answers "no": POPE precision (no "yes" answers) is undefined.
    rows = [row("a", "presence", "yes", "no", "rec", frame_index=0),
            row("b", "presence", "no", "no", "rec", frame_index=1)]
    pooled = pooled_row(build_leaderboard([result("rec", "m", rows)]), "m")
    assert math.isnan(pooled.pope_precision) and math.isnan(pooled.pope_f1)
    assert pooled.pope_recall == 0.0 and pooled.pope_yes_ratio == 0.0
    assert pooled.pope_accuracy == pytest.approx(0.5)


def test_rows_are_sorted_by_model_with_the_pooled_row_first() -> None:
    df = build_leaderboard(two_recordings())
    # Per model: the common rows (m0 and m1 share a1 and a2 of rec-a), then every answered case.
    assert list(zip(df.model, df.case_set, df.recording, df.comparable, strict=True)) == [
        ("m0", "common", ALL_RECORDINGS, True), ("m0", "common", "rec-a", True),
        ("m0", "answered", ALL_RECORDINGS, True), ("m0", "answered", "rec-a", True),
        ("m1", "common", ALL_RECORDINGS, True), ("m1", "common", "rec-a", True),
        ("m1", "answered", ALL_RECORDINGS, False), ("m1", "answered", "rec-a", False),
        ("m1", "answered", "rec-b", False),
        # Last the frequency baseline: one pooled row on the common cases.
        (FREQUENCY_BASELINE, "common", ALL_RECORDINGS, True)]
    assert list(df.columns[: len(BASE_COLUMNS)]) == list(BASE_COLUMNS)
    assert [c for c in df.columns if c.endswith("__accuracy")] == [
        "presence__accuracy", "horizontal_direction__accuracy"]
    # m0 never saw a horizontal_direction case: NaN accuracy, n = 0.
    m0 = pooled_row(df, "m0")
    assert math.isnan(m0["horizontal_direction__accuracy"])
    assert m0["horizontal_direction__n"] == 0
    assert df["n_cases"].dtype == np.int64 and df["pope_f1"].dtype == np.float64


def lettered(rows: list) -> list:
    """The same rows as if the prompt had shown the choices lettered (A), (B), ..."""
    return [{**r, "lettered": True} for r in rows]


def test_other_metrics_pool_by_their_counts() -> None:
    judged = [{"score": 8}, {"score": 6}, {"error": "x", "score": None}]
    rows_a = lettered([row("a1", "presence", "yes", "yes", "rec-a")])
    rows_b = lettered([row("b1", "presence", "yes", "yes", "rec-b")])
    results = [
        result("rec-a", "m", rows_a, mcq={"total_mcq_questions": 4, "num_correct": 1},
               lenient=0.5, judge=judge_scores(judged), vision=vision_scores(4, 0.5, 3)),
        result("rec-b", "m", rows_b, mcq={"total_mcq_questions": 6, "num_correct": 6},
               lenient=1.0, judge=judge_scores([{"score": 10}]), vision=vision_scores(1, 1.0, 0)),
    ]
    pooled = pooled_row(build_leaderboard(results), "m")
    assert pooled.recording == ALL_RECORDINGS
    assert pooled.mcq_lettered_cases == 2
    assert pooled.mcq_pct_correct == pytest.approx(7 / 10)
    assert pooled.mcq_lenient_pct_correct == pytest.approx((2 + 6) / 10)
    assert pooled.judge_mean_score == pytest.approx((8 + 6 + 10) / 3)
    assert (pooled.judge_success, pooled.judge_failed) == (3, 1)
    assert pooled.vision_hallucination_rate == pytest.approx(3 / 5)
    assert pooled.vision_mean_similarity == pytest.approx((0.5 * 4 + 1.0) / 5)
    assert math.isnan(pooled.chair_i)


def test_mcq_is_not_reported_for_choice_text_prompts() -> None:
    # 749 of 749 parse failures under the strict "(X)" rule only measure the prompt format.
    mcq = {"total_mcq_questions": 2, "num_parse_failed": 2, "num_correct": 0, "pct_correct": 0.0}
    plain = result("rec", "m", [row("a", "presence", "yes", "yes", "rec")], mcq=mcq, lenient=1.0)
    assert not mcq_measured(plain)
    pooled = pooled_row(build_leaderboard([plain]), "m")
    assert pooled.mcq_lettered_cases == 0 and pooled.mcq_total == 0
    assert math.isnan(pooled.mcq_pct_correct) and math.isnan(pooled.mcq_lenient_pct_correct)
    assert mcq_measured(result("rec", "m", lettered([row("a", "presence", "yes", "yes", "rec")]),
                               mcq=mcq, lenient=1.0))


def test_paired_comparisons_use_common_cases_only() -> None:
    results = two_recordings()
    pair, presence = paired_comparisons(results)
    assert (pair.model_a, pair.model_b, pair.family) == ("m0", "m1", None)
    # m0 only answered a1 and a2 on rec-a; both models got both right.
    assert (pair.n_common, pair.n_frames, pair.both_correct, pair.a_only, pair.b_only) == (
        2, 2, 2, 0, 0)
    assert (pair.difference, pair.mcnemar_p, pair.significant) == (0.0, 1.0, False)
    # Both common cases are presence questions: one family comparison, adjusted with it.
    assert (presence.family, presence.n_common) == ("presence", 2)
    assert (pair.p_adjustment, pair.n_tests, pair.mcnemar_p_adjusted) == ("holm", 2, 1.0)
    assert paired_comparisons(results, by_family=False) == [
        pair.model_copy(update={"n_tests": 1})]
    assert paired_comparisons(results[:1]) == []


def test_duplicate_and_reserved_names_are_rejected() -> None:
    r = result("rec-a", "m", [row("a1", "presence", "yes", "yes", "rec-a")])
    with pytest.raises(ValueError, match="both for recording 'rec-a' and model 'm'"):
        build_leaderboard([r, r])
    bad = r.model_copy(update={"recording": ALL_RECORDINGS})
    with pytest.raises(ValueError, match="reserved"):
        build_leaderboard([bad])


def test_written_files_are_byte_identical_and_round_trip(tmp_path) -> None:
    def write(out):
        results = two_recordings()
        cover = build_coverage(results, ["rec-a", "rec-b"], ["m0", "m1"])
        return write_leaderboard(build_leaderboard(results, coverage=cover), out,
                                 paired_comparisons(results, coverage=cover), cover)

    paths = [write(tmp_path / str(i)) for i in range(2)]
    assert paths[0][0].read_bytes() == paths[1][0].read_bytes()
    assert paths[0][1].read_bytes() == paths[1][1].read_bytes()
    df = build_leaderboard(two_recordings())
    pd.testing.assert_frame_equal(pd.read_parquet(paths[0][0]), df)
    document = json.loads(paths[0][1].read_text())
    assert list(document) == ["format", "methods", "ranking", "coverage", "rows",
                              "paired_comparisons", "baselines", "family_comparisons",
                              "published_from"]
    assert document["published_from"] == []  # none passed; publish_leaderboard's: test_board
    assert document["format"] == LEADERBOARD_FORMAT
    assert "cluster-robust" in document["methods"]["interval"]
    assert "McNemar" in document["methods"]["paired_comparison"]
    assert "intersection" in document["methods"]["case_sets"]
    ranking = document["ranking"]
    assert (ranking["ranked"], ranking["n_common_cases"]) == (True, 2)
    # A tie at 100%: by name; the frequency baseline ("no" on a1, a2: 50 %) last.
    assert [m["model"] for m in ranking["order"]] == ["m0", "m1", FREQUENCY_BASELINE]
    assert [m["baseline"] for m in ranking["order"]] == [None, None, "frequency"]
    cover = document["coverage"]
    assert cover["summary"].startswith("Ranked on 2 common cases (2 frames) of 1 recording")
    assert "missing: (rec-b, m0)" in cover["summary"]
    assert "common_cases" not in cover
    assert [c["status"] for c in cover["cells"]] == ["ok", "ok", "missing", "ok"]
    records = document["rows"]
    assert [r["model"] for r in records] == list(df.model)
    assert records[0]["horizontal_direction__accuracy"] is None  # NaN -> null
    assert records[0]["pope_n"] is None and records[0]["comparable"] is True  # a common row
    assert list(records[0]) == list(df.columns)
    (pair,) = document["paired_comparisons"]
    assert (pair["model_a"], pair["model_b"], pair["n_common"]) == ("m0", "m1", 2)
    assert (pair["mcnemar_p"], pair["mcnemar_p_adjusted"], pair["n_tests"]) == (1.0, 1.0, 2)
    (family,) = document["family_comparisons"]
    assert (family["family"], family["p_adjustment"]) == ("presence", "holm")
    assert pair["difference_ci_low"] == 0.0 and pair["better"] is None
    assert sorted(p.name for p in (tmp_path / "0").iterdir()) == [
        "leaderboard.json", "leaderboard.parquet"]  # no temp files left behind


def test_headline_is_the_mean_of_prior_free_family_scores_beside_the_raw_pooled_accuracy(
) -> None:
    # 24 presence cases, 18 "no": a model answering "no" to all; 21 three-way direction cases
    # (7 of each), answered right; each case on its own frame.
    rows = [row(f"p{i}", "presence", "yes" if i < 6 else "no", "no", "r", frame_index=i)
            for i in range(24)]
    rows += [row(f"h{i}", "horizontal_direction", THIRDS[i % 3], THIRDS[i % 3], "r", THIRDS,
                 100 + i) for i in range(21)]
    pooled = pooled_row(build_leaderboard([result("r", "m1", rows)]), "m1")
    assert pooled.n_families == 2 and pooled.n_families_left_out == 0
    assert pooled.n_families_uninformative == 0
    # presence: the constant "no" scores its chance, 1/2, though its raw accuracy is 75 %.
    assert pooled["presence__accuracy"] == pytest.approx(18 / 24)
    assert pooled["presence__score"] == pytest.approx(0.5, abs=1e-12)
    assert pooled["presence__caa"] == pytest.approx(0.0, abs=1e-12)
    assert pooled["presence__raw_caa"] == pytest.approx(0.5)  # SITE's, on raw accuracy
    assert pooled["horizontal_direction__score"] == pytest.approx(1.0)
    assert pooled.family_mean == pytest.approx((0.5 + 1.0) / 2)
    assert pooled.headline_chance == pytest.approx((1 / 2 + 1 / 3) / 2)
    chance = (1 / 2 + 1 / 3) / 2
    assert pooled.caa == pytest.approx((0.75 - chance) / (1 - chance))
    assert pooled.vqa_accuracy == pytest.approx(39 / 45)  # raw pooled: each case the same
    # A constant answer is exact: no width; every case right keeps one (the floor).
    assert pooled["presence__score_ci_low"] == pytest.approx(0.5)
    assert pooled["presence__score_ci_high"] == pytest.approx(0.5)
    assert pooled["horizontal_direction__score_ci_low"] < 1.0
    assert pooled.family_mean_ci_low < pooled.family_mean < pooled.family_mean_ci_high
    # SITE's CAA of the raw pooled accuracy beside it: (39 - sum 1/n) / (45 - sum 1/n).
    guess = 24 / 2 + 21 / 3
    assert pooled.raw_caa == pytest.approx((39 - guess) / (45 - guess), abs=1e-12)


def test_an_answer_prior_is_at_the_chance_and_the_frequency_baseline_is_on_the_board() -> None:
    # Planted prior: presence is 95 % "no" (40 frames of 5 cases, 10 "yes" in all); a
    # direction family 60 / 25 / 15. "prior" answers each family's most common answer (a
    # served prior), "random" guesses, "seer" is right 80 % of the time, else says "no" /
    # "left".
    rng = random.Random(4)
    golds = []
    for frame in range(40):
        golds += [(f"p{frame}-{i}", "presence", "yes" if (frame * 5 + i) % 20 == 3 else "no",
                   YES_NO, frame) for i in range(5)]
        draw = rng.random()
        golds.append((f"h{frame}", "horizontal_direction",
                      "left" if draw < 0.6 else "center" if draw < 0.85 else "right", THIRDS,
                      frame))

    def answers(choose) -> list[dict[str, Any]]:
        return [row(case, family, gold, choose(gold, choices), "r", choices, frame)
                for case, family, gold, choices, frame in golds]

    pick = random.Random(9)
    results = [
        result("r", "prior", answers(lambda g, ch: "no" if "no" in ch else "left")),
        result("r", "random", answers(lambda g, ch: pick.choice(ch))),
        result("r", "seer", answers(lambda g, ch: g if pick.random() < 0.8
                                    else ("no" if "no" in ch else "left"))),
    ]
    df = build_leaderboard(results, baselines={"random": "random"})
    prior, rand, seer = (pooled_row(df, m, "common") for m in ("prior", "random", "seer"))
    frequency = pooled_row(df, FREQUENCY_BASELINE, "common")
    chance = (1 / 2 + 1 / 3) / 2
    # The served prior and the frequency baseline: exactly the chance, CAA 0, though their raw
    # pooled accuracy is high.
    for r in (prior, frequency):
        assert r.family_mean == pytest.approx(chance, abs=1e-12)
        assert r.caa == pytest.approx(0.0, abs=1e-12)
        assert r.vqa_accuracy > 0.85 and r.raw_caa > 0.6
    assert frequency.baseline == "frequency" and rand.baseline == "random"
    assert prior.baseline == "" and frequency["presence__accuracy"] == pytest.approx(0.95)
    # The random guesser within 5 points of both; the seer above.
    assert abs(rand.family_mean - prior.family_mean) < 0.05 and abs(rand.caa) <= 0.1
    assert seer.caa > 0.5
    # Every row against the best blind baseline other than itself, with a paired interval.
    best = FREQUENCY_BASELINE if frequency.family_mean >= rand.family_mean else "random"
    assert seer.best_blind == best and prior.best_blind == best
    assert seer.over_blind_ci_low > 0 and seer.over_blind == pytest.approx(
        seer.family_mean - pooled_row(df, best, "common").family_mean)
    assert prior.over_blind_ci_low <= 0 <= prior.over_blind_ci_high or best != "random"
    assert rand.best_blind == FREQUENCY_BASELINE
    assert rand.over_blind_ci_low < 0 < rand.over_blind_ci_high
    order = ranking(df)["order"]
    assert order[0]["model"] == "seer"
    assert {o["model"] for o in order} == {"prior", "random", "seer", FREQUENCY_BASELINE}
    # Only pooled common rows are compared; the answered rows leave it null.
    answered = pooled_row(df, "seer")
    assert answered.best_blind == "" and math.isnan(answered.over_blind)


def test_families_under_the_minimum_n_are_left_out_of_the_headline() -> None:
    # two_recordings has 6 presence and 4 direction cases: under 20, and no gold answer has
    # the 5 cases a rate needs, so no headline; the families keep their own columns and the
    # pooled accuracy ranks.
    df = build_leaderboard(two_recordings())
    pooled = pooled_row(df, "m1")
    assert pooled.n_families == 0 and pooled.n_families_uninformative == 2
    assert math.isnan(pooled.family_mean) and math.isnan(pooled.family_mean_ci_low)
    assert pooled["presence__n"] == 6 and pooled["presence__accuracy"] == pytest.approx(0.5)
    assert pooled.vqa_accuracy == pytest.approx(0.3)


def test_ranking_is_on_the_mean_over_families_not_the_pooled_accuracy() -> None:
    # "big" wins the large easy family, "small" the smaller hard one: pooled accuracy favours
    # big, the mean over families favours small. Golds alternate, so both families inform.
    def rows(big_right: int, small_right: int) -> list[dict[str, Any]]:
        out = [row(f"p{i}", "presence", YES_NO[i % 2], YES_NO[i % 2] if i < big_right
                   else YES_NO[(i + 1) % 2], "r", frame_index=i) for i in range(100)]
        out += [row(f"h{i}", "horizontal_direction", THIRDS[i % 3],
                    THIRDS[i % 3] if i < small_right else THIRDS[(i + 1) % 3], "r", THIRDS,
                    frame_index=200 + i) for i in range(21)]
        return out

    results = [result("r", "big", rows(100, 0)), result("r", "small", rows(70, 21))]
    df = build_leaderboard(results)
    assert pooled_row(df, "big").vqa_accuracy > pooled_row(df, "small").vqa_accuracy
    order = ranking(df)["order"]
    assert [o["model"] for o in order][:2] == ["small", "big"]
    # presence: 35 of 50 "yes" and of 50 "no" right (balanced 0.7); direction all right.
    assert order[0]["family_mean"] == pytest.approx((0.7 + 1.0) / 2)
    assert order[0]["n_families"] == 2
