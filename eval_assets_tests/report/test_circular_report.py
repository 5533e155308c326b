"""CircularEval and position bias in the leaderboard and the report: pooled from per-case rows,
restricted to the row's case set, n stated, small n marked, n/a when not measured."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from eval_assets.metrics.circular import CircularCase, circular_eval, circular_group_stats
from eval_assets.report.html import render_report
from eval_assets.report.leaderboard import (
    ALL_RECORDINGS,
    ANSWERED,
    CIRCULAR_COLUMNS,
    COMMON,
    build_leaderboard,
    circular_by_model,
    family_column,
    leaderboard_json,
)
from eval_assets.schemas.predictions import rotate_choices
from eval_assets.schemas.results import CellScores
from eval_assets.scoring.circular import CIRCULAR
from eval_assets_tests.report.builders import THIRDS, YES_NO, result, row

SPECS = [("presence", YES_NO), ("horizontal_direction", THIRDS)]


def cases(recording: str, n_frames: int) -> list[dict]:
    """Two cases per frame (2 and 3 choices), gold answers at varying positions."""
    out = []
    for f in range(n_frames):
        for family, choices in SPECS:
            out.append({"case_id": f"{recording}-{f}-{family}", "family": family,
                        "recording": recording, "frame_index": f, "choices": choices,
                        "answer": choices[f % len(choices)]})
    return out


def scored(recording: str, model: str, n_frames: int, policy: str,
           rotations: bool = True) -> CellScores:
    """A result whose model answers by ``policy``: "first" (first choice shown) or "content"
    (the gold answer); with its CircularEval when ``rotations``."""
    specs = cases(recording, n_frames)

    def reply(spec: dict, shown: list[str]) -> str:
        return shown[0] if policy == "first" else spec["answer"]

    rows = [row(s["case_id"], s["family"], s["answer"], reply(s, s["choices"]), recording,
                s["choices"], s["frame_index"]) for s in specs]
    if not rotations:
        return result(recording, model, rows)
    circular = circular_eval([CircularCase(**s, replies={
        r: reply(s, rotate_choices(s["choices"], r)) for r in range(len(s["choices"]))})
        for s in specs])
    return result(recording, model, rows, circular=circular)


def pooled(df: pd.DataFrame, model: str, case_set: str = COMMON) -> pd.Series:
    return df[(df["model"] == model) & (df["recording"] == ALL_RECORDINGS)
              & (df["case_set"] == case_set)].iloc[0]


def test_leaderboard_has_circular_columns_pooled_from_case_rows() -> None:
    results = [scored("hall", "biased", 6, "first"), scored("yard", "biased", 4, "first"),
               scored("hall", "oracle", 6, "content"), scored("yard", "oracle", 4, "content")]
    df = build_leaderboard(results)
    assert set(CIRCULAR_COLUMNS) <= set(df.columns)
    biased, oracle = pooled(df, "biased"), pooled(df, "oracle")
    # 20 cases of 2 and 3 choices: "first" is right once per case, never under every rotation.
    assert biased["circular_accuracy"] == 0.0 and biased["circular_n"] == 20
    assert biased["rotation_n_answers"] == 50 and biased["rotation_accuracy"] == pytest.approx(
        20 / 50)
    assert biased["position_bias_position"] == 1 and biased["position_bias_p"] < 1e-6
    assert biased["position_bias_gap"] == pytest.approx(1 - 20 / 50)
    assert oracle["circular_accuracy"] == 1.0 and oracle["position_bias_gap"] == 0.0
    assert oracle["circular_chance"] == pytest.approx((2 ** -2 + 3 ** -3) / 2)
    # Pooled rows are recomputed from the pooled case rows, not averaged.
    rows = [c for r in results if r.model == "biased" for c in CIRCULAR.result(r).rows]
    direct = circular_group_stats(rows)
    assert (biased["circular_ci_low"], biased["circular_ci_high"]) == (direct.ci_low,
                                                                      direct.ci_high)
    assert biased["position_bias_chi2"] == pytest.approx(direct.bias.chi2)
    assert pooled(df, "oracle")[family_column("presence", "circular")] == 1.0
    assert pooled(df, "oracle")[family_column("presence", "circular_n")] == 10
    hall = df[(df["model"] == "biased") & (df["recording"] == "hall")
              & (df["case_set"] == ANSWERED)].iloc[0]
    assert hall["circular_n"] == 12


def test_common_rows_use_only_the_common_cases_and_unasked_cases_are_counted() -> None:
    # "short" answered only 3 of hall's frames, without rotations on yard.
    short = scored("hall", "short", 3, "content")
    results = [scored("hall", "oracle", 6, "content"), scored("yard", "oracle", 4, "content"),
               short, scored("yard", "short", 4, "content", rotations=False)]
    df = build_leaderboard(results)
    oracle_common, oracle_all = pooled(df, "oracle"), pooled(df, "oracle", ANSWERED)
    assert oracle_common["n_cases"] == 6 + 8 and oracle_all["n_cases"] == 20
    # The common cases of yard were asked without rotations by "short", not by "oracle".
    assert oracle_common["circular_n"] == 14 and oracle_common["circular_not_asked"] == 0
    short_common = pooled(df, "short")
    assert short_common["circular_n"] == 6 and short_common["circular_not_asked"] == 8
    yard = df[(df["model"] == "short") & (df["recording"] == "yard")
              & (df["case_set"] == ANSWERED)].iloc[0]
    assert pd.isna(yard["circular_accuracy"]) and pd.isna(yard["circular_n"])
    document = json.loads(leaderboard_json(df))
    row_json = next(r for r in document["rows"] if r["model"] == "short"
                    and r["recording"] == "yard" and r["case_set"] == ANSWERED)
    assert row_json["circular_accuracy"] is None and row_json["circular_n"] is None
    assert "circular_eval" in document["methods"] and "position_bias" in document["methods"]


def test_without_rotations_every_circular_number_is_null() -> None:
    df = build_leaderboard([scored("hall", "m", 3, "first", rotations=False)])
    row_ = pooled(df, "m")
    assert all(pd.isna(row_[c]) for c in CIRCULAR_COLUMNS)
    assert circular_by_model([scored("hall", "m", 3, "first", rotations=False)]) == {}


def section(text: str, anchor: str) -> str:
    return text.split(f'id="{anchor}"', 1)[1].split("</section>", 1)[0]


def test_report_shows_circular_eval_and_position_bias_per_model_with_n() -> None:
    results = [scored("hall", "biased", 12, "first"), scored("hall", "oracle", 12, "content"),
               scored("hall", "plain", 12, "content", rotations=False)]
    html = render_report(build_leaderboard(results), results, [], "t")
    part = section(html, "circular")
    assert "Position bias (CircularEval)" in part and "href=\"#circular\"" in html
    assert "CircularEval" in part and "k<sup>-k</sup>" in part  # the explanation line
    biased = part.split('<span class="model">biased</span>', 1)[1].split("</tr>", 1)[0]
    assert "0.0%" in biased and "24 (0)" in biased  # 24 cases, none left out
    assert "60.0 pts (1)" in biased  # 40% of answers had gold first, 100% chose it
    assert "p &lt;0.0001" in biased
    assert "1: 100% / 40%" in biased
    oracle = part.split('<span class="model">oracle</span>', 1)[1].split("</tr>", 1)[0]
    assert "100.0%" in oracle and "0.0 pts" in oracle
    assert "Not measured (no rotations asked): plain." in part
    # Families: 12 cases each, under the reliable minimum: faded and flagged.
    families = part.split("CircularEval by question family", 1)[1]
    assert 'class="lown"' in families and "n&lt;20" in families and "n=12" in families


def test_report_says_when_no_rotations_were_asked() -> None:
    results = [scored("hall", "m", 3, "first", rotations=False)]
    part = section(render_report(build_leaderboard(results), results, [], "t"), "circular")
    assert "Not measured: no run asked the rotated choices" in part
    assert "<table" not in part
