"""Cost in summary.json and ``--budget-usd``: a run stops before exceeding it, a rerun resumes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eval_assets.cli import app
from eval_assets.model_runs.budget import Budget
from eval_assets.model_runs.client import ClientSettings, OpenAIVLMClient
from eval_assets.model_runs.runner import run_model
from eval_assets.schemas.chat import TokenUsage
from eval_assets.schemas.cost import Price
from eval_assets_tests.fakes.openai_server import OpenAICompatibleServer, Reply
from eval_assets_tests.model_runs.helpers import ONE_CALL_PER_CASE, make_dataset

runner = CliRunner()

# Each call: 1000 prompt tokens at $1/M + 10 completion tokens at $2/M = $0.00102.
USAGE = {"prompt_tokens": 1000, "completion_tokens": 10, "total_tokens": 1010}
PRICE = Price(input_per_m=1.0, output_per_m=2.0)
CALL_USD = 0.00102


def _models_file(tmp_path: Path, base_url: str, price: bool = True) -> Path:
    path = tmp_path / "models.yaml"
    entry = (f"  - name: paid\n    model: paid-vlm\n    base_url: {base_url}\n"
             "    max_tokens: 50\n    max_concurrency: 1\n")
    if price:
        entry += "    price: {input_per_m: 1.0, output_per_m: 2.0}\n"
    path.write_text("models:\n" + entry)
    return path


def test_price_cost_counts_input_output_and_cached_tokens() -> None:
    usage = TokenUsage(prompt_tokens=1000, completion_tokens=10)
    assert PRICE.cost(usage) == pytest.approx(CALL_USD)
    cached = Price(input_per_m=1.0, output_per_m=2.0, cached_input_per_m=0.5)
    assert cached.cost(usage, cached_tokens=400) == pytest.approx((600 + 200 + 20) / 1e6)
    assert PRICE.cost(None) == 0.0


def test_budget_stops_the_run_and_the_rerun_resumes_without_repeating_a_call(
        tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=5, cases_per_frame=2)  # 10 cases
    out = tmp_path / "run"
    with OpenAICompatibleServer(default=Reply("yes", usage=USAGE)) as srv:
        args = ["vqa", "run", str(dataset.root), "--model", "paid", "--output", str(out),
                "--no-describe", "--budget-usd", "0.005", *ONE_CALL_PER_CASE,
                "--models-file", str(_models_file(tmp_path, srv.base_url))]
        first = runner.invoke(app, args)
        summary = json.loads((out / "summary.json").read_text())
        second = runner.invoke(app, args)
        third = runner.invoke(app, args)
        asked = [json.dumps(r.body["messages"]) for r in srv.requests]
    # The 5th call could cost $0.00408 spent + $0.001 mean prompt + 50 tokens at $2/M > $0.005.
    assert first.exit_code == 1, first.output
    assert "4 calls made" in first.output
    assert "$0.0041 spent of $0.0050, $0.0009 remain; stopped with 6 calls left" in first.output
    budget = summary["cost"]["budget"]
    assert budget["stopped"] and budget["calls_left"] == 6
    assert budget["spent_usd"] == pytest.approx(4 * CALL_USD) and budget["spent_usd"] <= 0.005
    assert summary["answers"]["missing"] == 6 and not summary["complete"]
    assert "4 calls made, 4 resumed" in second.output and second.exit_code == 1
    assert third.exit_code == 0 and "2 calls made, 8 resumed" in third.output
    assert len(asked) == 10 and len(set(asked)) == 10  # every case asked exactly once
    final = json.loads((out / "summary.json").read_text())
    assert final["complete"] and final["cost"]["total_usd"] == pytest.approx(10 * CALL_USD)
    assert not final["cost"]["budget"]["stopped"]


def test_concurrent_calls_never_take_the_run_over_budget(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=6, cases_per_frame=3)
    with OpenAICompatibleServer(default=Reply("yes", usage=USAGE, delay_s=0.02)) as srv, \
            OpenAIVLMClient(ClientSettings.model_validate(
                {"base_url": srv.base_url, "model": "m", "max_tokens": 50})) as client:
        result = run_model(dataset.root, client, tmp_path / "run", max_concurrency=4,
                           describe=False, price=PRICE, budget_usd=0.01)
        sent = len(srv.requests)
    assert result.summary.cost is not None and result.summary.cost.budget is not None
    budget = result.summary.cost.budget
    assert budget.stopped and sent == result.calls_made < 18
    assert budget.spent_usd == pytest.approx(sent * CALL_USD) and budget.spent_usd <= 0.01
    assert budget.calls_left == 18 - sent


def test_no_price_means_no_cost_and_a_budget_needs_one(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=1, cases_per_frame=1)
    with OpenAICompatibleServer(default=Reply("yes", usage=USAGE)) as srv:
        models = _models_file(tmp_path, srv.base_url, price=False)
        base = ["vqa", "run", str(dataset.root), "--model", "paid", "--no-describe",
                "--models-file", str(models)]
        plain = runner.invoke(app, [*base, "--output", str(tmp_path / "a")])
        refused = runner.invoke(app, [*base, "--output", str(tmp_path / "b"),
                                      "--budget-usd", "1"])
    assert plain.exit_code == 0 and "cost: no price set" in plain.output
    assert json.loads((tmp_path / "a" / "summary.json").read_text())["cost"] is None
    assert refused.exit_code != 0 and "needs the model's price" in refused.output


def test_budget_reserves_the_mean_prompt_and_the_longest_reply() -> None:
    budget = Budget(1.0, PRICE, max_tokens=100)
    assert budget.estimate() == pytest.approx(200 / 1e6)
    budget.settle(TokenUsage(prompt_tokens=3000, completion_tokens=5))
    budget.settle(TokenUsage(prompt_tokens=1000, completion_tokens=5))
    assert budget.estimate() == pytest.approx((2000 + 200) / 1e6)
    assert budget.spent_usd == pytest.approx((4000 + 20) / 1e6)


def test_a_slow_first_call_does_not_let_the_run_overrun_its_budget(tmp_path: Path) -> None:
    # The first call's prompt cost is unknown when it starts; were others started beside it, it
    # could still be in flight, under-reserved, when the budget is reached (a flake seen under
    # load: 0.0102 spent of 0.01).
    dataset = make_dataset(tmp_path / "ds", n_frames=6, cases_per_frame=3)
    with OpenAICompatibleServer([Reply("yes", usage=USAGE, delay_s=0.8)],
                                default=Reply("yes", usage=USAGE)) as srv, \
            OpenAIVLMClient(ClientSettings.model_validate(
                {"base_url": srv.base_url, "model": "m", "max_tokens": 50})) as client:
        result = run_model(dataset.root, client, tmp_path / "run", max_concurrency=4,
                           describe=False, price=PRICE, budget_usd=0.01)
        sent = len(srv.requests)
    assert result.summary.cost is not None and result.summary.cost.budget is not None
    budget = result.summary.cost.budget
    assert budget.stopped and budget.spent_usd == pytest.approx(sent * CALL_USD)
    assert budget.spent_usd <= 0.01


def test_the_preflight_probes_are_in_the_cost_and_the_budget(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=2, cases_per_frame=2)  # 4 cases
    out = tmp_path / "run"
    # Each probe: 100 prompt tokens at $1/M + 1 completion token at $2/M = $0.000102.
    probe_usage = {"prompt_tokens": 100, "completion_tokens": 1, "total_tokens": 101}
    with OpenAICompatibleServer(default=Reply("yes", usage=USAGE),
                                probe_reply=Reply("A", usage=probe_usage)) as srv:
        args = ["vqa", "run", str(dataset.root), "--model", "paid", "--output", str(out),
                "--no-describe", "--budget-usd", "1", *ONE_CALL_PER_CASE,
                "--models-file", str(_models_file(tmp_path, srv.base_url))]
        first = runner.invoke(app, args)
        probes = sum(1 for p in srv.probes if p.method == "POST")  # the billed ones
        summary = json.loads((out / "summary.json").read_text())
        second = runner.invoke(app, args)  # endpoint.json reused: no probe sent
        again = json.loads((out / "summary.json").read_text())
        assert sum(1 for p in srv.probes if p.method == "POST") == probes
    assert first.exit_code == 0, first.output
    probe_usd = probes * 0.000102
    cost = summary["cost"]
    assert probes >= 5 and cost["probes_usd"] == pytest.approx(probe_usd)
    assert cost["total_usd"] == pytest.approx(4 * CALL_USD + probe_usd)
    assert cost["budget"]["spent_usd"] == pytest.approx(4 * CALL_USD + probe_usd)
    assert f"probes ${probe_usd:.4f} ({probes})" in first.output
    # The standing record's probes stay in the run's cost; this invocation spent nothing.
    assert again["cost"]["probes_usd"] == pytest.approx(probe_usd)
    assert again["cost"]["budget"]["spent_usd"] == 0.0 and second.exit_code == 0
