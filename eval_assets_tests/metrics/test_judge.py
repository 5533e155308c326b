"""LLM-as-judge against a real OpenAI-compatible HTTP server on 127.0.0.1 (no mocks)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from eval_assets.metrics.avlm_rows import PredictionRow, rows_from_dicts
from eval_assets.metrics.judge import (
    Judge,
    JudgeConfig,
    JudgeConfigError,
    JudgeOutcome,
    OpenAIJudge,
    avlm_score,
    extract_json,
    judge_dir,
    judge_predictions_document,
    judge_rows,
    normalize_score,
    open_judge,
    summarize_judge_results,
)
from eval_assets.metrics.judge_journal import open_journal
from eval_assets.metrics.judge_prompt import build_messages
from eval_assets_tests.fakes.openai_server import (
    HttpError,
    OpenAICompatibleServer,
    RawResponse,
    Reply,
    planned_waits,
    route_by_text,
)

REPO = Path(__file__).resolve().parents[2]
KEY_ENV = "EVAL_ASSETS_TEST_JUDGE_KEY"
KEY = "sk-test-judge-key-0001"


def verdict(score: Any = 8, **extra: Any) -> str:
    """A judge reply as the rubric asks for it."""
    body = {"score": score, "reasoning": "Matches the reference.", "strengths": ["right count"],
            "weaknesses": [], "metadata_alignment": "consistent", **extra}
    if score is None:
        del body["score"]
    return json.dumps(body)


def open_row(index: int, gt: str = "Two people stand by the door.",
             pred: str = "Two people are near the door.", cls: str = "describe",
             **extra: Any) -> dict[str, Any]:
    """An open-ended AVLM predictions row; the marker ROW-<index> lets the server route on it."""
    return {"index": index, "id": f"case-{index}", "class": cls, "evaluation_type": "open_ended",
            "ground_truth": f"{gt} [ROW-{index}]", "prediction": pred,
            "inference_status": "success",
            "conversations": [{"from": "human", "value": "<image> Describe the scene."},
                              {"from": "gpt", "value": gt}],
            "metadata": {"detections": [{"label": "person", "count": 2}]}, **extra}


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, KEY)
    return KEY


def fast_config(server: OpenAICompatibleServer, **overrides: Any) -> JudgeConfig:
    """Tiny backoff and timeouts so failure paths stay fast."""
    settings: dict[str, Any] = {
        "base_url": server.base_url, "model": "judge-model", "api_key_env": KEY_ENV,
        "timeout_s": 5.0, "max_retries": 2, "reply_tries": 5, "backoff_base_s": 0.01,
        "backoff_max_s": 0.02, "max_workers": 1, "max_tokens": 1000, "max_reply_chars": 16000}
    settings.update(overrides)
    return JudgeConfig.model_validate(settings)


@pytest.fixture
def server() -> Iterator[OpenAICompatibleServer]:
    with OpenAICompatibleServer() as srv:
        yield srv


def judge_one(server: OpenAICompatibleServer, row: dict[str, Any], **overrides: Any
              ) -> JudgeOutcome:
    judge = OpenAIJudge(fast_config(server, **overrides))
    try:
        return judge.judge(rows_from_dicts([row])[0])
    finally:
        judge.close()


def test_good_reply_and_the_request_it_answers(server: OpenAICompatibleServer,
                                               api_key: str) -> None:
    server.push(Reply(verdict(8)))
    outcome = judge_one(server, open_row(0))
    assert outcome.ok and outcome.score == 8 and outcome.attempts == 1
    assert outcome.reasoning == "Matches the reference."
    assert outcome.strengths == ["right count"] and outcome.metadata_alignment == "consistent"
    assert outcome.metadata_mode_used == "user"

    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {api_key}"
    body = request.body
    assert body["model"] == "judge-model" and body["temperature"] == 0.0
    assert body["max_tokens"] == 1000
    system, user = body["messages"]
    assert system["role"] == "system" and "expert evaluator" in system["content"]
    assert user["role"] == "user"
    content = user["content"]
    # The rubric's sections, in AVLM's order, each holding its part of the row.
    order = [content.index(s) for s in ("**Ground Truth**\nTwo people stand by the door.",
                                        "**Conversation**\n[", "**Prediction**\nTwo people are",
                                        '**Metadata**\n{"detections"', "**Scoring (1-10")]
    assert order == sorted(order)
    assert '"metadata_alignment"' in content


def test_reply_wrapped_in_prose(server: OpenAICompatibleServer, api_key: str) -> None:
    server.push(Reply(f"Sure. Here is my verdict:\n```json\n{verdict(7)}\n```\nHope that helps."))
    outcome = judge_one(server, open_row(0))
    assert outcome.ok and outcome.score == 7 and outcome.attempts == 1


def test_invalid_json_is_retried_then_accepted(server: OpenAICompatibleServer,
                                               api_key: str) -> None:
    server.push(Reply('{"score": 9, "reasoning": "unterminated'), Reply(verdict(9)))
    outcome = judge_one(server, open_row(0))
    assert outcome.ok and outcome.score == 9 and outcome.attempts == 2
    assert len(server.requests) == 2


def test_empty_replies_exhaust_the_reply_tries(server: OpenAICompatibleServer,
                                               api_key: str) -> None:
    server.push(*[Reply("")] * 4, Reply(None))
    outcome = judge_one(server, open_row(0))
    assert not outcome.ok and outcome.score is None
    assert outcome.error_category == "empty_response" and outcome.attempts == 5
    assert len(server.requests) == 5


def test_unparseable_replies_become_a_parse_error(server: OpenAICompatibleServer,
                                                  api_key: str) -> None:
    server.push(Reply("I would give it an eight."), Reply("{oops}"), Reply('{"score": Infinity}'))
    outcome = judge_one(server, open_row(0), reply_tries=3)
    assert outcome.error_category == "parse_error" and outcome.attempts == 3
    assert "after 3 tries" in (outcome.error or "")


def test_429_honours_retry_after_then_succeeds(server: OpenAICompatibleServer, api_key: str,
                                               caplog: pytest.LogCaptureFixture) -> None:
    server.push(HttpError(429, {"Retry-After": "1"}), Reply(verdict(6)))
    start = time.monotonic()
    with caplog.at_level(logging.DEBUG, logger="eval_assets.openai_chat"):
        outcome = judge_one(server, open_row(0))
    elapsed = time.monotonic() - start
    assert outcome.ok and outcome.score == 6 and outcome.attempts == 2
    # The server's second, as planned (not a wall-clock ceiling, which a busy machine breaks);
    # the backoff is 0.02 s at most, so waiting ~1 s can only come from Retry-After.
    assert planned_waits(caplog.records) == [(1.0, "Retry-After")]
    assert elapsed >= 0.9

    server.push(HttpError(429, {"Retry-After": "0"}), Reply(verdict(5)))
    assert judge_one(server, open_row(1)).score == 5


def test_rate_limit_until_exhaustion_is_its_own_category(server: OpenAICompatibleServer,
                                                         api_key: str) -> None:
    server.push(*[HttpError(429, {"Retry-After": "0"})] * 3)
    outcome = judge_one(server, open_row(0), max_retries=2)
    assert outcome.error_category == "rate_limited" and outcome.attempts == 3
    assert len(server.requests) == 3


def test_500_until_exhaustion_is_recorded_and_the_run_continues(api_key: str) -> None:
    script = route_by_text({"[ROW-0]": [HttpError(500)], "[ROW-1]": [Reply(verdict(8))]})
    with OpenAICompatibleServer(script) as srv:
        judge = OpenAIJudge(fast_config(srv, max_retries=2))
        judged = judge_rows(rows_from_dicts([open_row(0), open_row(1)]), judge, max_workers=2)
        judge.close()
        failed, scored = (item.outcome for item in judged)
        assert failed.error_category == "api_failed" and failed.score is None
        assert failed.attempts == 3 and "HTTP 500" in (failed.error or "")
        assert scored.ok and scored.score == 8
        assert sum("[ROW-0]" in json.dumps(r.body) for r in srv.requests) == 3


def test_non_retryable_status_fails_at_once(server: OpenAICompatibleServer, api_key: str) -> None:
    server.push(HttpError(400, body={"error": {"message": "bad model", "type": "invalid"}}))
    outcome = judge_one(server, open_row(0))
    assert outcome.error_category == "api_failed" and outcome.attempts == 1
    assert len(server.requests) == 1


@pytest.mark.parametrize("body", [RawResponse(200, b"not json"),
                                  RawResponse(200, b"<html>", "text/html"),
                                  RawResponse(200, b'{"unexpected": 1}')])
def test_a_malformed_200_body_is_an_api_failure_not_retried(server: OpenAICompatibleServer,
                                                            api_key: str,
                                                            body: RawResponse) -> None:
    # One policy with the other callers: a 200 that is not a chat completion is not retried
    # within the call (a rerun asks again: failed calls are not kept in the journal).
    server.push(body, Reply(verdict(7)))
    outcome = judge_one(server, open_row(0))
    assert outcome.error_category == "api_failed" and "malformed response" in (outcome.error or "")
    assert outcome.attempts == 1 and len(server.requests) == 1


def test_a_10_mb_reply_is_reply_too_large(server: OpenAICompatibleServer, api_key: str) -> None:
    huge = verdict(9, reasoning="x" * 10_000_000)
    server.push(Reply(huge), RawResponse(200, json.dumps(
        {"choices": [{"message": {"content": huge}}]}).encode(), chunked=True))
    for index in (0, 1):
        outcome = judge_one(server, open_row(index), reply_tries=3)
        assert outcome.error_category == "reply_too_large" and outcome.score is None
        assert outcome.attempts == 1
    assert len(server.requests) == 2


def test_retry_after_beyond_the_maximum_fails_at_once(server: OpenAICompatibleServer,
                                                      api_key: str,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    server.push(HttpError(503, {"Retry-After": "100000"}), Reply(verdict(8)))
    with caplog.at_level(logging.DEBUG, logger="eval_assets.openai_chat"):
        outcome = judge_one(server, open_row(0))
    assert planned_waits(caplog.records) == []  # no wait at all, whatever the clock says
    assert outcome.error_category == "retry_after_too_long" and outcome.attempts == 1
    assert "100000 s" in (outcome.error or "") and "retry_after_max_s=600" in (outcome.error or "")
    assert len(server.requests) == 1


def test_every_call_journals_its_usage_and_latency(tmp_path: Path, api_key: str) -> None:
    usage = {"prompt_tokens": 900, "completion_tokens": 40, "total_tokens": 940}
    script = route_by_text({"[ROW-0]": [HttpError(500), Reply(verdict(8), usage=usage)],
                            "[ROW-1]": [HttpError(400)]})
    with OpenAICompatibleServer(script) as srv, open_journal(tmp_path / "j.jsonl") as journal:
        judge = OpenAIJudge(fast_config(srv))
        with judge.journalled(journal):
            rows = rows_from_dicts([open_row(0), open_row(1)])
            scored, failed = judge.judge(rows[0]), judge.judge(rows[1])
        judge.close()
    assert scored.score == 8 and scored.attempts == 2
    assert failed.error_category == "api_failed" and failed.attempts == 1  # 400: no retry
    records = [json.loads(line) for line in (tmp_path / "j.jsonl").read_text().splitlines()]
    ok, bad = sorted(records, key=lambda r: r["status"], reverse=True)
    assert ok["status"] == "success" and ok["calls"] == 2 and ok["usage"] == usage
    assert bad["status"] == "failed" and bad["calls"] == 1 and bad["usage"] is None
    for record in (ok, bad):
        assert 0 < record["latency_s"] <= record["wall_s"]


def test_timeout_is_recorded(server: OpenAICompatibleServer, api_key: str) -> None:
    # The replies would come after 60 s (the server's stop cuts the wait short).
    server.push(Reply(verdict(8), delay_s=60.0), Reply(verdict(8), delay_s=60.0))
    outcome = judge_one(server, open_row(0), timeout_s=0.3, max_retries=1)
    assert outcome.error_category == "timeout" and outcome.attempts == 2
    assert "Timeout after 0.3s" in (outcome.error or "")
    # Did not wait for the slow server: the retry came while it still held the first request.
    assert server.max_in_flight == 2


@pytest.mark.parametrize(("reply_score", "expected"), [(8, 8), ("7", 7), (" 6 ", 6), (9.0, 9)])
def test_valid_scores_through_the_server(server: OpenAICompatibleServer, api_key: str,
                                         reply_score: Any, expected: int) -> None:
    server.push(Reply(verdict(reply_score)))
    outcome = judge_one(server, open_row(0))
    assert outcome.ok and outcome.score == expected and outcome.coercions == ()


@pytest.mark.parametrize(("reply_score", "category"), [
    (None, "missing_score"), (42, "score_out_of_range"), (-3, "score_out_of_range"),
    (0, "score_out_of_range"), (11, "score_out_of_range"), ("9.5", "invalid_score"),
    (7.5, "invalid_score"), ("eight", "invalid_score"), (True, "invalid_score"),
    ([8], "invalid_score"),
])
def test_a_reply_without_a_valid_score_is_a_failure_never_a_score(
        server: OpenAICompatibleServer, api_key: str, reply_score: Any, category: str) -> None:
    server.push(*[Reply(verdict(reply_score))] * 2)
    outcome = judge_one(server, open_row(0), reply_tries=2)
    assert not outcome.ok and outcome.score is None
    assert outcome.error_category == category and outcome.attempts == 2
    assert "after 2 tries" in (outcome.error or "")


def test_a_valid_score_on_a_later_try_is_accepted(server: OpenAICompatibleServer,
                                                  api_key: str) -> None:
    server.push(Reply(verdict(42)), Reply(verdict(None)), Reply(verdict(4)))
    outcome = judge_one(server, open_row(0), reply_tries=3)
    assert outcome.score == 4 and outcome.attempts == 3


def test_an_oversized_reply_is_not_parsed(server: OpenAICompatibleServer, api_key: str) -> None:
    huge = verdict(9, reasoning="x" * 20_000)
    server.push(Reply(huge))
    outcome = judge_one(server, open_row(0), reply_tries=1)
    assert outcome.error_category == "oversized_reply" and outcome.score is None
    assert f"{len(huge)} characters" in (outcome.error or "")
    server.push(Reply(huge))
    assert judge_one(server, open_row(1), reply_tries=1, max_reply_chars=30_000).score == 9


@pytest.mark.parametrize(("reply_score", "expected", "coercions"), [
    (85, 8, ("scaled_down", "rounded")), (100, 10, ("scaled_down",)),
    (42, 4, ("scaled_down", "rounded")), ("9.5", 10, ("rounded",)),
    (None, 1, ("missing_score",)), (-3, 1, ("clamped",)), (0, 1, ("clamped",)),
    (11, 1, ("scaled_down", "rounded")), ("eight", 1, ("non_numeric",)), (7, 7, ()),
])
def test_avlm_compat_coerces_as_avlm_and_says_how(server: OpenAICompatibleServer, api_key: str,
                                                  reply_score: Any, expected: int,
                                                  coercions: tuple[str, ...]) -> None:
    server.push(Reply(verdict(reply_score)))
    outcome = judge_one(server, open_row(0), avlm_compat=True)
    assert outcome.score == expected and outcome.coercions == coercions
    assert normalize_score(reply_score) == expected
    assert avlm_score(reply_score) == (expected, coercions)


@pytest.mark.parametrize(("raw", "expected"), [
    (7, 7), (7.5, 8), (8.5, 8), ("9.5", 10), (" 6 ", 6), (85, 8), (95, 10), (105, 10), (100, 10),
    (10, 10), (11, 1), (0, 1), (-3, 1), (None, 1), ("eight", 1), ([8], 1), (True, 1),
])
def test_normalize_score(raw: Any, expected: int) -> None:
    assert normalize_score(raw) == expected


def test_normalize_score_rejects_non_finite() -> None:
    with pytest.raises(ValueError, match="finite"):
        normalize_score(float("nan"))


def test_extract_json_takes_first_open_to_last_close_brace() -> None:
    assert extract_json('x {"score": 3, "n": {"a": 1}} y') == {"score": 3, "n": {"a": 1}}
    with pytest.raises(ValueError, match="no JSON object"):
        extract_json("no braces")
    with pytest.raises(ValueError):
        extract_json('{"a": 1} and {"b": 2}')  # one span from first { to last }


def test_results_keep_input_order_with_many_workers(api_key: str) -> None:
    n = 8
    # Earlier rows answer later, so completion order is the reverse of input order.
    routes = {f"[ROW-{i}]": [Reply(verdict(i + 1), delay_s=0.05 * (n - i))] for i in range(n)}
    with OpenAICompatibleServer(route_by_text(routes)) as srv:
        judge = OpenAIJudge(fast_config(srv, max_workers=4))
        judged = judge_rows(rows_from_dicts([open_row(i) for i in range(n)]), judge,
                            max_workers=4)
        judge.close()
    assert [item.row.index for item in judged] == list(range(n))
    assert [item.outcome.score for item in judged] == [i + 1 for i in range(n)]
    assert srv.max_in_flight >= 2  # the calls overlapped (seen by the server, not a clock)


def test_prechecks_and_mean_excludes_failures(api_key: str) -> None:
    rows = [
        open_row(0, cls="describe"),
        open_row(1, cls="describe", inference_status="failed"),
        open_row(2, cls="count"),
        open_row(3, cls="count", prediction=""),
        open_row(4, cls="describe"),
        {**open_row(5, cls="count"), "ground_truth": None},
    ]
    script = route_by_text({"[ROW-0]": [Reply(verdict(9))], "[ROW-2]": [Reply(verdict(6))],
                            "[ROW-4]": [HttpError(503)]})
    with OpenAICompatibleServer(script) as srv:
        judge = OpenAIJudge(fast_config(srv, max_retries=1, max_workers=3))
        judged = judge_rows(rows_from_dicts(rows), judge, max_workers=3)
        judge.close()
    assert [j.outcome.error_category for j in judged] == [
        None, "infer_failed", None, "missing_pred", "api_failed", "missing_gt"]

    doc = judge_predictions_document(judged, model_used="judge-model", metadata={"k": "v"})
    assert list(doc) == ["statistics", "results", "failures", "error_counts_by_category",
                         "metadata"]
    assert doc["error_counts_by_category"] == {"infer_failed": 1, "missing_pred": 1,
                                               "api_failed": 1, "missing_gt": 1}
    assert [f["index"] for f in doc["failures"]] == [1, 3, 4, 5]
    assert all(r["score"] is None for r in doc["results"] if "error" in r)
    stats = doc["statistics"]
    assert (stats["total_entries"], stats["successful_evaluations"],
            stats["failed_evaluations"], stats["explicit_errors"]) == (6, 2, 4, 4)
    assert stats["mean_score"] == 7.5 and stats["success_rate"] == 2 / 6 * 100

    summary = summarize_judge_results(doc["results"])
    assert list(summary) == ["total_judged", "num_success", "num_failed", "mean_score",
                             "median_score", "min_score", "max_score", "score_distribution",
                             "per_class"]
    assert summary["total_judged"] == 6 and summary["num_success"] == 2
    assert summary["num_failed"] == 4
    assert summary["mean_score"] == 7.5 and summary["median_score"] == 7.5
    assert (summary["min_score"], summary["max_score"]) == (6, 9)
    assert summary["score_distribution"] == {"excellent_9_10": 1, "good_8": 0, "fair_7": 0,
                                             "poor_6": 1, "very_poor_1_5": 0}
    assert list(summary["per_class"]) == ["describe", "count"]
    assert summary["per_class"]["describe"]["mean_score"] == 9.0
    assert summary["per_class"]["describe"]["num_failed"] == 2
    assert summary["per_class"]["count"]["median_score"] == 6


def test_summary_reads_avlm_files_whose_failures_score_zero() -> None:
    results = [{"score": 8, "class": "a"}, {"score": 0, "class": "a"},
               {"score": 0, "error": "Timeout after 180s", "class": "b"},
               {"score": 4, "class": "b"}]
    summary = summarize_judge_results(results)
    assert (summary["num_success"], summary["num_failed"], summary["mean_score"]) == (2, 2, 6.0)
    assert summary["per_class"]["b"]["score_distribution"]["very_poor_1_5"] == 1


def test_metadata_placement() -> None:
    small = {"detections": [{"label": "person"}]}
    big = {"points": list(range(600))}
    common = {"ground_truth": "gt", "conversation": [{"from": "human", "value": "q"}],
              "prediction": "p", "domain": "You also know warehouse robots."}
    (system, user), used = build_messages(metadata=small, placement="auto", **common)
    assert used == "user" and '{"detections":[{"label":"person"}]}' in user["content"]
    assert "[Context]" not in system["content"]
    assert system["content"].endswith("\n\nYou also know warehouse robots.")

    (system, user), used = build_messages(metadata=big, placement="auto", **common)
    assert used == "system" and "[Context]\n{\"points\":[0,1," in system["content"]
    assert "[0,1," not in user["content"]

    (system, user), used = build_messages(metadata=small, placement="omit", **common)
    assert used == "omit" and "person" not in system["content"] + user["content"]

    (system, user), used = build_messages(metadata=small, placement="system", **common)
    assert "[Context]" in system["content"] and "person" not in user["content"]


def test_answers_cannot_inject_template_slots() -> None:
    (_, user), _ = build_messages(ground_truth="{{PREDICTION}}", conversation="c",
                                  prediction="pred-text", metadata=None)
    assert user["content"].count("pred-text") == 1
    assert "**Ground Truth**\n{{PREDICTION}}" in user["content"]


def test_config_from_yaml(tmp_path: Path) -> None:
    path = tmp_path / "judge.yaml"
    path.write_text("base_url: http://127.0.0.1:9/v1\nmodel: m\nmax_workers: 3\n"
                    "metadata_placement: system\ndomain: Robots on patrol.\n")
    config = JudgeConfig.from_yaml(path)
    assert (config.max_workers, config.metadata_placement, config.temperature) == (3, "system", 0)
    assert config.endpoint.api_key_env == "CLIENT_API_KEY"

    path.write_text("base_url: u\nmodel: m\napi_key: sk-should-not-be-here\n")
    with pytest.raises(JudgeConfigError, match="'api_key' is not allowed") as info:
        JudgeConfig.from_yaml(path)
    assert "sk-should-not-be-here" not in str(info.value)

    path.write_text("base_url: u\nmodel: m\nmetadata_placement: sideways\n")
    with pytest.raises(JudgeConfigError, match=r"judge\.yaml: field 'metadata_placement'"):
        JudgeConfig.from_yaml(path)
    path.write_text("model: m\n")
    with pytest.raises(JudgeConfigError, match="field 'base_url'"):
        JudgeConfig.from_yaml(path)


def test_config_serve_is_an_endpoint_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "judge.yaml"
    path.write_text("serve: random\nmax_workers: 1\n")
    config = JudgeConfig.from_yaml(path)
    assert (config.endpoint.serve, config.model, config.endpoint.base_url) == (
        "random", "random", None)
    assert JudgeConfig.from_yaml(path, avlm_compat=True).scoring_mode == "avlm_compat"

    for text, expected in [
        ("serve: gpt-5\n", r"judge\.yaml: field 'serve': unknown local model 'gpt-5'"),
        ("serve: random\nmodel: other\n", r"judge\.yaml: field 'model' is 'other' but the "
                                           r"served model answers as 'random'; fix: "),
        ("base_url: http://127.0.0.1:9/v1\n", r"judge\.yaml: field 'model' is required"),
        ("calibration_min_agreement: 2\nserve: random\n",
         r"field 'calibration_min_agreement'"),
    ]:
        path.write_text(text)
        with pytest.raises(JudgeConfigError, match=expected):
            JudgeConfig.from_yaml(path)


def test_the_shipped_config_loads_with_the_one_loader() -> None:
    config = JudgeConfig.from_yaml(REPO / "data" / "judge.yaml")
    assert config.endpoint.serve == "blind-smollm2" and config.endpoint.base_url is None
    assert config.calibration_pairs > 0 and 0 < config.calibration_min_agreement <= 1
    assert not config.avlm_compat


def test_open_judge_starts_the_served_model(tmp_path: Path) -> None:
    config = JudgeConfig(serve="random", response_format="judgement_schema")  # type: ignore[arg-type]
    with open_judge(config) as judge:
        url = judge.config.endpoint.base_url
        assert url is not None and url.startswith("http://")
        outcome = judge.judge(rows_from_dicts([open_row(0)])[0])
    # The random model builds the schema with a random score: a valid one.
    assert outcome.ok and 1 <= (outcome.score or 0) <= 10


def test_missing_api_key_env_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    config = JudgeConfig(base_url="http://127.0.0.1:9/v1", model="m", api_key_env=KEY_ENV)
    with pytest.raises(JudgeConfigError, match=f"{KEY_ENV} is not set"):
        OpenAIJudge(config)


class LengthJudge:
    """A deterministic, offline judge: proves other judges plug in through the protocol."""

    name = "length-judge"

    def judge(self, row: PredictionRow) -> JudgeOutcome:
        if "boom" in (row.prediction or ""):
            raise RuntimeError("judge bug")
        return JudgeOutcome(score=min(10, len(row.prediction or "")), reasoning="by length")


def test_other_judges_plug_in(tmp_path: Path) -> None:
    assert isinstance(LengthJudge(), Judge)
    rows = [open_row(0, pred="abc"), open_row(1, pred="boom"), open_row(2, pred="x" * 20)]
    (tmp_path / "predictions.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    config = JudgeConfig(base_url="http://127.0.0.1:9/v1", model="unused", max_workers=2,
                         calibration_pairs=0)
    report = judge_dir(tmp_path, config, judge=LengthJudge())
    assert report.calibration.status == "disabled" and report.journal_path is None
    assert [r["score"] for r in report.predictions["results"]] == [3, None, 10]
    assert report.predictions["results"][1]["error_category"] == "processing_error"
    assert report.predictions["metadata"]["model_used"] == "length-judge"
    assert report.results["mean_score"] == 6.5


def test_outputs_are_byte_identical_across_runs(tmp_path: Path, api_key: str) -> None:
    rows = [open_row(i, cls=("a", "b")[i % 2]) for i in range(5)]
    rows.append({**open_row(5), "evaluation_type": "mcq"})  # not judged
    (tmp_path / "predictions.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    routes = {f"[ROW-{i}]": [Reply(verdict(5 + i))] for i in range(4)}
    routes["[ROW-4]"] = [HttpError(500)]
    outputs, requests = [], []
    for _ in range(2):
        with OpenAICompatibleServer(route_by_text(routes)) as srv:
            report = judge_dir(tmp_path, fast_config(srv, max_retries=1, max_workers=3,
                                                     calibration_pairs=0))
            requests.append(srv.requests)
        outputs.append((report.predictions_path.read_bytes(), report.results_path.read_bytes()))
    assert outputs[0] == outputs[1]
    assert report.predictions_path == tmp_path / "llm_judge" / "llm_judge_predictions.json"
    assert report.results_path == tmp_path / "llm_judge" / "llm_judge_results.json"
    assert report.results["total_judged"] == 5 and report.results["num_failed"] == 1
    assert report.results["mean_score"] == 6.5
    # The second run read the four replies from the journal; only the failed row asked again.
    assert len(requests[0]) == 4 + 2 and report.calls_replayed == 4
    assert len(requests[1]) == 2 and all("[ROW-4]" in json.dumps(r.body) for r in requests[1])
