"""Rotated re-asks (CircularEval): asked like cases, stored apart, resumed by content, no leaks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eval_assets.cli import app
from eval_assets.model_runs.client import open_model
from eval_assets.model_runs.prompts import vqa_messages
from eval_assets.model_runs.runner import run_model
from eval_assets.schemas.predictions import (
    ModelSpec,
    RotationRecord,
    RunConfig,
    RunSummary,
    rotate_choices,
)
from eval_assets.schemas.vqa_prompt import parse_choices
from eval_assets_tests.fakes.openai_server import (
    HttpError,
    OpenAICompatibleServer,
    Reply,
    message_text,
)
from eval_assets_tests.model_runs.helpers import CANARY, ONE_CALL_PER_CASE, write_png
from eval_assets_tests.model_runs.test_runner import client_for, read_jsonl

CHOICES = [["yes", "no"], ["left", "center", "right"],
           ["one", "two", "three", "four or more"]]


def write_dataset(root: Path, n_frames: int = 2) -> list[dict]:
    """Per frame one case of 2, 3 and 4 choices (public), labels and audit with a canary."""
    cases, labels = [], []
    for f in range(n_frames):
        image = f"assets/frame-{100 * (f + 1):06d}.png"
        write_png(root / image, seed=f)
        for k, choices in enumerate(CHOICES):
            case_id = f"frame-{100 * (f + 1):06d}-q{k}"
            cases.append({"id": case_id, "image": image,
                          "question": f"Question {k} about the scene? [{case_id}]",
                          "choices": choices})
            labels.append({"id": case_id, "answer": f"{choices[-1]} {CANARY}"})
    (root / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (root / "labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in labels))
    (root / "audit").mkdir()
    (root / "audit" / "labels.jsonl").write_text(json.dumps({"secret": CANARY}) + "\n")
    return cases


def first_shown(body: dict) -> Reply:
    """A position-biased model: always the first choice of the prompt's Choices line (a
    description request gets a sentence)."""
    choices = parse_choices(message_text(body))
    return Reply(choices[0] if choices else "A room with a box.")


def shown_orders(requests: list, case: dict) -> list[list[str]]:
    """The choice orders a server was shown for ``case``, in arrival order."""
    marker = f"[{case['id']}]"
    return [parse_choices(message_text(r.body)) for r in requests
            if marker in message_text(r.body)]


def stable(record: dict) -> dict:
    """A record without its timings, which differ between runs."""
    return {k: v for k, v in record.items() if k not in ("latency_s", "wall_s")}


def test_rotations_are_asked_exactly_like_cases_and_stored_apart(tmp_path: Path) -> None:
    cases = write_dataset(tmp_path / "ds")
    plain, circular = tmp_path / "plain", tmp_path / "circular"
    with OpenAICompatibleServer(first_shown) as srv, client_for(srv.base_url) as client:
        run_model(tmp_path / "ds", client, plain, max_concurrency=3, describe=False)
        n_plain = len(srv.requests)
        result = run_model(tmp_path / "ds", client, circular, max_concurrency=3,
                           describe=False, rotations=True)
        requests = srv.requests[n_plain:]
    ks = [len(c["choices"]) for c in cases]
    assert n_plain == len(cases) and len(requests) == result.calls_made == sum(ks)
    for case in cases:
        # Every rotation once, each request built by the same prompt builder as the case.
        expected = [rotate_choices(case["choices"], r) for r in range(len(case["choices"]))]
        assert sorted(shown_orders(requests, case)) == sorted(expected)
        png = (tmp_path / "ds" / case["image"]).read_bytes()
        for order in expected:
            want = vqa_messages(png, case["question"], order)
            assert sum(r.body["messages"] == want for r in requests) == 1
    # answers.jsonl keeps the published order only, the same as without rotations.
    assert [stable(a) for a in read_jsonl(circular / "answers.jsonl")] == [
        stable(a) for a in read_jsonl(plain / "answers.jsonl")]
    assert not (plain / "rotations.jsonl").exists()
    rotations = [RotationRecord.model_validate(r) for r in read_jsonl(circular / "rotations.jsonl")]
    assert [(r.case_id, r.rotation) for r in rotations] == [
        (c["id"], r) for c in cases for r in range(1, len(c["choices"]))]
    for record in rotations:
        case = next(c for c in cases if c["id"] == record.case_id)
        assert record.choices == rotate_choices(case["choices"], record.rotation)
        assert record.choice == record.choices[0] and record.status == "success"
        assert record.content_sha256 and record.kind == "rotation"
    assert len({r.content_sha256 for r in rotations}) == len(rotations)
    summary = RunSummary.model_validate_json((circular / "summary.json").read_text())
    assert summary.complete and summary.rotations is not None
    assert (summary.rotations.total, summary.rotations.success) == (sum(ks) - len(cases),) * 2
    assert summary.answers.total == len(cases)
    assert RunConfig.model_validate_json((circular / "config.json").read_text()).rotations


def test_rerun_with_rotations_makes_no_calls_and_rewrites_identical_files(tmp_path: Path) -> None:
    write_dataset(tmp_path / "ds")
    out = tmp_path / "run"
    with OpenAICompatibleServer(first_shown) as srv, client_for(srv.base_url) as client:
        run_model(tmp_path / "ds", client, out, max_concurrency=2, rotations=True)
        first = {p.name: p.read_bytes() for p in out.iterdir()}
        n = len(srv.requests)
        again = run_model(tmp_path / "ds", client, out, max_concurrency=2, rotations=True)
        assert len(srv.requests) == n and again.calls_made == 0 and again.skipped == n
    assert {p.name: p.read_bytes() for p in out.iterdir()} == first


def test_rotations_switched_on_later_ask_only_the_rotations_and_off_removes_them(
        tmp_path: Path) -> None:
    cases = write_dataset(tmp_path / "ds")
    extra = sum(len(c["choices"]) - 1 for c in cases)
    out = tmp_path / "run"
    with OpenAICompatibleServer(first_shown) as srv, client_for(srv.base_url) as client:
        run_model(tmp_path / "ds", client, out, max_concurrency=2, describe=False)
        on = run_model(tmp_path / "ds", client, out, max_concurrency=2, describe=False,
                       rotations=True)
        assert on.calls_made == extra and on.skipped == len(cases)
        off = run_model(tmp_path / "ds", client, out, max_concurrency=2, describe=False)
        assert off.calls_made == 0 and not (out / "rotations.jsonl").exists()
        assert off.summary.rotations is None
        back = run_model(tmp_path / "ds", client, out, max_concurrency=2, describe=False,
                         rotations=True)
        assert back.calls_made == 0 and (out / "rotations.jsonl").is_file()


def test_a_rotated_order_already_asked_is_reused_by_content(tmp_path: Path) -> None:
    """The dataset regenerated with one case's choices in another cyclic order: only the orders
    never asked as a rotation are asked (identity by content, not by rotation number)."""
    cases = write_dataset(tmp_path / "ds", n_frames=1)
    out = tmp_path / "run"
    with OpenAICompatibleServer(first_shown) as srv, client_for(srv.base_url) as client:
        run_model(tmp_path / "ds", client, out, max_concurrency=2, describe=False,
                  rotations=True)
        n = len(srv.requests)
        moved = [dict(c) for c in cases]
        moved[1]["choices"] = rotate_choices(moved[1]["choices"], 1)  # center, right, left
        (tmp_path / "ds" / "cases.jsonl").write_text(
            "".join(json.dumps(c) + "\n" for c in moved))
        again = run_model(tmp_path / "ds", client, out, max_concurrency=2, describe=False,
                          rotations=True)
        asked = srv.requests[n:]
    # The new published order was rotation 1 (an answer is asked anew: answers are their own
    # record), the new rotation 2 was the old published order; the new rotation 1 was asked.
    assert again.calls_made == 2
    assert sorted(shown_orders(asked, moved[1])) == [["center", "right", "left"],
                                                     ["left", "center", "right"]]
    stored = {(r["case_id"], r["rotation"]): r for r in read_jsonl(out / "rotations.jsonl")}
    assert stored[(moved[1]["id"], 1)]["choices"] == ["right", "left", "center"]


def test_failed_rotations_are_recorded_and_only_they_are_retried(tmp_path: Path) -> None:
    cases = write_dataset(tmp_path / "ds", n_frames=1)
    bad = cases[2]
    healthy = False
    out = tmp_path / "run"

    def script(body: dict) -> object:
        text = message_text(body)
        rotated = parse_choices(text) != bad["choices"]
        if not healthy and f"[{bad['id']}]" in text and rotated:
            return HttpError(500)
        return first_shown(body)

    with OpenAICompatibleServer(script) as srv, \
            client_for(srv.base_url, max_retries=0) as client:
        result = run_model(tmp_path / "ds", client, out, max_concurrency=2,
                           describe=False, rotations=True)
        assert not result.summary.complete and result.summary.answers.failed == 0
        rotated = result.summary.rotations
        assert rotated is not None and rotated.failed == 3
        assert rotated.error_counts == {"server_error": 3}
        healthy = True
        again = run_model(tmp_path / "ds", client, out, max_concurrency=2,
                          describe=False, rotations=True)
    assert again.calls_made == 3 and again.summary.complete


def test_nothing_private_reaches_the_server_or_the_rotation_files(tmp_path: Path) -> None:
    write_dataset(tmp_path / "ds")
    with OpenAICompatibleServer(first_shown) as srv, client_for(srv.base_url) as client:
        run_model(tmp_path / "ds", client, tmp_path / "run", max_concurrency=2,
                  rotations=True)
        bodies = [json.dumps(r.body) + json.dumps(r.headers) for r in srv.requests]
    assert len(bodies) == 2 + 3 + 4 + 2 + 3 + 4 + 2  # every rotation, and 2 descriptions
    assert all(CANARY not in b and "audit" not in b and "labels" not in b for b in bodies)
    for path in (tmp_path / "run").iterdir():
        assert CANARY not in path.read_text()


def test_the_local_random_model_answers_every_rotation_and_resumes(tmp_path: Path) -> None:
    cases = write_dataset(tmp_path / "ds")
    out = tmp_path / "run"
    spec = ModelSpec.model_validate({"name": "random", "serve": "random"})
    with open_model(spec) as client:
        first = run_model(tmp_path / "ds", client, out, max_concurrency=4,
                          describe=False, rotations=True)
    with open_model(spec) as client:
        again = run_model(tmp_path / "ds", client, out, max_concurrency=4,
                          describe=False, rotations=True)
    assert first.calls_made == sum(len(c["choices"]) for c in cases)
    assert first.summary.complete and again.calls_made == 0
    rotations = read_jsonl(out / "rotations.jsonl")
    assert all(r["choice"] in r["choices"] for r in rotations)


def test_vqa_run_asks_rotations_unless_no_circular(tmp_path: Path) -> None:
    cases = write_dataset(tmp_path / "ds", n_frames=1)
    cli = CliRunner()
    plain = cli.invoke(app, ["vqa", "run", str(tmp_path / "ds"), "--model", "random",
                             "--output", str(tmp_path / "plain"), "--no-describe",
                             *ONE_CALL_PER_CASE])
    assert plain.exit_code == 0, plain.output
    assert "3 calls made" in plain.output and not (tmp_path / "plain" / "rotations.jsonl").exists()
    # On by default, as the pipeline asks them; the other controls off to count the calls.
    args = ["vqa", "run", str(tmp_path / "ds"), "--model", "random", "--output",
            str(tmp_path / "circ"), "--no-describe", "--no-flip", "--no-time-flip",
            "--no-repeat-frames"]
    circular = cli.invoke(app, args)
    assert circular.exit_code == 0, circular.output
    rotations = sum(len(c["choices"]) - 1 for c in cases)
    assert f"rotations: {rotations}/{rotations} answered" in circular.output
    assert f"{len(cases) + rotations} calls made" in circular.output
    assert (tmp_path / "circ" / "rotations.jsonl").is_file()
    again = cli.invoke(app, args)
    assert again.exit_code == 0 and f"0 calls made, {len(cases) + rotations} resumed" in \
        again.output


@pytest.mark.slow
def test_blind_smollm2_ranks_rotations_as_one_full_pass_per_choice_would() -> None:
    """The KV-cached, prefix-sharing ranking picks what the plain computation picks: one full
    forward pass over prompt + choice for every choice of every rotation."""
    import torch

    from eval_assets.local_models.smollm2 import shared_blind_smollm2

    model = shared_blind_smollm2()
    tokenizer = model._tokenizer
    questions = [("How many instances of red box are visible in the image?",
                  ["one", "two", "three", "four or more"]),
                 ("Which horizontal region contains the visible blue ball?",
                  ["left", "center", "right"]),
                 ("Does the image contain any green cylinder?", ["yes", "no"])]

    def reference(prompt: list[int], choices: list[str]) -> str:
        scores = []
        for choice in choices:
            tail = tokenizer(choice, add_special_tokens=False)["input_ids"]
            with torch.no_grad():
                logits = model._model(torch.tensor([prompt + tail])).logits[0].float()
            logprobs = torch.log_softmax(logits, -1)
            positions = torch.arange(len(prompt) - 1, len(prompt) - 1 + len(tail))
            scores.append(float(logprobs[positions, torch.tensor(tail)].mean()))
        return choices[max(range(len(choices)), key=lambda i: (scores[i], -i))]

    for question, choices in questions:
        for r in range(len(choices)):
            shown = rotate_choices(choices, r)
            messages = vqa_messages(b"\x89PNG", question, shown)
            prompt = tokenizer.apply_chat_template(
                model.text_messages(messages), add_generation_prompt=True, return_dict=True,
                return_tensors="pt")["input_ids"][0].tolist()
            reply = model.complete(messages, max_tokens=16)
            assert reply.text == reference(prompt, shown), (question, shown)
            assert reply.prompt_tokens == len(prompt)
