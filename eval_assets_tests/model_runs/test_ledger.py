"""Every call counted (issue 42, item 4): a run's cost equals what a real-HTTP server billed,
whatever the calls were for (answers, descriptions, rotations, flips, templates, repeats, probes,
a failed reply asked again), and ``--budget-usd`` counts and gates every kind, dropping none."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from eval_assets.cli import app
from eval_assets.layout import RUN_USAGE
from eval_assets.model_runs.ledger import UsageLedger, ledger_cost
from eval_assets.schemas.chat import TokenUsage
from eval_assets.schemas.cost import Price
from eval_assets_tests.fakes.batch_server import FakeBatchServer
from eval_assets_tests.fakes.openai_server import OpenAICompatibleServer, Reply, message_text
from eval_assets_tests.model_runs.test_batch import _batch_run, answer_by_text
from eval_assets_tests.model_runs.test_prompt_controls import _dataset

runner = CliRunner()
PRICE = Price(input_per_m=3.0, output_per_m=15.0)
PROBE_USAGE = {"prompt_tokens": 40, "completion_tokens": 1, "total_tokens": 41}


class Biller:
    """The fake server's script: bills each request by its size (as a server counts tokens)
    and keeps its own total; the first request it sees gets an empty reply (billed, and a
    failure the run asks again)."""

    def __init__(self) -> None:
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        text = message_text(body)
        prompt = len(json.dumps(body["messages"])) // 50 + 7
        content = None if self.calls == 0 else ("left" if "left" in text else "yes")
        completion = 5 if content is None else len(content) + 2
        with self._lock:
            self.calls += 1
            self.prompt_tokens += prompt
            self.completion_tokens += completion
        return Reply(content, usage={"prompt_tokens": prompt, "completion_tokens": completion,
                                     "total_tokens": prompt + completion})

    def billed_usd(self, probes: int) -> float:
        """What the server charged at :data:`PRICE`, its probes included."""
        prompt = self.prompt_tokens + probes * PROBE_USAGE["prompt_tokens"]
        completion = self.completion_tokens + probes * PROBE_USAGE["completion_tokens"]
        return (prompt * PRICE.input_per_m + completion * PRICE.output_per_m) / 1e6


def _models_file(tmp_path: Path, base_url: str) -> Path:
    path = tmp_path / "models.yaml"
    path.write_text("models:\n  - name: paid\n    model: paid-vlm\n"
                    f"    base_url: {base_url}\n    max_tokens: 20\n    max_concurrency: 2\n"
                    "    price: {input_per_m: 3.0, output_per_m: 15.0}\n")
    return path


def _invoke(dataset: Path, out: Path, models: Path, *extra: str) -> Any:
    return runner.invoke(app, ["vqa", "run", str(dataset), "--model", "paid", "--output",
                               str(out), "--models-file", str(models), "--circular", "--flip",
                               "--templates", "--repeats", "3", *extra])


@pytest.mark.parametrize("budget", [None, "5"])
def test_repeats_templates_and_flips_are_priced_as_the_server_billed(
        tmp_path: Path, budget: str | None) -> None:
    root, cases, _ = _dataset(tmp_path / "ds", n=2)  # 2 presence + 2 left/right cases
    out = tmp_path / "run"
    biller = Biller()
    extra = ["--budget-usd", budget] if budget else []
    with OpenAICompatibleServer(biller, probe_reply=Reply("A", usage=PROBE_USAGE)) as srv:
        models = _models_file(tmp_path, srv.base_url)
        first = _invoke(root, out, models, *extra)  # one answer failed: billed, asked again
        second = _invoke(root, out, models, *extra)
        probes = sum(1 for r in srv.probes if r.method == "POST")
        posts = sum(1 for r in srv.requests if r.method == "POST") + probes
    assert first.exit_code == 1 and second.exit_code == 0, second.output
    assert "was not asked" not in first.output + second.output  # nothing dropped
    cost = json.loads((out / "summary.json").read_text())["cost"]
    kinds = cost["by_kind"]
    assert {"answers", "descriptions", "rotations", "flips", "templates", "repeats",
            "probes"} <= set(kinds)
    assert kinds["repeats"]["calls"] == 3 * len(cases)  # each drawn case asked 3 times
    assert sum(k["calls"] for k in kinds.values()) == posts
    assert cost["total_usd"] == pytest.approx(biller.billed_usd(probes), abs=1e-6)
    assert len((out / RUN_USAGE).read_text().splitlines()) == posts
    if budget is not None:
        spent = json.loads((out / "summary.json").read_text())["cost"]["budget"]["spent_usd"]
        assert 0 < spent < cost["total_usd"]  # the rerun's own calls: the failed one, asked again
    assert f"cost: ${cost['total_usd']:.4f} for every call" in second.output


def test_a_small_budget_gates_the_controls_too_and_the_rerun_finishes(tmp_path: Path) -> None:
    root, _, _ = _dataset(tmp_path / "ds", n=2)
    out = tmp_path / "run"
    biller = Biller()
    with OpenAICompatibleServer(biller, probe_reply=Reply("A", usage=PROBE_USAGE)) as srv:
        models = _models_file(tmp_path, srv.base_url)
        runs = [_invoke(root, out, models, "--budget-usd", "0.004") for _ in range(12)]
        probes = sum(1 for r in srv.probes if r.method == "POST")
    budgets = [json.loads(r.output.split("budget: ")[1].split(" spent")[0].lstrip("$"))
               for r in runs if "budget: " in r.output]
    assert all(spent <= 0.004 for spent in budgets)
    assert any("stopped with" in r.output for r in runs)
    assert runs[-1].exit_code == 0, runs[-1].output  # every kind asked in the end
    cost = json.loads((out / "summary.json").read_text())["cost"]
    assert {"flips", "templates", "repeats"} <= set(cost["by_kind"])
    assert cost["total_usd"] == pytest.approx(biller.billed_usd(probes), abs=1e-6)


def test_a_batched_run_names_the_controls_it_cannot_ask_and_counts_batch_calls(
        tmp_path: Path) -> None:
    root, _, _ = _dataset(tmp_path / "ds", n=1)
    with FakeBatchServer(answer_by_text) as srv:
        result = _batch_run(srv, root, tmp_path / "run", wait_s=5, flips=True, repeats=2,
                            price=PRICE)
    assert set(result.not_asked or {}) == {"flips", "repeats"}
    assert "Batch API" in (result.not_asked or {})["repeats"]
    cost = result.summary.cost
    assert cost is not None and cost.batch_calls == 6  # 2 cases, 1 + 2 rotations, 1 frame
    assert "probes" in cost.by_kind  # the preflight's calls are direct ones
    assert cost.total_usd == pytest.approx(
        6 * PRICE.cost(TokenUsage(prompt_tokens=100, completion_tokens=2)) / 2  # batch price
        + cost.by_kind["probes"].usd)


def test_a_run_folder_from_before_the_ledger_is_backfilled_from_its_journals(
        tmp_path: Path) -> None:
    usage = {"prompt_tokens": 1000, "completion_tokens": 10}
    lines = [{"usage": usage, "status": "failed"}, {"usage": usage, "status": "success"}]
    (tmp_path / "answers.journal.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines))
    (tmp_path / "repeats.journal.jsonl").write_text(json.dumps({"usage": usage}) + "\n")
    with UsageLedger(tmp_path) as ledger:
        records = ledger.records()
    cost = ledger_cost(PRICE, records)
    assert cost is not None and cost.by_kind["answers"].calls == 2
    assert cost.by_kind["repeats"].calls == 1 and all(r.backfilled for r in records)
    with UsageLedger(tmp_path) as again:  # once only
        assert len(again.records()) == 3
