"""The match rule between a declared model and the model a reply names."""

from __future__ import annotations

import pytest

from eval_assets.served_model import (
    check_served,
    count_served,
    parse_listing,
    same_model,
)


@pytest.mark.parametrize(("declared", "served"), [
    ("gpt-4o", "gpt-4o"),
    ("GPT-4o", " gpt-4o "),
    ("gpt-4o", "gpt-4o-2024-08-06"),  # OpenAI names the dated snapshot
    ("claude-3-5-sonnet", "claude-3-5-sonnet-20241022"),
    ("gemini-1.5-pro", "gemini-1.5-pro-002"),
    ("gpt-4o-2024-08-06", "gpt-4o"),  # a proxy that drops the date
    ("openai/gpt-4o", "gpt-4o-2024-08-06"),  # LiteLLM's provider path
    ("Qwen/Qwen2-VL-7B-Instruct", "qwen2-vl-7b-instruct"),
    ("llava", "llava:latest"),  # Ollama's tag
    ("random", "random"), ("blind-smollm2", "blind-smollm2"),  # the offline demo's models
])
def test_harmless_differences_match(declared: str, served: str) -> None:
    assert same_model(declared, served)


@pytest.mark.parametrize(("declared", "served"), [
    ("org/vlm", "some-other-model"),
    ("gpt-4o", "gpt-4o-mini"),  # a word after the name is another model
    ("gpt-4o", "gpt-4o-mini-2024-07-18"),
    ("o1", "o1-preview"),
    ("llava", "llava:13b"),
    ("a/vlm", "b/vlm"),  # another organisation's model of that name
    ("qwen2-vl", "/models/llama-3.2-vision.gguf"),  # a file of another model, several listed
])
def test_another_model_does_not_match(declared: str, served: str) -> None:
    assert not same_model(declared, served, {"/models/llama-3.2-vision.gguf": [], "x": []})


def test_a_one_model_servers_weights_file_and_listed_aliases_match() -> None:
    # llama.cpp names the file it loaded whatever the request said; with one model listed the
    # file is the model the endpoint serves.
    path = "/models/Qwen2-VL-7B-Instruct-Q4_K_M.gguf"
    assert same_model("local", path, {path: []})
    assert not same_model("local", path, None)  # nothing listed: nothing to go by
    assert same_model("qwen2-vl-7b-instruct", "/m/qwen2-vl-7b-instruct.gguf", None)
    assert same_model("my-vlm", "served-name", {"served-name": ["my-vlm"]})
    assert not same_model("my-vlm", "served-name", {"served-name": ["other"]})


def test_the_listing_and_the_counts() -> None:
    body = {"object": "list", "data": [{"id": "b", "aliases": ["y", 3, "x"]}, {"id": "a"},
                                       {"no": "id"}]}
    assert parse_listing(body) == {"a": [], "b": ["x", "y"]}
    assert parse_listing({"error": "no"}) is None and parse_listing("<html>") is None
    assert count_served(["b", None, "a", "b", ""]) == {"a": 1, "b": 2}


def test_a_mismatch_is_a_named_warning_naming_both_models() -> None:
    check = check_served("org/vlm on rec", "org/vlm", ["org/vlm", "other", "other", None])
    assert check.mismatch and check.served_models == {"org/vlm": 1, "other": 2}
    assert check.warning is not None and check.warning.startswith("served model mismatch:")
    assert "2 of 3 replies" in check.warning and "'other' (2)" in check.warning
    assert "'org/vlm'" in check.warning
    fine = check_served("m", "gpt-4o", ["gpt-4o-2024-08-06"])
    assert not fine.mismatch and fine.warning is None
