"""The VLM client against a real local HTTP server: prompt, records, retries, failure categories.

The chat client's own policy (backoff, Retry-After forms, caps) is tested in
``eval_assets_tests/test_openai_chat.py``; here, what reaches an answer record.
"""

from __future__ import annotations

import base64
import email.utils
import json
import logging
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from eval_assets.model_runs.client import ClientSettings, OpenAIVLMClient, open_model
from eval_assets.model_runs.prompts import PROMPT_VERSION
from eval_assets.schemas.predictions import load_model_specs
from eval_assets.schemas.vqa import Case
from eval_assets_tests.fakes.openai_server import (
    HttpError,
    OpenAICompatibleServer,
    RawResponse,
    Reply,
    planned_waits,
)
from eval_assets_tests.model_runs.helpers import write_png

REPO = Path(__file__).resolve().parents[2]
CASE = Case(id="frame-000100-chair-presence", image="assets/frame-000100.png",
            question="Does the image contain any chair?", choices=["yes", "no"])


@pytest.fixture
def png(tmp_path: Path) -> bytes:
    return write_png(tmp_path / "f.png", seed=3)


def settings(url: str, **overrides: object) -> ClientSettings:
    values: dict[str, object] = {"base_url": url, "model": "fake-model", "max_tokens": 16,
                                 "timeout_s": 5.0, "max_retries": 3, "backoff_base_s": 0.01,
                                 "backoff_max_s": 0.05}
    values.update(overrides)
    return ClientSettings.model_validate(values)


def test_success_sends_exactly_the_dimos_prompt_and_records_everything(png: bytes) -> None:
    with OpenAICompatibleServer([Reply("Yes.")]) as srv, OpenAIVLMClient(settings(srv.base_url)) \
            as client:
        record = client.answer(CASE, png)
        requests = srv.requests
    assert len(requests) == 1
    body = requests[0].body
    assert set(body) <= {"model", "messages", "temperature", "max_tokens"}
    assert body["model"] == "fake-model" and body["temperature"] == 0 and body["max_tokens"] == 16
    assert body["messages"] == [
        {"role": "system", "content": "Answer the question using only the provided observations."},
        {"role": "user", "content": [
            {"type": "image_url",
             "image_url": {"url": "data:image/png;base64," + base64.b64encode(png).decode()}},
            {"type": "text", "text": 'Does the image contain any chair?\nChoices: ["yes", "no"]'
                                     "\nAnswer with exactly one choice."},
        ]},
    ]
    assert record.status == "success" and record.raw_response == "Yes."
    assert (record.choice, record.extraction_tier) == ("yes", "exact")
    assert record.case_id == CASE.id and record.model == "fake-model"
    assert record.attempts == 1 and record.error_category is None
    assert record.usage is not None and record.usage.total_tokens == 0
    assert record.latency_s is not None and 0 < record.latency_s <= record.wall_s
    assert record.config_hash == client.generation.config_hash()
    assert client.generation.prompt_version == PROMPT_VERSION


def test_unmatched_reply_is_a_success_without_a_choice(png: bytes) -> None:
    with OpenAICompatibleServer([Reply("I cannot tell")]) as srv, \
            OpenAIVLMClient(settings(srv.base_url)) as client:
        record = client.answer(CASE, png)
    assert record.status == "success" and record.choice is None and record.extraction_tier is None


def test_429_with_retry_after_seconds_is_honoured_then_succeeds(png: bytes) -> None:
    script = [HttpError(429, {"Retry-After": "1"}), Reply("no")]
    with OpenAICompatibleServer(script) as srv, OpenAIVLMClient(settings(srv.base_url)) as client:
        record = client.answer(CASE, png)
        assert len(srv.requests) == 2
    assert record.status == "success" and record.choice == "no" and record.attempts == 2
    assert record.wall_s is not None and record.wall_s >= 0.95  # waited the server's second


def test_503_with_retry_after_http_date_is_honoured(png: bytes,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    when = email.utils.format_datetime(datetime.now(UTC) + timedelta(seconds=2), usegmt=True)
    script = [HttpError(503, {"Retry-After": when}), Reply("yes")]
    with caplog.at_level(logging.DEBUG, logger="eval_assets.openai_chat"), \
            OpenAICompatibleServer(script) as srv, \
            OpenAIVLMClient(settings(srv.base_url)) as client:
        record = client.answer(CASE, png)
    assert record.status == "success" and record.attempts == 2
    # The date has one-second resolution, so the planned wait is at most 2 s (read from the
    # client's plan: a wall-clock ceiling fails on a busy machine), and the wall time holds it.
    ((wait, why),) = planned_waits(caplog.records)
    assert why == "Retry-After" and 0.0 < wait <= 2.0
    # The log gives the wait to 0.1 s: 1.17 s is announced as 1.2.
    assert record.wall_s is not None and record.wall_s >= wait - 0.05


def test_500_until_retries_are_exhausted_is_a_recorded_failure(png: bytes) -> None:
    with OpenAICompatibleServer(default=HttpError(500)) as srv, \
            OpenAIVLMClient(settings(srv.base_url, max_retries=2)) as client:
        record = client.answer(CASE, png)
        assert len(srv.requests) == 3
    assert record.status == "failed" and record.error_category == "server_error"
    assert record.attempts == 3 and record.choice is None
    assert record.error_message is not None and "500" in record.error_message


def test_timeout_is_retried_then_recorded(png: bytes) -> None:
    with OpenAICompatibleServer(default=Reply("yes", delay_s=3.0)) as srv, \
            OpenAIVLMClient(settings(srv.base_url, timeout_s=0.3, max_retries=1)) as client:
        record = client.answer(CASE, png)
        assert len(srv.requests) == 2
        # Did not wait for the slow reply: the retry came while the server still held the
        # first request (its 3 s delay), an order rather than a wall-clock ceiling.
        assert srv.max_in_flight == 2
    assert record.status == "failed" and record.error_category == "timeout"
    assert record.attempts == 2


@pytest.mark.parametrize(
    ("response", "category"),
    [
        (RawResponse(200, b"<html>gateway</html>", "text/html"), "malformed_response"),
        (RawResponse(200, b"not json at all"), "malformed_response"),
        (RawResponse(200, json.dumps({"id": "x", "object": "chat.completion"}).encode()),
         "malformed_response"),
        (RawResponse(200, json.dumps({"id": "x", "choices": []}).encode()), "malformed_response"),
        (Reply(None), "empty_response"),
        (HttpError(401), "client_error"),
        (HttpError(404), "client_error"),
    ],
)
def test_answers_that_retrying_cannot_fix_fail_at_once(png: bytes, response: object,
                                                       category: str) -> None:
    with OpenAICompatibleServer(default=response) as srv, \
            OpenAIVLMClient(settings(srv.base_url)) as client:
        record = client.answer(CASE, png)
        assert len(srv.requests) == 1
    assert record.status == "failed" and record.error_category == category
    assert record.attempts == 1 and record.choice is None and record.error_message


def test_non_json_body_is_kept_as_raw_response(png: bytes) -> None:
    with OpenAICompatibleServer(default=RawResponse(200, b"<html>oops</html>", "text/html")) \
            as srv, OpenAIVLMClient(settings(srv.base_url)) as client:
        record = client.answer(CASE, png)
    assert record.raw_response == "<html>oops</html>"


def test_connection_refused_is_a_connection_error(png: bytes) -> None:
    with OpenAICompatibleServer() as srv:
        url = srv.base_url  # the port is free again once the server has stopped
    with OpenAIVLMClient(settings(url, max_retries=1)) as client:
        record = client.answer(CASE, png)
    assert record.error_category == "connection_error" and record.attempts == 2


def test_api_key_comes_from_the_named_variable(png: bytes,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVAL_TEST_VLM_KEY", "sk-test-123")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-user-real-key")
    with OpenAICompatibleServer([Reply("yes"), Reply("yes")]) as srv:
        with OpenAIVLMClient(settings(srv.base_url, api_key_env="EVAL_TEST_VLM_KEY")) as client:
            client.answer(CASE, png)
            assert "sk-test-123" not in json.dumps(client.public_settings())
        with OpenAIVLMClient(settings(srv.base_url)) as client:
            client.answer(CASE, png)
        auth = [r.headers.get("authorization") for r in srv.requests]
    assert auth[0] == "Bearer sk-test-123"
    # Without api_key_env the user's OPENAI_API_KEY must not be sent to an arbitrary server.
    assert auth[1] is not None and "sk-user-real-key" not in auth[1]


def test_missing_key_variable_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVAL_TEST_MISSING_KEY", raising=False)
    with pytest.raises(ValueError, match=r"EVAL_TEST_MISSING_KEY.*export it"):
        OpenAIVLMClient(settings("http://127.0.0.1:9/v1", api_key_env="EVAL_TEST_MISSING_KEY"))


def test_describe_uses_the_description_prompt(png: bytes) -> None:
    with OpenAICompatibleServer([Reply("A grey room with a chair.")]) as srv, \
            OpenAIVLMClient(settings(srv.base_url)) as client:
        record = client.describe("frame-000100", "assets/frame-000100.png", png)
        body = srv.requests[0].body
    assert body["messages"][1]["content"][1] == {
        "type": "text", "text": "Describe what you observe in this frame."}
    assert record.status == "success" and record.raw_response == "A grey room with a chair."
    assert (record.frame, record.image) == ("frame-000100", "assets/frame-000100.png")


def test_a_10_mb_reply_is_reply_too_large_never_an_answer(png: bytes) -> None:
    # The defect: a 10 MB reply to a 256-token request was read as "yes" and stored twice.
    huge = "yes " + "x" * 10_000_000
    with OpenAICompatibleServer([Reply(huge), RawResponse(200, json.dumps(
            {"choices": [{"message": {"content": huge}}]}).encode(), chunked=True)]) as srv, \
            OpenAIVLMClient(settings(srv.base_url, max_tokens=256)) as client:
        t0 = time.perf_counter()
        declared = client.answer(CASE, png)  # Content-Length says 10 MB: not read at all
        streamed = client.answer(CASE, png)  # chunked: read up to the cap, then dropped
        elapsed = time.perf_counter() - t0
        assert len(srv.requests) == 2  # not retried
    for record in (declared, streamed):
        assert record.status == "failed" and record.error_category == "reply_too_large"
        assert record.choice is None and record.raw_response is None
        assert record.attempts == 1 and "max_reply_bytes" in (record.error_message or "")
        assert len(record.model_dump_json()) < 2000
    assert elapsed < 5.0


def test_a_reply_longer_than_max_tokens_allows_is_reply_too_large(png: bytes) -> None:
    # 16 tokens allow 4,096 characters by default; an explicit cap overrides.
    with OpenAICompatibleServer([Reply("yes " * 1500), Reply("yes " * 10)]) as srv, \
            OpenAIVLMClient(settings(srv.base_url)) as client, \
            OpenAIVLMClient(settings(srv.base_url, max_reply_chars=20)) as strict:
        long = client.answer(CASE, png)
        capped = strict.answer(CASE, png)
    assert long.error_category == "reply_too_large" and "6000 characters" in (
        long.error_message or "")
    assert capped.error_category == "reply_too_large" and long.choice is None


def test_500_then_200_succeeds_after_one_retry_with_usage_and_latency(png: bytes) -> None:
    usage = {"prompt_tokens": 321, "completion_tokens": 2, "total_tokens": 323}
    script = [HttpError(500), Reply("no", delay_s=0.05, usage=usage)]
    with OpenAICompatibleServer(script) as srv, OpenAIVLMClient(settings(srv.base_url)) as client:
        record = client.answer(CASE, png)
        assert len(srv.requests) == 2
    assert record.status == "success" and record.choice == "no" and record.attempts == 2
    assert record.usage is not None and record.usage.model_dump() == usage
    assert record.latency_s is not None and 0.04 <= record.latency_s <= record.wall_s


def test_failures_record_latency_and_attempts_too(png: bytes) -> None:
    with OpenAICompatibleServer(default=HttpError(503, delay_s=0.05)) as srv, \
            OpenAIVLMClient(settings(srv.base_url, max_retries=1)) as client:
        record = client.describe("frame-000100", "assets/frame-000100.png", png)
    assert record.status == "failed" and record.error_category == "server_error"
    assert record.attempts == 2 and record.usage is None
    assert record.latency_s is not None and record.latency_s >= 0.04
    assert record.wall_s is not None and record.wall_s >= 2 * 0.04


def test_400_is_not_retried(png: bytes) -> None:
    with OpenAICompatibleServer(default=HttpError(400, {"Retry-After": "0"})) as srv, \
            OpenAIVLMClient(settings(srv.base_url)) as client:
        record = client.answer(CASE, png)
        assert len(srv.requests) == 1
    assert record.error_category == "client_error" and record.attempts == 1


def test_retry_after_2_is_honoured_and_announced(png: bytes,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    script = [HttpError(429, {"Retry-After": "2"}), Reply("yes")]
    with caplog.at_level(logging.WARNING, logger="eval_assets.openai_chat"), \
            OpenAICompatibleServer(script) as srv, \
            OpenAIVLMClient(settings(srv.base_url, announce_wait_s=1.0)) as client:
        record = client.answer(CASE, png)
    assert record.status == "success" and record.attempts == 2
    assert record.wall_s is not None and record.wall_s >= 1.9
    announced = [r.getMessage() for r in caplog.records]
    assert any("waiting 2.0 s (Retry-After)" in m for m in announced), announced


def test_retry_after_beyond_the_maximum_fails_at_once(png: bytes,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    script = [HttpError(429, {"Retry-After": "100000"}), Reply("yes")]
    with caplog.at_level(logging.DEBUG, logger="eval_assets.openai_chat"), \
            OpenAICompatibleServer(script) as srv, \
            OpenAIVLMClient(settings(srv.base_url)) as client:
        record = client.answer(CASE, png)
        assert len(srv.requests) == 1
    assert record.status == "failed" and record.error_category == "retry_after_too_long"
    assert "100000 s" in (record.error_message or "") and record.attempts == 1
    assert planned_waits(caplog.records) == []  # no wait at all, whatever the clock says


def test_config_hash_changes_with_what_changes_answers_only() -> None:
    base = settings("http://h/v1")
    same = settings("http://h/v1/", max_concurrency=32, timeout_s=1, max_retries=0)
    assert base.generation_config().config_hash() == same.generation_config().config_hash()
    for change in ({"max_tokens": 17}, {"temperature": 0.5}, {"model": "other"},
                   {"base_url": "http://other/v1"}):
        changed = settings("http://h/v1", **change)
        assert changed.generation_config().config_hash() != base.generation_config().config_hash()
    pinned = settings("http://127.0.0.1:1234/v1", endpoint_id="serve://random?seed=0")
    moved = settings("http://127.0.0.1:5678/v1", endpoint_id="serve://random?seed=0")
    assert pinned.generation_config().config_hash() == moved.generation_config().config_hash()


def test_declared_models_file_serves_both_baselines() -> None:
    specs = {s.name: s for s in load_model_specs(REPO / "data" / "models.yaml")}
    assert {"random", "blind-smollm2"} <= set(specs)
    assert specs["random"].endpoint.serve == "random"
    assert specs["blind-smollm2"].endpoint.serve == "blind-smollm2"


def test_models_file_errors_name_the_file_and_entry(tmp_path: Path) -> None:
    path = tmp_path / "models.yaml"
    path.write_text("models:\n  - name: a\n    serve: random\n  - name: b\n")
    with pytest.raises(ValueError, match=r"models.yaml: model 'b' has neither 'base_url'"):
        load_model_specs(path)
    path.write_text("models:\n  - name: a\n    serve: random\n    colour: red\n")
    with pytest.raises(ValueError, match=r"models\[0\] is invalid"):
        load_model_specs(path)


def test_a_models_file_entry_sets_the_retry_wait_and_reply_limits() -> None:
    from eval_assets.defs.resources import VLMClientResource
    from eval_assets.schemas.predictions import ModelSpec

    spec = ModelSpec.model_validate({"name": "hosted", "base_url": "http://127.0.0.1:9/v1",
                                     "max_retries": 1, "retry_after_max_s": 30,
                                     "max_reply_chars": 500})
    resource = VLMClientResource(retry_after_max_s=120, announce_wait_s=3)
    with open_model(spec, resource.defaults()) as client:
        endpoint = client.settings.endpoint
        assert (endpoint.max_retries, endpoint.retry_after_max_s, endpoint.max_reply_chars,
                endpoint.announce_wait_s) == (1, 30, 500, 3)
        assert client.settings.model == "hosted"
    plain = ModelSpec.model_validate({"name": "x", "base_url": "http://127.0.0.1:9/v1"})
    with open_model(plain, resource.defaults()) as client:
        endpoint = client.settings.endpoint
        assert (endpoint.retry_after_max_s, endpoint.max_reply_chars) == (120, None)


def test_a_nested_endpoint_mapping_is_read_like_the_flat_fields() -> None:
    from eval_assets.schemas.predictions import ModelSpec

    flat = ModelSpec.model_validate({"name": "a", "serve": "random", "max_retries": 1})
    nested = ModelSpec.model_validate({"name": "a", "endpoint": {"serve": "random",
                                                                 "max_retries": 1}})
    assert flat == nested and flat.endpoint.model_fields_set == {"serve", "max_retries"}
