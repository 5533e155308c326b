"""Runs over a public dataset: the run folder, resume after a kill, refill scheduling, leakage."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from eval_assets.model_runs.client import ClientSettings, OpenAIVLMClient
from eval_assets.model_runs.runner import load_public_cases, run_model
from eval_assets.schemas.predictions import AnswerRecord, RunConfig, RunSummary
from eval_assets_tests.fakes.openai_server import (
    HttpError,
    OpenAICompatibleServer,
    Reply,
    message_text,
    route_by_text,
)
from eval_assets_tests.model_runs.helpers import (
    CANARY,
    TinyDataset,
    make_dataset,
    make_spatial_dataset,
    write_png,
)

DESCRIBE = "Describe what you observe in this frame."


def client_for(url: str, **overrides: object) -> OpenAIVLMClient:
    values: dict[str, object] = {"base_url": url, "model": "fake-model", "max_tokens": 16,
                                 "timeout_s": 5.0, "max_retries": 1, "backoff_base_s": 0.01,
                                 "backoff_max_s": 0.02}
    values.update(overrides)
    return OpenAIVLMClient(ClientSettings.model_validate(values))


def answered_cases(requests: list, dataset: TinyDataset) -> list[str]:
    """Case ids of the VQA requests a server received, in arrival order."""
    out = []
    for request in requests:
        text = message_text(request.body)
        out.extend(c["id"] for c in dataset.cases if dataset.marker(c["id"]) in text)
    return out


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_run_writes_config_answers_descriptions_and_summary(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=2, cases_per_frame=3)
    out = tmp_path / "run"
    with OpenAICompatibleServer(default=Reply("yes")) as srv, client_for(srv.base_url) as client:
        result = run_model(dataset.root, client, out, max_concurrency=3)
        requests = srv.requests
    assert result.calls_made == len(requests) == 6 + 2 and result.skipped == 0
    answers = read_jsonl(out / "answers.jsonl")
    assert [a["case_id"] for a in answers] == [c["id"] for c in dataset.cases]
    assert all(a["status"] == "success" and a["choice"] == "yes" for a in answers)
    descriptions = read_jsonl(out / "descriptions.jsonl")
    assert [d["frame"] for d in descriptions] == ["frame-000100", "frame-000200"]
    config = RunConfig.model_validate_json((out / "config.json").read_text())
    assert config.num_cases == 6 and config.num_frames == 2 and config.describe
    assert config.generation.model == "fake-model" and config.client["max_tokens"] == 16
    summary = RunSummary.model_validate_json((out / "summary.json").read_text())
    assert summary.complete and summary.answers.success == 6 and summary.answers.failed == 0
    assert summary.descriptions is not None and summary.descriptions.success == 2
    assert summary.answers.latency_s.count == 6 and summary.answers.tokens.total_tokens == 0
    assert sum(DESCRIBE in message_text(r.body) for r in requests) == 2


def test_nothing_private_reaches_the_server(tmp_path: Path) -> None:
    # With spatial cases too: their public labels and audit labels hold the canary as well.
    dataset = make_spatial_dataset(tmp_path / "ds")
    # The blind-solvability audit (eval_assets.vqa.bias) is private too.
    (dataset.root / "audit" / "bias.jsonl").write_text("".join(
        json.dumps({"id": c["id"], "family": CANARY, "bias_score": 0.9, "flagged": True}) + "\n"
        for c in dataset.cases))
    (dataset.root / "audit" / "bias.json").write_text(json.dumps({"method": CANARY}))
    with OpenAICompatibleServer(default=Reply("no")) as srv, client_for(srv.base_url) as client:
        run_model(dataset.root, client, tmp_path / "run", max_concurrency=2)
        bodies = [json.dumps(r.body) + json.dumps(r.headers) for r in srv.requests]
    assert len(bodies) == len(dataset.cases) + len(dataset.spatial) + 2  # + 2 descriptions
    assert all(CANARY not in b for b in bodies)
    assert all("labels" not in b and "audit" not in b for b in bodies)
    for path in (tmp_path / "run").iterdir():
        assert CANARY not in path.read_text()


def test_rerun_makes_no_calls_and_rewrites_identical_files(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds")
    out = tmp_path / "run"
    with OpenAICompatibleServer(default=Reply("yes")) as srv, client_for(srv.base_url) as client:
        run_model(dataset.root, client, out, max_concurrency=2)
        first = {p.name: p.read_bytes() for p in out.iterdir()}
        n = len(srv.requests)
        again = run_model(dataset.root, client, out, max_concurrency=2)
        assert len(srv.requests) == n and again.calls_made == 0 and again.skipped == n
    assert {p.name: p.read_bytes() for p in out.iterdir()} == first


def test_changed_content_under_the_same_ids_is_asked_again(tmp_path: Path) -> None:
    """A dataset regenerated into the same folder with the same case ids: only cases whose
    model-facing content (image bytes, question, choices) changed are asked again."""
    dataset = make_dataset(tmp_path / "ds", n_frames=3, cases_per_frame=2)
    out = tmp_path / "run"
    with OpenAICompatibleServer(default=Reply("yes")) as srv, client_for(srv.base_url) as client:
        run_model(dataset.root, client, out, max_concurrency=2, describe=True)
        n = len(srv.requests)
        # New pixels for the first frame, a reworded question for one case of the second frame.
        write_png(dataset.root / dataset.cases[0]["image"], seed=99)
        cases = [dict(c) for c in dataset.cases]
        cases[2]["question"] = cases[2]["question"].replace("any", "at least one")
        (dataset.root / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
        changed = TinyDataset(root=dataset.root, cases=cases)

        again = run_model(dataset.root, client, out, max_concurrency=2, describe=True)

        asked = answered_cases(srv.requests[n:], changed)
        described = [r for r in srv.requests[n:] if DESCRIBE in message_text(r.body)]
    assert sorted(asked) == sorted([cases[0]["id"], cases[1]["id"],
                                    cases[2]["id"]])
    assert len(described) == 1  # only the frame whose pixels changed
    assert again.calls_made == 4 and again.skipped == 6 + 3 - 4
    stored = {a["case_id"]: a for a in read_jsonl(out / "answers.jsonl")}
    assert all(a["content_sha256"] for a in stored.values())
    assert stored[cases[0]["id"]]["content_sha256"] != stored[cases[3]["id"]][
        "content_sha256"]


def test_failures_are_recorded_and_only_they_are_retried_next_run(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=2, cases_per_frame=2)
    bad = dataset.cases[1]["id"]
    out = tmp_path / "run"
    healthy = False  # the server fails `bad` until the second run

    def script(body: dict) -> object:
        if not healthy and dataset.marker(bad) in message_text(body):
            return HttpError(500)
        return Reply("no" if healthy else "yes")

    with OpenAICompatibleServer(script) as srv, \
            client_for(srv.base_url, max_retries=2) as client:
        result = run_model(dataset.root, client, out, max_concurrency=2, describe=False)
        assert answered_cases(srv.requests, dataset).count(bad) == 3
        assert not result.summary.complete
        assert result.summary.answers.failed == 1
        assert result.summary.answers.error_counts == {"server_error": 1}
        failed = [a for a in read_jsonl(out / "answers.jsonl") if a["status"] == "failed"]
        assert [(a["case_id"], a["choice"], a["attempts"]) for a in failed] == [(bad, None, 3)]

        healthy = True
        n_first = len(srv.requests)
        result = run_model(dataset.root, client, out, max_concurrency=2, describe=False)
        assert answered_cases(srv.requests[n_first:], dataset) == [bad]
    assert result.summary.complete
    answers = {a["case_id"]: a["choice"] for a in read_jsonl(out / "answers.jsonl")}
    assert answers[bad] == "no" and sum(v == "yes" for v in answers.values()) == 3


def test_a_changed_generation_config_does_not_reuse_answers(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=1, cases_per_frame=2)
    out = tmp_path / "run"
    with OpenAICompatibleServer(default=Reply("yes")) as srv:
        with client_for(srv.base_url) as client:
            run_model(dataset.root, client, out, max_concurrency=1, describe=False)
        with client_for(srv.base_url, max_tokens=32) as client:
            result = run_model(dataset.root, client, out, max_concurrency=1, describe=False)
        assert len(srv.requests) == 4 and result.calls_made == 2
    hashes = {a["config_hash"] for a in read_jsonl(out / "answers.jsonl")}
    assert hashes == {result.summary.config_hash}


def test_ctrl_c_midway_loses_nothing_and_repeats_nothing(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=3, cases_per_frame=4)
    out = tmp_path / "run"
    seen = 0

    def interrupt_after_three(record: object) -> None:
        nonlocal seen
        seen += 1
        if seen == 3:
            raise KeyboardInterrupt

    script = Reply("yes", delay_s=0.05)
    with OpenAICompatibleServer(default=script) as srv:
        with client_for(srv.base_url) as client, pytest.raises(KeyboardInterrupt):
            run_model(dataset.root, client, out, max_concurrency=4, describe=False,
                      on_record=interrupt_after_three)
        first_run = answered_cases(srv.requests, dataset)
        assert 3 <= len(first_run) < len(dataset.cases)
        with client_for(srv.base_url) as client:
            result = run_model(dataset.root, client, out, max_concurrency=4,
                               describe=False)
        all_calls = answered_cases(srv.requests, dataset)
    # In-flight calls finished and were journalled before the interrupt propagated.
    assert sorted(all_calls) == sorted(c["id"] for c in dataset.cases)
    assert result.summary.complete and result.calls_made == len(dataset.cases) - len(first_run)


KILL_SCRIPT = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from eval_assets.model_runs.client import ClientSettings, OpenAIVLMClient
    from eval_assets.model_runs.runner import run_model

    url, dataset, out, k = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
    done = 0

    def on_record(record):
        global done
        done += 1
        if done == k:
            os.kill(os.getpid(), signal.SIGKILL)  # no cleanup, no finally blocks

    client = OpenAIVLMClient(ClientSettings(base_url=url, model="fake-model", max_tokens=16))
    run_model(dataset, client, out, max_concurrency=4, on_record=on_record)
""")


def test_sigkill_midway_then_restart_repeats_no_completed_call(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=3, cases_per_frame=4)
    out = tmp_path / "run"
    with OpenAICompatibleServer(default=Reply("yes", delay_s=0.05)) as srv:
        proc = subprocess.run([sys.executable, "-c", KILL_SCRIPT, srv.base_url, str(dataset.root),
                               str(out), "5"], capture_output=True, text=True, timeout=120)
        assert proc.returncode == -9, proc.stderr
        journal = read_jsonl(out / "answers.journal.jsonl")
        done_before = {r["case_id"] for r in journal if r["status"] == "success"}
        first_calls = answered_cases(srv.requests, dataset)
        assert len(done_before) >= 4 and len(first_calls) < len(dataset.cases)
        n_first = len(srv.requests)

        with client_for(srv.base_url) as client:
            result = run_model(dataset.root, client, out, max_concurrency=4)
        second_calls = answered_cases(srv.requests[n_first:], dataset)
    assert not done_before & set(second_calls)  # zero repeated calls for completed cases
    assert set(second_calls) | done_before == {c["id"] for c in dataset.cases}
    assert result.summary.complete
    assert len(read_jsonl(out / "answers.jsonl")) == len(dataset.cases)


def test_refill_keeps_max_concurrency_in_flight(tmp_path: Path) -> None:
    # One slow case and twelve fast ones at concurrency 4. Refilling sends every fast case while
    # the slow call is still out (the other 3 slots drain them); waves of 4 would hold 9 fast
    # cases back until the slow reply. Judged by arrival order, not by a wall-clock window, so a
    # busy machine cannot fail it: the slow call's 3 s dwarf 12 fast replies' 0.05 s each.
    dataset = make_dataset(tmp_path / "ds", n_frames=1, cases_per_frame=13)
    slow_marker = dataset.marker(dataset.cases[0]["id"])
    route = route_by_text({slow_marker: [Reply("yes", delay_s=3.0)]},
                          default=Reply("yes", delay_s=0.05))
    arrivals: list[tuple[float, bool]] = []

    def script(body: dict) -> Reply:
        arrivals.append((time.monotonic(), slow_marker in message_text(body)))
        return route(body)  # type: ignore[return-value]

    with OpenAICompatibleServer(script) as srv, client_for(srv.base_url) as client:
        result = run_model(dataset.root, client, tmp_path / "run", max_concurrency=4,
                           describe=False)
    assert result.summary.complete
    slow_at = next(at for at, slow in arrivals if slow)
    fast = [at for at, slow in arrivals if not slow]
    assert len(fast) == 12
    assert [slow for _, slow in arrivals].index(True) < 4, "the slow case must go out first"
    assert max(fast) - slow_at < 3.0, "fast cases waited for the slow call: no refilling"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({"id": "a", "image": "assets/x.png", "question": "q", "choices": ["y", "n"],
          "answer": "y"}, r"cases.jsonl:1 is not a valid Case record: field 'answer'"),
        ({"id": "a", "image": "labels.jsonl", "question": "q", "choices": ["y", "n"]},
         r"cases.jsonl:1: field 'image'.*inside assets/"),
        ({"id": "a", "image": "assets/../labels.png", "question": "q",
          "choices": ["y", "n"]}, r"field 'image'"),
        ({"id": "a", "image": "assets/missing.png", "question": "q", "choices": ["y", "n"]},
         r"cases.jsonl:1: image 'assets/missing.png' does not exist"),
        ({"id": "a", "image": "assets/x.png", "question": "q", "choices": ["y"]},
         r"cases.jsonl:1 is not a valid Case record: field 'choices'"),
    ],
)
def test_bad_cases_are_rejected_before_any_call(tmp_path: Path, line: dict,
                                                message: str) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=1, cases_per_frame=1)
    (dataset.root / "assets" / "x.png").write_bytes(
        (dataset.root / "assets" / "frame-000100.png").read_bytes())
    (dataset.root / "cases.jsonl").write_text(json.dumps(line) + "\n")
    with pytest.raises((ValueError, FileNotFoundError), match=message):
        load_public_cases(dataset.root)


def test_answer_records_round_trip_through_the_schema(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=1, cases_per_frame=1)
    with OpenAICompatibleServer(default=Reply("No, there is none.")) as srv, \
            client_for(srv.base_url) as client:
        run_model(dataset.root, client, tmp_path / "run", max_concurrency=1,
                  describe=False)
    line = (tmp_path / "run" / "answers.jsonl").read_text().splitlines()[0]
    record = AnswerRecord.model_validate_json(line)
    assert (record.choice, record.extraction_tier) == ("no", "leading")
