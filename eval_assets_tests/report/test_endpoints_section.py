"""The report's "Endpoints and reply outcomes" section, from run folders as a run leaves them."""

from __future__ import annotations

import json
import re
from pathlib import Path

from eval_assets.report.cost_section import cell_costs
from eval_assets.report.endpoints_section import endpoints_section, load_endpoints
from eval_assets.report.html import render_report
from eval_assets.report.leaderboard import build_leaderboard
from eval_assets.schemas.concurrency import ConcurrencyHistory, LimitChange
from eval_assets.schemas.endpoint import EndpointCapabilities
from eval_assets_tests.report.builders import result, row


def _run_dir(path: Path, outcomes: dict[str, int], param: str | None) -> Path:
    path.mkdir(parents=True)
    (path / "summary.json").write_text(json.dumps({"answers": {"outcomes": outcomes}}))
    if param is not None:
        record = EndpointCapabilities(
            config_sha256="x", preflight_version=1, model="m", endpoint="http://h/v1",
            token_limit_param=param, images=True, max_images=1, max_images_probed=4,
            data_url_images=True, structured_output="ignored", reasoning="inline",
            logprobs=False, calls=6, seconds=0.5)
        (path / "endpoint.json").write_text(record.model_dump_json())
    return path


def test_outcomes_are_summed_per_model_and_the_preflight_shown(tmp_path: Path) -> None:
    runs = [("o1", _run_dir(tmp_path / "a" / "o1", {"answered": 3, "truncated": 1},
                            "max_completion_tokens")),
            ("o1", _run_dir(tmp_path / "b" / "o1", {"answered": 2, "truncated": 2}, None)),
            ("random", _run_dir(tmp_path / "a" / "random", {"answered": 4}, None))]
    endpoints = load_endpoints(runs)
    assert [(e.model, e.outcomes) for e in endpoints] == [
        ("o1", {"answered": 5, "truncated": 3}), ("random", {"answered": 4})]
    html = endpoints_section(endpoints)
    assert "max_completion_tokens" in html and "<td>inline</td>" in html
    assert "no preflight record" in html  # random's runs hold none
    assert html.index("<th>answered</th>") < html.index("<th>truncated</th>")


def test_no_run_records_no_section() -> None:
    assert endpoints_section([]) == ""
    assert load_endpoints([]) == []


def test_every_section_of_the_report_has_its_link(tmp_path: Path) -> None:
    """The header links to every section the report holds, the optional ones included."""
    cell = result("rec", "m", [row("c1", "presence", "yes", "yes", "rec"),
                               row("c2", "presence", "no", "yes", "rec")])
    history = ConcurrencyHistory(cap=64, final_limit=4, max_limit=4, retry_episodes=0,
                                 latency_backoffs=0, paced_by_headers=False,
                                 baseline_latency_s=0.1,
                                 changes=[LimitChange(t_s=0, limit=4, reason="start")])
    html = render_report(build_leaderboard([cell]), [cell], [], "t",
                         endpoints=load_endpoints([("m", _run_dir(tmp_path / "m", {
                             "answered": 2}, None))]),
                         concurrency={"m on rec": history}, costs=cell_costs([cell], {}))
    sections = set(re.findall(r'<section[^>]* id="([^"]+)"', html))
    links = set(re.findall(r'<a href="#([^"]+)"', html.split("</nav>")[0]))
    assert {"endpoints", "concurrency", "cost"} <= sections
    assert sections <= links
