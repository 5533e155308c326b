"""Batch mode against a fake Batch API over real HTTP: submit, end while the batch is in flight,
collect on the rerun, and the same records as direct calls on the same fake answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from eval_assets.cli import app
from eval_assets.model_runs.batch import BATCH_STATE, BatchAPI, BatchRunner
from eval_assets.model_runs.budget import Budget
from eval_assets.model_runs.client import ClientSettings, OpenAIVLMClient
from eval_assets.model_runs.runner import RunResult, run_model
from eval_assets.schemas.chat import TokenUsage
from eval_assets.schemas.cost import BATCH_FACTOR, Price
from eval_assets_tests.fakes.batch_server import FakeBatchServer
from eval_assets_tests.fakes.openai_server import (
    HttpError,
    OpenAICompatibleServer,
    Reply,
    message_text,
)
from eval_assets_tests.model_runs.helpers import ONE_CALL_PER_CASE, make_dataset

USAGE = {"prompt_tokens": 100, "completion_tokens": 2, "total_tokens": 102}
# Timing fields differ by nature (a batch line has no latency of its own), and a batch record
# says it was one (it is billed at the batch price).
TIMING = {"latency_s", "wall_s", "batch"}


def answer_by_text(body: dict[str, Any]) -> Reply | HttpError:
    """A deterministic answer per request content: the same for a direct and a batch call."""
    text = message_text(body)
    return Reply("yes" if len(text) % 2 else "no", usage=USAGE)


def _client(base_url: str) -> OpenAIVLMClient:
    # One endpoint id: both fakes stand for the same model, so the journal keys are equal.
    return OpenAIVLMClient(ClientSettings.model_validate(
        {"base_url": base_url, "model": "vlm", "endpoint_id": "fake://vlm"}))


def _batch_run(srv: FakeBatchServer, dataset: Path, out: Path, wait_s: float,
               **priced: Any) -> RunResult:
    runner = BatchRunner(BatchAPI(srv.base_url, "not-needed"), max_tokens=256, wait_s=wait_s,
                         poll_s=0.01)
    with _client(srv.base_url) as client:
        return run_model(dataset, client, out, max_concurrency=2, rotations=True, batch=runner,
                         **priced)


def _records(path: Path) -> list[dict[str, Any]]:
    return [{k: v for k, v in json.loads(line).items() if k not in TIMING}
            for line in path.read_text().splitlines()]


def test_a_run_ends_while_its_batch_is_in_flight_and_the_rerun_collects_it(
        tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=2, cases_per_frame=2)
    out = tmp_path / "run"
    with FakeBatchServer(answer_by_text) as srv:
        srv.hold()
        first = _batch_run(srv, dataset.root, out, wait_s=0.2)
        state = json.loads((out / BATCH_STATE).read_text())
        srv.release()
        second = _batch_run(srv, dataset.root, out, wait_s=5)
        third = _batch_run(srv, dataset.root, out, wait_s=0)
        input_lines = srv.files[state["input_file_id"]].decode().splitlines()
        batches, chat_calls, polls = len(srv.batches), srv.chat_calls, srv.polls
    # 4 cases + 4 rotations (yes/no: one each) + 2 frames, in one batch.
    assert first.batch_in_flight == state["batch_id"] == "batch_1"
    assert len(state["custom_ids"]) == len(input_lines) == 10
    assert first.calls_made == 0 and not first.summary.complete
    assert first.summary.answers.missing == 4
    assert polls >= 2  # polled with backoff until the wait ran out, then left
    assert second.batch_in_flight is None and second.calls_made == 10
    assert second.summary.complete and not (out / BATCH_STATE).exists()
    assert third.calls_made == 0 and third.skipped == 10  # nothing asked again
    assert batches == 1 and chat_calls == 0


def test_batch_records_equal_direct_ones_and_are_interchangeable(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=2, cases_per_frame=2)
    with FakeBatchServer(answer_by_text) as srv:
        batched = _batch_run(srv, dataset.root, tmp_path / "batch", wait_s=5)
    with OpenAICompatibleServer(answer_by_text) as chat, _client(chat.base_url) as client:
        direct = run_model(dataset.root, client, tmp_path / "direct", max_concurrency=2,
                           rotations=True)
        # A run folder filled by a batch is complete for the direct path: no call repeats.
        again = run_model(dataset.root, client, tmp_path / "batch", max_concurrency=2,
                          rotations=True)
    assert batched.summary.complete and direct.summary.complete
    for name in ("answers.jsonl", "rotations.jsonl", "descriptions.jsonl"):
        assert _records(tmp_path / "batch" / name) == _records(tmp_path / "direct" / name)
    assert again.calls_made == 0 and again.skipped == 10
    assert batched.summary.answers.tokens == direct.summary.answers.tokens


def test_lines_of_the_errors_file_are_failed_calls_and_the_next_batch_retries_them(
        tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=1, cases_per_frame=2)
    failing = {"on": True}

    def reply(body: dict[str, Any]) -> Reply | HttpError:
        if failing["on"] and "Describe" in message_text(body):
            return HttpError(500)
        return answer_by_text(body)

    with FakeBatchServer(reply) as srv:
        first = _batch_run(srv, dataset.root, tmp_path / "run", wait_s=5)
        failing["on"] = False
        second = _batch_run(srv, dataset.root, tmp_path / "run", wait_s=5)
        retried = srv.files[srv.batches["batch_2"]["input_file_id"]].decode().splitlines()
    described = first.summary.descriptions
    assert described is not None and described.failed == 1
    assert described.error_counts == {"server_error": 1} and not first.summary.complete
    assert len(retried) == 1 and "description-" in retried[0]
    assert second.summary.complete and second.calls_made == 1


def test_vqa_run_batch_leaves_the_batch_in_flight_and_the_rerun_collects(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=1, cases_per_frame=2)
    with FakeBatchServer(answer_by_text) as srv:
        args = ["vqa", "run", str(dataset.root), "--model", "vlm", "--base-url", srv.base_url,
                "--output", str(tmp_path / "run"), "--batch", *ONE_CALL_PER_CASE,
                "--batch-wait-s", "0"]
        srv.hold()
        first = CliRunner().invoke(app, args)
        srv.release()
        srv.poll("batch_1")  # the batch finishes meanwhile
        second = CliRunner().invoke(app, [*args[:-1], "5"])
    assert first.exit_code == 1 and "batch batch_1 in flight" in first.output
    assert second.exit_code == 0, second.output
    assert "2/2 cases answered" in second.output and "3 calls made" in second.output


def test_batch_calls_cost_the_batch_price_in_the_cost_and_the_budget(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=2, cases_per_frame=2)
    price = Price(input_per_m=1.0, output_per_m=2.0)
    call_usd = (100 * 1.0 + 2 * 2.0) / 1e6  # USAGE at the list price
    priced = {"price": price, "budget_usd": 1.0}
    with FakeBatchServer(answer_by_text) as srv:
        batched = _batch_run(srv, dataset.root, tmp_path / "batch", wait_s=5, **priced)
    with OpenAICompatibleServer(answer_by_text) as chat, _client(chat.base_url) as client:
        direct = run_model(dataset.root, client, tmp_path / "direct", max_concurrency=2,
                           rotations=True, **priced)
    cost, listed = batched.summary.cost, direct.summary.cost
    assert cost is not None and listed is not None
    assert cost.batch_calls == 10 and listed.batch_calls is None
    assert listed.total_usd == pytest.approx(10 * call_usd)
    assert cost.total_usd == pytest.approx(10 * call_usd * BATCH_FACTOR)
    assert cost.budget is not None and cost.budget.spent_usd == pytest.approx(cost.total_usd)
    stored = [json.loads(line) for line in (tmp_path / "batch" / "answers.jsonl").read_text()
              .splitlines()]
    assert all(r["batch"] is True for r in stored)
    assert all("batch" not in json.loads(line) for line in
               (tmp_path / "direct" / "answers.jsonl").read_text().splitlines())
    # Read back from summary.json as the report does; the price's hash is the same as before.
    summary = json.loads((tmp_path / "batch" / "summary.json").read_text())
    assert summary["cost"]["batch_calls"] == 10 and "batch_factor" not in summary["cost"]["price"]


def test_a_price_can_set_its_own_batch_share() -> None:
    usage = TokenUsage(prompt_tokens=1000, completion_tokens=10)
    listed = Price(input_per_m=1.0, output_per_m=2.0)
    assert listed.cost(usage, batch=True) == pytest.approx(0.00102 * BATCH_FACTOR)
    own = Price(input_per_m=1.0, output_per_m=2.0, batch_factor=0.75)
    assert own.cost(usage, batch=True) == pytest.approx(0.00102 * 0.75)
    assert own.cost(usage) == pytest.approx(0.00102)
    with pytest.raises(ValueError, match="batch_factor"):
        Price(input_per_m=1.0, output_per_m=2.0, batch_factor=0)


def test_the_budget_settles_a_batch_call_at_the_batch_price() -> None:
    budget = Budget(1.0, Price(input_per_m=1.0, output_per_m=2.0), max_tokens=100)
    budget.settle(TokenUsage(prompt_tokens=1000, completion_tokens=10), batch=True)
    assert budget.spent_usd == pytest.approx(0.00102 * BATCH_FACTOR)
    # The next direct call is still reserved at the list price.
    assert budget.estimate() == pytest.approx((1000 + 200) / 1e6)
