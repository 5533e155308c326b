"""A case card whose gold answer a human corrected (an applied label override) says so: by whom,
when, and what the sensor said; a card scored against the sensor's gold claims nothing."""

from __future__ import annotations

import json
from pathlib import Path

from eval_assets.metrics.vqa import vqa_accuracy
from eval_assets.report.cards import build_case_cards, gold_corrections
from eval_assets.report.case_browser import decode_case_data
from eval_assets.report.html import render_report
from eval_assets.report.leaderboard import build_leaderboard
from eval_assets.scoring.inputs import load_private_dataset
from eval_assets.vqa.labels import read_labels
from eval_assets.vqa.overrides import record_override
from eval_assets_tests.report.builders import THIRDS, answer, result, row, write_dataset

PRESENCE = "frame-000000-green-box-presence"
DIRECTION = "frame-000000-green-box-horizontal_direction"
AT = "2026-12-04T10:00:00Z"


def _corrections(tmp_path: Path) -> tuple[Path, dict]:
    dataset = write_dataset(tmp_path)["dataset"]
    path = tmp_path / "labels" / "rec.overrides.jsonl"
    record_override(dataset, path, read_labels(dataset), case_id=PRESENCE, answer="no",
                    by="ana", reason="the box is blue", at=AT)
    return dataset, gold_corrections(load_private_dataset(dataset, path).overrides)


def test_a_corrected_gold_answer_is_said_on_its_card_and_in_the_page(tmp_path: Path) -> None:
    dataset, corrections = _corrections(tmp_path)
    assert set(corrections) == {PRESENCE}
    # Scored against the labels in force: the corrected gold of PRESENCE is "no".
    vrows = [row(PRESENCE, "presence", "no", "no", "rec"),
             row(DIRECTION, "horizontal_direction", "left", "left", "rec", THIRDS)]
    answers = {"m": [answer("m", PRESENCE, "no"), answer("m", DIRECTION, "left")]}
    cards = build_case_cards(dataset, answers, {"m": vqa_accuracy(vrows).rows},
                             recording="rec", corrections=corrections)
    by_case = {c.case_id: c for c in cards}
    fixed = by_case[PRESENCE].correction
    assert fixed is not None and by_case[DIRECTION].correction is None
    assert fixed.text() == f"gold corrected by ana at {AT} (sensor said yes)"
    results = [result("rec", "m", vrows)]
    page = render_report(build_leaderboard(results), results, cards, "t")
    blob = page.split('id="case-data">', 1)[1].split("</script>", 1)[0]
    cases = {c["id"]: c for c in decode_case_data(json.loads(blob))}
    assert cases[PRESENCE]["corrected"] == {
        "text": f"gold corrected by ana at {AT} (sensor said yes)", "reason": "the box is blue"}
    assert cases[DIRECTION]["corrected"] is None
    # The page's script shows it (the row field the script reads, and the line it draws).
    script = (Path(__file__).parents[2] / "eval_assets" / "report" / "static" / "report.js")
    assert "c.corrected.text" in script.read_text()


def test_a_card_scored_against_the_sensors_gold_claims_no_correction(tmp_path: Path) -> None:
    dataset, corrections = _corrections(tmp_path)
    # A row scored before the override: its gold is still the sensor's "yes".
    stale = [row(PRESENCE, "presence", "yes", "yes", "rec")]
    cards = build_case_cards(dataset, {"m": [answer("m", PRESENCE, "yes")]},
                             {"m": vqa_accuracy(stale).rows}, recording="rec",
                             corrections=corrections)
    assert [c.correction for c in cards] == [None]


def test_the_published_report_reads_the_corrections_from_the_labels_folder(
        tmp_path: Path) -> None:
    import shutil

    from eval_assets.layout import StorageLayout
    from eval_assets.report.publish import report_cards
    from eval_assets.schemas.predictions import RUN_ANSWERS

    source, _ = _corrections(tmp_path / "src")
    layout = StorageLayout(tmp_path / "home")
    shutil.copytree(source, layout.dataset_dir("rec"))
    shutil.copytree(tmp_path / "src" / "pointclouds", layout.pointcloud_frames_dir("rec"))
    shutil.copytree(tmp_path / "src" / "detections", layout.detections_dir("rec"))
    run = layout.predictions_dir("rec", "m")
    run.mkdir(parents=True)
    (run / RUN_ANSWERS).write_text(answer("m", PRESENCE, "no").model_dump_json() + "\n")
    results = [result("rec", "m", [row(PRESENCE, "presence", "no", "no", "rec")])]
    cards, _ = report_cards(layout, results, tmp_path / "src" / "labels")
    assert [c.correction.text() if c.correction else None for c in cards] == [
        f"gold corrected by ana at {AT} (sensor said yes)"]
    plain, _ = report_cards(layout, results)  # no labels folder: nothing is claimed
    assert [c.correction for c in plain] == [None]
