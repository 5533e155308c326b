"""Published means verified (issue 42, item 3): what each asset published is recorded by content,
and an edited, damaged, removed or added file is named with what rebuilds it."""

from __future__ import annotations

import json
from pathlib import Path

from eval_assets.layout import StorageLayout
from eval_assets.publication import (
    adopt_unrecorded,
    record_dataset,
    record_leaderboard,
    record_report,
    record_results,
    verify_publications,
)


def _publish(layout: StorageLayout, recording: str = "rec", model: str = "m") -> None:
    """A small published store: a dataset of 40 labels, a cell's results, the board, a page."""
    dataset = layout.dataset_dir(recording)
    (dataset / "assets").mkdir(parents=True)
    (dataset / "assets" / "frame-000001.png").write_bytes(b"\x89PNG fake")
    (dataset / "cases.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "question": "Is there a box?", "choices": ["yes", "no"]})
        + "\n" for i in range(40)))
    (dataset / "labels.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "answer": "yes"}) + "\n" for i in range(40)))
    results = layout.results_file(recording, model)
    results.parent.mkdir(parents=True)
    results.write_text(json.dumps({"recording": recording, "model": model, "scores": {}}))
    board = layout.leaderboard_dir()
    board.mkdir(parents=True)
    (board / "leaderboard.json").write_text('{"rows": []}')
    (board / "leaderboard.parquet").write_bytes(b"PAR1")
    layout.report_file().parent.mkdir(parents=True)
    layout.report_file().write_text("<html></html>")


def _record_all(layout: StorageLayout) -> None:
    record_dataset(layout, "rec")
    record_results(layout, "rec", "m")
    record_leaderboard(layout)
    record_report(layout)


def test_an_untouched_store_verifies_and_every_kind_of_damage_is_named(tmp_path: Path) -> None:
    layout = StorageLayout(tmp_path)
    _publish(layout)
    _record_all(layout)
    assert verify_publications(layout) == []
    # 20 presence answers flipped by hand, results.json truncated, an image added, the page gone.
    labels = layout.dataset_dir("rec") / "labels.jsonl"
    lines = labels.read_text().splitlines()
    labels.write_text("".join((line.replace("yes", "no") if i % 2 else line) + "\n"
                              for i, line in enumerate(lines)))
    results = layout.results_file("rec", "m")
    results.write_text(results.read_text()[:20])
    (layout.dataset_dir("rec") / "assets" / "extra.png").write_bytes(b"x")
    layout.report_file().unlink()
    damaged = {d.path: d for d in verify_publications(layout)}
    assert set(damaged) == {"datasets/rec/labels.jsonl", "datasets/rec/assets/extra.png",
                            "assets/benchmark_results/rec/m/results.json",
                            "assets/report/report.html"}
    said = damaged["datasets/rec/labels.jsonl"].describe()
    assert "public_cases, private_labels [rec]" in said and "20 of 40 lines changed" in said
    assert "line 2, 4, 6, 8, 10 and 15 more" in said
    assert "not valid JSON" in damaged["assets/benchmark_results/rec/m/results.json"].problem
    assert damaged["assets/benchmark_results/rec/m/results.json"].record.model == "m"
    assert "added to a published folder" in damaged["datasets/rec/assets/extra.png"].problem
    assert "missing" in damaged["assets/report/report.html"].problem
    # Rewritten by its asset (the same content, or new content recorded anew): verified again.
    labels.write_text("".join(line + "\n" for line in lines))
    (layout.dataset_dir("rec") / "assets" / "extra.png").unlink()
    record_results(layout, "rec", "m")
    layout.report_file().write_text("<html>new</html>")
    record_report(layout)
    assert verify_publications(layout) == []


def test_outputs_published_before_records_are_adopted_unless_plainly_damaged(
        tmp_path: Path) -> None:
    layout = StorageLayout(tmp_path)
    _publish(layout)
    results = layout.results_file("rec", "m")
    results.write_text('{"trunc')  # damaged before any record: not taken for the published one
    written = adopt_unrecorded(layout)
    assert layout.publication_file("public_cases", "rec") in written
    assert layout.publication_file("benchmark_results", "rec", "m") not in written
    assert len(written) == 3 and adopt_unrecorded(layout) == []  # once
    record = json.loads(layout.publication_file("leaderboard").read_text())
    assert record["adopted"] and record["assets"] == ["leaderboard"]
    assert verify_publications(layout) == []
