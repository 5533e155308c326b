"""``eval-assets run``'s check of what was published: what the run owns is rebuilt by the assets
that wrote it, what it does not own is refused with the command that rebuilds it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dagster import MultiPartitionKey

from eval_assets.defs import keys
from eval_assets.defs.local.plan import Scope
from eval_assets.defs.local.published import PublishedFilesDamaged, published_repairs
from eval_assets.layout import StorageLayout
from eval_assets.publication import record_dataset, record_leaderboard, record_results


def _store(tmp_path: Path) -> StorageLayout:
    layout = StorageLayout(tmp_path)
    for recording in ("hall", "kitchen"):
        dataset = layout.dataset_dir(recording)
        dataset.mkdir(parents=True)
        (dataset / "cases.jsonl").write_text('{"id": "c1"}\n')
        (dataset / "labels.jsonl").write_text('{"id": "c1", "answer": "yes"}\n')
        record_dataset(layout, recording)
        results = layout.results_file(recording, "random")
        results.parent.mkdir(parents=True)
        results.write_text('{"model": "random"}')
        record_results(layout, recording, "random")
    board = layout.leaderboard_dir()
    board.mkdir(parents=True)
    (board / "leaderboard.json").write_text("{}")
    (board / "leaderboard.parquet").write_bytes(b"PAR1")
    record_leaderboard(layout)
    return layout


def test_damage_in_the_runs_partitions_is_named_and_planned_for_rebuilding(
        tmp_path: Path) -> None:
    layout = _store(tmp_path)
    scope = Scope.of("hall", ["random"])
    said: list[str] = []
    assert published_repairs(layout, scope, said.append).empty() and said == []
    (layout.dataset_dir("hall") / "labels.jsonl").write_text('{"id": "c1", "answer": "no"}\n')
    layout.results_file("hall", "random").write_text('{"mod')
    (layout.leaderboard_dir() / "leaderboard.json").unlink()
    plan = published_repairs(layout, scope, said.append)
    cell = MultiPartitionKey({"recording": "hall", "model": "random"})
    assert plan.recording == {"hall": {keys.PUBLIC_CASES, keys.PRIVATE_LABELS}}
    assert plan.per_model == {cell: {keys.BENCHMARK_RESULTS}}
    assert plan.unpartitioned == {keys.LEADERBOARD}
    text = "\n".join(said)
    assert "datasets/hall/labels.jsonl" in text and "1 of 1 lines changed" in text
    assert "results.json" in text and "not valid JSON" in text
    assert "rebuilding public_cases, private_labels [hall] from its inputs" in text
    assert "leaderboard.json" in text and "missing" in text


def test_damage_outside_the_run_is_refused_with_the_command_that_rebuilds_it(
        tmp_path: Path) -> None:
    layout = _store(tmp_path)
    layout.results_file("kitchen", "random").write_text(json.dumps({"model": "edited"}))
    with pytest.raises(PublishedFilesDamaged) as refused:
        published_repairs(layout, Scope.of("hall", ["random"]), lambda _: None)
    message = str(refused.value)
    assert "assets/benchmark_results/kitchen/random/results.json" in message
    assert "edited or damaged after publication" in message
    assert ("Fix: run `eval-assets run <kitchen's recording file> --model random` (it rebuilds "
            "benchmark_results [kitchen, random] from its inputs)") in message


MODELS = "models:\n  - name: random\n    serve: random\n    seed: 0\n"
JUDGE = "serve: random\nmodel: random\nmax_workers: 1\nbackoff_base_s: 0\n"


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_a_run_names_and_rebuilds_a_hand_edited_labels_file_and_a_truncated_results_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's check: after a small run, 20 answers flipped in the published labels and the
    cell's results.json cut short; the next ``eval-assets run`` names both and rebuilds them
    from their inputs (byte for byte what was published), and the one after finds nothing."""
    from eval_assets.defs.local import StepReport, run_locally
    from eval_assets.synth import synthesize_sample

    (tmp_path / "models.yaml").write_text(MODELS)
    (tmp_path / "judge.yaml").write_text(JUDGE)
    monkeypatch.setenv("EVAL_ASSETS_MODELS", str(tmp_path / "models.yaml"))
    monkeypatch.setenv("EVAL_ASSETS_JUDGE", str(tmp_path / "judge.yaml"))
    monkeypatch.setenv("EVAL_ASSETS_LABELS", str(tmp_path / "labels"))
    monkeypatch.setenv("EVAL_ASSETS_EXECUTOR", "in_process")
    (tmp_path / "recordings").mkdir()
    rec = tmp_path / "recordings" / "rec.db"
    synthesize_sample(rec, seed=0, frames=3)
    stages: list[str] = []

    def run() -> set[str]:
        steps: list[StepReport] = []
        del stages[:]
        run_locally(rec, tmp_path / "out", models=["random"], on_step=steps.append,
                    on_stage=stages.append)
        assert all(s.ok for s in steps), stages
        return {s.step for s in steps}

    run()
    layout = StorageLayout((tmp_path / "out").resolve())
    labels = layout.dataset_dir("rec") / "labels.jsonl"
    results = layout.results_file("rec", "random")
    published = labels.read_bytes(), results.read_bytes()
    rows = [json.loads(line) for line in labels.read_text().splitlines()]
    flipped = 0
    for row in rows:  # 20 presence answers flipped by hand
        if row["id"].endswith("-presence") and row["answer"] in ("yes", "no") and flipped < 20:
            row["answer"], flipped = {"yes": "no", "no": "yes"}[row["answer"]], flipped + 1
    assert flipped == 20
    labels.write_text("".join(json.dumps(row) + "\n" for row in rows))
    results.write_text(results.read_text()[:100])  # truncated: no longer valid JSON

    repaired = run()
    said = "\n".join(stages)
    assert ("datasets/rec/labels.jsonl (published by public_cases, private_labels [rec]): "
            "edited or damaged after publication") in said, said
    assert f"{flipped} of {len(rows)} lines changed" in said, said
    assert "benchmark_results/rec/random/results.json" in said and "not valid JSON" in said
    assert {"vqa_dataset", "benchmark_results", "leaderboard", "report"} <= repaired, stages
    assert (labels.read_bytes(), results.read_bytes()) == published
    assert run() == set() and not any("published file" in line for line in stages)
