"""The judge's requests and replies through the one request builder, on a real HTTP fake server.

The endpoint quirks the models' preflight finds hold for the judge too: a server that refuses
``max_tokens``, think tags around the verdict, and a verdict sent only in ``reasoning_content``.
(A refused ``response_format`` stays a recorded failure naming the reason:
local_models/test_structured_output.py.)
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from eval_assets.metrics.avlm_rows import rows_from_dicts
from eval_assets.metrics.judge import OpenAIJudge, judge_dir
from eval_assets.metrics.judge_journal import open_journal
from eval_assets_tests.fakes.openai_server import (
    OpenAICompatibleServer,
    Reply,
    overlap_score,
    rubric_judge,
)
from eval_assets_tests.metrics.test_judge import fast_config, open_row, verdict


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    from eval_assets_tests.metrics.test_judge import KEY, KEY_ENV

    monkeypatch.setenv(KEY_ENV, KEY)
    return KEY


def _inference_dir(path: Path, n: int) -> Path:
    path.mkdir(parents=True)
    rows = [open_row(i, pred=("Two people are near the door." if i % 2
                              else "One cat sleeps on the sofa.")) for i in range(n)]
    (path / "predictions.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def _journal_keys(inference_dir: Path) -> set[str]:
    lines = (inference_dir / "llm_judge" / "judge.journal.jsonl").read_text().splitlines()
    return {json.loads(line)["key"] for line in lines if json.loads(line)["status"] == "success"}


def test_a_server_that_refuses_max_tokens_serves_the_judge_with_stable_keys(
        tmp_path: Path, api_key: str) -> None:
    plain = _inference_dir(tmp_path / "plain", 8)
    strict = tmp_path / "strict"
    shutil.copytree(plain, strict)
    with OpenAICompatibleServer(rubric_judge(overlap_score)) as srv:
        expected = judge_dir(plain, fast_config(srv, max_workers=3, calibration_pairs=0))
    with OpenAICompatibleServer(rubric_judge(overlap_score),
                                token_param="max_completion_tokens") as srv:
        report = judge_dir(strict, fast_config(srv, max_workers=3, calibration_pairs=0))
        bodies = [r.body for r in srv.requests]
        # A rerun reads every verdict from the journal: no call at all.
        again = judge_dir(strict, fast_config(srv, max_workers=3, calibration_pairs=0))
        assert len(srv.requests) == len(bodies)
    assert report.results["total_judged"] == 8 and report.results["num_failed"] == 0
    assert report.results["mean_score"] == expected.results["mean_score"]
    assert again.calls_replayed == 8 and again.results["num_failed"] == 0
    refused = [b for b in bodies if "max_tokens" in b]
    sent = [b for b in bodies if "max_tokens" not in b]
    # Each worker may meet the refusal once before the finding is shared; never more.
    assert 1 <= len(refused) <= 3 and len(sent) == 8
    assert all(b["max_completion_tokens"] == 1000 for b in sent)
    # The journal keys hash the request as built (limit named max_tokens): the same on both.
    assert _journal_keys(strict) == _journal_keys(plain) and len(_journal_keys(plain)) == 8


def test_score_only_calls_follow_the_refusal_too(api_key: str) -> None:
    with OpenAICompatibleServer(default=Reply('{"score": 9}'),
                                token_param="max_completion_tokens") as srv:
        judge = OpenAIJudge(fast_config(srv, calibration_max_tokens=16))
        try:
            row = rows_from_dicts([open_row(0)])[0]
            outcome = judge.score_only(row)
            request = judge.score_only_request(row)
            messages = judge._score_only_messages(row)
        finally:
            judge.close()
        bodies = [r.body for r in srv.requests]
    assert outcome.ok and outcome.score == 9 and outcome.attempts == 2  # the 400 counted
    assert [("max_tokens" in b, b.get("max_completion_tokens")) for b in bodies] == [
        (True, None), (False, 16)]
    # The request the calibration cache hashes is the one it always was, byte for byte.
    assert request == {"model": "judge-model", "messages": messages, "temperature": 0.0,
                       "max_tokens": 16}


def test_think_tags_are_taken_out_before_the_verdict_is_read(api_key: str) -> None:
    # Braces in the thinking would make the reply's JSON (first "{" to last "}") unparseable.
    thought = '<think>A {"score": 2} would be harsh; they match.</think>\n'
    with OpenAICompatibleServer([Reply(thought + verdict(7)),
                                 Reply('<think>{"score": 3} hmm, let me')]) as srv:
        judge = OpenAIJudge(fast_config(srv, reply_tries=1))
        try:
            first, second = (judge.judge(row) for row in rows_from_dicts([open_row(0),
                                                                          open_row(1)]))
        finally:
            judge.close()
    assert first.ok and first.score == 7 and first.attempts == 1
    # An unclosed tag: the reply ran out while thinking, and its half-thought is never a score.
    assert second.score is None and second.error_category == "empty_response"
    assert "unclosed think tag" in (second.error or "")


@pytest.mark.parametrize("content", [None, ""])
def test_a_verdict_only_in_reasoning_content_is_read_journalled_and_not_asked_again(
        tmp_path: Path, api_key: str, content: str | None) -> None:
    journal_path = tmp_path / "judge.journal.jsonl"
    row = rows_from_dicts([open_row(0)])[0]
    outcomes = []
    with OpenAICompatibleServer(default=Reply(content, reasoning_content=verdict(6))) as srv:
        for _ in range(2):
            judge = OpenAIJudge(fast_config(srv))
            with open_journal(journal_path) as journal, judge.journalled(journal):
                outcomes.append((judge.judge(row), judge.calls_made, judge.calls_replayed))
            judge.close()
        asked = len(srv.requests)
    assert [(o.score, made, replayed) for o, made, replayed in outcomes] == [(6, 1, 0),
                                                                            (6, 0, 1)]
    assert asked == 1
    (record,) = [json.loads(line) for line in journal_path.read_text().splitlines()]
    assert record["content_from"] == "reasoning_content"
    assert json.loads(record["content"])["score"] == 6


def test_an_ordinary_journal_line_has_no_content_from(tmp_path: Path, api_key: str) -> None:
    journal_path = tmp_path / "judge.journal.jsonl"
    with OpenAICompatibleServer([Reply(verdict(8))]) as srv:
        judge = OpenAIJudge(fast_config(srv))
        with open_journal(journal_path) as journal, judge.journalled(journal):
            assert judge.judge(rows_from_dicts([open_row(0)])[0]).score == 8
        judge.close()
    assert "content_from" not in journal_path.read_text()
