"""``eval-assets serve``: the local OpenAI-compatible server and its baselines, over real HTTP."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import openai
import pytest

from eval_assets.local_models.random_choice import RandomChoiceModel
from eval_assets.local_models.server import serve_in_thread
from eval_assets.local_models.smollm2 import shared_blind_smollm2, smollm2_gguf_path
from eval_assets.model_runs.client import ClientSettings, OpenAIVLMClient, open_model
from eval_assets.model_runs.prompts import description_messages, vqa_messages
from eval_assets.model_runs.runner import run_model
from eval_assets.schemas.endpoint import Endpoint
from eval_assets.schemas.predictions import ModelSpec
from eval_assets.schemas.vqa import Case
from eval_assets_tests.model_runs.helpers import make_dataset, write_png

CHOICES = ["under 1 meter", "1 to under 2 meters", "2 to under 3 meters", "3 meters or more"]


def ask(url: str, model: str, messages: list, max_tokens: int = 32) -> str:
    client = openai.OpenAI(base_url=url, api_key="x", max_retries=0, timeout=60)
    completion = client.chat.completions.create(model=model, messages=messages,
                                                max_tokens=max_tokens, temperature=0)
    return completion.choices[0].message.content


def post(url: str, body: bytes) -> tuple[int, dict]:
    request = urllib.request.Request(url + "/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_random_model_answers_a_choice_deterministically(tmp_path: Path) -> None:
    pngs = [write_png(tmp_path / f"{i}.png", seed=i) for i in range(12)]
    question = "Approximately how far is the visible chair from the camera?"
    with serve_in_thread(model="random", seed=7) as url:
        first = [ask(url, "random", vqa_messages(p, question, CHOICES)) for p in pngs]
        again = [ask(url, "random", vqa_messages(p, question, CHOICES)) for p in pngs]
        description = ask(url, "random", description_messages(pngs[0]))
    with serve_in_thread(model="random", seed=8) as url:
        other_seed = [ask(url, "random", vqa_messages(p, question, CHOICES)) for p in pngs]
    assert first == again and set(first) <= set(CHOICES)
    assert len(set(first)) > 1  # the image is part of the seed: frames do not share one answer
    assert other_seed != first
    assert description.startswith("I see a ")


def test_random_model_is_uniform_over_choices() -> None:
    model = RandomChoiceModel(seed=0)
    counts = dict.fromkeys(CHOICES, 0)
    for i in range(2000):
        counts[model.complete(vqa_messages(bytes([i % 256, i // 256]), "q", CHOICES), 8).text] += 1
    assert all(400 < n < 600 for n in counts.values()), counts


def test_server_lists_its_model_and_rejects_bad_requests() -> None:
    with serve_in_thread(model="random") as url:
        with urllib.request.urlopen(url + "/models", timeout=10) as response:
            listing = json.loads(response.read())
        wrong_model = post(url, json.dumps({"model": "gpt-x", "messages": [
            {"role": "user", "content": "hi"}]}).encode())
        not_json = post(url, b"{nope")
        no_messages = post(url, json.dumps({"model": "random"}).encode())
    assert [m["id"] for m in listing["data"]] == ["random"]
    assert wrong_model[0] == 404 and "not served here" in wrong_model[1]["error"]["message"]
    assert not_json[0] == 400 and no_messages[0] == 400


def test_a_served_model_resumes_across_runs_on_different_ports(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=2, cases_per_frame=2)
    spec = ModelSpec.model_validate({"name": "random", "serve": "random", "seed": 0})
    out = tmp_path / "run"
    results = []
    for _ in range(2):
        with open_model(spec, Endpoint(max_tokens=8)) as client:
            results.append(run_model(dataset.root, client, out, max_concurrency=2))
    assert results[0].calls_made == 6 and results[0].summary.complete
    assert results[1].calls_made == 0
    config = json.loads((out / "config.json").read_text())
    assert config["generation"]["base_url"] == "serve://random?seed=0"
    assert "base_url" not in config["client"]


@pytest.mark.slow
def test_blind_smollm2_answers_over_http_without_seeing_the_image(tmp_path: Path) -> None:
    assert smollm2_gguf_path().stat().st_size > 50_000_000
    case = Case(id="c", image="assets/a.png", question="Does the image contain any chair?",
                choices=["yes", "no"])
    png_a = write_png(tmp_path / "a.png", seed=1)
    png_b = write_png(tmp_path / "b.png", seed=2)
    with serve_in_thread(model="blind-smollm2") as url, OpenAIVLMClient(ClientSettings(
            base_url=url, model="blind-smollm2", max_tokens=24, timeout_s=120)) as client:
        first = client.answer(case, png_a)
        other_image = client.answer(case, png_b)
    assert first.status == "success" and first.raw_response
    assert first.usage is not None and first.usage.prompt_tokens > 20
    assert 0 < first.usage.completion_tokens <= 24
    # Greedy and blind: a different image cannot change the reply.
    assert other_image.raw_response == first.raw_response


def _sampled(url: str, messages: list, temperature: float, seed: int | None) -> str:
    body: dict = {"model": "random", "messages": messages, "max_tokens": 32,
                  "temperature": temperature}
    if seed is not None:
        body["seed"] = seed
    status, reply = post(url, json.dumps(body).encode())
    assert status == 200, reply
    return reply["choices"][0]["message"]["content"]


def test_random_model_samples_by_the_request_seed_above_temperature_zero(
        tmp_path: Path) -> None:
    pngs = [write_png(tmp_path / f"{i}.png", seed=i) for i in range(12)]
    asks = [vqa_messages(p, "How far is the chair?", CHOICES) for p in pngs]
    with serve_in_thread(model="random", seed=7) as url:
        greedy = [ask(url, "random", m) for m in asks]
        greedy_seeded = [_sampled(url, m, 0, 5) for m in asks]
        seed1 = [_sampled(url, m, 0.8, 1) for m in asks]
        seed1_again = [_sampled(url, m, 0.8, 1) for m in asks]
        seed2 = [_sampled(url, m, 0.8, 2) for m in asks]
    assert greedy_seeded == greedy  # at temperature 0 the seed changes nothing
    assert seed1 == seed1_again  # the same request and seed: the same draw
    assert seed1 != seed2 and set(seed1 + seed2) <= set(CHOICES)


def test_server_rejects_a_temperature_out_of_range_and_a_non_integer_seed() -> None:
    base = {"model": "random", "messages": [{"role": "user", "content": "hi"}]}
    with serve_in_thread(model="random") as url:
        bad = {field: [post(url, json.dumps({**base, field: value}).encode())
                       for value in values]
               for field, values in (("temperature", [2.5, -0.1, "hot", True]),
                                     ("seed", [1.5, "7", False]))}
        fine = [post(url, json.dumps({**base, **extra}).encode())[0]
                for extra in ({"temperature": 2, "seed": -3}, {"temperature": None,
                                                               "seed": None})]
    for field, replies in bad.items():
        for status, body in replies:
            assert status == 400 and body["error"]["param"] == field
            assert f"'{field}' must be" in body["error"]["message"]
    assert fine == [200, 200]


@pytest.mark.slow
def test_blind_smollm2_samples_reproducibly_by_seed_and_stays_greedy_at_zero(
        tmp_path: Path) -> None:
    png = write_png(tmp_path / "a.png", seed=1)
    free = description_messages(png)
    choice = vqa_messages(png, "How far is the chair from the camera?", CHOICES)
    model = shared_blind_smollm2()
    with serve_in_thread(model=model) as url:
        client = openai.OpenAI(base_url=url, api_key="x", max_retries=0, timeout=120)

        def say(messages: list, temperature: float, seed: int | None) -> str:
            extra = {} if seed is None else {"seed": seed}
            reply = client.chat.completions.create(
                model="blind-smollm2", messages=messages, max_tokens=12,
                temperature=temperature, **extra)
            return reply.choices[0].message.content

        greedy = say(free, 0, None)
        assert say(free, 0, 3) == greedy  # the seed is ignored at temperature 0
        drawn = {seed: say(free, 1.0, seed) for seed in (0, 1)}
        model._cache.clear()  # drawn again, not read back from the reply cache
        assert say(free, 1.0, 0) == drawn[0]
        assert drawn[0] != drawn[1]
        # Choice ranking samples from the choices' softmax: some seed names another choice.
        picks = {say(choice, 2.0, seed) for seed in range(8)}
        assert picks <= set(CHOICES) and len(picks) > 1
