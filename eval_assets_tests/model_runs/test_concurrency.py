"""The adaptive concurrency controller, driven by a fake clock; then once per paced server kind
over real HTTP (loose bounds: the speed targets live in benchmarks/adaptive_concurrency.py)."""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from eval_assets.model_runs.client import ClientSettings, OpenAIVLMClient
from eval_assets.model_runs.concurrency import (
    DEFAULT_ADAPTIVE_CAP,
    AdaptiveController,
    ControllerSettings,
    header_rate,
    parse_reset,
)
from eval_assets.model_runs.runner import run_model
from eval_assets.model_runs.scheduling import schedule_calls
from eval_assets.openai_chat import ChatClient, RetryPolicy
from eval_assets_tests.fakes.paced_servers import (
    FixedLatencyServer,
    FlakySlotServer,
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
    ctl.observe(429, 0.1, {})  # same episode: within the cooldown
    ctl.observe(503, 0.1, {})  # a 5xx is judged per round, by whether it tracks the load
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
    # A start 0.05 s late (a busy client's thread woke late) is made up by the next one...
    clock.now += 0.05
    assert ctl.acquire() == 0.0 and abs(ctl.start_delay() - 0.05) < 1e-9
    # ...but after an idle second the schedule restarts instead of bursting.
    clock.now += 1.0
    assert ctl.acquire() == 0.0 and abs(ctl.start_delay() - 0.1) < 1e-9


def test_latency_rising_with_flat_throughput_backs_off() -> None:
    clock = Clock()
    ctl = AdaptiveController(64, ControllerSettings(initial=4, cooldown_s=0), clock)
    for _ in range(4):  # unloaded rounds: baseline 0.1, throughput 100/s
        ok(ctl, clock, 4)
    limit = ctl.limit
    ok(ctl, clock, limit, latency=0.3)  # queued: 3x the latency, same throughput
    assert ctl.limit < limit and ctl.history().latency_backoffs == 1
    assert ctl.history().baseline_latency_s == 0.1


Model = Callable[[int], tuple[float, float, float]]
"""A server (and client) as the controller sees it: limit -> (latency, answers/s, 5xx share)."""


def simulate(ctl: AdaptiveController, clock: Clock, model: Model, replies: int) -> list[int]:
    """Feed ``replies`` replies shaped by ``model`` at the controller's limit; the limits seen."""
    limits = []
    errors = 0.0
    for _ in range(replies):
        latency, throughput, share = model(ctl.limit)
        clock.now += 1 / throughput
        errors += share / (1 - share)  # so many 5xx per success, spread evenly
        while errors >= 1:
            ctl.observe(503, 0.01, {"retry-after": "2"})
            errors -= 1
        ctl.observe(200, latency, {})
        limits.append(ctl.limit)
    return limits


def slots(count: int, service: float, share: float = 0.0) -> Model:
    """``count`` slots of ``service`` s: latency grows with the limit past them (a queue)."""
    return lambda limit: (service * max(1.0, limit / count), min(limit, count) / service, share)


def test_a_queueing_server_is_held_near_its_slots() -> None:
    clock = Clock()
    ctl = AdaptiveController(64, clock=clock)
    limits = simulate(ctl, clock, slots(4, 0.2), 900)
    settled = limits[-300:]
    assert min(settled) >= 4 and max(settled) <= 6, sorted(set(settled))
    assert ctl.history().latency_backoffs >= 1


def test_the_clients_own_cpu_starvation_does_not_cut_the_limit() -> None:
    # A busy client: each reply's latency has a few hundred ms of the client's own waiting for
    # CPU, whatever the number in flight (the server queues nothing). The first rounds were
    # quiet, so the lowest latency ever seen is far below what any later round meets.
    clock = Clock()
    ctl = AdaptiveController(32, clock=clock)
    rng = random.Random(7)
    quiet = 40

    def starved(limit: int) -> tuple[float, float, float]:
        nonlocal quiet
        quiet -= 1
        latency = 0.2 + (0.0 if quiet > 0 else rng.uniform(0.05, 0.6))
        return latency, limit / latency, 0.0

    limits = simulate(ctl, clock, starved, 1500)
    assert min(limits[200:]) >= 16 and limits[-1] == 32, sorted(set(limits))


def test_a_steady_share_of_5xx_is_not_congestion_but_one_that_grows_with_load_is() -> None:
    clock = Clock()
    steady = AdaptiveController(64, clock=clock)
    # 30 % of replies 503 whatever the load, each waiting its own Retry-After: more in flight
    # answers more (the server has room for 64).
    limits = simulate(steady, clock, lambda limit: (0.2, limit / 0.2, 0.3), 1500)
    assert limits[-1] >= 48 and steady.start_delay() == 0.0
    assert steady.history().error_backoffs <= 1

    clock = Clock()
    loaded = AdaptiveController(64, clock=clock)
    # An overloaded server: beyond 8 in flight, half the requests are refused with 503.
    def overload(limit: int) -> tuple[float, float, float]:
        return 0.2, min(limit, 8) / 0.2, 0.5 if limit > 8 else 0.0

    limits = simulate(loaded, clock, overload, 1500)
    assert max(limits[-300:]) <= 12 and loaded.history().error_backoffs >= 2


def test_a_5xx_retry_after_waits_alone_but_a_429_one_holds_every_start() -> None:
    clock = Clock()
    ctl = AdaptiveController(8, clock=clock)
    ctl.observe(503, 0.1, {"retry-after": "2"})
    assert ctl.start_delay() == 0.0 and ctl.limit == 8  # the others carry on
    ctl.observe(429, 0.1, {"retry-after": "2"})
    assert ctl.start_delay() == 2.0


def test_a_request_waiting_to_retry_frees_its_slot_meanwhile() -> None:
    ctl = AdaptiveController(8, ControllerSettings(initial=2))
    waiter = threading.Thread(target=ctl.wait_to_retry, args=(0.3,))
    waiter.start()
    time.sleep(0.1)
    assert ctl.slots == 3  # the limit, plus the one waiting out its Retry-After
    waiter.join()
    assert ctl.slots == 2


def test_a_silent_limiter_is_probed_one_request_at_a_time_and_its_rate_learnt() -> None:
    clock = Clock()
    ctl = AdaptiveController(16, ControllerSettings(initial=4), clock)
    for _ in range(30):  # 30 answers in 3 s, then the window is spent
        clock.now += 0.1
        assert ctl.acquire() == 0.0
        ctl.observe(200, 0.05, {})
    ctl.observe(429, 0.05, {"retry-after": "0"})  # "0" is no hint
    assert ctl.acquire() == pytest.approx(1.0)  # stopped: the first probe in 1 s
    clock.now += 1.0
    assert ctl.acquire() == 0.0  # the probe goes...
    assert ctl.acquire() > 0  # ...alone
    clock.now += 0.05
    ctl.observe(429, 0.05, {})  # still closed: the next probe waits twice as long
    assert ctl.acquire() == pytest.approx(2.0)
    for gap in (2.0, 4.0, 8.0, 16.0):
        clock.now += gap
        assert ctl.acquire() == 0.0
        clock.now += 0.05
        ctl.observe(429, 0.05, {})
    clock.now += 32.0
    assert ctl.acquire() == 0.0
    clock.now += 0.05
    ctl.observe(200, 0.05, {})  # the window has reset, 66 s after it began
    history = ctl.history()
    assert history.rate_limit_blocks == 1 and history.learned_rate_per_s is not None
    assert abs(history.learned_rate_per_s - 30 / 66.0) < 0.01
    assert ctl.acquire() == 0.0  # paced at that rate from the probe on
    assert abs(ctl.acquire() - (1 / (0.95 * 30 / 66.0) - 0.05)) < 0.01


def test_remaining_requests_without_a_reset_stop_starts_before_any_429() -> None:
    # LiteLLM's proxy: limit and remaining, no reset time, and its 429 says nothing.
    clock = Clock()
    ctl = AdaptiveController(16, clock=clock)
    assert ctl.acquire() == 0.0
    clock.now += 0.05
    ctl.observe(200, 0.05, {"x-ratelimit-limit-requests": "60",
                            "x-ratelimit-remaining-requests": "4"})
    assert ctl.acquire() == 0.0 and ctl.acquire() == 0.0  # two of the four, two in hand
    assert ctl.acquire() == pytest.approx(1.0) and ctl.history().rate_limit_blocks == 1
    clock.now += 1.0
    assert ctl.acquire() == 0.0  # the probe
    clock.now += 0.05
    ctl.observe(200, 0.05, {"x-ratelimit-limit-requests": "60",
                            "x-ratelimit-remaining-requests": "59"})
    # A new window: what remains is followed, not the slow rate learnt from the first one.
    assert all(ctl.acquire() == 0.0 for _ in range(20))


def _drive(server: object, n: int, cap: int) -> tuple[AdaptiveController, list[float]]:
    ctl = AdaptiveController(cap, ControllerSettings(cooldown_s=0.3))
    latencies: list[float] = []
    request = {"model": "m", "messages": [{"role": "user", "content": "?"}], "max_tokens": 2}
    policy = RetryPolicy(max_retries=20, backoff_base_s=0.05, backoff_max_s=0.5)
    with ChatClient(server.base_url, policy=policy) as chat:  # type: ignore[attr-defined]
        chat.observer = ctl.observe
        chat.retry_wait = ctl.wait_to_retry

        def call() -> None:
            result = chat.complete(request)
            assert result.error_category is None and result.latency_s is not None
            latencies.append(result.latency_s)

        schedule_calls((call for _ in range(n)), cap, ctl)
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


def test_gateway_failing_30_percent_with_retry_after_loses_no_call() -> None:
    with FlakySlotServer(slots=2, service_s=0.05, error_share=0.3, retry_after="0.2") as srv:
        ctl, _ = _drive(srv, 60, 16)
    assert srv.served == 60 and srv.failed >= 18
    # The steady share did not read as overload (one exploring cut at most); the slots did.
    assert ctl.history().error_backoffs <= 1


def test_retry_after_0_storm_is_backed_off_not_repeated() -> None:
    with TokenBucketServer(rate=50, burst=10, latency_s=0.02, headers=False,
                           retry_after="zero") as srv:
        ctl, _ = _drive(srv, 80, 16)
    assert srv.served == 80 and srv.refused <= 16, srv.refused
    assert ctl.history().rate_limit_blocks >= 1
