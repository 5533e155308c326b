"""Structured output (``response_format: json_schema``) from the local server and the judge.

Real HTTP throughout: the local server on 127.0.0.1, real SmolLM2 where the point is that a 135M
model produces a usable judgement, and the recording fake server for what the judge sends.
"""

from __future__ import annotations

import copy
import json
import math
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import openai
import pytest
import yaml

from eval_assets.local_models.response_format import (
    UnsupportedResponseFormat,
    parse_response_format,
)
from eval_assets.local_models.server import serve_in_thread
from eval_assets.local_models.smollm2 import BlindSmolLM2
from eval_assets.metrics.avlm_rows import rows_from_dicts
from eval_assets.metrics.judge import (
    JUDGEMENT_SCHEMA_FORMAT,
    JudgeConfig,
    JudgeConfigError,
    OpenAIJudge,
    judge_dir,
)
from eval_assets_tests.fakes.openai_server import OpenAICompatibleServer, Reply

REPO = Path(__file__).resolve().parents[2]
JUDGEMENT_SCHEMA = JUDGEMENT_SCHEMA_FORMAT["json_schema"]["schema"]

# Every kind the local models build, with exclusive bounds and a non-string enum.
MIXED_FORMAT: dict[str, Any] = {"type": "json_schema", "json_schema": {"name": "mixed", "schema": {
    "type": "object", "additionalProperties": False,
    "properties": {
        "visible": {"type": "boolean", "description": "is it there"},
        "colour": {"enum": ["red", "green", "blue"]},
        "count": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 6},
        "level": {"type": "integer", "enum": [1, 2, 3]},
        "note": {"type": "string"},
    },
    "required": ["visible", "colour", "count", "level", "note"]}}}


def json_schema_format(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A ``response_format`` carrying ``schema``."""
    return {"type": "json_schema", "json_schema": {"name": "t", "schema": dict(schema)}}


def check_instance(value: Any, schema: Mapping[str, Any], where: str = "$") -> None:
    """Assert ``value`` satisfies ``schema`` (the subset used here), independently of the server."""
    if "enum" in schema:
        assert any(type(value) is type(v) and value == v for v in schema["enum"]), (where, value)
    kind = schema.get("type")
    if kind == "object":
        assert isinstance(value, dict), (where, value)
        assert set(schema.get("required", [])) <= set(value), (where, value)
        if schema.get("additionalProperties") is False:
            assert set(value) <= set(schema["properties"]), (where, value)
        for name, sub in schema["properties"].items():
            if name in value:
                check_instance(value[name], sub, f"{where}.{name}")
    elif kind == "integer":
        assert isinstance(value, int) and not isinstance(value, bool), (where, value)
        assert value >= schema.get("minimum", -math.inf), (where, value)
        assert value <= schema.get("maximum", math.inf), (where, value)
        assert value > schema.get("exclusiveMinimum", -math.inf), (where, value)
        assert value < schema.get("exclusiveMaximum", math.inf), (where, value)
    elif kind == "string":
        assert isinstance(value, str), (where, value)
    elif kind == "boolean":
        assert isinstance(value, bool), (where, value)


def chat(url: str, model: str, messages: list[dict[str, Any]], max_tokens: int,
         response_format: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
    """POST a chat completion with urllib: (status, decoded body), errors included."""
    body: dict[str, Any] = {"model": model, "messages": messages, "max_tokens": max_tokens}
    if response_format is not None:
        body["response_format"] = response_format
    request = urllib.request.Request(url + "/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def content(reply: dict[str, Any]) -> str:
    """The assistant text of a chat completion body."""
    return reply["choices"][0]["message"]["content"]


def open_row(index: int, gt: str, pred: str) -> dict[str, Any]:
    """An open-ended AVLM predictions row."""
    return {"index": index, "id": f"case-{index}", "class": "frame_description",
            "evaluation_type": "open_ended", "ground_truth": gt, "prediction": pred,
            "inference_status": "success",
            "conversations": [{"from": "human",
                               "value": "<image>\nDescribe what you observe in this frame."}],
            "metadata": {"detections": [{"name": "red ball", "range_m": {"median": 2.8}}]}}


ASK = [{"role": "system", "content": "You are a careful judge."},
       {"role": "user", "content": "Ground truth: a red ball by a wall. Prediction: a red ball. "
                                   "Judge the prediction."}]

UNSUPPORTED = {
    "json_object": ({"type": "json_object"}, "'json_object'"),
    "unknown_type": ({"type": "grammar"}, "'grammar'"),
    "no_schema": ({"type": "json_schema", "json_schema": {"name": "x"}}, "needs a 'schema'"),
    "top_array": (json_schema_format({"type": "array", "items": {"type": "string"}}),
                  "top level must be type 'object'"),
    "number": (json_schema_format({"type": "object", "properties": {"p": {"type": "number"}}}),
               "properties.p: type 'number' is not supported"),
    "nested": (json_schema_format({"type": "object", "properties": {"p": {
        "type": "object", "properties": {}}}}), "type 'object' is not supported"),
    "unbounded_int": (json_schema_format({"type": "object", "properties": {"p": {
        "type": "integer", "minimum": 0}}}), "needs both a minimum and a maximum"),
    "wide_int": (json_schema_format({"type": "object", "properties": {"p": {
        "type": "integer", "minimum": 0, "maximum": 100}}}), "holds 101 integers"),
    "empty_range": (json_schema_format({"type": "object", "properties": {"p": {
        "type": "integer", "minimum": 5, "maximum": 4}}}), "holds 0 integers"),
    "string_limit": (json_schema_format({"type": "object", "properties": {"p": {
        "type": "string", "maxLength": 5}}}), "keyword 'maxLength' is not supported"),
    "bad_required": (json_schema_format({"type": "object", "properties": {"p": {
        "type": "string"}}, "required": ["q"]}), "unknown: ['q']"),
    "enum_type_clash": (json_schema_format({"type": "object", "properties": {"p": {
        "type": "string", "enum": ["a", 1]}}}), "is not of type 'string'"),
    "any_of": (json_schema_format({"type": "object", "properties": {"p": {"type": "string"}},
                                   "anyOf": []}), "keyword 'anyOf' is not supported"),
}


# --- the schema subset ---------------------------------------------------------------------------

def test_judgement_schema_reduces_to_a_ranked_score_and_four_texts() -> None:
    parsed = parse_response_format(JUDGEMENT_SCHEMA_FORMAT)
    assert parsed is not None and parsed.name == "judgement"
    assert [(f.name, f.kind) for f in parsed.fields] == [
        ("score", "integer"), ("reasoning", "string"), ("strengths", "string"),
        ("weaknesses", "string"), ("metadata_alignment", "string")]
    assert parsed.fields[0].literals == tuple(str(v) for v in range(1, 11))
    # min(max_tokens // 4 strings, 48)
    assert [parsed.string_tokens(n) for n in (120, 400, 3)] == [30, 48, 0]

    mixed = parse_response_format(MIXED_FORMAT)
    assert mixed is not None
    assert [f.literals for f in mixed.fields] == [
        ("true", "false"), ('"red"', '"green"', '"blue"'), ("1", "2", "3", "4", "5"),
        ("1", "2", "3"), ()]
    assert parse_response_format(None) is None
    assert parse_response_format({"type": "text"}) is None


@pytest.mark.parametrize("case", sorted(UNSUPPORTED))
def test_unsupported_formats_are_refused_with_the_reason(case: str) -> None:
    response_format, reason = UNSUPPORTED[case]
    with pytest.raises(UnsupportedResponseFormat, match="fix") as info:
        parse_response_format(response_format)
    assert reason in str(info.value)


# --- the local server ----------------------------------------------------------------------------

def test_random_model_replies_with_schema_valid_json_over_http() -> None:
    with serve_in_thread(model="random", seed=3) as url:
        judgements = [chat(url, "random", [{"role": "user", "content": f"row {i}"}], 40,
                           JUDGEMENT_SCHEMA_FORMAT) for i in range(8)]
        again = chat(url, "random", [{"role": "user", "content": "row 0"}], 40,
                     JUDGEMENT_SCHEMA_FORMAT)
        mixed = chat(url, "random", ASK, 20, MIXED_FORMAT)
        text_format = chat(url, "random", ASK, 20, {"type": "text"})
        free = chat(url, "random", ASK, 20)
    assert all(status == 200 for status, _ in [*judgements, again, mixed, text_format, free])
    parsed = [json.loads(content(body)) for _, body in judgements]
    for judgement in parsed:
        check_instance(judgement, JUDGEMENT_SCHEMA)
        assert list(judgement) == list(JUDGEMENT_SCHEMA["properties"])  # schema order
        assert len(judgement["reasoning"].split()) <= 40 // 4
    assert len({j["score"] for j in parsed}) > 1  # random, not constant
    assert content(again[1]) == content(judgements[0][1])
    check_instance(json.loads(content(mixed[1])), MIXED_FORMAT["json_schema"]["schema"])
    # {"type": "text"} is free text, the same reply as no format at all.
    assert content(text_format[1]) == content(free[1]) and content(free[1]).startswith("I see a")


def test_unsupported_format_is_a_400_and_the_judge_records_it_without_retrying() -> None:
    number_format, reason = UNSUPPORTED["number"]
    with serve_in_thread(model="random") as url:
        status, body = chat(url, "random", ASK, 20, number_format)
        json_object = chat(url, "random", ASK, 20, {"type": "json_object"})
        not_a_mapping = chat(url, "random", ASK, 20, "json")  # type: ignore[arg-type]
        client = openai.OpenAI(base_url=url, api_key="x", max_retries=0)
        with pytest.raises(openai.BadRequestError, match="not supported"):
            client.chat.completions.create(model="random", messages=ASK,  # type: ignore[arg-type]
                                           response_format=number_format)  # type: ignore[arg-type]
        client.close()
        config = JudgeConfig(base_url=url, model="random", response_format=number_format,
                             max_retries=3, reply_tries=3, backoff_base_s=0)
        judge = OpenAIJudge(config, api_key="local")
        outcome = judge.judge(rows_from_dicts([open_row(0, "a ball", "a ball")])[0])
        judge.close()
    assert status == 400 and body["error"]["param"] == "response_format"
    assert reason in body["error"]["message"] and "fix:" in body["error"]["message"]
    assert json_object[0] == 400 and "'json_object'" in json_object[1]["error"]["message"]
    assert not_a_mapping[0] == 400 and "expected an object" in not_a_mapping[1]["error"]["message"]
    # A 400 cannot be fixed by asking again: one call, a recorded failure naming the cause.
    assert outcome.score is None and outcome.error_category == "api_failed"
    assert outcome.attempts == 1 and "HTTP 400" in (outcome.error or "")
    assert reason in (outcome.error or "")


# --- what the judge sends ------------------------------------------------------------------------

def test_judge_sends_response_format_only_when_configured() -> None:
    row = rows_from_dicts([open_row(0, "a red ball", "a red ball")])[0]
    reply = Reply(json.dumps({"score": 7, "reasoning": "r", "strengths": "s", "weaknesses": "w",
                              "metadata_alignment": "m"}))
    with OpenAICompatibleServer(default=reply) as srv:
        plain = JudgeConfig(base_url=srv.base_url, model="fake-model")
        structured = JudgeConfig(base_url=srv.base_url, model="fake-model",
                                 response_format="judgement_schema")  # type: ignore[arg-type]
        outcomes = []
        for config in (plain, structured):
            judge = OpenAIJudge(config, api_key="k")
            outcomes.append(judge.judge(row))
            judge.close()
        bodies = [r.body for r in srv.requests]
    assert [o.score for o in outcomes] == [7, 7]
    assert "response_format" not in bodies[0]
    assert bodies[1]["response_format"] == JUDGEMENT_SCHEMA_FORMAT
    # Same request otherwise.
    assert {k: v for k, v in bodies[1].items() if k != "response_format"} == bodies[0]
    assert "response_format" not in plain.settings_record()
    assert structured.settings_record()["response_format"] == JUDGEMENT_SCHEMA_FORMAT


def test_yaml_shorthand_and_its_errors(tmp_path: Path) -> None:
    path = tmp_path / "judge.yaml"
    path.write_text("base_url: http://127.0.0.1:9/v1\nmodel: m\n"
                    "response_format: judgement_schema\n")
    config = JudgeConfig.from_yaml(path)
    assert config.response_format == JUDGEMENT_SCHEMA_FORMAT
    assert config.response_format is not JUDGEMENT_SCHEMA_FORMAT  # a copy, not the constant
    path.write_text("base_url: u\nmodel: m\nresponse_format:\n  type: json_schema\n"
                    "  json_schema: {name: n, schema: {type: object}}\n")
    assert JudgeConfig.from_yaml(path).response_format == {
        "type": "json_schema", "json_schema": {"name": "n", "schema": {"type": "object"}}}

    path.write_text("base_url: u\nmodel: m\nresponse_format: judgment\n")
    with pytest.raises(JudgeConfigError, match=r"judge\.yaml: field 'response_format'.*"
                                               r"unknown response_format 'judgment'.*"
                                               r"judgement_schema"):
        JudgeConfig.from_yaml(path)
    path.write_text("base_url: u\nmodel: m\nresponse_format: {json_schema: {}}\n")
    with pytest.raises(JudgeConfigError, match=r"field 'response_format'.*needs a 'type'"):
        JudgeConfig.from_yaml(path)


def test_the_demo_judge_config_asks_for_the_judgement_schema() -> None:
    data = yaml.safe_load((REPO / "data" / "judge.yaml").read_text(encoding="utf-8"))
    assert data.pop("serve") == "blind-smollm2"
    config = JudgeConfig.model_validate({**data, "base_url": "http://127.0.0.1:9/v1"})
    assert config.response_format == JUDGEMENT_SCHEMA_FORMAT
    assert parse_response_format(config.response_format) is not None


# --- SmolLM2 --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def smollm2() -> BlindSmolLM2:
    """One model load for the module (~5-15 s)."""
    return BlindSmolLM2()


@pytest.fixture(scope="module")
def smollm2_url(smollm2: BlindSmolLM2) -> Iterator[str]:
    with serve_in_thread(model=smollm2) as url:
        yield url


@pytest.mark.slow
def test_smollm2_replies_with_schema_valid_json_deterministically(smollm2_url: str) -> None:
    status, first = chat(smollm2_url, "blind-smollm2", ASK, 40, JUDGEMENT_SCHEMA_FORMAT)
    _, again = chat(smollm2_url, "blind-smollm2", ASK, 40, JUDGEMENT_SCHEMA_FORMAT)
    _, mixed = chat(smollm2_url, "blind-smollm2", ASK, 20, MIXED_FORMAT)
    _, free = chat(smollm2_url, "blind-smollm2", ASK, 20)
    assert status == 200
    judgement = json.loads(content(first))
    check_instance(judgement, JUDGEMENT_SCHEMA)
    assert list(judgement) == list(JUDGEMENT_SCHEMA["properties"])
    # The model wrote the texts: 10 tokens each at most, never a quote or a newline left raw.
    assert any(judgement[k] for k in ("reasoning", "strengths", "weaknesses"))
    assert all("\n" not in judgement[k] for k in JUDGEMENT_SCHEMA["properties"] if k != "score")
    assert first["usage"]["prompt_tokens"] > 20 and first["usage"]["completion_tokens"] > 10
    assert content(again) == content(first)
    check_instance(json.loads(content(mixed)), MIXED_FORMAT["json_schema"]["schema"])
    # The cache keys on the format: the same messages without one still get free text.
    assert not content(free).startswith("{\"score\"")


@pytest.mark.slow
def test_smollm2_ranked_value_is_the_most_probable_by_a_full_pass(smollm2: BlindSmolLM2) -> None:
    """The KV-cache shortcut must pick what scoring each candidate from scratch picks."""
    import torch

    answer_format = json_schema_format(
        {"type": "object", "properties": {"answer": {"enum": ["yes", "no", "maybe"]}}})
    schema = parse_response_format(answer_format)
    assert schema is not None
    reply = smollm2.complete(copy.deepcopy(ASK), 16, answer_format)
    tokenizer, model = smollm2._tokenizer, smollm2._model
    prompt = tokenizer.apply_chat_template(smollm2.text_messages(ASK), add_generation_prompt=True,
                                           return_tensors="pt", return_dict=True)["input_ids"][0]
    prefix = prompt.tolist() + tokenizer('{"answer":', add_special_tokens=False)["input_ids"]
    totals = {}
    for literal in schema.fields[0].literals:
        tail = tokenizer(f" {literal}}}", add_special_tokens=False)["input_ids"]
        ids = torch.tensor([prefix + tail])
        with torch.no_grad():
            logprobs = torch.log_softmax(model(ids).logits[0].float(), -1)
        positions = torch.arange(len(prefix) - 1, len(prefix) - 1 + len(tail))
        totals[literal] = float(logprobs[positions, torch.tensor(tail)].sum())
    best = max(totals, key=lambda k: totals[k])
    assert reply.text == f'{{"answer": {best}}}', totals


@pytest.mark.slow
def test_judge_over_the_local_smollm2_server_scores_every_row(smollm2_url: str,
                                                              tmp_path: Path) -> None:
    rows = [open_row(0, "A red ball lies by the grey wall, a blue box to its right.",
                     "A red ball next to a blue box."),
            open_row(1, "An empty grey room with a green cylinder on the left.",
                     "A kitchen with a dog.")]
    (tmp_path / "predictions.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    # Calibration off: this tests that structured output yields scores, not whether they are
    # trustworthy (SmolLM2 fails calibration; see metrics/test_judge_smollm2.py).
    config = JudgeConfig(base_url=smollm2_url, model="blind-smollm2", max_tokens=40,
                         reply_tries=1, max_retries=0, timeout_s=120, calibration_pairs=0,
                         response_format="judgement_schema")  # type: ignore[arg-type]
    judge = OpenAIJudge(config, api_key="local-server")
    report = judge_dir(tmp_path, config, judge=judge)
    judge.close()
    stats = report.predictions["statistics"]
    assert stats["successful_evaluations"] == 2 and report.predictions["failures"] == []
    for result in report.predictions["results"]:
        assert isinstance(result["score"], int) and 1 <= result["score"] <= 10
        assert isinstance(result["reasoning"], str) and result["attempts"] == 1
    assert report.predictions["metadata"]["response_format"] == JUDGEMENT_SCHEMA_FORMAT
    assert 1 <= report.results["mean_score"] <= 10
