"""Scores you can trust: no invented scores, a calibration gate, self-judging, resumable calls.

Every judge here is a real HTTP server on 127.0.0.1 (the fake OpenAI server in judge mode, or the
project's own local model server); nothing is mocked.
"""

from __future__ import annotations

import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from eval_assets import progress
from eval_assets.metrics.avlm_rows import rows_from_dicts
from eval_assets.metrics.judge import (
    SCORE_ONLY_GUIDANCE,
    JudgeConfig,
    judge_dir,
    normalize_score,
    self_judging_models,
)
from eval_assets.metrics.judge_calibration import (
    build_calibration_set,
    corrupt,
    swapped_left_right,
    wrong_count,
)
from eval_assets.metrics.judge_journal import JOURNAL_FILE, request_sha256
from eval_assets.schemas.predictions import ModelSpec
from eval_assets_tests.fakes.openai_server import (
    HttpError,
    OpenAICompatibleServer,
    RecordedRequest,
    Reply,
    message_text,
    overlap_score,
    route_by_text,
    rubric_judge,
)
from eval_assets_tests.metrics.test_judge import KEY_ENV, open_row, verdict

REPO = Path(__file__).resolve().parents[2]
ANNOTATIONS = [json.loads(line) for line in
               (REPO / "data" / "annotations" / "sample.jsonl").read_text().splitlines()]


@pytest.fixture(autouse=True)
def _api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-judge-key-0001")


def config_for(url: str, **overrides: Any) -> JudgeConfig:
    """Fast retries; calibration on (the default) unless a test turns it off."""
    settings: dict[str, Any] = {
        "base_url": url, "model": "judge-model", "api_key_env": KEY_ENV, "timeout_s": 5.0,
        "max_retries": 1, "reply_tries": 1, "backoff_base_s": 0.0, "max_workers": 2,
        "max_reply_chars": 16000}
    settings.update(overrides)
    return JudgeConfig.model_validate(settings)


def sample_rows(prediction: str = "A grey room with a red ball.") -> list[dict[str, Any]]:
    """Open-ended rows like the pipeline's: the human description as reference, evidence."""
    return [{"index": i, "id": f"frame-{a['frame_index']:06d}", "class": "frame_description",
             "evaluation_type": "open_ended", "inference_status": "success",
             "ground_truth": a["description"], "prediction": prediction,
             "conversations": [{"from": "human", "value": "<image>\nDescribe this frame."}],
             "metadata": {"frame_index": a["frame_index"],
                          "detections": [{"name": name} for name in a["objects"]]}}
            for i, a in enumerate(ANNOTATIONS)]


def write_rows(folder: Path, rows: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def is_calibration(request: RecordedRequest) -> bool:
    return SCORE_ONLY_GUIDANCE in message_text(request.body)


# --- no invented scores ----------------------------------------------------------------------

MISBEHAVING = {
    "[ROW-0]": [Reply(verdict(8))],
    "[ROW-1]": [Reply(verdict(None))],
    "[ROW-2]": [Reply(verdict(42))],
    "[ROW-3]": [Reply(verdict(-3))],
    "[ROW-4]": [Reply(verdict(0))],
    "[ROW-5]": [Reply(verdict(11))],
    "[ROW-6]": [Reply("I would give it an 8 out of 10.")],
    "[ROW-7]": [Reply(verdict(6))],
}


def test_replies_without_a_valid_score_are_counted_failures(tmp_path: Path) -> None:
    rows = [open_row(i) for i in range(8)]
    routes = {**MISBEHAVING, "[ROW-8]": [Reply(verdict(9, reasoning="x" * 17_000))]}
    rows.append(open_row(8))
    with OpenAICompatibleServer(route_by_text(routes)) as srv:
        report = judge_dir(write_rows(tmp_path, rows), config_for(srv.base_url,
                                                                  calibration_pairs=0))
    summary, doc = report.results, report.predictions
    assert [r["score"] for r in doc["results"]] == [8, None, None, None, None, None, None, 6,
                                                    None]
    assert doc["error_counts_by_category"] == {
        "missing_score": 1, "score_out_of_range": 4, "parse_error": 1, "oversized_reply": 1}
    assert summary["failure_counts"] == doc["error_counts_by_category"]
    # In the denominator of the failure rate, out of the mean.
    assert (summary["total_judged"], summary["num_success"], summary["num_failed"]) == (9, 2, 7)
    assert summary["mean_score"] == 7.0 and doc["statistics"]["success_rate"] == 2 / 9 * 100
    assert summary["status"] == "scored" and summary["scoring_mode"] == "strict"
    assert "avlm_coercions" not in summary


def test_nothing_scored_reports_null_not_zero(tmp_path: Path) -> None:
    rows = [open_row(i, cls=("a", "b")[i % 2]) for i in range(3)]
    with OpenAICompatibleServer(default=Reply(verdict(42))) as srv:
        report = judge_dir(write_rows(tmp_path, rows), config_for(srv.base_url,
                                                                  calibration_pairs=0))
    summary, stats = report.results, report.predictions["statistics"]
    assert summary["status"] == "nothing scored" and not report.scored
    assert summary["num_failed"] == 3
    for key in ("mean_score", "median_score", "min_score", "max_score"):
        assert summary[key] is None and stats[key] is None
        assert summary["per_class"]["a"][key] is None
    on_disk = json.loads(report.results_path.read_text())
    assert on_disk["mean_score"] is None


def test_avlm_compat_reproduces_avlm_numbers_and_counts_every_coercion(tmp_path: Path) -> None:
    rows = [open_row(i) for i in range(8)]
    with OpenAICompatibleServer(route_by_text(MISBEHAVING)) as srv:
        report = judge_dir(write_rows(tmp_path, rows),
                           config_for(srv.base_url, calibration_pairs=0, avlm_compat=True))
    raw = [8, None, 42, -3, 0, 11]
    avlm = [normalize_score(value) for value in raw] + [6]  # AVLM's rule, row by row
    assert avlm == [8, 1, 4, 1, 1, 1, 6]
    summary, doc = report.results, report.predictions
    assert [r["score"] for r in doc["results"]] == [*avlm[:6], None, 6]  # row 6 is not JSON
    assert summary["mean_score"] == statistics.mean(avlm)
    assert doc["statistics"]["mean_score"] == statistics.mean(avlm)
    assert summary["median_score"] == statistics.median(avlm)
    assert doc["error_counts_by_category"] == {"parse_error": 1}
    coerced = {"rows": 5, "by_kind": {"clamped": 2, "missing_score": 1, "rounded": 2,
                                      "scaled_down": 2}}
    assert summary["avlm_coercions"] == coerced and doc["avlm_coercions"] == coerced
    assert summary["scoring_mode"] == "avlm_compat"
    assert doc["results"][2]["avlm_coercions"] == ["scaled_down", "rounded"]
    assert "avlm_coercions" not in doc["results"][0]
    # AVLM's keys first, in AVLM's order; ours after them.
    assert list(doc)[:5] == ["statistics", "results", "failures", "error_counts_by_category",
                             "metadata"]
    assert list(summary)[:9] == ["total_judged", "num_success", "num_failed", "mean_score",
                                 "median_score", "min_score", "max_score",
                                 "score_distribution", "per_class"]


def test_avlm_compat_keeps_avlm_zeros_when_nothing_is_scored(tmp_path: Path) -> None:
    with OpenAICompatibleServer(default=Reply("no JSON here")) as srv:
        report = judge_dir(write_rows(tmp_path, [open_row(0)]),
                           config_for(srv.base_url, calibration_pairs=0, avlm_compat=True))
    assert report.results["mean_score"] == 0 and report.predictions["statistics"]["max_score"] == 0
    assert report.results["status"] == "nothing scored"


# --- calibration ------------------------------------------------------------------------------

def test_calibration_set_is_small_varied_and_deterministic() -> None:
    rows = rows_from_dicts(sample_rows())
    items = build_calibration_set(rows, max_pairs=8, max_frames=4, seed=0)
    assert len(items) == 8 and len({item.row.id for item in items}) == 4
    assert [item.frame for item in items] == [0, 0, 1, 1, 2, 2, 3, 3]
    three = build_calibration_set(rows, max_pairs=8, max_frames=3, seed=0)
    assert [item.frame for item in three] == [0, 0, 0, 1, 1, 1, 2, 2]
    assert {item.kind for item in items} == {"wrong_colour", "wrong_count", "invented_object",
                                             "swapped_left_right"}
    assert [item.frame for item in items] == sorted(item.frame for item in items)
    assert all(item.corrupted != item.reference for item in items)
    shuffled = list(rows)
    random.Random(1).shuffle(shuffled)
    again = build_calibration_set(shuffled, max_pairs=8, max_frames=4, seed=0)
    assert [(i.pair_id, i.corrupted) for i in again] == [(i.pair_id, i.corrupted) for i in items]
    other_seed = build_calibration_set(rows, max_pairs=8, max_frames=4, seed=1)
    assert [i.pair_id for i in other_seed] != [i.pair_id for i in items]
    assert build_calibration_set(rows, max_pairs=0, max_frames=4) == []


def test_corruptions_change_one_fact() -> None:
    rng = random.Random(0)
    text = "A red ball is left of a blue box; two people stand on the right."
    assert swapped_left_right(text) == ("A red ball is right of a blue box; two people stand on "
                                        "the left.")
    assert wrong_count("A small green cylinder by the wall.", rng) == (
        "Three small green cylinders by the wall.")
    assert wrong_count("Two people stand by the door.", rng) == "Four people stand by the door."
    colour = corrupt(text, "wrong_colour", {"detections": [{"name": "pink cone"}]}, rng)
    assert colour is not None and colour != text and "pink" not in colour
    invented = corrupt(text, "invented_object", None, rng)
    assert invented is not None and invented.startswith(text) and invented.endswith(
        " is also in the frame.")
    assert corrupt("An empty room.", "swapped_left_right", None, rng) is None


def test_a_judge_that_ranks_by_overlap_passes_and_judges_the_rows(tmp_path: Path) -> None:
    with OpenAICompatibleServer(rubric_judge(overlap_score)) as srv:
        report = judge_dir(write_rows(tmp_path, sample_rows()), config_for(srv.base_url))
        requests = srv.requests
    calibration = report.calibration
    assert calibration.status == "passed" and calibration.agreement == 1.0
    assert (calibration.agreed, calibration.evaluated, calibration.planned) == (8, 8, 8)
    assert all(p.reference_score == 10 and (p.corrupted_score or 10) < 10
               for p in calibration.pairs)
    # 3 reference calls and 8 corruptions, short ones, then the 6 rows with the full rubric.
    calibration_requests = [r for r in requests if is_calibration(r)]
    assert len(calibration_requests) == 11 and len(requests) == 11 + 6
    assert all(r.body["max_tokens"] == 16 for r in calibration_requests)
    assert report.results["num_success"] == 6 and report.results["status"] == "scored"
    assert report.results["calibration"]["status"] == "passed"


def test_a_judge_that_gives_everything_ten_is_withheld_in_seconds(tmp_path: Path) -> None:
    with OpenAICompatibleServer(rubric_judge(lambda gt, pred: 10)) as srv:
        report = judge_dir(write_rows(tmp_path, sample_rows()), config_for(srv.base_url))
        requests = srv.requests
    calibration = report.calibration
    assert calibration.status == "failed" and calibration.agreement == 0.0
    # 8 pairs at 75% tolerate 2 misses: the third ends it, after the first frame's reference
    # and its three corruptions.
    assert calibration.evaluated == 3 and calibration.stopped_early
    assert len(requests) == 4 and all(is_calibration(r) for r in requests)  # no row was judged
    summary = report.results
    assert summary["status"] == "withheld: judge failed calibration (agreement 0%)"
    assert summary["mean_score"] is None and summary["num_success"] == 0
    assert summary["total_judged"] == 0 and summary["num_withheld"] == 6
    pairs = summary["calibration"]["pairs"]
    assert [(p["reference_score"], p["corrupted_score"], p["agreed"]) for p in pairs] == [
        (10, 10, False)] * 3
    assert pairs[0]["corrupted"] != pairs[0]["reference"]
    assert report.predictions["results"] == []


def test_a_judge_without_scores_fails_calibration_without_asking_for_corruptions(
        tmp_path: Path) -> None:
    with OpenAICompatibleServer(default=Reply("Looks right to me.")) as srv:
        report = judge_dir(write_rows(tmp_path, sample_rows()), config_for(srv.base_url))
        n_requests = len(srv.requests)
    pairs = report.calibration.pairs
    assert report.calibration.withheld and n_requests == 1  # the first frame's reference
    assert pairs[0].reference_error == "parse_error" and pairs[0].corrupted_error == "not_asked"


def test_calibration_and_rows_report_progress(tmp_path: Path) -> None:
    class Recorder:
        def __init__(self) -> None:
            self.tasks: dict[str, list[int | None]] = {}

        def start(self, label: str, total: int | None) -> object:
            self.tasks[label] = [total, 0]
            return label

        def advance(self, handle: object, n: int) -> None:
            self.tasks[str(handle)][1] += n  # type: ignore[operator]

        def finish(self, handle: object) -> None:
            pass

    recorder = Recorder()
    previous = progress.install(recorder)
    try:
        with OpenAICompatibleServer(rubric_judge(overlap_score)) as srv:
            judge_dir(write_rows(tmp_path, sample_rows()), config_for(srv.base_url))
    finally:
        progress.install(previous)
    assert recorder.tasks == {"judge calibration": [8, 8], "judge rows": [6, 6]}


def test_a_judge_that_is_a_model_under_test_is_flagged(tmp_path: Path) -> None:
    specs = [ModelSpec.model_validate({"name": "random", "serve": "random"}),
             ModelSpec.model_validate({"name": "gpt", "model": "gpt-4o",
                                       "base_url": "http://x/v1"})]
    served = JudgeConfig(serve="random")
    assert self_judging_models(served, specs) == ["random"]
    assert self_judging_models(config_for("http://x/v1", model="gpt-4o"), specs) == ["gpt"]
    assert self_judging_models(config_for("http://x/v1", model="judge-9"), specs) == []
    with OpenAICompatibleServer(rubric_judge(overlap_score)) as srv:
        report = judge_dir(write_rows(tmp_path, sample_rows()),
                           config_for(srv.base_url, model="gpt-4o"),
                           self_judging_models=self_judging_models(
                               config_for(srv.base_url, model="gpt-4o"), specs))
    assert report.results["self_judging"] is True
    assert report.results["self_judging_models"] == ["gpt"]
    assert report.predictions["metadata"]["self_judging"] is True


# --- the journal --------------------------------------------------------------------------------

def journal_records(folder: Path) -> list[dict[str, Any]]:
    path = folder / "llm_judge" / JOURNAL_FILE
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_rerun_keeps_paid_replies_and_retries_only_transient_failures(tmp_path: Path) -> None:
    folder = write_rows(tmp_path, [open_row(i) for i in range(3)])
    first = route_by_text({"[ROW-0]": [Reply(verdict(8))], "[ROW-1]": [Reply(verdict(42))],
                           "[ROW-2]": [HttpError(503)]})
    with OpenAICompatibleServer(first) as srv:
        report = judge_dir(folder, config_for(srv.base_url, calibration_pairs=0))
        assert len(srv.requests) == 1 + 1 + 2
    assert [r["score"] for r in report.predictions["results"]] == [8, None, None]
    assert sorted(r["status"] for r in journal_records(folder)) == ["failed", "success",
                                                                    "success"]

    # The second server would now give every row a 7: only the failed call is asked again.
    with OpenAICompatibleServer(default=Reply(verdict(7))) as srv:
        report = judge_dir(folder, config_for(srv.base_url, calibration_pairs=0))
        again = [message_text(r.body) for r in srv.requests]
    assert len(again) == 1 and "[ROW-2]" in again[0]
    assert [r["score"] for r in report.predictions["results"]] == [8, None, 7]
    assert report.calls_made == 1 and report.calls_replayed == 2

    # Reading the same journal the AVLM way costs nothing: the 42 becomes AVLM's 4.
    with OpenAICompatibleServer() as srv:
        report = judge_dir(folder, config_for(srv.base_url, calibration_pairs=0,
                                              avlm_compat=True))
        assert srv.requests == []
    assert [r["score"] for r in report.predictions["results"]] == [8, 4, 7]


def test_a_changed_setting_asks_again(tmp_path: Path) -> None:
    folder = write_rows(tmp_path, [open_row(0)])
    with OpenAICompatibleServer(default=Reply(verdict(8))) as srv:
        judge_dir(folder, config_for(srv.base_url, calibration_pairs=0))
        judge_dir(folder, config_for(srv.base_url, calibration_pairs=0))
        assert len(srv.requests) == 1
        judge_dir(folder, config_for(srv.base_url, calibration_pairs=0, max_tokens=500))
        judge_dir(folder, config_for(srv.base_url, calibration_pairs=0, model="judge-2"))
        assert len(srv.requests) == 3
    digests = {r["request_sha256"] for r in journal_records(folder)}
    assert len(digests) == 3


def body_digest(request: RecordedRequest) -> str:
    """The journal's request digest of what the server received."""
    return request_sha256({k: v for k, v in request.body.items()
                           if k in ("model", "messages", "temperature", "max_tokens",
                                    "response_format")})


KILL_AT = 16  # of 23 calls: 11 for calibration, then 12 rows on 3 workers


def test_sigkill_midway_then_restart_repeats_only_the_calls_in_flight(tmp_path: Path) -> None:
    rows = sample_rows() + [{**row, "index": row["index"] + 6, "id": f"{row['id']}-b",
                             "prediction": "A blue box and a red ball by the wall."}
                            for row in sample_rows()]
    folder = write_rows(tmp_path / "inference", rows)
    config = tmp_path / "judge.yaml"
    judge = rubric_judge(overlap_score, delay_s=0.05)
    state: dict[str, Any] = {"n": 0, "pid": None}

    def kill_midway(body: dict[str, Any]) -> Any:
        state["n"] += 1
        if state["n"] == KILL_AT and state["pid"] is not None:
            os.kill(state["pid"], signal.SIGKILL)  # no cleanup, no finally blocks
        return judge(body)

    with OpenAICompatibleServer(kill_midway) as srv:
        config.write_text(f"base_url: {srv.base_url}\nmodel: judge-model\n"
                          f"api_key_env: {KEY_ENV}\nmax_workers: 3\nreply_tries: 1\n"
                          "max_retries: 0\n")
        proc = subprocess.Popen(
            [sys.executable, "-c", "from eval_assets.cli import app; app()", "score", "judge",
             str(folder), "--judge-config", str(config)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        state["pid"] = proc.pid
        _, stderr = proc.communicate(timeout=120)
        assert proc.returncode == -signal.SIGKILL, stderr
        state["pid"] = None
        # Calls other workers had sent when the kill landed arrive too, some cut short: let
        # the server see them all before counting.
        time.sleep(0.5)
        n_first = len(srv.requests)
        first = [r for r in srv.requests if isinstance(r.body, dict)]
        journalled = {r["request_sha256"] for r in journal_records(folder)
                      if r["status"] == "success"}
        in_flight = {body_digest(r) for r in first} - journalled
        assert KILL_AT <= n_first <= KILL_AT + 2 and len(journalled) >= KILL_AT - 3
        assert 1 <= len(in_flight) <= 3  # at most one call per worker

        report = judge_dir(folder, JudgeConfig.from_yaml(config))
        second = [r for r in srv.requests[n_first:] if isinstance(r.body, dict)]
    first_digests = {body_digest(r) for r in first}
    repeated = [d for d in (body_digest(r) for r in second) if d in first_digests]
    assert sorted(repeated) == sorted(in_flight)  # nothing that was journalled was asked again
    assert len(second) == 23 - len(journalled)
    assert report.calls_made == len(second) and report.calls_replayed == len(journalled)
    assert report.calibration.status == "passed" and report.results["num_success"] == 12


# --- the Dagster resource and the benchmark record -----------------------------------------------

def test_the_resource_uses_the_one_loader_and_knows_the_models(tmp_path: Path) -> None:
    from eval_assets.defs.partitions import declared_models
    from eval_assets.defs.resources import JudgeResource

    (tmp_path / "judge.yaml").write_text("serve: random\nmax_workers: 1\n")
    resource = JudgeResource(config_file=str(tmp_path / "judge.yaml"))
    assert resource.load_config() == JudgeConfig.from_yaml(tmp_path / "judge.yaml")
    # The models under test come from the one models file the partitions are built from.
    assert "random" in [spec.name for spec in declared_models()]
    with resource.judge() as (config, client):
        assert config.endpoint.base_url is not None and client.config is config
        assert resource.self_judging_models(config) == ["random"]


def test_benchmark_result_carries_the_trust_fields(tmp_path: Path) -> None:
    from eval_assets.scoring.judge import judge_scores

    with OpenAICompatibleServer(rubric_judge(lambda gt, pred: 10)) as srv:
        report = judge_dir(write_rows(tmp_path / "a", sample_rows()), config_for(srv.base_url),
                           self_judging_models=["random"])
    withheld = judge_scores(report.results, "judge-model")
    assert withheld.withheld and withheld.status == report.status
    assert withheld.mean_score is None and withheld.num_withheld == 6
    assert withheld.self_judging and withheld.self_judging_models == ["random"]
    assert withheld.calibration is not None and withheld.calibration.agreement == 0.0
    assert len(withheld.calibration.pairs) == 3

    with OpenAICompatibleServer(route_by_text(MISBEHAVING)) as srv:
        report = judge_dir(write_rows(tmp_path / "b", [open_row(i) for i in range(8)]),
                           config_for(srv.base_url, calibration_pairs=0, avlm_compat=True))
    compat = judge_scores(report.results, "judge-model")
    assert compat.scoring_mode == "avlm_compat" and compat.coerced_rows == 5
    assert compat.coercions == {"clamped": 2, "missing_score": 1, "rounded": 2,
                                "scaled_down": 2}
    assert compat.failure_counts == {"parse_error": 1} and not compat.withheld
    assert compat.calibration is not None and compat.calibration.status == "disabled"
