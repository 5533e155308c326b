"""FlipEval's mirrored re-asks: the mirrored image and question, stored apart, resumed by
content, nothing private sent."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import cv2
import numpy as np

from eval_assets.choices import flip_text, is_left_right
from eval_assets.model_runs.flips import flip_choices, mirror_png
from eval_assets.model_runs.runner import run_model
from eval_assets.schemas.predictions import FlipRecord
from eval_assets.schemas.vqa_prompt import parse_choices
from eval_assets_tests.fakes.openai_server import OpenAICompatibleServer, message_text
from eval_assets_tests.model_runs.helpers import CANARY
from eval_assets_tests.model_runs.test_runner import client_for, read_jsonl
from eval_assets_tests.model_runs.test_runner_circular import first_shown, write_dataset


def _image_of(body: dict) -> np.ndarray:
    for message in body["messages"]:
        content = message["content"]
        if isinstance(content, list):
            for part in content:
                if part["type"] == "image_url":
                    data = part["image_url"]["url"].split(",", 1)[1]
                    return cv2.imdecode(np.frombuffer(base64.b64decode(data), np.uint8),
                                        cv2.IMREAD_UNCHANGED)
    raise AssertionError("no image in the request")


def test_flip_text_and_left_right_cases() -> None:
    assert flip_text("Is it Left of the LEFT chair, or right?") == \
        "Is it Right of the RIGHT chair, or left?"
    assert flip_text("leftover brightness") == "leftover brightness"  # whole words only
    assert is_left_right(["left", "center", "right"])
    assert is_left_right(["front-left", "front-right", "back-left", "back-right"])
    assert not is_left_right(["yes", "no"]) and not is_left_right(["left", "center"])
    assert flip_choices(["left", "center", "right"]) == ["left", "center", "right"]


def test_mirror_png_is_the_horizontal_flip_and_deterministic(tmp_path: Path) -> None:
    pixels = np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3)
    ok, png = cv2.imencode(".png", pixels)
    assert ok
    mirrored = mirror_png(png.tobytes())
    assert mirrored == mirror_png(png.tobytes())
    back = cv2.imdecode(np.frombuffer(mirrored, np.uint8), cv2.IMREAD_UNCHANGED)
    assert np.array_equal(back, pixels[:, ::-1])
    assert mirror_png(mirrored) != mirrored and np.array_equal(
        cv2.imdecode(np.frombuffer(mirror_png(mirrored), np.uint8), cv2.IMREAD_UNCHANGED),
        pixels)


def test_left_right_cases_are_asked_mirrored_stored_apart_and_resumed(tmp_path: Path) -> None:
    cases = write_dataset(tmp_path / "ds")
    out = tmp_path / "run"
    sided = [c for c in cases if c["choices"] == ["left", "center", "right"]]
    with OpenAICompatibleServer(first_shown) as srv, client_for(srv.base_url) as client:
        result = run_model(tmp_path / "ds", client, out, max_concurrency=2, describe=False,
                           flips=True)
        requests = list(srv.requests)
        again = run_model(tmp_path / "ds", client, out, max_concurrency=2, describe=False,
                          flips=True)
        assert len(srv.requests) == len(requests) and again.calls_made == 0
        off = run_model(tmp_path / "ds", client, out, max_concurrency=2, describe=False)
        assert off.calls_made == 0 and not (out / "flips.jsonl").exists()
    assert result.calls_made == len(cases) + len(sided) == len(requests)
    for case in sided:
        asked = [r for r in requests if f"[{case['id']}]" in message_text(r.body)]
        assert len(asked) == 2
        original = cv2.imread(str(tmp_path / "ds" / case["image"]), cv2.IMREAD_UNCHANGED)
        images = [_image_of(r.body) for r in asked]
        assert sum(np.array_equal(i, original[:, ::-1]) for i in images) == 1
        assert sum(np.array_equal(i, original) for i in images) == 1
        # The same choices in the same order both ways; the question's words mirrored.
        assert all(parse_choices(message_text(r.body)) == case["choices"] for r in asked)
    bodies = "".join(json.dumps(r.body) for r in requests)
    assert CANARY not in bodies and "labels" not in bodies


def test_flips_file_lists_each_left_right_case_once(tmp_path: Path) -> None:
    cases = write_dataset(tmp_path / "ds")
    out = tmp_path / "run"
    with OpenAICompatibleServer(first_shown) as srv, client_for(srv.base_url) as client:
        run_model(tmp_path / "ds", client, out, max_concurrency=2, describe=False, flips=True)
    records = [FlipRecord.model_validate(r) for r in read_jsonl(out / "flips.jsonl")]
    assert [r.case_id for r in records] == [c["id"] for c in cases
                                            if c["choices"] == ["left", "center", "right"]]
    assert all(r.kind == "flip" and r.status == "success" and r.choice == "left"
               and r.content_sha256 for r in records)
    assert CANARY not in (out / "flips.jsonl").read_text()
