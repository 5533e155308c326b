"""The report's Concurrency section: read from run summaries, absent without any history."""

from __future__ import annotations

from pathlib import Path

from eval_assets.report.concurrency_section import concurrency_section, load_concurrency
from eval_assets.schemas.concurrency import ConcurrencyHistory, LimitChange
from eval_assets.schemas.predictions import CallSummary, LatencyStats, RunSummary, TokenUsage


def _summary(history: ConcurrencyHistory | None) -> str:
    calls = CallSummary(total=1, success=1, failed=0, missing=0, error_counts={},
                        unmatched_choices=0, latency_s=LatencyStats(count=0, mean=None, p50=None,
                                                                    p95=None, max=None),
                        tokens=TokenUsage(), attempts=1)
    return RunSummary(model="m", config_hash="h", complete=True, answers=calls, descriptions=None,
                      concurrency=history).model_dump_json()


def test_histories_are_loaded_and_shown_and_absent_ones_add_nothing(tmp_path: Path) -> None:
    history = ConcurrencyHistory(
        cap=64, final_limit=5, max_limit=8, retry_episodes=2, latency_backoffs=1,
        paced_by_headers=True, baseline_latency_s=0.1, learned_rate_per_s=0.84,
        rate_limit_blocks=1,
        changes=[LimitChange(t_s=0, limit=16, reason="start"),
                 LimitChange(t_s=1, limit=5, reason="retry_episode")])
    for name, value in (("http", history), ("local", None)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_text(_summary(value))
    loaded = load_concurrency([("http", tmp_path / "http"), ("local", tmp_path / "local"),
                               ("missing", tmp_path / "nowhere")])
    assert loaded == {"http": history}
    html = concurrency_section(loaded)
    assert 'id="concurrency"' in html and "16 → 5" in html and "<td>yes</td>" in html
    assert "0.84/s" in html
    assert concurrency_section({}) == ""
