"""Capability preflight, reply outcomes and reasoning, as ``eval-assets vqa run`` meets them.

Each test runs the CLI with no tuning flag against a fake server over real HTTP that behaves like
a real one (see eval_assets_tests/fakes/openai_server.py and the servers' trackers).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from eval_assets.chat_request import strip_thinking
from eval_assets.cli import app
from eval_assets.model_runs import preflight
from eval_assets_tests.fakes import openai_server
from eval_assets_tests.fakes.openai_server import (
    HttpError,
    OpenAICompatibleServer,
    Reply,
    route_by_text,
)
from eval_assets_tests.model_runs.helpers import TinyDataset, make_dataset

runner = CliRunner()


def _run(dataset: TinyDataset, srv: OpenAICompatibleServer, out: Path,
         *extra: str) -> Any:
    return runner.invoke(app, ["vqa", "run", str(dataset.root), "--model", "org/vlm",
                               "--base-url", srv.base_url, "--output", str(out), *extra])


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def test_the_probe_marker_is_the_fake_servers(tmp_path: Path) -> None:
    assert openai_server.PROBE_MARKER == preflight.PROBE_MARKER


def test_max_completion_tokens_only_is_discovered_and_used(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=1, cases_per_frame=2)
    out = tmp_path / "run"
    with OpenAICompatibleServer(default=Reply("yes"), token_param="max_completion_tokens",
                                enforce_schema=True, logprobs=True) as srv:
        result = _run(dataset, srv, out)
        bodies = [r.body for r in srv.requests]
        probes = len(srv.probes)
    assert result.exit_code == 0, result.output
    endpoint = _json(out / "endpoint.json")
    assert endpoint["token_limit_param"] == "max_completion_tokens"
    assert endpoint["structured_output"] == "enforced" and endpoint["logprobs"] is True
    assert endpoint["images"] and endpoint["max_images"] == 4 and endpoint["calls"] == probes
    assert len(bodies) == 3 and all(
        "max_tokens" not in b and b["max_completion_tokens"] == 256 for b in bodies)
    assert [a["choice"] for a in _lines(out / "answers.jsonl")] == ["yes", "yes"]
    assert _json(out / "summary.json")["answers"]["outcomes"] == {"answered": 2}


def test_preflight_is_reused_while_the_endpoint_settings_are_unchanged(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=1, cases_per_frame=1)
    out = tmp_path / "run"
    with OpenAICompatibleServer(default=Reply("yes")) as srv:
        assert _run(dataset, srv, out).exit_code == 0
        first = len(srv.probes)
        assert _run(dataset, srv, out).exit_code == 0
        assert len(srv.probes) == first and first >= 5
    endpoint = _json(out / "endpoint.json")
    assert endpoint["structured_output"] == "ignored" and endpoint["logprobs"] is False
    assert endpoint["reasoning"] == "none" and endpoint["token_limit_param"] == "max_tokens"


def test_the_answer_is_read_after_the_thinking_and_the_reasoning_is_kept(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=1, cases_per_frame=2)
    out = tmp_path / "run"
    first, second = (c["id"] for c in dataset.cases)
    usage = {"prompt_tokens": 50, "completion_tokens": 40, "total_tokens": 90,
             "completion_tokens_details": {"reasoning_tokens": 30}}
    thinking = Reply("<think>It could be no... no, there is one.</think>yes",
                     reasoning_content="Looking at the image.", usage=usage)
    script = route_by_text({dataset.marker(first): [thinking],
                            dataset.marker(second): [Reply("<think>maybe no, maybe")]},
                           default=Reply("a description"))
    with OpenAICompatibleServer(script, probe_reply=thinking) as srv:
        result = _run(dataset, srv, out)
    assert result.exit_code == 0, result.output
    assert _json(out / "endpoint.json")["reasoning"] == "reasoning_content"
    answers = {a["case_id"]: a for a in _lines(out / "answers.journal.jsonl")}
    assert answers[first]["choice"] == "yes" and answers[first]["outcome"] == "answered"
    assert answers[first]["raw_response"] == "yes"
    assert answers[first]["reasoning"] == ("Looking at the image.\n"
                                           "It could be no... no, there is one.")
    assert answers[first]["usage"]["reasoning_tokens"] == 30
    # An unclosed think tag: the budget ran out while thinking; never read as a choice.
    assert answers[second]["outcome"] == "truncated" and answers[second]["choice"] is None
    assert answers[second]["status"] == "success" and answers[second]["raw_response"] == ""
    summary = _json(out / "summary.json")["answers"]
    assert summary["outcomes"] == {"answered": 1, "truncated": 1}
    assert summary["unmatched_choices"] == 0 and summary["tokens"]["reasoning_tokens"] == 30


def test_every_truncated_reply_is_counted(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=2, cases_per_frame=2)
    out = tmp_path / "run"
    cut = [c["id"] for c in dataset.cases[:3]]
    script = route_by_text({dataset.marker(c): [Reply("ye", finish_reason="length")]
                            for c in cut}, default=Reply("yes"))
    with OpenAICompatibleServer(script) as srv:
        result = _run(dataset, srv, out, "--no-describe")
    assert result.exit_code == 0, result.output
    summary = _json(out / "summary.json")["answers"]
    assert summary["outcomes"] == {"answered": 1, "truncated": 3}
    assert summary["success"] == 4  # the model's answers: they stand, scored as wrong
    answers = _lines(out / "answers.jsonl")
    assert [a["choice"] for a in answers] == [None, None, None, "yes"]
    # Kept, but never where a scorer reads a reply: "ye" must not score as "yes".
    assert [(a["raw_response"], a["unread_reply"]) for a in answers[:3]] == [("", "ye")] * 3


def test_refusals_are_answers_without_a_choice(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=1, cases_per_frame=2)
    out = tmp_path / "run"
    first, second = (c["id"] for c in dataset.cases)
    script = route_by_text({dataset.marker(first): [Reply(None, refusal="I can't help.")],
                            dataset.marker(second): [Reply("yes",
                                                           finish_reason="content_filter")]})
    with OpenAICompatibleServer(script) as srv:
        result = _run(dataset, srv, out, "--no-describe")
    assert result.exit_code == 0, result.output
    assert [(a["outcome"], a["choice"]) for a in _lines(out / "answers.jsonl")] == [
        ("refused", None), ("refused", None)]


def test_a_reply_only_in_reasoning_content_is_read_from_there_and_not_asked_again(
        tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=1, cases_per_frame=1)
    out = tmp_path / "run"
    # A server whose reasoning parser took the whole reply: content empty, the answer beside it.
    only_reasoning = Reply("", reasoning_content="yes")
    with OpenAICompatibleServer(default=only_reasoning, probe_reply=only_reasoning) as srv:
        result = _run(dataset, srv, out, "--no-describe")
        assert result.exit_code == 0, result.output
        record = _lines(out / "answers.journal.jsonl")[0]
        assert record["outcome"] == "answered" and record["status"] == "success"
        assert record["answer_field"] == "reasoning_content"
        assert record["raw_response"] == "yes" and record["choice"] == "yes"
        assert record["reasoning"] is None  # the text is kept once, as the answer
        assert _json(out / "endpoint.json")["reasoning"] == "reasoning_content"
        assert _json(out / "summary.json")["answers"]["answered_from"] == {
            "reasoning_content": 1}
        assert _run(dataset, srv, out, "--no-describe").exit_code == 0
        assert len(srv.requests) == 1  # stored: the rerun neither asked nor paid again


def test_a_reply_of_thinking_alone_is_empty_and_asked_again(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=1, cases_per_frame=1)
    out = tmp_path / "run"
    thinking = Reply("<think>thinking about it</think>")
    with OpenAICompatibleServer(default=thinking, probe_reply=thinking) as srv:
        result = _run(dataset, srv, out, "--no-describe")
        assert result.exit_code == 1
        record = _lines(out / "answers.journal.jsonl")[0]
        assert record["outcome"] == "empty" and record["status"] == "failed"
        assert record["reasoning"] == "thinking about it" and "answer_field" not in record
        assert "answered_from" not in _json(out / "summary.json")["answers"]
        assert _json(out / "endpoint.json")["reasoning"] == "inline"
        assert _run(dataset, srv, out, "--no-describe").exit_code == 1
        assert len(srv.requests) == 2  # not cached: the rerun asked again


def test_server_errors_are_no_answers_and_a_rerun_retries_them(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=1, cases_per_frame=2)
    out = tmp_path / "run"
    first = dataset.cases[0]["id"]
    script = route_by_text({dataset.marker(first): [HttpError(503), Reply("no")]},
                           default=Reply("yes"))
    with OpenAICompatibleServer(script) as srv:
        result = _run(dataset, srv, out, "--no-describe", "--max-retries", "0")
        assert result.exit_code == 1
        summary = _json(out / "summary.json")
        assert summary["complete"] is False
        assert summary["answers"]["outcomes"] == {"answered": 1, "server_error": 1}
        again = _run(dataset, srv, out, "--no-describe", "--max-retries", "0")
    assert again.exit_code == 0, again.output
    assert _json(out / "summary.json")["answers"]["outcomes"] == {"answered": 2}


def test_an_endpoint_without_images_is_refused_before_any_case(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=1, cases_per_frame=2)
    out = tmp_path / "run"
    with OpenAICompatibleServer(default=Reply("yes"), max_images=0) as srv:
        result = _run(dataset, srv, out)
        asked = srv.requests
    assert result.exit_code != 0
    assert "did not accept an image" in result.output and "--mmproj" in result.output
    assert "Unsupported content part type" in result.output
    journal = out / "answers.journal.jsonl"
    assert asked == [] and (not journal.exists() or _lines(journal) == [])
    endpoint = _json(out / "endpoint.json")
    assert endpoint["images"] is False and endpoint["max_images"] == 0


def test_one_image_per_request_is_found(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=1, cases_per_frame=1)
    out = tmp_path / "run"
    with OpenAICompatibleServer(default=Reply("yes"), max_images=1) as srv:
        result = _run(dataset, srv, out)
    assert result.exit_code == 0, result.output
    endpoint = _json(out / "endpoint.json")
    assert endpoint["max_images"] == 1 and endpoint["data_url_images"] is True


def test_strip_thinking_takes_out_every_configured_pair() -> None:
    tags = (("<think>", "</think>"), ("<reasoning>", "</reasoning>"))
    stripped = strip_thinking("<think>a</think> B <reasoning>c</reasoning>", tags)
    assert (stripped.text, stripped.reasoning, stripped.unclosed) == ("B", "a\nc", False)
    open_tag = strip_thinking("A<think>still", tags)
    assert (open_tag.text, open_tag.reasoning, open_tag.unclosed) == ("A", "still", True)
    plain = strip_thinking(" A ", tags)
    assert (plain.text, plain.reasoning) == (" A ", None)
