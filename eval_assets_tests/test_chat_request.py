"""The one request builder: requests on the wire, what a refusal teaches it, how replies read.

The question author is exercised here over real HTTP (the fake OpenAI-compatible server); the
models' runner and the judge have their own tests (model_runs/test_preflight.py,
metrics/test_judge_requests.py).
"""

from __future__ import annotations

import json

from eval_assets.chat_request import Classified, RequestBuilder, classify, refuses_field
from eval_assets.openai_chat import chat_client
from eval_assets.schemas.chat import ChatResult
from eval_assets.schemas.endpoint import Endpoint, EndpointCapabilities
from eval_assets.vqa.authors import VLMAuthor
from eval_assets_tests.fakes.openai_server import OpenAICompatibleServer, Reply
from eval_assets_tests.vqa.helpers import frame_image

PROPOSALS = json.dumps({"proposals": [{"family": "presence", "object_names": ["red ball"]}]})


def _capabilities(param: str, structured: str) -> EndpointCapabilities:
    return EndpointCapabilities.model_validate({
        "config_sha256": "x", "preflight_version": 1, "model": "m", "endpoint": "e",
        "token_limit_param": param, "images": True, "max_images": 1, "max_images_probed": 4,
        "data_url_images": True, "structured_output": structured, "reasoning": "none",
        "logprobs": False, "calls": 5, "seconds": 0.1})


def test_the_request_as_built_names_max_tokens_and_the_wire_the_endpoints_parameter() -> None:
    builder = RequestBuilder(Endpoint(base_url="http://x/v1", model="m",
                                      token_limit_param="max_completion_tokens"),
                             temperature=0.5)
    fmt = {"type": "json_object"}
    request = builder.request([{"role": "user", "content": "hi"}], max_tokens=64,
                              response_format=fmt, logprobs=True)
    assert list(request) == ["model", "messages", "temperature", "max_tokens",
                             "response_format", "logprobs"]
    wire = builder.wire(request)
    assert list(wire) == ["model", "messages", "temperature", "max_completion_tokens",
                          "response_format", "logprobs"]
    assert wire["max_completion_tokens"] == 64 and wire["temperature"] == 0.5
    # What the preflight found replaces the configured: max_tokens, and no structured output.
    builder.learn(_capabilities("max_tokens", "unsupported"))
    assert builder.wire(request) == {k: v for k, v in request.items() if k != "response_format"}
    assert "max_tokens" not in builder.request([], max_tokens=None)


def test_a_reply_only_in_the_reasoning_field_is_answered_from_there() -> None:
    common: dict[str, object] = {"wall_s": 0.1, "attempts": 1, "status_code": 200}
    tags = (("<think>", "</think>"),)
    only = ChatResult(content=None, error_category="empty_response", reasoning=" B ",
                      reasoning_field="reasoning", finish_reason="stop", **common)
    assert classify(only, tags) == Classified("answered", "B", None, answer_field="reasoning")
    # Cut off while thinking: the reply stands as truncated, not asked again as empty.
    cut = only.model_copy(update={"finish_reason": "length"})
    assert classify(cut, tags).outcome == "truncated" and classify(cut, tags).text is None
    nothing = ChatResult(content="", finish_reason="stop", **common)
    assert classify(nothing, tags).outcome == "empty"


def test_a_refusal_is_told_from_another_400_that_names_the_field() -> None:
    def http_400(message: str) -> ChatResult:
        return ChatResult(status_code=400, error_category="client_error", wall_s=0.0, attempts=1,
                          error_message=f"HTTP 400: {message}")

    openai = http_400("Unsupported parameter: 'max_tokens' is not supported with this model. "
                      "Use 'max_completion_tokens' instead.")
    assert refuses_field(openai, "max_tokens") and not refuses_field(openai, "response_format")
    assert refuses_field(http_400("max_completion_tokens: Extra inputs are not permitted"),
                         "max_completion_tokens")
    # vLLM's context-length error names both parameters, and refuses neither.
    vllm = http_400("'max_tokens' or 'max_completion_tokens' is too large: 9000. This model's "
                    "maximum context length is 8192 tokens and your request has 40 input tokens")
    assert not refuses_field(vllm, "max_tokens")


def test_the_author_strips_think_tags() -> None:
    thought = '<think>Maybe {"proposals": []}? No: there is a ball.</think>\n'
    with OpenAICompatibleServer([Reply(thought + PROPOSALS)]) as srv:
        author = VLMAuthor(Endpoint(base_url=srv.base_url, model="m", max_retries=0))
        props = author.propose(frame_image(1), 0)
        author.close()
        (request,) = srv.requests
    assert [(p.family, p.object_names, p.error) for p in props] == [
        ("presence", ["red ball"], None)]
    # The author sends no token limit unless its endpoint sets one.
    assert "max_tokens" not in request.body and "max_completion_tokens" not in request.body


def test_the_author_follows_a_server_that_refuses_max_tokens() -> None:
    with OpenAICompatibleServer(default=Reply(PROPOSALS),
                                token_param="max_completion_tokens") as srv:
        author = VLMAuthor(Endpoint(base_url=srv.base_url, model="m", max_retries=0,
                                    max_tokens=900))
        first, second = author.propose(frame_image(1), 0), author.propose(frame_image(2), 1)
        author.close()
        bodies = [r.body for r in srv.requests]
    assert all(p.error is None for p in first + second)
    # One refusal, then every request of the author carries the parameter the server takes.
    assert [(b.get("max_tokens"), b.get("max_completion_tokens")) for b in bodies] == [
        (900, None), (None, 900), (None, 900)]


def test_the_author_reads_a_reply_only_in_reasoning_content() -> None:
    with OpenAICompatibleServer([Reply(None, reasoning_content=PROPOSALS)]) as srv:
        author = VLMAuthor(Endpoint(base_url=srv.base_url, model="m", max_retries=0))
        props = author.propose(frame_image(1), 3)
        author.close()
    assert [(p.family, p.object_names, p.error) for p in props] == [
        ("presence", ["red ball"], None)]
    assert author.calls[3].reasoning_field == "reasoning_content"


def test_a_server_that_refuses_the_seed_gets_every_later_request_without_it() -> None:
    # Azure OpenAI (and any server strict about unknown fields) answers a 400 naming the field.
    endpoint = Endpoint(base_url="http://x/v1", model="m", max_retries=0, max_tokens=8)
    ask = [{"role": "user", "content": "hi"}]
    with OpenAICompatibleServer(default=Reply("yes"), refuse_fields=("seed",),
                                token_param="max_completion_tokens") as srv:
        builder = RequestBuilder(endpoint.model_copy(update={"base_url": srv.base_url}))
        with chat_client(builder.endpoint, "k") as chat:
            assert builder.sends_seed
            first = builder.send(chat, builder.request(ask, max_tokens=8, temperature=0.7,
                                                       seed=0))
            second = builder.send(chat, builder.request(ask, max_tokens=8, seed=1))
        bodies = [r.body for r in srv.requests]
    # Two refusals (the token limit, then the seed), each learnt once and re-sent at once.
    assert first.ok and first.content == "yes" and first.attempts == 3
    assert [("seed" in b, "max_tokens" in b) for b in bodies] == [
        (True, True), (True, False), (False, False), (False, False)]
    assert second.ok and second.attempts == 1 and not builder.sends_seed
    assert bodies[2]["temperature"] == 0.7  # only the refused field is dropped
