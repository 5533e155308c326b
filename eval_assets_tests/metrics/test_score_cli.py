"""``eval-assets score mcq|judge`` on a temporary inference folder, through the real root CLI."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from eval_assets.cli import app
from eval_assets.metrics.avlm_rows import rows_from_dicts
from eval_assets.metrics.mcq import score_mcq
from eval_assets_tests.fakes.openai_server import (
    HttpError,
    OpenAICompatibleServer,
    Reply,
    route_by_text,
    rubric_judge,
)
from eval_assets_tests.metrics.test_judge import open_row, verdict
from eval_assets_tests.metrics.test_mcq import FIXTURE

CANARY_ENV = "EVAL_ASSETS_CANARY_JUDGE_KEY"
CANARY = "sk-canary-7f3a9c1e-do-not-leak"


def write_predictions(folder: Path, rows: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "predictions.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def test_score_mcq_writes_both_files(tmp_path: Path) -> None:
    write_predictions(tmp_path, FIXTURE)
    result = CliRunner().invoke(app, ["score", "mcq", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "strict: 2/8 correct (pct_correct=0.2500" in result.stdout
    assert "lenient: 6/8 correct (pct_correct=0.7500" in result.stdout
    assert "no '(X)' letter" in result.stderr and "missing evaluation_type" in result.stderr
    strict = json.loads((tmp_path / "mcq" / "mcq_results.json").read_text())
    with pytest.warns(UserWarning):
        assert strict == score_mcq(rows_from_dicts(FIXTURE))
    lenient = json.loads((tmp_path / "mcq" / "mcq_lenient_results.json").read_text())
    assert lenient["num_correct"] == 6 and len(lenient["rows"]) == 9


@pytest.mark.parametrize(("lines", "expected"), [
    (None, "predictions file not found"),
    (['{"index": 0, "evaluation_type": "mcq"', ""], "predictions.jsonl:1: not valid JSON"),
    ([json.dumps(open_row(0)), json.dumps({**open_row(1), "prediction": ["x"]})],
     "predictions.jsonl:2: field 'prediction'"),
    ([json.dumps({"evaluation_type": "mcq", "class": "c", "inference_status": "success",
                  "prediction": "(A)"})],
     "predictions.jsonl:1: field 'ground_truth' is missing"),
])
def test_score_mcq_reports_bad_input(tmp_path: Path, lines: list[str] | None,
                                     expected: str) -> None:
    if lines is not None:
        (tmp_path / "predictions.jsonl").write_text("\n".join(lines), encoding="utf-8")
    result = CliRunner().invoke(app, ["score", "mcq", str(tmp_path)])
    assert result.exit_code == 2
    assert expected in result.stderr
    assert str(tmp_path) in result.stderr
    assert "Traceback" not in result.output


def test_score_judge_end_to_end_never_leaks_the_key(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv(CANARY_ENV, CANARY)
    caplog.set_level(logging.DEBUG)  # everything, including openai's and the HTTP client's logs
    rows = [open_row(0, cls="a"), open_row(1, cls="b"), open_row(2, cls="a"),
            open_row(3, cls="b"), {**open_row(4), "evaluation_type": "mcq"}]
    inference = tmp_path / "inference"
    write_predictions(inference, rows)
    # Servers that echo a bad key back in their error text are common; both echoes must vanish.
    echo = {"error": {"message": f"Incorrect API key provided: {CANARY}", "type": "auth"}}
    script = route_by_text({
        "[ROW-0]": [Reply(verdict(9))],
        "[ROW-1]": [HttpError(401, body=echo)],
        "[ROW-2]": [Reply("not json"), Reply(verdict(8))],
        "[ROW-3]": [HttpError(503, body=echo)],
    })
    with OpenAICompatibleServer(script) as srv:
        config = tmp_path / "judge.yaml"
        config.write_text(
            f"base_url: {srv.base_url}\nmodel: judge-model\napi_key_env: {CANARY_ENV}\n"
            "max_retries: 1\nbackoff_base_s: 0.01\nbackoff_max_s: 0.02\nmax_workers: 2\n"
            "domain: The frames come from a patrolling robot.\ncalibration_pairs: 0\n")
        result = CliRunner().invoke(app, ["score", "judge", str(inference), "--judge-config",
                                          str(config)])
        seen = srv.requests
    assert result.exit_code == 0, result.output
    assert all(r.headers["authorization"] == f"Bearer {CANARY}" for r in seen)  # key was used
    assert "judged 4: 2 scored, 2 failed (api_failed 2), mean_score=8.50" in result.stdout
    assert "calibration: disabled" in result.stdout

    predictions = json.loads((inference / "llm_judge" / "llm_judge_predictions.json").read_text())
    assert [r["index"] for r in predictions["results"]] == [0, 1, 2, 3]
    assert [r["score"] for r in predictions["results"]] == [9, None, 8, None]
    assert predictions["error_counts_by_category"] == {"api_failed": 2}
    assert "[REDACTED]" in predictions["results"][1]["error"]
    assert predictions["metadata"]["model_used"] == "judge-model"
    summary = json.loads((inference / "llm_judge" / "llm_judge_results.json").read_text())
    assert summary["mean_score"] == 8.5 and summary["per_class"]["b"]["num_failed"] == 2

    written = [p.read_text(encoding="utf-8") for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) >= 4
    for text in [*written, result.output, caplog.text]:
        assert CANARY not in text
        assert CANARY[3:20] not in text  # not even a prefix of it


def test_score_judge_without_the_key_says_which_variable(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CANARY_ENV, raising=False)
    write_predictions(tmp_path, [open_row(0)])
    config = tmp_path / "judge.yaml"
    config.write_text(f"base_url: http://127.0.0.1:9/v1\nmodel: m\napi_key_env: {CANARY_ENV}\n")
    result = CliRunner().invoke(app, ["score", "judge", str(tmp_path), "--judge-config",
                                      str(config)])
    assert result.exit_code == 2
    assert f"environment variable {CANARY_ENV} is not set" in result.stderr
    assert not (tmp_path / "llm_judge").exists()


def test_score_judge_reports_a_bad_config(tmp_path: Path) -> None:
    write_predictions(tmp_path, [open_row(0)])
    config = tmp_path / "judge.yaml"
    config.write_text("base_url: http://127.0.0.1:9/v1\nmodel: m\nmax_workers: 0\n")
    result = CliRunner().invoke(app, ["score", "judge", str(tmp_path), "--judge-config",
                                      str(config)])
    assert result.exit_code == 2
    assert "judge.yaml: field 'max_workers'" in result.stderr


def judge_config(tmp_path: Path, base_url: str, extra: str = "") -> Path:
    path = tmp_path / "judge.yaml"
    path.write_text(f"base_url: {base_url}\nmodel: judge-model\napi_key_env: {CANARY_ENV}\n"
                    f"max_retries: 0\nreply_tries: 1\nbackoff_base_s: 0\n{extra}")
    return path


def test_score_judge_with_nothing_scored_exits_1(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CANARY_ENV, CANARY)
    write_predictions(tmp_path / "inference", [open_row(0), open_row(1)])
    script = route_by_text({"[ROW-0]": [Reply(verdict(None))], "[ROW-1]": [Reply(verdict(42))]})
    with OpenAICompatibleServer(script) as srv:
        config = judge_config(tmp_path, srv.base_url, "calibration_pairs: 0\n")
        result = CliRunner().invoke(app, ["score", "judge", str(tmp_path / "inference"),
                                          "--judge-config", str(config)])
    assert result.exit_code == 1, result.output
    assert ("judged 2: 0 scored, 2 failed (missing_score 1, score_out_of_range 1), "
            "mean_score=null") in result.stdout
    assert "error: nothing scored: all 2 rows failed" in result.stderr
    assert "Traceback" not in result.output
    summary = json.loads((tmp_path / "inference" / "llm_judge" / "llm_judge_results.json")
                         .read_text())
    assert summary["mean_score"] is None and summary["status"] == "nothing scored"


def test_score_judge_avlm_compat_flag_shows_the_coercions(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CANARY_ENV, CANARY)
    write_predictions(tmp_path / "inference", [open_row(0), open_row(1), open_row(2)])
    script = route_by_text({"[ROW-0]": [Reply(verdict(None))], "[ROW-1]": [Reply(verdict(42))],
                            "[ROW-2]": [Reply(verdict(7))]})
    with OpenAICompatibleServer(script) as srv:
        config = judge_config(tmp_path, srv.base_url, "calibration_pairs: 0\n")
        result = CliRunner().invoke(app, ["score", "judge", str(tmp_path / "inference"),
                                          "--judge-config", str(config), "--avlm-compat"])
    assert result.exit_code == 0, result.output
    assert "judged 3: 3 scored, 0 failed, mean_score=4.00" in result.stdout
    assert ("avlm compat: 2 of 3 scores coerced (missing_score 1, rounded 1, scaled_down 1)"
            in result.stdout)


def test_score_judge_withheld_by_calibration_exits_1(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CANARY_ENV, CANARY)
    write_predictions(tmp_path / "inference", [open_row(i) for i in range(3)])
    with OpenAICompatibleServer(rubric_judge(lambda gt, pred: 10)) as srv:
        config = judge_config(tmp_path, srv.base_url)
        result = CliRunner().invoke(app, ["score", "judge", str(tmp_path / "inference"),
                                          "--judge-config", str(config)])
    assert result.exit_code == 1, result.output
    assert "calibration: failed, agreement 0%" in result.stdout
    assert "judged 0: 0 scored, 0 failed, mean_score=null" in result.stdout
    assert "error: withheld: judge failed calibration (agreement 0%)" in result.stderr
    assert "calibration_min_agreement" in result.stderr and "Traceback" not in result.output


def test_score_judge_serves_the_configured_local_model(tmp_path: Path) -> None:
    """``serve:`` works from the CLI too: the same loader the Dagster resource uses."""
    write_predictions(tmp_path / "inference", [open_row(i) for i in range(2)])
    config = tmp_path / "judge.yaml"
    config.write_text("serve: random\nmax_workers: 1\nreply_tries: 1\nbackoff_base_s: 0\n")
    models = tmp_path / "models.yaml"
    models.write_text("models:\n  - name: random\n    serve: random\n")
    result = CliRunner().invoke(app, ["score", "judge", str(tmp_path / "inference"),
                                      "--judge-config", str(config), "--models-file", str(models)])
    # The random model replies in prose: no score at all, so calibration fails at once.
    assert result.exit_code == 1, result.output
    assert "calibration: failed" in result.stdout
    assert "self-judging: the judge is also a model under test (random)" in result.stdout


@pytest.mark.parametrize(("text", "expected"), [
    ("serve: gpt-5\n", "judge.yaml: field 'serve': unknown local model 'gpt-5'"),
    ("model: m\n", "judge.yaml: field 'base_url' is required when 'serve' is absent; fix:"),
    ("serve: [\n", "judge.yaml: not valid YAML"),
])
def test_score_judge_bad_config_exits_2_with_one_paragraph(tmp_path: Path, text: str,
                                                           expected: str) -> None:
    write_predictions(tmp_path, [open_row(0)])
    config = tmp_path / "judge.yaml"
    config.write_text(text)
    result = CliRunner().invoke(app, ["score", "judge", str(tmp_path), "--judge-config",
                                      str(config)])
    assert result.exit_code == 2
    assert expected in result.stderr and str(config) in result.stderr
    assert "Traceback" not in result.output and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "llm_judge").exists()


def test_score_judge_bad_models_file_exits_2(tmp_path: Path) -> None:
    write_predictions(tmp_path, [open_row(0)])
    config = tmp_path / "judge.yaml"
    config.write_text("serve: random\n")
    models = tmp_path / "models.yaml"
    models.write_text("models: []\n")
    result = CliRunner().invoke(app, ["score", "judge", str(tmp_path), "--judge-config",
                                      str(config), "--models-file", str(models)])
    assert result.exit_code == 2 and "--models-file:" in result.stderr
    assert str(models) in result.stderr
