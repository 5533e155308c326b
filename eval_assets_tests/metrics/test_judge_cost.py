"""The judge's cost: a priced judge config writes ``cost_usd`` into the results summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval_assets.metrics.judge import judge_dir
from eval_assets_tests.fakes.openai_server import OpenAICompatibleServer, Reply, route_by_text
from eval_assets_tests.metrics.test_judge import KEY, KEY_ENV, fast_config, open_row, verdict

USAGE = {"prompt_tokens": 900, "completion_tokens": 40, "total_tokens": 940}


@pytest.mark.parametrize("priced", [True, False])
def test_a_priced_judge_records_what_its_calls_cost(tmp_path: Path, priced: bool,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    rows = [open_row(i) for i in range(2)]
    (tmp_path / "predictions.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    routes = {f"[ROW-{i}]": [Reply(verdict(7), usage=USAGE)] for i in range(2)}
    price = {"price": {"input_per_m": 2.0, "output_per_m": 10.0}} if priced else {}
    with OpenAICompatibleServer(route_by_text(routes)) as srv:
        report = judge_dir(tmp_path, fast_config(srv, calibration_pairs=0, **price))
    if priced:  # 2 calls × (900 × $2 + 40 × $10) / 1M
        assert report.results["cost_usd"] == pytest.approx(2 * 2200 / 1e6)
    else:
        assert "cost_usd" not in report.results
