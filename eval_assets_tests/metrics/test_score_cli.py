"""``eval-assets score mcq|judge`` on a temporary inference folder, through the real root CLI."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from eval_assets.cli import app
from eval_assets.metrics.mcq import score_mcq
from eval_assets.metrics.predictions import rows_from_dicts
from eval_assets_tests.fakes.openai_server import (
    HttpError,
    OpenAICompatibleServer,
    Reply,
    route_by_text,
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
        "[ROW-2]": [Reply("not json"), Reply(verdict(85))],
        "[ROW-3]": [HttpError(503, body=echo)],
    })
    with OpenAICompatibleServer(script) as srv:
        config = tmp_path / "judge.yaml"
        config.write_text(
            f"base_url: {srv.base_url}\nmodel: judge-model\napi_key_env: {CANARY_ENV}\n"
            "max_retries: 1\nbackoff_base_s: 0.01\nbackoff_max_s: 0.02\nmax_workers: 2\n"
            "domain: The frames come from a patrolling robot.\n")
        result = CliRunner().invoke(app, ["score", "judge", str(inference), "--config",
                                          str(config)])
        seen = srv.requests
    assert result.exit_code == 0, result.output
    assert all(r.headers["authorization"] == f"Bearer {CANARY}" for r in seen)  # key was used
    assert "judged 4: 2 scored, 2 failed, mean_score=8.50" in result.stdout

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
    result = CliRunner().invoke(app, ["score", "judge", str(tmp_path), "-c", str(config)])
    assert result.exit_code == 2
    assert f"environment variable {CANARY_ENV} is not set" in result.stderr
    assert not (tmp_path / "llm_judge").exists()


def test_score_judge_reports_a_bad_config(tmp_path: Path) -> None:
    write_predictions(tmp_path, [open_row(0)])
    config = tmp_path / "judge.yaml"
    config.write_text("base_url: http://127.0.0.1:9/v1\nmodel: m\nmax_workers: 0\n")
    result = CliRunner().invoke(app, ["score", "judge", str(tmp_path), "--config", str(config)])
    assert result.exit_code == 2
    assert "judge.yaml: field 'max_workers'" in result.stderr
