"""Drift across kept nights: built from the real history files, pooled over recordings, shown in
the report's "Drift between nights" section."""

from __future__ import annotations

from pathlib import Path

from eval_assets.layout import StorageLayout
from eval_assets.metrics.drift import ALL_FAMILIES
from eval_assets.report.drift_section import NO_DRIFT
from eval_assets.report.history import load_history, night_cell_drift, night_drift
from eval_assets.report.html import render_report
from eval_assets.report.leaderboard import build_leaderboard
from eval_assets.schemas.results import CellScores
from eval_assets_tests.report.builders import result, row

NIGHTS = ("2025-03-01", "2025-03-02", "2025-03-03")
N = 600  # cases per recording, 20 to a frame


def cell(recording: str, model: str, right: int) -> CellScores:
    """``model`` on ``N`` cases of ``recording``: the first ``right`` correct; families
    alternate between presence and counting."""
    return result(recording, model, [
        row(f"c{i}", "presence" if i % 2 else "counting", "yes", "yes" if i < right else "no",
            recording, frame_index=i // 20) for i in range(N)])


def write_nights(root: Path, steady: str = "steady", slipping: str = "slipping"
                 ) -> StorageLayout:
    """Model ``steady`` stays at 70% on two recordings; ``slipping`` drops from 70% to 40% on
    the last night (a 30-point drop on 1,200 cases), after a steady second night."""
    layout = StorageLayout(root)
    plan = {NIGHTS[0]: {steady: 420, slipping: 420},
            NIGHTS[1]: {steady: 420, slipping: 420},
            NIGHTS[2]: {steady: 421, slipping: 240}}
    for night, models in plan.items():
        for model, right in models.items():
            for recording in ("rec1", "rec2"):
                path = layout.nightly_results_file(night, recording, model)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(cell(recording, model, right).model_dump_json())
    return layout


def test_night_drift_pools_recordings_per_model_and_family(tmp_path: Path) -> None:
    drift = night_drift(load_history(write_nights(tmp_path).history_dir()))
    got = {(d.model, d.night_after, d.family): d for d in drift}
    assert len(got) == len(drift) == 2 * 2 * 3  # models x comparisons x (all + 2 families)
    drop = got[("slipping", NIGHTS[2], ALL_FAMILIES)]
    assert drop.n_common == 2 * N and drop.n_frames == 2 * N // 20
    assert drop.night_before == NIGHTS[1]
    assert drop.difference is not None and round(drop.difference, 6) == -0.3
    assert drop.flagged and got[("slipping", NIGHTS[2], "counting")].flagged
    assert not any(d.flagged for d in drift if d.model == "steady" or d.night_after == NIGHTS[1])
    latest = night_drift(load_history(tmp_path / "history"), latest=1)
    assert {d.night_after for d in latest} == {NIGHTS[2]}
    one = load_history(tmp_path / "history", recording="rec1", model="slipping")
    assert {(h.result.recording, h.result.model) for h in one} == {("rec1", "slipping")}
    assert len(one) == 3


def test_the_report_lists_latest_comparisons_and_flags_the_drop(tmp_path: Path) -> None:
    history = load_history(write_nights(tmp_path).history_dir())
    today = [cell("rec1", "steady", 421)]
    text = render_report(build_leaderboard(today), today, [], "t", history=history)
    body = text.split('id="drift"', 1)[1].split("</section>", 1)[0]
    assert 'href="#drift"' in text
    assert body.count("<tr") == 1 + 2 * 3  # header + latest comparison of each model x family
    assert f"{NIGHTS[1]} → {NIGHTS[2]}" in body and f"{NIGHTS[0]} → {NIGHTS[1]}" not in body
    assert "flagged: drop" in body and "-30.0" in body and "70.0% → 40.0%" in body
    assert "3 flagged changes on the latest nights" in body  # all families and both families
    assert "1,200 / 60" in body


def test_no_second_night_says_so(tmp_path: Path) -> None:
    layout = StorageLayout(tmp_path)
    path = layout.nightly_results_file(NIGHTS[0], "rec1", "steady")
    path.parent.mkdir(parents=True)
    path.write_text(cell("rec1", "steady", 10).model_dump_json())
    today = [cell("rec1", "steady", 10)]
    text = render_report(build_leaderboard(today), today, [], "t",
                         history=load_history(layout.history_dir()))
    assert NO_DRIFT in text.split('id="drift"', 1)[1].split("</section>", 1)[0]


def test_the_nights_comparisons_are_adjusted_together(tmp_path: Path) -> None:
    history = load_history(write_nights(tmp_path).history_dir())
    # The report: each night's models x families (pooled over recordings) are one BH set, its
    # overall comparisons (one per model) another.
    latest = [d for d in night_drift(history) if d.night_after == NIGHTS[2]]
    assert {(d.family == ALL_FAMILIES, d.p_adjustment, d.n_tests) for d in latest} == {
        (True, "fdr_bh", 2), (False, "fdr_bh", 2 * 2)}
    assert all(d.mcnemar_p_adjusted is not None and d.mcnemar_p_adjusted >= d.mcnemar_p
               for d in latest)
    raw = [d for d in night_drift(history, adjust=False) if d.night_after == NIGHTS[2]]
    assert {d.p_adjustment for d in raw} == {None}
    # The check: families x recordings x models of the night (2 x 2 x 2 tests), and the
    # overall comparisons of recordings x models (2 x 2).
    cells = night_cell_drift(history, NIGHTS[2])
    assert sorted({(rec, d.model) for rec, d in cells}) == [
        ("rec1", "slipping"), ("rec1", "steady"), ("rec2", "slipping"), ("rec2", "steady")]
    assert {(d.family == ALL_FAMILIES, d.n_tests) for _, d in cells} == {(True, 4), (False, 8)}
    assert {(rec, d.family) for rec, d in cells if d.flagged} == {
        (rec, family) for rec in ("rec1", "rec2") for family in (ALL_FAMILIES, "counting",
                                                                   "presence")}
    assert night_cell_drift(history, NIGHTS[0]) == []  # no earlier night: nothing to adjust


def test_the_report_shows_raw_and_bh_p(tmp_path: Path) -> None:
    history = load_history(write_nights(tmp_path).history_dir())
    today = [cell("rec1", "steady", 421)]
    text = render_report(build_leaderboard(today), today, [], "t", history=history)
    body = text.split('id="drift"', 1)[1].split("</section>", 1)[0]
    assert "McNemar p (raw)" in body and "BH p" in body and "Benjamini-Hochberg" in body
