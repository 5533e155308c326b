"""The judge's calibration kept across storage roots: by content, and only what may be reused.

The judges are real: the project's local ``random`` model behind its own HTTP server (served, so
cacheable) and the fake OpenAI server (a remote endpoint, never cached).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from eval_assets.metrics.avlm_rows import rows_from_dicts
from eval_assets.metrics.judge import JudgeConfig, judge_dir, open_judge
from eval_assets.metrics.judge_calibration import (
    CalibrationPair,
    CalibrationReport,
    build_calibration_set,
)
from eval_assets.metrics.judge_calibration_cache import (
    CACHE_ENV,
    CalibrationCache,
    cache_root,
    cached_calibration_key,
    calibration_key,
    keepable,
    served_model,
)
from eval_assets.metrics.judge_journal import JOURNAL_FILE
from eval_assets_tests.fakes.openai_server import (
    OpenAICompatibleServer,
    overlap_score,
    rubric_judge,
)
from eval_assets_tests.metrics.test_judge import KEY_ENV
from eval_assets_tests.metrics.test_judge_trust import config_for, sample_rows, write_rows


def served_config(**overrides: Any) -> JudgeConfig:
    """A judge served in-process by the local ``random`` model (a seeded chance-level judge)."""
    return JudgeConfig.model_validate({"serve": "random", "max_workers": 1, "reply_tries": 1,
                                       "calibration_min_agreement": 0.25, **overrides})


def calibration_calls(folder: Path) -> int:
    path = folder / "llm_judge" / JOURNAL_FILE
    if not path.is_file():
        return 0
    return sum(json.loads(line)["purpose"] == "calibration"
               for line in path.read_text().splitlines())


def test_a_second_storage_root_reuses_the_calibration_and_gets_the_same_report(
        tmp_path: Path) -> None:
    config = served_config()
    first = judge_dir(write_rows(tmp_path / "root1", sample_rows()), config)
    assert calibration_calls(tmp_path / "root1") > 0
    kept = list((cache_root() / "calibration").glob("*.json"))
    assert len(kept) == 1 and cache_root() == Path(os.environ[CACHE_ENV])
    second = judge_dir(write_rows(tmp_path / "root2", sample_rows()), config)
    assert calibration_calls(tmp_path / "root2") == 0
    assert second.calibration == first.calibration
    assert second.results == first.results


def _key(rows: list[dict[str, Any]], config: JudgeConfig) -> str | None:
    with open_judge(config) as judge:
        return cached_calibration_key(rows_from_dicts(rows), judge.config, judge)


def test_the_key_changes_with_the_calibration_set_the_config_and_the_model() -> None:
    rows = sample_rows()
    base = _key(rows, served_config())
    assert base is not None and _key(rows, served_config()) == base  # a new port, same key
    edited = [dict(r) for r in rows]
    edited[0]["ground_truth"] = edited[0]["ground_truth"] + " A blue ball is on the left."
    assert _key(edited, served_config()) != base  # another reference: other requests
    evidence = [dict(r) for r in rows]
    evidence[1]["metadata"] = {**evidence[1]["metadata"], "detections": [{"name": "red box"}]}
    assert _key(evidence, served_config()) != base
    assert _key(rows, served_config(extra_guidance="Be strict.")) != base  # the prompt
    assert _key(rows, served_config(calibration_min_agreement=0.5)) != base  # the gate
    assert _key(rows, served_config(calibration_pairs=4)) != base  # the set's size
    assert _key(rows, served_config(seed=1)) != base  # another served model and sample


def test_the_key_covers_the_model_identity() -> None:
    rows = rows_from_dicts(sample_rows())
    config = served_config()
    items = build_calibration_set(rows, max_pairs=8, max_frames=3, seed=0)
    with open_judge(config) as judge:
        one = calibration_key("blind-smollm2 weights aaa", config, items, judge)
        other = calibration_key("blind-smollm2 weights bbb", config, items, judge)
        assert one != other
        assert calibration_key("blind-smollm2 weights aaa", config, items[:-1], judge) != one


def test_a_remote_judge_is_never_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-judge-key-0001")
    with OpenAICompatibleServer(rubric_judge(overlap_score)) as srv:
        config = config_for(srv.base_url)
        assert served_model(config) is None
        judge_dir(write_rows(tmp_path / "a", sample_rows()), config)
        judge_dir(write_rows(tmp_path / "b", sample_rows()), config)
    assert not (cache_root() / "calibration").exists()
    assert calibration_calls(tmp_path / "b") == calibration_calls(tmp_path / "a") > 0
    assert served_model(served_config()) == "random"


def _report(error: str | None) -> CalibrationReport:
    pair = CalibrationPair(id="f:wrong_colour", row_id="f", kind="wrong_colour", reference="r",
                           corrupted="c", reference_score=None, corrupted_score=None,
                           reference_error=error, corrupted_error="not_asked", agreed=False)
    return CalibrationReport(status="failed", min_agreement=0.75, agreement=0.0, evaluated=1,
                             planned=8, stopped_early=True, pairs=[pair])


def test_a_transient_failure_or_an_undecided_gate_is_not_kept() -> None:
    assert keepable(_report(None)) and keepable(_report("invalid_score"))
    assert not keepable(_report("timeout")) and not keepable(_report("api_failed"))
    assert not keepable(CalibrationReport(status="disabled", min_agreement=0.75))


def test_an_unreadable_entry_is_a_miss_and_an_unwritable_folder_a_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cache = CalibrationCache(tmp_path)
    cache.folder.mkdir(parents=True)
    cache.path("k").write_text("{not json")
    assert cache.get("k") is None and cache.get("absent") is None
    blocked = CalibrationCache(tmp_path / "file")
    (tmp_path / "file").write_text("")  # a file where the folder should be
    blocked.put("k", _report(None))
    assert "not cached" in caplog.text
    cache.put("k", _report(None))
    assert cache.get("k") == _report(None)
