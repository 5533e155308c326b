"""The adaptive concurrency controller, driven by a fake clock; then once per paced server kind
over real HTTP (loose bounds: the speed targets live in benchmarks/adaptive_concurrency.py)."""

from __future__ import annotations

import itertools
import json
import random
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from eval_assets.model_runs.client import ClientSettings, OpenAIVLMClient
from eval_assets.model_runs.concurrency import (
    DEFAULT_ADAPTIVE_CAP,
    AdaptiveController,
    Learnt,
    forget_learnt,
    learnt_from,
)
from eval_assets.model_runs.rate_pacing import ControllerSettings, header_rate, parse_reset
from eval_assets.model_runs.runner import run_model
from eval_assets.model_runs.scheduling import PacedGate, ask_each, schedule_calls
from eval_assets.openai_chat import ChatClient
from eval_assets.retry import RetryPolicy
from eval_assets_tests.fakes.paced_servers import (
    FixedLatencyServer,
    FixedWindowServer,
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


def answered(ctl: AdaptiveController, clock: Clock, n: int, gap: float = 0.1) -> None:
    """``n`` requests started ``gap`` apart, each answered 50 ms later."""
    for _ in range(n):
        clock.now += gap
        assert ctl.acquire() == 0.0
        ctl.observe(200, 0.05, {})


def test_a_429_naming_no_rate_paces_starts_at_95_percent_of_the_rate_accepted() -> None:
    clock = Clock()
    ctl = AdaptiveController(16, ControllerSettings(initial=4), clock)
    answered(ctl, clock, 30)  # 10 answers a second
    ctl.observe(429, 0.05, {"retry-after": "0"})  # "0" is no hint
    history = ctl.history()
    assert history.rate_cuts == 1 and history.rate_limit_blocks == 0
    assert history.learned_rate_per_s == pytest.approx(10.0)
    # Never stopped: paced at 9.5/s from the last start on, and the limit in flight is not cut
    # (the rate is what was too high).
    assert ctl.acquire() == pytest.approx(1 / 9.5)
    assert ctl.limit == 16 and history.retry_episodes == 0


def test_later_429s_of_a_cluster_cut_the_pace_to_what_was_accepted_since_its_first() -> None:
    clock = Clock()
    ctl = AdaptiveController(16, ControllerSettings(initial=4), clock)
    answered(ctl, clock, 30)
    ctl.observe(429, 0.05, {})  # the cluster's first, sent at 2.95 s: paced at 9.5/s
    ctl.observe(429, 0.5, {})  # sent before that cut: it cuts nothing more
    assert ctl.history().rate_cuts == 1
    answered(ctl, clock, 2, gap=0.4)
    clock.now += 0.1
    ctl.observe(429, 0.05, {})  # sent 0.9 s after the first: 2 accepted since (+2)
    history = ctl.history()
    assert history.rate_cuts == 2 and history.learned_rate_per_s == pytest.approx(4 / 0.9, abs=1e-3)
    assert ctl.learnt().rate_per_s == pytest.approx(4 / 0.9)


def test_a_first_rate_doubles_until_a_429_then_grows_slowly() -> None:
    clock = Clock()
    ctl = AdaptiveController(64, clock=clock)
    assert ctl.acquire() == 0.0 and ctl.acquire() == 0.0
    clock.now += 0.01
    ctl.observe(200, 0.01, {})
    ctl.observe(200, 0.01, {})
    ctl.observe(429, 0.01, {})  # a burst of 2, taken at once: 2 over a quarter second
    assert ctl.learnt().rate_per_s == pytest.approx(8.0)

    def paced_for(seconds: float) -> None:
        end = clock.now + seconds
        while clock.now < end:
            clock.now += ctl.start_delay()
            assert ctl.acquire() == 0.0

    paced_for(2.0)  # no 429: it doubles each second it holds starts back
    rate = ctl.learnt().rate_per_s
    assert rate is not None and 25 < rate < 40
    # A 429 ends the doubling: from then on 0.05 % a start, faster the longer none comes.
    clock.now += 0.01
    ctl.observe(429, 0.01, {})
    after_cut = ctl.learnt().rate_per_s
    assert after_cut is not None
    paced_for(20 / after_cut)
    slow = ctl.learnt().rate_per_s
    assert slow is not None and slow < 1.02 * after_cut
    paced_for(400 / after_cut)
    fast = ctl.learnt().rate_per_s
    assert fast is not None and fast > 1.2 * after_cut


def test_a_limiter_that_accepted_nothing_of_late_is_probed_one_request_at_a_time() -> None:
    clock = Clock()
    ctl = AdaptiveController(16, ControllerSettings(initial=4), clock)
    answered(ctl, clock, 30)  # 30 answers in 3 s, then the window is spent
    clock.now += 5.0  # nothing accepted in the window before the 429: no rate to pace at
    ctl.observe(429, 0.05, {"retry-after": "0"})
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
    ctl.observe(200, 0.05, {})  # the window has reset, 71 s after it began
    history = ctl.history()
    assert history.rate_limit_blocks == 1 and history.learned_rate_per_s is not None
    assert abs(history.learned_rate_per_s - 30 / 71.0) < 0.01
    assert ctl.acquire() == 0.0  # paced at that rate from the probe on
    assert abs(ctl.acquire() - (1 / (0.95 * 30 / 71.0) - 0.05)) < 0.01


def test_a_429_while_pacing_costs_the_call_no_retry_and_no_backoff() -> None:
    ctl = AdaptiveController(16, start=Learnt(limit=16, rate_per_s=50.0))
    ctl.observe(200, 0.01, {})  # the endpoint answers others
    ctl.observe(429, 0.01, {})
    assert ctl.retry_charge(1.0) == 0.0
    start = time.monotonic()
    ctl.wait_to_retry(5.0)  # the gate's pace alone, not the client's 5 s backoff
    assert time.monotonic() - start < 1.0
    ctl.observe(503, 0.01, {"retry-after": "1"})  # not a rate limit: charged as usual
    assert ctl.retry_charge(0.5) == 0.5
    # A key whose quota is gone: nothing ever answered, so each 429 counts.
    gone = AdaptiveController(16)
    gone.observe(429, 0.01, {})
    assert gone.retry_charge(1.0) == 1.0


def test_a_later_call_group_starts_from_what_the_last_one_learnt() -> None:
    clock = Clock()
    first = AdaptiveController(64, clock=clock, key="endpoint")
    answered(first, clock, 30)
    first.observe(429, 0.05, {})
    first.remember()
    second = AdaptiveController(64, clock=clock, key="endpoint")
    assert second.history().changes[0].reason == "resumed"
    assert second.limit == first.limit and second.learnt().rate_per_s == pytest.approx(10.0)
    assert second.acquire() == 0.0 and second.acquire() == pytest.approx(1 / 9.5)
    # Another endpoint, or none remembered: the run folder's last history, else scratch.
    other = AdaptiveController(64, key="other", start=learnt_from(first.history()))
    assert other.learnt().limit == first.limit
    assert other.learnt().rate_per_s == pytest.approx(10.0)
    assert AdaptiveController(64, key="third").history().changes[0].reason == "start"


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


def test_a_later_run_of_an_endpoint_starts_from_what_the_last_learnt(tmp_path: Path) -> None:
    # The next run in the process (the next Dagster step), then one in a new process (nothing
    # remembered) continuing the same run folder: each starts from the learnt limit and rate.
    dataset = make_dataset(tmp_path / "ds", n_frames=6, cases_per_frame=4)
    with TokenBucketServer(rate=40, burst=2, latency_s=0.01, headers=False,
                           retry_after="none") as srv, _client(srv.base_url) as client:
        first = run_model(dataset.root, client, tmp_path / "a", describe=False)
        second = run_model(dataset.root, client, tmp_path / "b", describe=False)
        forget_learnt()
        third = run_model(dataset.root, client, tmp_path / "a", describe=True)
    histories = [r.summary.concurrency for r in (first, second, third)]
    assert all(h is not None for h in histories)
    assert [h.changes[0].reason for h in histories if h is not None] == [
        "start", "resumed", "resumed"]
    assert first.summary.complete and second.summary.complete and third.summary.complete
    assert histories[0] is not None and histories[0].learned_rate_per_s is not None


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
    assert ctl.history().rate_cuts >= 1


# --- the pacing targets over real HTTP (issue 42 item 6) -------------------------------------
# Short runs in the fast lane, bounds a little below the benchmark's targets (a busy machine's
# own jitter); benchmarks/adaptive_concurrency.py holds the full ones, the slow tests here the
# long ones.


def _group(server: object, n: int, key: str, policy: RetryPolicy | None = None
           ) -> tuple[AdaptiveController, int, float, float]:
    """``n`` calls through a controller for endpoint ``key``; the controller, how many gave up,
    and the server's monotonic time before and after."""
    ctl = AdaptiveController(64, key=key)
    request = {"model": "m", "messages": [{"role": "user", "content": "?"}], "max_tokens": 2}
    gave_up = 0
    with ChatClient(server.base_url, policy=policy or RetryPolicy()) as chat:  # type: ignore[attr-defined]
        chat.observer, chat.retry_wait = ctl.observe, ctl.wait_to_retry
        chat.retry_charge = ctl.retry_charge

        def call() -> None:
            nonlocal gave_up
            gave_up += chat.complete(request, jitter_key=str(time.perf_counter())
                                     ).error_category is not None

        start = time.monotonic()
        schedule_calls((call for _ in range(n)), 64, ctl)
    return ctl, gave_up, start, time.monotonic()


def _figures(server: object, start: float, end: float) -> tuple[float, float]:
    """Answers/s (first reply to last 200) and the share of 429s, from the server's log."""
    log = [(t, s) for t, s, _ in server.log if start <= t <= end]  # type: ignore[attr-defined]
    served = [t for t, s in log if s == 200]
    return len(served) / (served[-1] - log[0][0]), sum(s == 429 for _, s in log) / len(log)


@pytest.mark.parametrize("kind", ["none", "zero", "alternate"])
def test_a_limiter_naming_no_rate_is_paced_near_it_from_the_second_group_on(kind: str) -> None:
    # 40/s, a quarter second's burst, 429s with no usable hint: the first group learns the
    # rate (its first contact costs a few 429s), the next starts from it.
    with TokenBucketServer(rate=40, burst=10, latency_s=0.02, headers=False,
                           retry_after=kind) as srv:
        _, lost_first, _, _ = _group(srv, 60, "bucket")
        ctl, lost, start, end = _group(srv, 120, "bucket")
        rate, share = _figures(srv, start, end)
    assert lost_first == lost == 0
    assert ctl.history().changes[0].reason == "resumed"
    assert rate >= 0.85 * 40 and share <= 0.05, (rate, share)


def test_a_few_slots_are_held_near_their_unloaded_latency() -> None:
    slots, service = 4, 0.05
    with SlotServer(slots=slots, service_s=service) as srv:
        _, lost, start, end = _group(srv, 240, "slots")
        rate, _ = _figures(srv, start, end)
        median = service + statistics.median(w for _, s, w in srv.log if s == 200)
    assert lost == 0
    assert median <= 1.5 * service and rate >= 0.85 * slots / service, (median, rate)


def test_a_closed_window_costs_no_call_its_retries() -> None:
    # 3 a calendar second, 429s with no header at all, one retry allowed: every call waits its
    # turn at the controller's gate without spending it.
    with FixedWindowServer(per_window=3, window_s=1.0, headers=False) as srv:
        _, lost, _, _ = _group(srv, 9, "window", RetryPolicy(max_retries=1))
    assert lost == 0 and srv.served == 9 and srv.most_in_a_window <= 3
    assert srv.refused >= 1


def test_controls_are_paced_by_the_runs_controller() -> None:
    # A later stage's calls through ask_each start at the pace the controller learnt.
    ctl = AdaptiveController(16, start=Learnt(limit=16, rate_per_s=20.0))
    starts: list[float] = []
    asked = ask_each(list(range(10)), lambda i: starts.append(time.monotonic()),
                     lambda _: None, 16, PacedGate(ctl))
    assert asked == 10
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert statistics.median(gaps) >= 0.8 / (0.95 * 20)


@pytest.mark.slow
def test_a_20_per_s_limiter_without_headers_meets_the_targets() -> None:
    # As the issue measured it: 30 s of a 20/s limit whose 429s say nothing.
    with TokenBucketServer(rate=20, burst=5, latency_s=0.05, headers=False,
                           retry_after="none") as srv:
        _, lost, start, end = _group(srv, 600, "twenty")
        rate, share = _figures(srv, start, end)
    assert lost == 0 and rate >= 18 and share <= 0.05, (rate, share)


@pytest.mark.slow
def test_six_requests_a_minute_with_the_default_retry_policy_answer_every_call() -> None:
    # LiteLLM's proxy at 6 rpm (calendar minutes, what remains said, 429s without Retry-After):
    # 13 calls span three windows; none may give up after its default 4 retries.
    with FixedWindowServer(per_window=6, window_s=60.0) as srv:
        _, lost, _, _ = _group(srv, 13, "rpm")
    assert lost == 0 and srv.served == 13 and srv.most_in_a_window <= 6
