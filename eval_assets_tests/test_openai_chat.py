"""The one OpenAI-compatible chat client against a real HTTP server on 127.0.0.1 (no mocks)."""

from __future__ import annotations

import email.utils
import json
import logging
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from eval_assets.openai_chat import (
    ChatClient,
    RetryPolicy,
    backoff_delay,
    default_reply_limits,
    is_retryable_status,
    parse_retry_after,
)
from eval_assets_tests.fakes.openai_server import (
    HttpError,
    OpenAICompatibleServer,
    RawResponse,
    Reply,
)

FAST = RetryPolicy(max_retries=3, backoff_base_s=0.01, backoff_max_s=0.05)
REQUEST: dict[str, Any] = {"model": "fake-model", "max_tokens": 256,
                           "messages": [{"role": "user", "content": "Is there a chair?"}]}
LOGGER = "eval_assets.openai_chat"


@pytest.fixture
def server() -> Iterator[OpenAICompatibleServer]:
    with OpenAICompatibleServer() as srv:
        yield srv


def client_for(server: OpenAICompatibleServer, **options: Any) -> ChatClient:
    options.setdefault("policy", FAST)
    options.setdefault("timeout_s", 5.0)
    return ChatClient(server.base_url, **options)


def complete(server: OpenAICompatibleServer, request: dict[str, Any] | None = None,
             **options: Any) -> Any:
    with client_for(server, **options) as client:
        return client.complete(request or REQUEST)


# --- the reply cap ------------------------------------------------------------------------------
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_10_mb_reply_to_a_256_token_request_is_reply_too_large(
        server: OpenAICompatibleServer, chunked: bool) -> None:
    huge = "yes " + "x" * 10_000_000
    body = json.dumps({"choices": [{"message": {"content": huge}}]}).encode()
    server.push(RawResponse(200, body, chunked=chunked))
    t0 = time.perf_counter()
    result = complete(server)
    assert time.perf_counter() - t0 < 5.0
    assert not result.ok and result.error_category == "reply_too_large"
    assert result.content is None and result.raw_response is None
    assert result.attempts == 1 and len(server.requests) == 1  # never retried
    assert f"max_reply_bytes={default_reply_limits(256)[0]}" in (result.error_message or "")


def test_the_reply_cap_is_configurable_in_bytes_and_characters(
        server: OpenAICompatibleServer) -> None:
    server.push(Reply("y" * 500), Reply("y" * 500), Reply("y" * 500))
    assert complete(server).content == "y" * 500
    by_chars = complete(server, max_reply_chars=499)
    assert by_chars.error_category == "reply_too_large"
    assert "500 characters, more than max_reply_chars=499" in (by_chars.error_message or "")
    assert by_chars.usage is not None  # the server answered: its usage is kept
    assert complete(server, max_reply_bytes=300).error_category == "reply_too_large"


def test_default_reply_limits_follow_max_tokens() -> None:
    assert default_reply_limits(256) == (65536 + 8 * 16384, 16384)
    assert default_reply_limits(16) == (65536 + 8 * 4096, 4096)
    assert default_reply_limits(None) == default_reply_limits(4096)
    assert default_reply_limits(256)[0] < 10_000_000


def test_a_huge_error_body_is_read_only_in_part(server: OpenAICompatibleServer) -> None:
    server.push(RawResponse(500, b"x" * 5_000_000, "text/plain"))
    result = complete(server, policy=RetryPolicy(max_retries=0))
    assert result.error_category == "server_error" and len(result.error_message or "") < 600


# --- retries and waits --------------------------------------------------------------------------
def test_500_then_200_succeeds_after_one_retry_with_usage_and_latency(
        server: OpenAICompatibleServer) -> None:
    usage = {"prompt_tokens": 12, "completion_tokens": 1, "total_tokens": 13}
    server.push(HttpError(500, delay_s=0.02), Reply("yes", delay_s=0.05, usage=usage))
    result = complete(server)
    assert result.ok and result.content == "yes" and result.finish_reason == "stop"
    assert result.attempts == 2 and len(server.requests) == 2
    assert result.usage is not None and result.usage.model_dump() == usage
    assert result.status_code == 200 and 0.04 <= result.latency_s <= result.wall_s
    assert result.wall_s >= 0.07 and 0 < result.waited_s <= 0.05


def test_a_failure_is_accounted_like_a_success(server: OpenAICompatibleServer) -> None:
    server.push(*[HttpError(503, delay_s=0.03)] * 3)
    result = complete(server, policy=RetryPolicy(max_retries=2, backoff_base_s=0.01))
    assert result.error_category == "server_error" and result.attempts == 3
    assert result.status_code == 503 and result.usage is None and result.content is None
    assert result.latency_s is not None and result.latency_s >= 0.025
    assert result.wall_s >= 3 * 0.025 + result.waited_s - 0.01


@pytest.mark.parametrize("status", [408, 409, 425, 429, 500, 502, 503, 504])
def test_transient_statuses_are_retried(server: OpenAICompatibleServer, status: int) -> None:
    server.push(HttpError(status), Reply("ok"))
    result = complete(server)
    assert result.ok and result.attempts == 2 and is_retryable_status(status)


@pytest.mark.parametrize(("status", "category"), [
    (400, "client_error"), (401, "client_error"), (403, "client_error"), (404, "client_error"),
    (422, "client_error"), (301, "client_error")])
def test_other_statuses_fail_at_once(server: OpenAICompatibleServer, status: int,
                                     category: str) -> None:
    server.push(HttpError(status, {"Retry-After": "0"}), Reply("never asked"))
    result = complete(server)
    assert result.error_category == category and result.attempts == 1
    assert len(server.requests) == 1 and f"HTTP {status}" in (result.error_message or "")


@pytest.mark.parametrize(("body", "category"), [
    (RawResponse(200, b"<html>gateway</html>", "text/html"), "malformed_response"),
    (RawResponse(200, b"[1, 2]"), "malformed_response"),
    (RawResponse(200, b'{"choices": []}'), "malformed_response"),
    (Reply(None), "empty_response"),
])
def test_a_200_without_a_reply_fails_at_once(server: OpenAICompatibleServer, body: Any,
                                             category: str) -> None:
    server.push(body, Reply("never asked"))
    result = complete(server)
    assert result.error_category == category and result.attempts == 1
    assert result.raw_response  # kept (bounded) for the record


def test_timeouts_and_refused_connections_are_retried(server: OpenAICompatibleServer) -> None:
    # "late" would come after 60 s (the server's stop cuts the wait short).
    server.push(Reply("late", delay_s=60.0), Reply("on time"))
    result = complete(server, timeout_s=0.3)
    assert result.ok and result.content == "on time" and result.attempts == 2
    # The retry came while the server still held the first request: an order, not a clock.
    assert server.max_in_flight == 2
    with OpenAICompatibleServer() as gone:
        url = gone.base_url
    with ChatClient(url, policy=RetryPolicy(max_retries=1, backoff_base_s=0.01)) as client:
        refused = client.complete(REQUEST)
    assert refused.error_category == "connection_error" and refused.attempts == 2
    assert refused.status_code is None and refused.latency_s is not None


def test_retry_after_2_is_honoured_and_announced(server: OpenAICompatibleServer,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    server.push(HttpError(429, {"Retry-After": "2"}), Reply("yes"))
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        result = complete(server, policy=RetryPolicy(announce_wait_s=1.5))
    assert result.ok and result.attempts == 2
    # The planned wait, then the wall time that holds it (no ceiling: a busy machine is slow).
    assert 1.95 <= result.waited_s <= 2.05 and result.wall_s >= result.waited_s
    (announcement,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "waiting 2.0 s (Retry-After) before retry 1 of 4" in announcement.getMessage()
    assert server.base_url in announcement.getMessage()


def test_short_waits_are_not_announced(server: OpenAICompatibleServer,
                                       caplog: pytest.LogCaptureFixture) -> None:
    server.push(HttpError(429, {"Retry-After": "0.2"}), Reply("yes"))
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert complete(server).ok  # announce_wait_s defaults to 10 s
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_retry_after_http_date_is_honoured(server: OpenAICompatibleServer) -> None:
    when = email.utils.format_datetime(datetime.now(UTC) + timedelta(seconds=3), usegmt=True)
    server.push(HttpError(503, {"Retry-After": when}), Reply("yes"))
    result = complete(server)
    # The date has one-second resolution, so the wait is between 2 and 3 s on a quiet machine;
    # 1.5 s leaves a busy one half a second to send and parse the 503, and is still far above
    # the test policy's own backoff, so a client that ignored the date would fail.
    assert result.ok and 1.5 <= result.waited_s <= 3.05


def test_retry_after_beyond_the_maximum_fails_at_once_naming_the_wait(
        server: OpenAICompatibleServer, caplog: pytest.LogCaptureFixture) -> None:
    server.push(HttpError(429, {"Retry-After": "100000"}), Reply("never asked"))
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        result = complete(server, policy=RetryPolicy(retry_after_max_s=600))
    assert result.waited_s == 0  # no wait at all, whatever the clock says
    assert result.error_category == "retry_after_too_long" and result.attempts == 1
    assert result.status_code == 429 and len(server.requests) == 1
    message = result.error_message or ""
    assert "wait 100000 s" in message and "retry_after_max_s=600" in message
    assert "HTTP 429" in message
    assert any("100000 s" in r.getMessage() for r in caplog.records)


def test_retry_after_on_the_last_try_keeps_the_status_category(
        server: OpenAICompatibleServer) -> None:
    server.push(HttpError(429, {"Retry-After": "100000"}))
    result = complete(server, policy=RetryPolicy(max_retries=0))
    assert result.error_category == "rate_limited" and result.attempts == 1


def test_parse_retry_after_forms() -> None:
    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
    later = email.utils.format_datetime(now + timedelta(seconds=30), usegmt=True)
    earlier = email.utils.format_datetime(now - timedelta(seconds=30), usegmt=True)
    assert parse_retry_after({"Retry-After": "7"}, now) == 7.0
    assert parse_retry_after({"retry-after": "1.5"}, now) == 1.5
    assert parse_retry_after({"Retry-After": later}, now) == 30.0
    assert parse_retry_after({"Retry-After": earlier}, now) == 0.0
    assert parse_retry_after({"retry-after-ms": "250", "Retry-After": "9"}, now) == 0.25
    assert parse_retry_after({"Retry-After": "soon"}, now) is None
    assert parse_retry_after({}, now) is None


def test_backoff_grows_exponentially_within_bounds() -> None:
    policy = RetryPolicy(backoff_base_s=0.5, backoff_max_s=8.0, jitter=0.5)
    rng = random.Random(0)
    for retry in range(1, 8):
        nominal = min(8.0, 0.5 * 2 ** (retry - 1))
        delays = [backoff_delay(retry, policy, rng) for _ in range(50)]
        assert all(nominal / 2 <= d <= nominal for d in delays)
    assert backoff_delay(3, RetryPolicy(backoff_base_s=1, jitter=0), rng) == 4.0


def test_jitter_depends_on_the_request_not_on_global_state(
        server: OpenAICompatibleServer) -> None:
    policy = RetryPolicy(max_retries=1, backoff_base_s=0.05, jitter=1.0)
    waits = []
    for seed in (1, 2):
        random.seed(seed)  # the global generator must not matter
        server.push(HttpError(500), Reply("ok"))
        waits.append(complete(server, policy=policy).waited_s)
    assert waits[0] == waits[1]
    server.push(HttpError(500), Reply("ok"))
    with client_for(server, policy=policy) as client:
        other = client.complete(REQUEST, jitter_key="another call").waited_s
    assert other != waits[0]


def test_policy_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="max_retries"):
        RetryPolicy(max_retries=-1)
    with pytest.raises(ValueError, match="jitter"):
        RetryPolicy(jitter=2)


# --- the request ------------------------------------------------------------------------------
def test_the_request_is_sent_as_given_with_the_key_as_bearer(
        server: OpenAICompatibleServer) -> None:
    key = "sk-test-0123456789"
    server.push(Reply("ok"), HttpError(401, body={"error": {"message": f"bad key {key}"}}),
                Reply("ok"))
    with client_for(server, api_key=key) as client:
        assert client.complete(REQUEST).ok
        rejected = client.complete(REQUEST)
    assert complete(server).ok  # no key: no Authorization header
    first, _, keyless = server.requests
    assert first.path == "/v1/chat/completions" and first.body == REQUEST
    assert first.headers["authorization"] == f"Bearer {key}"
    assert "authorization" not in keyless.headers
    assert key not in (rejected.error_message or "") and "[REDACTED]" in (
        rejected.error_message or "")


def test_importing_the_callers_loads_no_http_library() -> None:
    code = ("import sys, eval_assets.openai_chat, eval_assets.model_runs.client, "
            "eval_assets.metrics.judge, eval_assets.vqa.authors; "
            "print(sorted(m for m in ('openai', 'httpx', 'httpx2') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("value", ["0", "soon", "-3"])
def test_retry_after_0_or_garbage_is_no_hint_and_gets_the_backoff(
        server: OpenAICompatibleServer, value: str) -> None:
    # A retry at once is the storm the server refuses: the 429's own backoff applies instead.
    server.push(HttpError(429, {"Retry-After": value}), Reply("yes"))
    policy = RetryPolicy(max_retries=2, backoff_base_s=0.3, jitter=0)
    result = complete(server, policy=policy)
    assert result.ok and result.attempts == 2
    assert 0.3 <= result.waited_s < 0.35 and len(server.requests) == 2


def test_a_hintless_429_backs_off_long_enough_to_span_a_minute_window() -> None:
    # The defaults: four retries whose waits grow fourfold, the jitter added on top, so the last
    # retry comes at least 81 s after the refusal (1 + 4 + 16 + 60) whatever the draw.
    policy = RetryPolicy()
    for seed in range(20):
        rng = random.Random(seed)
        waits = [backoff_delay(retry, policy, rng, rate_limited=True)
                 for retry in range(1, policy.max_retries + 1)]
        assert sum(waits) >= 81.0 and all(w <= 1.5 * policy.backoff_max_s for w in waits)
    # Other failures keep the doubling backoff, less its jitter.
    assert backoff_delay(4, RetryPolicy(jitter=0), random.Random(0)) == 8.0


def test_a_retry_wait_hook_waits_out_each_retry(server: OpenAICompatibleServer) -> None:
    # A run's controller waits each retry itself (and may hold it longer): what it waited is
    # the call's waited_s.
    server.push(HttpError(503, {"Retry-After": "0.2"}), Reply("yes"))
    asked: list[float] = []

    def wait(seconds: float) -> float:
        asked.append(seconds)
        time.sleep(seconds + 0.2)
        return seconds + 0.2

    with client_for(server) as client:
        client.retry_wait = wait
        result = client.complete(REQUEST)
    assert result.ok and result.attempts == 2 and asked == [0.2]
    assert len(server.requests) == 2 and result.waited_s == pytest.approx(0.4)


def test_a_retry_at_the_servers_retry_after_counts_half(server: OpenAICompatibleServer) -> None:
    # max_retries=2: four retries the server scheduled fit, a fifth failure ends the call.
    server.push(*[HttpError(503, {"Retry-After": "0.01"})] * 4, Reply("yes"))
    assert complete(server, policy=RetryPolicy(max_retries=2)).attempts == 5
    server.push(*[HttpError(503)] * 3)  # no hint: each counts whole
    assert complete(server, policy=RetryPolicy(max_retries=2, backoff_base_s=0.01)).attempts == 3
    server.push(*[HttpError(503, {"Retry-After": "0.01"})] * 5, Reply("never asked"))
    failed = complete(server, policy=RetryPolicy(max_retries=2))
    assert failed.error_category is not None and failed.attempts == 5
