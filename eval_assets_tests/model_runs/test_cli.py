"""``eval-assets vqa run`` and ``eval-assets serve`` as a user runs them."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from typer.testing import CliRunner

from eval_assets.cli import app
from eval_assets.model_runs.prompts import vqa_messages
from eval_assets_tests.fakes.openai_server import HttpError, OpenAICompatibleServer, Reply
from eval_assets_tests.model_runs.helpers import (
    CANARY,
    ONE_CALL_PER_CASE,
    make_dataset,
    write_png,
)

runner = CliRunner()


def test_vqa_run_with_a_declared_local_model_writes_the_run_folder(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=2, cases_per_frame=2)
    out = tmp_path / "run"
    args = ["vqa", "run", str(dataset.root), "--model", "random", "--output", str(out),
            *ONE_CALL_PER_CASE]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "random: 4/4 cases answered" in result.output and "6 calls made" in result.output
    assert {p.name for p in out.iterdir()} >= {"config.json", "answers.jsonl",
                                               "descriptions.jsonl", "summary.json"}
    again = runner.invoke(app, args)
    assert again.exit_code == 0 and "0 calls made, 6 resumed" in again.output


def test_vqa_run_against_any_endpoint_with_base_url(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=1, cases_per_frame=2)
    out = tmp_path / "run"
    with OpenAICompatibleServer(default=Reply("no"), models=["org/vlm-7b"]) as srv:
        result = runner.invoke(app, ["vqa", "run", str(dataset.root), "--model", "org/vlm-7b",
                                     "--base-url", srv.base_url, "--output", str(out),
                                     "--no-describe", "--max-concurrency", "2",
                                     *ONE_CALL_PER_CASE])
        bodies = [json.dumps(r.body) for r in srv.requests]
    assert result.exit_code == 0, result.output
    assert len(bodies) == 2 and all('"model": "org/vlm-7b"' in b for b in bodies)
    assert all(CANARY not in b for b in bodies)
    config = json.loads((out / "config.json").read_text())
    assert config["generation"]["base_url"] == srv.base_url and not config["describe"]


def test_vqa_run_reports_failures_and_exits_nonzero(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=1, cases_per_frame=1)
    with OpenAICompatibleServer(default=HttpError(400)) as srv:
        result = runner.invoke(app, ["vqa", "run", str(dataset.root), "--model", "m",
                                     "--base-url", srv.base_url, "--output",
                                     str(tmp_path / "run"), "--no-describe"])
    assert result.exit_code == 1
    assert "0/1 cases answered" in result.output and "client_error" in result.output


def test_vqa_run_unknown_model_without_url_names_the_fix(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path / "ds", n_frames=1, cases_per_frame=1)
    result = runner.invoke(app, ["vqa", "run", str(dataset.root), "--model", "nope"])
    assert result.exit_code != 0 and "--base-url" in result.output


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_serve_command_answers_over_http(tmp_path: Path) -> None:
    port = _free_port()
    exe = Path(sys.executable).parent / "eval-assets"
    proc = subprocess.Popen([str(exe), "serve", "--model", "random", "--port", str(port),
                             "--seed", "3"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        url = f"http://127.0.0.1:{port}/v1"
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(url + "/models", timeout=2) as response:
                    assert json.loads(response.read())["data"][0]["id"] == "random"
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "server did not start"
                time.sleep(0.2)
        body = json.dumps({"model": "random", "max_tokens": 8, "messages": vqa_messages(
            write_png(tmp_path / "a.png", seed=0), "Is it?", ["yes", "no"])}).encode()
        replies = []
        for _ in range(2):
            request = urllib.request.Request(url + "/chat/completions", data=body,
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=10) as response:
                replies.append(json.loads(response.read())["choices"][0]["message"]["content"])
        assert replies[0] == replies[1] and replies[0] in {"yes", "no"}
    finally:
        proc.terminate()
        proc.wait(timeout=20)
