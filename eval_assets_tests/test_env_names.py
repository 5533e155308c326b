"""A key pasted where an environment variable's NAME goes is refused, and never echoed or stored.

Every way in is tried: the models file, the judge config, the question author's endpoint, the
perception config, the CLI options and the Dagster resources' run config (whose errors reach the
event log). Each refusal names the field and the fix, and no text it produces holds the key.
"""

from __future__ import annotations

import re
import traceback
from pathlib import Path

import pytest
from dagster import asset, materialize
from typer.testing import CliRunner

from eval_assets.cli import app
from eval_assets.defs.resources import (
    PerceptionResource,
    QuestionAuthorResource,
    VLMClientResource,
)
from eval_assets.env_names import check_env_var_name, looks_like_key
from eval_assets.metrics.judge_config import JudgeConfig, JudgeConfigError
from eval_assets.perception import PerceptionConfig
from eval_assets.perception.protocols import ConfigurationError
from eval_assets.schemas.predictions import ModelsFileError, load_model_specs
from eval_assets.vqa.authors import AuthorConfig

# Shaped like a real OpenAI project key; made up.
KEY = "sk-proj-Q3vT9xLm2Rk8WpZ4aB7cD1eF6gH0iJ5kL9mN3oP"
LOOKS_LIKE_A_KEY = "this looks like a key, not a variable name"


def _full_text(exc: BaseException) -> str:
    """Everything a traceback of ``exc`` would print, causes included (what --debug shows)."""
    return "".join(traceback.format_exception(exc))


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "HF_TOKEN", "my_token_2", "_X",
                                  "MOONDREAM_API_KEY",
                                  "AZURE_OPENAI_API_KEY_FOR_THE_BENCHMARK_2024"])
def test_variable_names_pass(name: str) -> None:
    assert check_env_var_name(name, "api_key_env") == name


@pytest.mark.parametrize("value", [
    KEY, "sk-ant-api03-abcdefghijklmnop", "hf_AbCdEfGhIjKlMnOpQrStUv", "gsk_0123456789abcdef",
    "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW", "AKIAIOSFODNN7EXAMPLE",
    "Q3vT9xLm2Rk8WpZ4aB7cD1eF6gH0iJ5kL9mN3oP1",  # no prefix: long, mixed case, digits
])
def test_keys_are_refused_and_masked(value: str) -> None:
    assert looks_like_key(value)
    with pytest.raises(ValueError, match=LOOKS_LIKE_A_KEY) as caught:
        check_env_var_name(value, "api_key_env")
    message = str(caught.value)
    assert value not in message and value[3:11] not in message
    assert f"{value[:3]}… ({len(value)} characters)" in message
    assert "put the key in an environment variable" in message and "api_key_env" in message


def test_a_value_that_cannot_be_a_name_is_refused_masked_too() -> None:
    with pytest.raises(ValueError, match="not an environment variable name") as caught:
        check_env_var_name("MY-KEY", "api_key_env")
    assert "MY-KEY" not in str(caught.value)


def test_models_file(tmp_path: Path) -> None:
    path = tmp_path / "models.yaml"
    path.write_text(f"models:\n  - name: gpt\n    base_url: http://x/v1\n    api_key_env: {KEY}\n")
    with pytest.raises(ModelsFileError) as caught:
        load_model_specs(path)
    message = str(caught.value)
    assert str(path) in message and "api_key_env" in message and LOOKS_LIKE_A_KEY in message
    assert KEY not in _full_text(caught.value)


def test_judge_config(tmp_path: Path) -> None:
    path = tmp_path / "judge.yaml"
    path.write_text(f"base_url: http://x/v1\nmodel: judge\napi_key_env: {KEY}\n")
    with pytest.raises(JudgeConfigError) as caught:
        JudgeConfig.from_yaml(path)
    assert LOOKS_LIKE_A_KEY in str(caught.value) and str(path) in str(caught.value)
    assert KEY not in _full_text(caught.value)


def test_author_endpoint_and_perception_config() -> None:
    with pytest.raises(ValueError, match=LOOKS_LIKE_A_KEY) as author:
        AuthorConfig.model_validate({"author": "vlm", "vlm": {"base_url": "http://x/v1",
                                                             "api_key_env": KEY}})
    assert KEY not in _full_text(author.value)
    with pytest.raises(ConfigurationError, match=LOOKS_LIKE_A_KEY) as perception:
        PerceptionConfig(detector="moondream", moondream_api_key_env=KEY)
    assert KEY not in _full_text(perception.value)
    assert "moondream_api_key_env" in str(perception.value)


@pytest.mark.parametrize("args", [
    ["vqa", "run", "nowhere", "--model", "m", "--base-url", "http://x/v1", "--api-key-env", KEY],
    ["vqa", "generate", "nowhere.db", "--vlm-api-key-env", KEY],
    ["vqa", "generate", "nowhere.db", "--moondream-api-key-env", KEY],
])
def test_cli_options(args: list[str]) -> None:
    result = CliRunner().invoke(app, ["--debug", *args])
    assert result.exit_code == 2
    # Click draws the message in a box: read it without the frame and the line breaks.
    assert LOOKS_LIKE_A_KEY in " ".join(re.sub(r"[│╭╮╰╯─]", " ", result.output).split())
    assert KEY not in result.output and KEY[3:11] not in result.output


@pytest.mark.parametrize(("key", "resource", "field"), [
    ("vlm", VLMClientResource(), "api_key_env"),
    ("question_author", QuestionAuthorResource(), "vlm_api_key_env"),
    ("perception", PerceptionResource(), "moondream_api_key_env"),
])
def test_resource_run_config_keeps_the_key_out_of_the_event_log(
        key: str, resource: object, field: str) -> None:
    @asset(required_resource_keys={key})
    def needs_it() -> None:
        return None

    result = materialize([needs_it], resources={key: resource}, raise_on_error=False,
                         run_config={"resources": {key: {"config": {field: KEY}}}})
    assert not result.success
    logged = "\n".join(str(event) for event in result.all_events)
    assert LOOKS_LIKE_A_KEY in logged and field in logged
    assert KEY not in logged and KEY[3:11] not in logged
