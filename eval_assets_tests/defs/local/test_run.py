"""The README's main command, as a Python API call: the whole chain on the sample, twice."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from eval_assets.atomic import write_text_atomic
from eval_assets.defs.local import run_locally
from eval_assets.layout import StorageLayout, selection_file_for
from eval_assets.schemas.results import CellScores
from eval_assets.scoring.chair import CHAIR
from eval_assets.scoring.judge import JUDGE as JUDGE_METRIC
from eval_assets.scoring.pope import POPE
from eval_assets.scoring.vision import VISION
from eval_assets.scoring.vqa import report_of

MODELS = "models:\n  - name: random\n    serve: random\n    seed: 0\n"
JUDGE = "serve: random\nmodel: random\nmax_workers: 1\nbackoff_base_s: 0\n"
# A loop's summary line (eval_assets.console.RichProgressSink.finish): label, count, time, rate.
LOOP_LINE = re.compile(r"    \S.*: \d+(/\d+)? in .+ \(\d+\.\d/s\)")


def _check_terminal_output(stdout: str, stderr: str, report: Path) -> None:
    """Concise: a line per step and job, no Dagster event stream, no warning; the report last."""
    assert stdout.splitlines()[-1] == f"report: {report}"
    for noise in ("DEBUG", "Warning", "STEP_SUCCESS", "Traceback", "it/s]"):
        assert noise not in stderr, f"{noise!r} in the terminal output:\n{stderr}"
    assert "✓ predictions" in stderr and "model_benchmark [sample, random]: " in stderr
    # One line per step: 38 before TimeFlip and RepeatFrames added a metric step each, 40 before
    # the three prompt controls (templates, sampling stability, structured answers) did. A loop
    # that lasts 2 s or more adds its one summary line ("...: 24/24 in 6.8 s (3.5/s)"): how many
    # do depends on the machine's load, not on the output's verbosity, so they are counted apart
    # (on a loaded machine two of them took the count from 43 to 45).
    lines = stderr.splitlines()
    loops = [line for line in lines if LOOP_LINE.fullmatch(line)]
    assert len(lines) - len(loops) < 45, stderr
    log_line = next(line for line in stderr.splitlines() if "Dagster log: " in line)
    log_file = Path(log_line.split("Dagster log: ", 1)[1].strip())
    assert "STEP_SUCCESS" in log_file.read_text(encoding="utf-8")


def _digest(folder: Path, patterns: tuple[str, ...]) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for pattern in patterns for p in sorted(folder.glob(pattern)) if p.is_file()}


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_whole_chain_on_the_sample_is_complete_and_deterministic(
    tmp_path: Path, sample_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "models.yaml").write_text(MODELS)
    (tmp_path / "judge.yaml").write_text(JUDGE)
    monkeypatch.setenv("EVAL_ASSETS_MODELS", str(tmp_path / "models.yaml"))
    monkeypatch.setenv("EVAL_ASSETS_JUDGE", str(tmp_path / "judge.yaml"))
    monkeypatch.setenv("EVAL_ASSETS_EXECUTOR", "in_process")
    # model_partitions is built from the models file at import; the default file declares
    # `random` too, so the partition exists either way.
    # Once through the console script, as a user runs it, and once through the Python API, at the
    # same time (two storage roots, so two instances and run locks): each run is mostly one busy
    # core, so on two cores the pair takes the time of one (CI: 103 s in a row). Byte-identical
    # outputs from two runs that overlapped also show that the runs share no state.
    # Its output goes to files: a pipe nobody reads while the other run works could fill.
    out, err = tmp_path / "cli.stdout", tmp_path / "cli.stderr"
    with out.open("wb") as out_file, err.open("wb") as err_file:
        cli = subprocess.Popen(
            [sys.executable, "-c", "from eval_assets.cli import main; main()", "run",
             str(sample_db), "--model", "random", "--storage-root", str(tmp_path / "first")],
            stdout=out_file, stderr=err_file, env={**os.environ})
    try:
        second = run_locally(sample_db, tmp_path / "second", models=["random"])
        cli.wait(timeout=900)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    stdout, stderr = out.read_text(), err.read_text()
    assert cli.returncode == 0, stderr
    first_layout = StorageLayout((tmp_path / "first").resolve())
    _check_terminal_output(stdout, stderr, first_layout.report_file())
    layouts = [first_layout, second.layout]
    assert all(layout.report_file().is_file() for layout in layouts)

    first, second_assets = (layout.root / "assets" for layout in layouts)
    result = CellScores.model_validate_json(
        layouts[0].results_file("sample", "random").read_text())
    assert report_of(result).overall.n == result.predictions.cases > 100
    assert result.predictions.failed == 0
    assert 0.0 < report_of(result).overall.accuracy < 1.0
    pope, vision, chair = POPE.result(result), VISION.result(result), CHAIR.result(result)
    assert pope is not None and pope.n > 0
    assert vision is not None and vision.n_frames == 6
    assert chair is not None and chair.ground_truth_source == "annotations"
    # The random judge never replies with JSON: every row is a recorded failure, none a score.
    judge = JUDGE_METRIC.result(result)
    assert judge is not None
    assert judge.num_success == 0 and judge.mean_score is None

    table = pq.read_table(layouts[0].leaderboard_dir() / "leaderboard.parquet").to_pandas()
    # The one model asked, beside the frequency baseline made from the labels (no server).
    assert set(table["model"]) == {"random", "Chance level (frequency)"}
    assert set(table.loc[table["model"] != "random", "baseline"]) == {"frequency"}

    html = layouts[0].report_file().read_text()
    assert "data:image/png;base64," in html and "random" in html

    # Same inputs and config: byte-identical public cases, labels, audit and metrics.
    deterministic = ("datasets/**/*", "assets/vqa_accuracy/**/*.json", "assets/pope_presence/**/*",
                     "assets/mcq_avlm/**/*", "assets/chair_hallucination/**/*",
                     "assets/vision_similarity/**/*", "assets/benchmark_results/**/*")
    a = _digest(layouts[0].root, deterministic)
    b = _digest(layouts[1].root, deterministic)
    assert a == b and len(a) > 50
    assert json.loads((first / "vqa_accuracy" / "sample" / "random" / "vqa.json").read_text())
    # The report also shows each call's latency, so only its existence is compared.
    assert (second_assets / "report" / "report.html").is_file()


DRIFT_CHECK = "benchmark_results_nightly_drift"  # runs with benchmark_results
PUBLISHED_CHECK = "leaderboard_published_files_intact"  # runs with the leaderboard
LABEL_METRICS = {"vqa_accuracy", "circular_eval", "pope_presence", "mcq_avlm",
                 "numeric_accuracy", "blind_solvability"}


def _check_a_label_override_recomputes_only_what_reads_labels(
        tmp_path: Path, run: Callable[[], tuple[set[str], dict[str, dict]]],
        stages: list[str]) -> None:
    """The issue's check: override one case the model answered correctly; the next run asks no
    model, recomputes the metrics that read gold answers, the results, leaderboard and report,
    and the model's correct count drops by exactly one."""
    from eval_assets.layout import RUN_ANSWERS_JOURNAL
    from eval_assets.vqa.labels import read_labels
    from eval_assets.vqa.overrides import record_override

    layout = StorageLayout((tmp_path / "out").resolve())
    before = report_of(CellScores.model_validate_json(
        layout.results_file("rec", "random").read_text()))
    right = next(r for r in before.rows if r.status == "correct")
    journal = layout.predictions_dir("rec", "random") / RUN_ANSWERS_JOURNAL
    journal_lines = journal.read_text().count("\n")
    dataset = layout.dataset_dir("rec")
    labels = {lab.id: lab for lab in read_labels(dataset)}
    wrong = next(c for c in labels[right.case_id].choices if c != right.answer)
    record_override(dataset, tmp_path / "labels" / "rec.overrides.jsonl", list(labels.values()),
                    case_id=right.case_id, answer=wrong, by="test",
                    reason="the sensor mislabelled it")
    del stages[:]
    recomputed, _ = run()
    # vqa_accuracy's blocking check runs with it, and the drift check with the results.
    assert recomputed == LABEL_METRICS | {"vqa_accuracy_parse_failure_rate_below_bound",
                                          "benchmark_results", DRIFT_CHECK, "leaderboard",
                                          PUBLISHED_CHECK,
                                          "report"}, stages
    after = report_of(CellScores.model_validate_json(
        layout.results_file("rec", "random").read_text()))
    assert after.overall.correct == before.overall.correct - 1
    assert journal.read_text().count("\n") == journal_lines
    said = next(line for line in stages if line.startswith("recomputed: "))
    assert "vqa_accuracy" in said and "predictions" not in said, stages
    assert any("label overrides" in line and "1 applied, 0 orphaned" in line
               for line in stages), stages


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_reruns_recompute_exactly_what_changed(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Unchanged: nothing runs. Judge config edited: only what reads it. Recording replaced
    under the same name: its whole chain, and only answers whose content changed are asked."""
    from eval_assets.defs.local import StepReport
    from eval_assets.synth import synthesize_sample

    (tmp_path / "models.yaml").write_text(MODELS)
    (tmp_path / "judge.yaml").write_text(JUDGE)
    monkeypatch.setenv("EVAL_ASSETS_MODELS", str(tmp_path / "models.yaml"))
    monkeypatch.setenv("EVAL_ASSETS_JUDGE", str(tmp_path / "judge.yaml"))
    monkeypatch.setenv("EVAL_ASSETS_LABELS", str(tmp_path / "labels"))
    recordings = tmp_path / "recordings"
    recordings.mkdir()
    synthesize_sample(tmp_path / "first.db", seed=0, frames=3)
    synthesize_sample(tmp_path / "second.db", seed=7, frames=3)
    rec = recordings / "rec.db"
    shutil.copy(tmp_path / "first.db", rec)

    stages: list[str] = []

    def run() -> tuple[set[str], dict[str, dict]]:
        steps: list[StepReport] = []
        run_locally(rec, tmp_path / "out", models=["random"], on_step=steps.append,
                      on_stage=stages.append)
        assert all(s.ok for s in steps)
        return {s.step for s in steps}, {s.step: s.counts for s in steps}

    first, _ = run()
    assert {"recording_ingest", "rectified_frames", "predictions", "benchmark_results",
            "leaderboard", "report"} <= first

    unchanged, _ = run()
    assert unchanged == set()

    _check_a_label_override_recomputes_only_what_reads_labels(tmp_path, run, stages)

    (tmp_path / "judge.yaml").write_text(JUDGE + "max_tokens: 50\n")
    judge_changed, _ = run()
    assert judge_changed == {"description_judge", "benchmark_results", DRIFT_CHECK,
                             "leaderboard", PUBLISHED_CHECK, "report"}, stages

    shutil.copy(tmp_path / "second.db", rec)  # same name, other content
    replaced, counts = run()
    assert {"recording_ingest", "rectified_frames", "pointcloud_frames", "detections_masks",
            "question_proposals", "vqa_dataset", "predictions", "benchmark_results",
            "report"} <= replaced
    # Answers are keyed by what the model saw: new images mean new calls, none reused blindly.
    assert counts["predictions"]["calls_made"] > 0
    # The label override was made for the old content: orphaned, reported, not applied.
    assert any("label overrides" in line and "0 applied, 1 orphaned" in line
               for line in stages), stages

    # A nightly run asks the model again although nothing changed, and keeps the night's results.
    from dagster import DagsterInstance, MultiPartitionKey

    from eval_assets.defs.automation_conditions import NIGHT_TAG
    from eval_assets.defs.definitions import defs

    layout = StorageLayout((tmp_path / "out").resolve())
    config = {"resources": {"storage": {"config": {"recordings_dir": str(recordings),
                                                   "storage_root": str(layout.root)}}}}
    with DagsterInstance.get() as instance:
        result = defs.resolve_job_def("model_benchmark").execute_in_process(
            run_config=config, instance=instance, tags={NIGHT_TAG: "2026-12-03"},
            partition_key=MultiPartitionKey({"recording": "rec", "model": "random"}))
    calls = result.asset_materializations_for_node("predictions")[0].metadata["calls_made"]
    assert calls.value > 0
    nightly = layout.nightly_results_file("2026-12-03", "rec", "random")
    assert CellScores.model_validate_json(nightly.read_text()).model == "random"


def _published_vqa(layout: StorageLayout) -> dict[tuple[str, str], float]:
    """The leaderboard's published VQA accuracy per (recording, model) row, as it is now."""
    path = layout.leaderboard_dir() / "leaderboard.json"
    if not path.is_file():
        return {}
    rows = json.loads(path.read_text())["rows"]
    return {(r["recording"], r["model"]): r["vqa_accuracy"] for r in rows}


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_no_published_number_comes_from_answers_to_the_replaced_recording(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's check: a label override and a recording replaced under the same name (other
    frames under the same case ids), taken in by one run. After every step of it, the published
    leaderboard holds no number computed from the old answers: each is the one the new answers
    and the new labels give, and the board is built only after the model answered again."""
    from eval_assets.defs.local import StepReport
    from eval_assets.synth import synthesize_sample
    from eval_assets.vqa.labels import read_labels
    from eval_assets.vqa.overrides import record_override

    (tmp_path / "models.yaml").write_text(MODELS)
    (tmp_path / "judge.yaml").write_text(JUDGE)
    monkeypatch.setenv("EVAL_ASSETS_MODELS", str(tmp_path / "models.yaml"))
    monkeypatch.setenv("EVAL_ASSETS_JUDGE", str(tmp_path / "judge.yaml"))
    monkeypatch.setenv("EVAL_ASSETS_LABELS", str(tmp_path / "labels"))
    (tmp_path / "recordings").mkdir()
    rec = tmp_path / "recordings" / "rec.db"
    synthesize_sample(rec, seed=0, frames=3)
    layout = StorageLayout((tmp_path / "out").resolve())
    run_locally(rec, layout.root, models=["random"])
    old_ids = {lab.id for lab in read_labels(layout.dataset_dir("rec"))}
    before = _published_vqa(layout)

    labels = list(read_labels(layout.dataset_dir("rec")))
    wrong = next(c for c in labels[0].choices if c != labels[0].answer)
    record_override(layout.dataset_dir("rec"), tmp_path / "labels" / "rec.overrides.jsonl",
                    labels, case_id=labels[0].id, answer=wrong, by="test", reason="mislabelled")
    rec.unlink()
    synthesize_sample(rec, seed=7, frames=3)  # same name, other content

    steps: list[str] = []
    published: list[tuple[str, dict[tuple[str, str], float]]] = []

    def on_step(step: StepReport) -> None:
        assert step.ok, step
        steps.append(step.step)
        if step.step in ("leaderboard", "report"):
            published.append((step.step, _published_vqa(layout)))
        if step.step == "benchmark_results":
            cell = CellScores.model_validate_json(
                layout.results_file("rec", "random").read_text())
            published.append((step.step, {("rec", "random"): report_of(cell).overall.accuracy}))

    run_locally(rec, layout.root, models=["random"], on_step=on_step)
    # The hazard is real: the new dataset reuses case ids of the old one.
    assert old_ids & {lab.id for lab in read_labels(layout.dataset_dir("rec"))}
    final = _published_vqa(layout)
    assert final != before and final[("rec", "random")] is not None
    assert published, steps
    for step, numbers in published:
        assert numbers.items() <= final.items(), (step, numbers, final, steps)
    # No metric read the old answers: the model answered the new cases first.
    assert steps.index("predictions") < min(steps.index(m) for m in LABEL_METRICS), steps
    # Built once, after the model answered the new cases and every metric was recomputed.
    assert steps.count("leaderboard") == 1 and steps.count("report") == 1, steps
    last_metric = max(i for i, s in enumerate(steps) if s in LABEL_METRICS | {"predictions"})
    assert steps.index("leaderboard") > last_metric, steps
    cell = CellScores.model_validate_json(layout.results_file("rec", "random").read_text())
    assert cell.inputs is not None
    assert cell.inputs.overrides_sha256 is not None  # scored with the override file in force


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_templates_switched_on_in_the_models_file_reach_the_report(
        tmp_path: Path, sample_db: Path) -> None:
    """Issue 30's check: a run with templates on shows min–max per model and Kendall τ.

    Two seeds of the random model, each with `templates: true` in its entry (the vlm resource
    keeps them off). A subprocess, since the model partitions are built from the models file
    when eval_assets.defs is imported, and this process has imported the default one. The
    sample with every fourth frame (a selection file beside it): what reaches the report does
    not depend on how many frames there are, and the chain does a quarter of the work.
    """
    recording = tmp_path / "sample.db"
    shutil.copy(sample_db, recording)
    write_text_atomic(selection_file_for(recording), "stride: 4\n")
    models = tmp_path / "models.yaml"
    models.write_text("models:\n" + "".join(
        f"  - name: {name}\n    serve: random\n    seed: {seed}\n    templates: true\n"
        "    prompt_control_cases: 5\n" for name, seed in (("random", 0), ("random-1", 1))))
    (tmp_path / "judge.yaml").write_text(JUDGE)
    env = {**os.environ, "EVAL_ASSETS_MODELS": str(models),
           "EVAL_ASSETS_JUDGE": str(tmp_path / "judge.yaml"),
           "EVAL_ASSETS_EXECUTOR": "in_process"}
    done = subprocess.run(
        [sys.executable, "-c", "from eval_assets.cli import main; main()", "run",
         str(recording), "--model", "random", "--model", "random-1",
         "--storage-root", str(tmp_path / "store")],
        capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stderr
    layout = StorageLayout((tmp_path / "store").resolve())
    for model in ("random", "random-1"):
        assert (layout.predictions_dir("sample", model) / "templates.jsonl").is_file()
    html = layout.report_file().read_text(encoding="utf-8")
    section = html.split('<section id="prompt-templates">', 1)[1].split("</section>", 1)[0]
    assert "Not measured" not in section
    assert '<th class="num">Min</th><th class="num">Max</th>' in section
    # Each model's all-families row: record, paraphrase, format, min, max (percentages).
    scores = {}
    for model in ("random", "random-1"):
        row = re.search(rf'<span class="model">{re.escape(model)}</span></td><td><b>all '
                        r'families</b>(.*?)</tr>', section)
        assert row is not None, model
        record, paraphrase, fmt, low, high = (
            float(p) for p in re.findall(r">(\d+\.\d)%<", row.group(1))[:5])
        assert (low, high) == (min(record, paraphrase, fmt), max(record, paraphrase, fmt))
        scores[model] = {"record": record, "paraphrase": paraphrase, "format": fmt}
    # The τ lines over both models (all families): with two models τ-b is +1 where both
    # templates rank them alike, -1 where they swap, n/a where either template ties them.
    assert "Kendall" in section and "record vs paraphrase" in section
    line = section.split("all families): </b>", 1)[1].split("</p>", 1)[0]
    a, b = scores["random"], scores["random-1"]
    for x, y in (("record", "paraphrase"), ("record", "format"), ("paraphrase", "format")):
        said = re.search(rf"{x} vs {y} (.*?) \(2 models\)", line)
        assert said is not None, line
        if a[x] == b[x] or a[y] == b[y]:
            assert "n/a" in said.group(1), (x, y, line)
        else:
            same = (a[x] > b[x]) == (a[y] > b[y])
            assert said.group(1) == ("1.00" if same else "-1.00"), (x, y, line)
