"""Fair comparisons: models are ranked only on the cases every ranked model answered; missing
and stale (recording, model) cells are listed and excluded; no common case means no ranking."""

from __future__ import annotations

import json
import math
import random

import pandas as pd
import pytest

from eval_assets.layout import StorageLayout
from eval_assets.report.coverage import build_coverage
from eval_assets.report.leaderboard import (
    ALL_RECORDINGS,
    ANSWERED,
    COMMON,
    build_leaderboard,
    leaderboard_json,
    paired_comparisons,
    ranking,
)
from eval_assets.report.publish import dataset_fingerprint, publish_leaderboard
from eval_assets.scoring.provenance import current_inputs
from eval_assets_tests.report.builders import THIRDS, result, row

OLD, NEW = "a" * 64, "b" * 64


def rows(recording: str, n: int, right: int, start: int = 0, family: str = "presence") -> list:
    """Cases c<start>..c<start+n-1>, one per frame, the first ``right`` answered correctly."""
    return [row(f"c{i}", family, "yes", "yes" if i - start < right else "no", recording,
                frame_index=i) for i in range(start, start + n)]


def under_test(df) -> set[str]:
    """The models under test on the board: the frequency baseline's row (``baseline`` set,
    added to every ranking from the labels) is not one."""
    return set(df[df.baseline == ""].model)


def ranked_models(df) -> list[str]:
    """The ranking's models under test, best first (baseline rows skipped)."""
    return [m["model"] for m in ranking(df)["order"] if m["baseline"] is None]


def pooled(df, model: str, case_set: str):
    return df[(df.model == model) & (df.recording == ALL_RECORDINGS)
              & (df.case_set == case_set)].iloc[0]


def test_unequal_case_sets_are_ranked_on_their_intersection_only() -> None:
    # "full" answered 6 cases (the 2 shared ones right, 4 more wrong: 33%); "half" answered only
    # the 2 shared ones, 1 right (50%). Pooling each over what it answered ranks "half" first;
    # on the cases both answered, "full" is right on both and "half" on one.
    results = [result("rec", "full", rows("rec", 6, 2)), result("rec", "half", rows("rec", 2, 1))]
    cover = build_coverage(results)
    assert (cover.n_common, cover.ranked, cover.answered) == (2, True, {"full": 6, "half": 2})
    df = build_leaderboard(results, coverage=cover)
    full, half = pooled(df, "full", COMMON), pooled(df, "half", COMMON)
    assert (full.n_cases, full.vqa_accuracy, half.n_cases, half.vqa_accuracy) == (2, 1.0, 2, 0.5)
    assert ranked_models(df) == ["full", "half"]
    assert ranking(df)["n_common_cases"] == 2
    # The full-coverage number is still there, labelled not comparable.
    everything = pooled(df, "full", ANSWERED)
    assert (everything.n_cases, bool(everything.comparable)) == (6, False)
    assert everything.vqa_accuracy == pytest.approx(2 / 6)
    assert bool(pooled(df, "half", ANSWERED).comparable)
    summary = cover.summary()
    assert summary.startswith("Ranked on 2 common cases (2 frames) of 1 recording (rec)")
    assert "outside the common set (not ranked): full 4 of 6" in summary
    assert cover.needs_warning


def test_common_rows_recompute_chance_and_families_on_the_common_cases() -> None:
    mixed = [*rows("rec", 2, 2),
             row("d", "horizontal_direction", "left", "left", "rec", THIRDS, 9)]
    results = [result("rec", "a", mixed), result("rec", "b", rows("rec", 2, 0))]
    df = build_leaderboard(results)
    a = pooled(df, "a", COMMON)
    assert a.chance == pytest.approx(0.5)  # the three-way case is not common
    assert a["horizontal_direction__n"] == 0 and a["presence__n"] == 2
    assert pooled(df, "a", ANSWERED).chance == pytest.approx((0.5 + 0.5 + 1 / 3) / 3)
    # Per-result metrics cannot be restricted to common cases: null there, never 0.
    assert a.pope_n is pd.NA and math.isnan(a.judge_mean_score)


def test_a_missing_cell_is_listed_and_its_recording_left_out_of_the_ranking() -> None:
    results = [result("hallway", "m", rows("hallway", 3, 3)),
               result("kitchen", "m", rows("kitchen", 4, 2)),
               result("kitchen", "blind-smollm2", rows("kitchen", 4, 1))]
    cover = build_coverage(results, ["hallway", "kitchen"], ["blind-smollm2", "m"])
    cell = cover.cell("hallway", "blind-smollm2")
    assert cell is not None and (cell.status, cell.n_cases) == ("missing", 0)
    assert (cover.n_common, cover.common_recordings) == (4, ["kitchen"])
    summary = cover.summary()
    assert summary.startswith("Ranked on 4 common cases (4 frames) of 1 recording (kitchen)")
    assert "missing: (hallway, blind-smollm2)" in summary
    df = build_leaderboard(results, coverage=cover)
    common = df[df.case_set == COMMON]
    assert sorted(set(common.recording)) == [ALL_RECORDINGS, "kitchen"]
    assert pooled(df, "m", COMMON).vqa_accuracy == pytest.approx(0.5)
    assert pooled(df, "m", ANSWERED).n_cases == 7
    # A configured model with no result at all is listed, not ranked (it would empty the set).
    more = build_coverage(results, ["hallway", "kitchen"], ["blind-smollm2", "m", "new"])
    assert more.ranked_models == ["blind-smollm2", "m"] and more.n_common == 4
    assert "(hallway, new), (kitchen, new)" in more.summary()


def test_a_stale_cell_is_listed_and_excluded_everywhere() -> None:
    results = [result("rec", "fresh", rows("rec", 3, 3), sha=NEW),
               result("rec", "old", rows("rec", 3, 0), sha=OLD),
               result("rec", "marked", rows("rec", 3, 1), sha=NEW)]
    cover = build_coverage(results, current_fingerprints={"rec": NEW},
                           stale_cells={("rec", "marked")})
    assert [(c.model, c.status) for c in cover.cells] == [
        ("fresh", "ok"), ("marked", "stale"), ("old", "stale")]
    summary = cover.summary()
    assert "stale (excluded): (rec, marked: marked stale by the caller), " \
           "(rec, old: dataset aaaaaaaaaaaa\u2026, current bbbbbbbbbbbb\u2026)" in summary
    assert summary.startswith("Ranked on 3 common cases (3 frames) of 1 recording (rec), "
                              "answered by the one ranked model")
    df = build_leaderboard(results, coverage=cover)
    assert sorted(under_test(df)) == ["fresh"]
    assert paired_comparisons(results, coverage=cover) == []
    # The same results with no fingerprint: "old" answered another dataset, so nothing of it is
    # common with the others even though its case ids are the same.
    blind = build_coverage(results[:2])
    assert (blind.n_common, blind.ranked, blind.conflicts) == (0, False, {"rec": [OLD, NEW]})
    assert "answered on different datasets" in blind.summary()
    (pair,) = paired_comparisons(results[:2])  # no common case: no family comparison either
    assert pair.n_common == 0 and pair.mcnemar_p_adjusted is None and pair.n_tests == 0


def test_no_common_case_means_no_ranking() -> None:
    results = [result("rec-a", "m1", rows("rec-a", 2, 2)),
               result("rec-b", "m2", rows("rec-b", 2, 2))]
    cover = build_coverage(results)
    assert not cover.ranked
    assert cover.summary().startswith("No ranking: no case is common to all 2 models (m1, m2)")
    df = build_leaderboard(results, coverage=cover)
    assert set(df.case_set) == {ANSWERED} and not df.comparable.any()
    assert ranking(df) == {"ranked": False, "case_set": COMMON, "n_common_cases": 0,
                           "n_common_frames": 0, "order": []}


def test_results_outside_the_expected_grid_are_listed_not_used() -> None:
    results = [result("rec", "m", rows("rec", 2, 2)), result("rec", "gone", rows("rec", 2, 0))]
    cover = build_coverage(results, ["rec"], ["m"])
    assert cover.unexpected == [("rec", "gone")]
    assert "not an expected partition (not used): (rec, gone)" in cover.summary()
    assert under_test(build_leaderboard(results, coverage=cover)) == {"m"}


def test_leaderboard_json_is_deterministic_and_independent_of_input_order() -> None:
    def document(seed: int) -> str:
        results = [result("hallway", "m", rows("hallway", 3, 2)),
                   result("kitchen", "m", rows("kitchen", 4, 2), sha=NEW),
                   result("kitchen", "b", rows("kitchen", 2, 1), sha=NEW),
                   result("kitchen", "s", rows("kitchen", 2, 1), sha=OLD)]
        random.Random(seed).shuffle(results)
        cover = build_coverage(results, ["kitchen", "hallway"], ["s", "m", "b"],
                               {"kitchen": NEW})
        return leaderboard_json(build_leaderboard(results, coverage=cover),
                                paired_comparisons(results, coverage=cover), cover)

    first = document(0)
    assert all(document(seed) == first for seed in (1, 2, 3))
    parsed = json.loads(first)
    assert parsed["ranking"]["n_common_cases"] == 2
    assert parsed["coverage"]["recordings"] == ["hallway", "kitchen"]


def test_publish_leaderboard_marks_results_of_an_old_dataset_stale(tmp_path) -> None:
    layout = StorageLayout(tmp_path)
    dataset = layout.dataset_dir("rec")
    dataset.mkdir(parents=True)
    (dataset / "cases.jsonl").write_text('{"id": "c0"}\n')
    current = dataset_fingerprint(dataset)
    assert current is not None and len(current) == 64
    # "now" was scored on the inputs as they are; "answered" on answers rewritten since (a
    # rerun of its predictions); "unknown" before results recorded their inputs.
    scored = {model: current_inputs(dataset, layout.predictions_dir("rec", model), None)
              for model in ("now", "answered")}
    answers = layout.predictions_dir("rec", "answered") / "answers.jsonl"
    answers.parent.mkdir(parents=True)
    answers.write_text('{"case_id": "c0"}\n')
    results = [result("rec", "now", rows("rec", 2, 2), sha=current, inputs=scored["now"]),
               result("rec", "answered", rows("rec", 2, 1), sha=current,
                      inputs=scored["answered"]),
               result("rec", "unknown", rows("rec", 2, 1), sha=current),
               result("rec", "before", rows("rec", 2, 0), sha=OLD)]
    table, _, json_path = publish_leaderboard(layout, results, recordings=["rec", "other"],
                                              models=["answered", "before", "now", "unknown"])
    assert under_test(table) == {"now"}
    cover = json.loads(json_path.read_text())["coverage"]
    assert [(c["recording"], c["model"], c["status"]) for c in cover["cells"]
            if c["recording"] == "rec"] == [
        ("rec", "answered", "stale"), ("rec", "before", "stale"), ("rec", "now", "ok"),
        ("rec", "unknown", "stale")]
    reasons = {c["model"]: c["reason"] for c in cover["cells"] if c["recording"] == "rec"}
    assert "other answers" in reasons["answered"]
    assert "before its inputs were recorded" in reasons["unknown"]
