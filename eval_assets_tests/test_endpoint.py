"""The one endpoint type: one default per field, flat YAML keys, and the one way to open it."""

from __future__ import annotations

import pytest

from eval_assets.metrics.judge import JudgeConfig
from eval_assets.model_runs.client import ClientSettings
from eval_assets.openai_chat import open_endpoint, retry_policy
from eval_assets.retry import RetryPolicy
from eval_assets.schemas.endpoint import NO_KEY, Endpoint, EndpointError, split_endpoint_fields
from eval_assets.schemas.predictions import ModelSpec
from eval_assets.vqa.authors import AuthorConfig
from eval_assets_tests.fakes.openai_server import OpenAICompatibleServer, Reply


def test_every_holder_starts_from_the_same_defaults() -> None:
    endpoint = Endpoint()
    assert (endpoint.max_retries, endpoint.timeout_s, endpoint.max_tokens,
            endpoint.max_concurrency) == (4, 60.0, 256, 4)
    assert retry_policy(endpoint) == RetryPolicy()
    spec = ModelSpec.model_validate({"name": "m", "base_url": "http://h/v1"})
    author = AuthorConfig.model_validate({"author": "vlm", "vlm_base_url": "http://h/v1",
                                          "vlm_model": "m"})
    judge = JudgeConfig.model_validate({"base_url": "http://h/v1", "model": "j"})
    for held in (spec.endpoint, author.vlm, judge.endpoint):
        assert held.max_retries == endpoint.max_retries and held.timeout_s == endpoint.timeout_s


def test_flat_keys_are_gathered_and_renamed() -> None:
    values = split_endpoint_fields({"name": "x", "max_workers": 2, "serve": "random",
                                    "reply_tries": 1}, {"max_workers": "max_concurrency"})
    assert values == {"name": "x", "reply_tries": 1,
                      "endpoint": {"max_concurrency": 2, "serve": "random"}}
    judge = JudgeConfig.model_validate({"serve": "random", "max_workers": 2,
                                        "backoff_jitter": 0.25})
    assert (judge.max_workers, judge.endpoint.jitter, judge.model) == (2, 0.25, "random")
    # A field the entry sets wins over the caller's; the others stay the caller's.
    base = Endpoint(max_retries=1, timeout_s=5)
    assert Endpoint(timeout_s=9).over(base) == Endpoint(max_retries=1, timeout_s=9)


def test_open_endpoint_calls_a_url_or_serves_a_local_model() -> None:
    with OpenAICompatibleServer([Reply("yes")]) as srv, \
            open_endpoint(Endpoint(base_url=srv.base_url, model="m")) as opened:
        assert opened.endpoint_id is None and opened.api_key == NO_KEY
        assert opened.chat.complete({"model": "m", "messages": []}).content == "yes"
    with open_endpoint(Endpoint(serve="random", seed=2)) as opened:
        assert opened.endpoint_id == "serve://random?seed=2"
        assert opened.endpoint.base_url is not None and opened.endpoint.api_key_env is None
        settings = ClientSettings(endpoint=opened.endpoint, endpoint_id=opened.endpoint_id)
        assert settings.generation_config().base_url == "serve://random?seed=2"
    with pytest.raises(EndpointError, match="neither base_url nor serve"), \
            open_endpoint(Endpoint(model="m")):
        pass


def test_an_unset_key_variable_fails_before_anything_starts(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVAL_TEST_NO_SUCH_KEY", raising=False)
    endpoint = Endpoint(base_url="http://127.0.0.1:9/v1", model="m",
                        api_key_env="EVAL_TEST_NO_SUCH_KEY")
    with pytest.raises(EndpointError, match="EVAL_TEST_NO_SUCH_KEY"), open_endpoint(endpoint):
        pass
