"""Capability preflight, reply outcomes and reasoning, as ``eval-assets vqa run`` meets them.

Each test runs the CLI with no tuning flag against a fake server over real HTTP that behaves like
a real one (see eval_assets_tests/fakes/openai_server.py and the servers' trackers).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from eval_assets.chat_request import strip_thinking
from eval_assets.cli import app
from eval_assets.model_runs import preflight
from eval_assets.model_runs.client import ClientSettings
from eval_assets.openai_chat import ChatClient
from eval_assets_tests.fakes import openai_server
from eval_assets_tests.fakes.openai_server import (
    HttpError,
    OpenAICompatibleServer,
    RawResponse,
    Reply,
    planned_waits,
    route_by_text,
)
from eval_assets_tests.model_runs.helpers import ONE_CALL_PER_CASE, TinyDataset, make_dataset

runner = CliRunner()


def _run(dataset: TinyDataset, srv: OpenAICompatibleServer, out: Path,
         *extra: str) -> Any:
    return runner.invoke(app, ["vqa", "run", str(dataset.root), "--model", "org/vlm",
                               "--base-url", srv.base_url, "--output", str(out),
                               *ONE_CALL_PER_CASE, *extra])


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


# --- the server's word checked ---------------------------------------------------------------
def test_a_server_answering_as_another_model_is_recorded_and_warned(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=1, cases_per_frame=2)
    out = tmp_path / "run"
    # A proxy whose fallback answers every request as another model than the one asked for.
    with OpenAICompatibleServer(default=Reply("yes"), served_model="some-other-model") as srv:
        result = _run(dataset, srv, out, "--no-describe")
        probes = len(srv.probes)
    assert result.exit_code == 0, result.output  # a warning, the answers kept and marked
    flat = " ".join(result.output.split())
    assert "served model mismatch: org/vlm on ds: 2 of 2 replies came from another model than " \
        "the declared 'org/vlm': 'some-other-model' (2)" in flat, result.output
    assert "served model mismatch: the preflight of endpoint" in flat  # said before any case
    assert [a["served_model"] for a in _lines(out / "answers.jsonl")] == ["some-other-model"] * 2
    summary = _json(out / "summary.json")
    assert summary["served_models"] == {"some-other-model": 2}
    assert summary["served_mismatch"] is True
    endpoint = _json(out / "endpoint.json")
    assert endpoint["served_models"] == {"some-other-model": probes}
    assert endpoint["listed_models"] == {"fake-model": []}


def test_a_dated_snapshot_or_a_one_model_servers_weights_file_does_not_warn(
        tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=1, cases_per_frame=1)
    gguf = "/models/vlm-q4_k_m.gguf"
    for served, listed in (("org/vlm-2024-08-06", ("org/vlm",)), (gguf, (gguf,))):
        out = tmp_path / f"run-{len(served)}"
        with OpenAICompatibleServer(default=Reply("yes"), served_model=served,
                                    models=listed) as srv:
            result = _run(dataset, srv, out, "--no-describe")
        assert result.exit_code == 0, result.output
        assert "served model mismatch" not in result.output
        summary = _json(out / "summary.json")
        assert summary["served_models"] == {served: 1} and "served_mismatch" not in summary


# --- what the preflight refuses ----------------------------------------------------------------
@pytest.mark.parametrize(("reply", "shown"), [
    (RawResponse(200, b"<!DOCTYPE html><html><body>Sign in</body></html>",
                 content_type="text/html"), "the body began '<!DOCTYPE html>"),
    (RawResponse(200, json.dumps({"id": "x", "object": "chat.completion",
                                  "choices": []}).encode()), "the body has no 'choices'"),
    (Reply(None), "the first choice has no message content"),
])
def test_an_endpoint_that_answers_no_chat_completion_is_refused_before_any_case(
        tmp_path: Path, reply: Any, shown: str) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=1, cases_per_frame=2)
    out = tmp_path / "run"
    with OpenAICompatibleServer(default=Reply("yes"), probe_reply=reply) as srv:
        result = _run(dataset, srv, out)
        asked = srv.requests
    assert result.exit_code != 0 and asked == [], result.output
    flat = " ".join(result.output.split())
    assert f"endpoint {srv.base_url} (model 'org/vlm')" in flat, result.output
    assert "no chat completion holding an answer (HTTP 200" in flat and shown in flat
    assert "no case was asked" in flat and "/v1/chat/completions" in flat


def test_a_probe_answered_429_is_retried_at_retry_after_and_never_a_capability(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=1, cases_per_frame=1)
    out = tmp_path / "run"
    refusals = iter(range(3))

    def probe(body: dict[str, Any]) -> Any:
        # The logprobs probe meets a rate limiter three times, then is answered.
        if body.get("logprobs") and next(refusals, None) is not None:
            return HttpError(429, {"Retry-After": "0.2"})
        return Reply("A")

    caplog.set_level(logging.DEBUG, logger="eval_assets")
    with OpenAICompatibleServer(default=Reply("yes"), logprobs=True, probe_reply=probe) as srv:
        result = _run(dataset, srv, out, "--no-describe")
        probes = len(srv.probes)
    assert result.exit_code == 0, result.output
    endpoint = _json(out / "endpoint.json")
    assert endpoint["logprobs"] is True and endpoint["calls"] == probes
    # Twice within the probe's own policy, once before it is asked under the client's.
    assert planned_waits(caplog.records).count((0.2, "Retry-After")) == 2
    assert sum("rate-limited; waiting 0.2 s (Retry-After)" in r.getMessage()
               for r in caplog.records) == 1


def test_a_probe_still_rate_limited_stops_the_preflight_recording_nothing(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=1, cases_per_frame=1)
    out = tmp_path / "run"
    limited = HttpError(429, {"Retry-After": "0.05"})
    with OpenAICompatibleServer(default=Reply("yes"), probe_reply=lambda body: (
            limited if body.get("response_format") else Reply("A"))) as srv:
        result = _run(dataset, srv, out, "--max-retries", "1")
        asked = srv.requests
    assert result.exit_code != 0 and asked == [], result.output
    flat = " ".join(result.output.split())
    assert "'canary json_schema' probe was refused as rate-limited" in flat, result.output
    assert "nothing is recorded" in flat and not (out / "endpoint.json").exists()


def test_the_probes_after_the_first_go_out_together(tmp_path: Path) -> None:
    settings = ClientSettings.model_validate({"base_url": "http://unused/v1", "model": "m"})
    with OpenAICompatibleServer(probe_reply=Reply("A", delay_s=0.3)) as srv:
        settings = settings.model_copy(update={
            "endpoint": settings.endpoint.model_copy(update={"base_url": srv.base_url})})
        with ChatClient(srv.base_url) as chat:
            record = preflight.preflight(chat, settings, tmp_path)
        most = srv.max_in_flight
    assert record.images and record.calls == 6  # text, 1, 2 and 4 images, canary, logprobs
    assert [r.path for r in srv.listings] == ["/v1/models"]
    assert most == preflight.PROBE_WORKERS  # five probes after the first, four at a time
    assert [n.split(":")[0] for n in record.notes] == [
        "text with max_tokens", "1 image(s)", "2 image(s)", "4 image(s)", "canary json_schema",
        "logprobs"]
