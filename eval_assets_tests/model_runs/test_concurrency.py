"""The adaptive concurrency controller, driven by a fake clock; then once per paced server kind
over real HTTP (loose bounds: the speed targets live in benchmarks/adaptive_concurrency.py)."""

from __future__ import annotations

import json
from pathlib import Path

from eval_assets.model_runs.client import ClientSettings, OpenAIVLMClient
from eval_assets.model_runs.concurrency import (
    DEFAULT_ADAPTIVE_CAP,
    AdaptiveController,
    ControllerSettings,
    header_rate,
    parse_reset,
)
from eval_assets.model_runs.runner import _schedule, run_model
from eval_assets.openai_chat import ChatClient, RetryPolicy
from eval_assets_tests.fakes.paced_servers import (
    FixedLatencyServer,
    SlotServer,
    TokenBucketServer,
)
from eval_assets_tests.model_runs.helpers import make_dataset


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def ok(ctl: AdaptiveController, clock: Clock, n: int, latency: float = 0.1) -> None:
    for _ in range(n):
        clock.now += 0.01
        ctl.observe(200, latency, {})


def test_slow_start_doubles_then_caps() -> None:
    clock = Clock()
    ctl = AdaptiveController(20, ControllerSettings(initial=4), clock)
    ok(ctl, clock, 4)
    assert ctl.limit == 8
    ok(ctl, clock, 8 + 16)
    assert ctl.limit == 20
    assert [c.reason for c in ctl.history().changes] == ["start", "slow_start", "slow_start",
                                                         "slow_start"]


def test_attempts_made_while_ignoring_are_not_observed() -> None:
    # The preflight's probes: a 429 among them cuts nothing and their latency sets no baseline.
    clock = Clock()
    ctl = AdaptiveController(20, ControllerSettings(initial=4), clock)
    with ctl.ignoring():
        ctl.observe(429, 0.001, {"retry-after": "30"})
        ok(ctl, clock, 4, latency=0.001)
    assert ctl.limit == 4 and ctl.history().retry_episodes == 0
    assert ctl.start_delay() == 0
    ok(ctl, clock, 4)
    assert ctl.limit == 8


def test_retry_episode_decreases_once_per_cooldown_then_additive_increase() -> None:
    clock = Clock()
    ctl = AdaptiveController(64, ControllerSettings(initial=10, cooldown_s=1.0), clock)
    ctl.observe(429, 0.1, {})
    ctl.observe(503, 0.1, {})  # same episode: within the cooldown
    assert ctl.limit == 8 and ctl.history().retry_episodes == 1
    clock.now += 1.5
    ctl.observe(None, 0.1, {})  # no reply: a new episode
    assert ctl.limit == 6  # 10 * 0.8 * 0.8 = 6.4
    ok(ctl, clock, 6)  # the round the episodes fell in: no increase
    assert ctl.limit == 6
    ok(ctl, clock, 6)
    assert ctl.limit == 7  # additive, not slow start any more
    assert ctl.history().changes[-1].reason == "increase"


def test_retry_after_holds_starts_and_garbage_headers_are_ignored() -> None:
    clock = Clock()
    ctl = AdaptiveController(8, ControllerSettings(cooldown_s=0), clock)
    ctl.observe(429, 0.1, {"retry-after": "2", "x-ratelimit-remaining-requests": "-1",
                           "x-ratelimit-reset-requests": "-1", "x-ratelimit-limit-requests": "-1"})
    assert ctl.start_delay() == 2.0
    clock.now += 2.0
    assert ctl.start_delay() == 0.0
    assert not ctl.history().paced_by_headers
    assert header_rate({"x-ratelimit-limit-requests": "10", "x-ratelimit-remaining-requests": "11",
                        "x-ratelimit-reset-requests": "1s"}) is None
    assert parse_reset("6m0s") == 360 and parse_reset("20ms") == 0.02
    assert parse_reset("0") is None and parse_reset("soon") is None and parse_reset("9999h") is None


def test_headers_pace_starts_at_the_server_rate() -> None:
    clock = Clock()
    ctl = AdaptiveController(64, ControllerSettings(pace_share=1.0), clock)
    # 20 a bucket, 1 left, 1.9 s until full: 10 requests/s.
    ctl.observe(200, 0.1, {"x-ratelimit-limit-requests": "20",
                           "x-ratelimit-remaining-requests": "1",
                           "x-ratelimit-reset-requests": "1.9s"})
    assert ctl.start_delay() == 0.0
    ctl.started()
    assert abs(ctl.start_delay() - 0.1) < 1e-9
    clock.now += 0.1
    assert ctl.start_delay() == 0.0
    assert ctl.history().paced_by_headers


def test_latency_rising_with_flat_throughput_backs_off() -> None:
    clock = Clock()
    ctl = AdaptiveController(64, ControllerSettings(initial=4, cooldown_s=0), clock)
    for _ in range(4):  # unloaded rounds: baseline 0.1, throughput 100/s
        ok(ctl, clock, 4)
    limit = ctl.limit
    ok(ctl, clock, limit, latency=0.3)  # queued: 3x the latency, same throughput
    assert ctl.limit < limit and ctl.history().latency_backoffs == 1
    assert ctl.history().baseline_latency_s == 0.1


def _drive(server: object, n: int, cap: int) -> tuple[AdaptiveController, list[float]]:
    ctl = AdaptiveController(cap, ControllerSettings(cooldown_s=0.3))
    latencies: list[float] = []
    request = {"model": "m", "messages": [{"role": "user", "content": "?"}], "max_tokens": 2}
    policy = RetryPolicy(max_retries=20, backoff_base_s=0.05, backoff_max_s=0.5)
    with ChatClient(server.base_url, policy=policy) as chat:  # type: ignore[attr-defined]
        chat.observer = ctl.observe

        def call() -> None:
            result = chat.complete(request)
            assert result.error_category is None and result.latency_s is not None
            latencies.append(result.latency_s)

        _schedule((call for _ in range(n)), cap, ctl)
    return ctl, latencies


def test_token_bucket_server_paced_by_its_headers() -> None:
    with TokenBucketServer(rate=50, burst=20, latency_s=0.02) as srv:
        ctl, _ = _drive(srv, 60, 16)
    assert srv.served == 60 and srv.refused <= 15
    assert ctl.history().paced_by_headers


def test_slot_server_latency_stays_near_unloaded() -> None:
    with SlotServer(slots=2, service_s=0.05) as srv:
        ctl, latencies = _drive(srv, 120, 32)
    assert srv.served == 120
    settled = sorted(latencies[60:])  # after the slow start's first burst of 16
    assert settled[len(settled) // 2] < 0.05 * 4  # loose: at the cap it would be ~16x
    assert ctl.history().latency_backoffs >= 1


def test_unlimited_server_reaches_the_cap() -> None:
    with FixedLatencyServer(latency_s=0.05) as srv:
        ctl, _ = _drive(srv, 100, 16)
    assert srv.served == 100 and ctl.history().max_limit == 16


def _client(url: str, **overrides: object) -> OpenAIVLMClient:
    values: dict[str, object] = {"base_url": url, "model": "m", "max_tokens": 8,
                                 "max_retries": 20, "backoff_base_s": 0.02, **overrides}
    return OpenAIVLMClient(ClientSettings.model_validate(values))


def test_run_with_no_concurrency_setting_adapts_and_records_the_history(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=4, cases_per_frame=4)
    with TokenBucketServer(rate=100, burst=20, latency_s=0.01) as srv, \
            _client(srv.base_url) as client:
        result = run_model(dataset.root, client, tmp_path / "run", describe=False)
    assert result.summary.complete
    history = result.summary.concurrency
    assert history is not None and history.cap == DEFAULT_ADAPTIVE_CAP
    written = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert written["concurrency"]["cap"] == DEFAULT_ADAPTIVE_CAP
    assert json.loads((tmp_path / "run" / "config.json").read_text())["max_concurrency"] == 64


def test_an_explicit_max_concurrency_caps_the_limit(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds")
    with FixedLatencyServer(latency_s=0.01) as srv, \
            _client(srv.base_url, max_concurrency=2) as client:
        result = run_model(dataset.root, client, tmp_path / "run", describe=False)
    assert result.summary.concurrency is not None
    assert result.summary.concurrency.cap == 2 and result.summary.concurrency.max_limit == 2
