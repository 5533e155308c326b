"""Nightly history: every night's results are loaded, each model is scored per night on explicit
case sets, and the report's "Across nights" section shows every night of every model."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from eval_assets.layout import StorageLayout
from eval_assets.report.charts import history_chart
from eval_assets.report.history import load_history, night_scores
from eval_assets.report.html import NO_NIGHTS, render_report
from eval_assets.report.leaderboard import build_leaderboard
from eval_assets.schemas.results import CellScores
from eval_assets_tests.report.builders import result, row

NIGHTS = ("2025-03-01", "2025-03-02")


def answers(model: str, n: int, right: int) -> CellScores:
    """``model`` on cases c0..c<n-1> of "rec", one per frame, the first ``right`` correct."""
    return result("rec", model, [row(f"c{i}", "presence", "yes", "yes" if i < right else "no",
                                     "rec", frame_index=i) for i in range(n)])


def write_history(root: Path) -> StorageLayout:
    """Night 1: a 4 cases (3 right), b 2 (1 right). Night 2: a 3 (all right), b 4 (2 right)."""
    layout = StorageLayout(root)
    plan = {NIGHTS[0]: [answers("a", 4, 3), answers("b", 2, 1)],
            NIGHTS[1]: [answers("a", 3, 3), answers("b", 4, 2)]}
    for night, results in plan.items():
        for r in results:
            path = layout.nightly_results_file(night, r.recording, r.model)
            path.parent.mkdir(parents=True)
            path.write_text(r.model_dump_json())
    # A night still being written (not a date) and a stray file are not nights.
    (layout.history_dir() / "2025-03-03.tmp" / "rec" / "a").mkdir(parents=True)
    (layout.history_dir() / "notes.txt").write_text("x")
    return layout


def test_load_history_reads_every_night_in_order(tmp_path) -> None:
    history = load_history(write_history(tmp_path).history_dir())
    assert [(h.night, h.result.model) for h in history] == [
        (NIGHTS[0], "a"), (NIGHTS[0], "b"), (NIGHTS[1], "a"), (NIGHTS[1], "b")]
    assert load_history(tmp_path / "nowhere") == []


def test_a_corrupt_nightly_result_names_its_file(tmp_path) -> None:
    layout = write_history(tmp_path)
    bad = layout.nightly_results_file(NIGHTS[1], "rec", "a")
    bad.write_text("{}")
    with pytest.raises(ValueError, match=re.escape("2025-03-02/rec/a/results.json")):
        load_history(layout.history_dir())


def test_night_scores_use_the_stated_case_sets(tmp_path) -> None:
    scores = night_scores(load_history(write_history(tmp_path).history_dir()))
    got = {(s.model, s.night, s.case_set): (s.n, s.correct) for s in scores}
    assert got == {
        # Night common: c0, c1 on night 1 (b answered 2); c0..c2 on night 2 (a answered 3).
        ("a", NIGHTS[0], "night_common"): (2, 2), ("b", NIGHTS[0], "night_common"): (2, 1),
        ("a", NIGHTS[1], "night_common"): (3, 3), ("b", NIGHTS[1], "night_common"): (3, 2),
        # Every-night cases: a answered c0..c2 both nights, b c0..c1.
        ("a", NIGHTS[0], "model_trend"): (3, 3), ("a", NIGHTS[1], "model_trend"): (3, 3),
        ("b", NIGHTS[0], "model_trend"): (2, 1), ("b", NIGHTS[1], "model_trend"): (2, 2),
        ("a", NIGHTS[0], "answered"): (4, 3), ("a", NIGHTS[1], "answered"): (3, 3),
        ("b", NIGHTS[0], "answered"): (2, 1), ("b", NIGHTS[1], "answered"): (4, 2),
    }
    first = next(s for s in scores if s.case_set == "model_trend" and s.model == "b")
    assert first.accuracy == 0.5 and first.ci_low is not None and first.ci_low < 0.5
    assert first.night_models == ["a", "b"]


def test_history_chart_is_a_deterministic_png(tmp_path) -> None:
    scores = night_scores(load_history(write_history(tmp_path).history_dir()))
    png = history_chart(scores)
    assert png.startswith(b"\x89PNG") and png == history_chart(scores)
    assert png != history_chart(scores, "answered")
    with pytest.raises(ValueError, match="no night"):
        history_chart([])


def test_the_report_shows_both_nights_per_model(tmp_path) -> None:
    history = load_history(write_history(tmp_path).history_dir())
    today = [answers("a", 2, 2)]
    text = render_report(build_leaderboard(today), today, [], "t", history=history)
    body = text.split('id="nights"', 1)[1].split("</section>", 1)[0]
    assert NO_NIGHTS not in body and "data:image/png;base64," in body
    for model in ("a", "b"):
        for night in NIGHTS:
            assert f'<span class="model">{model}</span></td><td>{night}</td>' in body
    # b on night 2: 2 of 3 night-common cases, 2 of 2 every-night cases, 4 answered.
    assert "66.7%" in body and "n=3" in body and "100.0%" in body
    assert 'href="#nights"' in text


def test_an_empty_history_says_so() -> None:
    today = [answers("a", 2, 2)]
    body = render_report(build_leaderboard(today), today, [], "t").split(
        'id="nights"', 1)[1].split("</section>", 1)[0]
    assert "No nightly runs yet." in body and "<img" not in body
