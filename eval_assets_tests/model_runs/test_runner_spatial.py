"""Spatial cases in a run: frames as image parts in order, a labelled mosaic for an endpoint that
takes fewer images, the number prompt, resume by content, and nothing private sent."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from eval_assets.model_runs.prompts import image_data_url
from eval_assets.model_runs.runner import load_public_cases, load_public_spatial_cases, run_model
from eval_assets.model_runs.spatial import layout_for, mosaic_png, spatial_text
from eval_assets.schemas.endpoint import EndpointCapabilities
from eval_assets.schemas.predictions import AnswerRecord, RunConfig, RunSummary
from eval_assets.schemas.spatial import SpatialCase
from eval_assets_tests.fakes.openai_server import (
    OpenAICompatibleServer,
    RecordedRequest,
    Reply,
    image_count,
    message_text,
    route_by_text,
)
from eval_assets_tests.model_runs.helpers import (
    CANARY,
    SpatialDataset,
    make_spatial_dataset,
    write_png,
)
from eval_assets_tests.model_runs.test_runner import client_for, read_jsonl

REPLIES = {"size": "About 45 cm.", "pair": "2,5 m", "camera": "1.8",
           "order": "chair, table", "count": "3", "direction": "front-left"}


def _script(dataset: SpatialDataset) -> object:
    routes = {dataset.marker(c["id"]): [Reply(REPLIES[c["id"].split("-")[1]])]
              for c in dataset.spatial}
    return route_by_text(routes, default=Reply("yes"))


def _request_of(requests: list[RecordedRequest], marker: str) -> RecordedRequest:
    found = [r for r in requests if marker in message_text(r.body)]
    assert len(found) == 1, f"{len(found)} requests carry {marker}"
    return found[0]


def _image_urls(request: RecordedRequest) -> list[str]:
    content = request.body["messages"][-1]["content"]
    return [p["image_url"]["url"] for p in content if p["type"] == "image_url"]


def _decode(url: str) -> np.ndarray:
    data = base64.b64decode(url.split(",", 1)[1])
    image = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), cv2.IMREAD_COLOR)
    assert image is not None
    return image


def test_frames_go_as_separate_image_parts_in_time_order(tmp_path: Path) -> None:
    dataset = make_spatial_dataset(tmp_path / "ds")
    out = tmp_path / "run"
    with OpenAICompatibleServer(_script(dataset)) as srv, client_for(srv.base_url) as client:
        result = run_model(dataset.root, client, out, max_concurrency=3, describe=False)
        requests = srv.requests
    assert result.calls_made == len(requests) == len(dataset.cases) + len(dataset.spatial)
    for case in dataset.spatial:
        request = _request_of(requests, dataset.marker(case["id"]))
        expected = [image_data_url((dataset.root / i).read_bytes()) for i in case["images"]]
        assert _image_urls(request) == expected
        content = request.body["messages"][-1]["content"]
        assert content[-1]["type"] == "text" and all(
            p["type"] == "image_url" for p in content[:-1])  # the images, then the text
    text = message_text(_request_of(requests, "[spatial-size-object_size_cm]").body)
    assert "Answer with a single number in centimetres (cm)." in text
    assert "These are" not in text  # one frame: no introduction
    count = message_text(_request_of(requests, "[spatial-count-object_count_across_frames]").body)
    assert "These are 6 frames of one recording, in time order" in count
    assert count.endswith("Answer with a single number.")
    order = message_text(_request_of(requests, "[spatial-order-appearance_order]").body)
    assert 'Choices: ["chair, table", "table, chair"]' in order

    answers = {a["case_id"]: AnswerRecord.model_validate(a)
               for a in read_jsonl(out / "answers.jsonl")}
    assert list(answers) == [c["id"] for c in dataset.cases] + [c["id"] for c in dataset.spatial]
    assert answers["spatial-order-appearance_order"].choice == "chair, table"
    number = answers["spatial-pair-pair_distance_m"]
    assert number.raw_response == "2,5 m" and number.choice is None
    assert number.spatial is not None and number.spatial.layout == "parts"
    assert number.spatial.images == 2 and number.spatial.answer_type == "number"
    assert all(a.spatial is None for i, a in answers.items() if not i.startswith("spatial-"))
    summary = RunSummary.model_validate_json((out / "summary.json").read_text())
    assert summary.complete and summary.answers.total == 8 and summary.answers.success == 8
    assert summary.answers.unmatched_choices == 0  # number replies name no choice, by design
    assert summary.spatial is not None
    assert (summary.spatial.cases, summary.spatial.most_images_per_case) == (6, 6)
    assert summary.spatial.layouts == {"parts": 6}
    assert summary.spatial.endpoint_max_images == 6  # probed up to the most a case shows
    config = RunConfig.model_validate_json((out / "config.json").read_text())
    assert config.num_spatial_cases == 6 and config.spatial_cases_sha256


def test_fewer_images_per_request_get_a_labelled_mosaic_recorded_in_the_run(
        tmp_path: Path) -> None:
    dataset = make_spatial_dataset(tmp_path / "ds")
    out = tmp_path / "run"
    with OpenAICompatibleServer(_script(dataset), max_images=2) as srv, \
            client_for(srv.base_url) as client:
        result = run_model(dataset.root, client, out, max_concurrency=2, describe=False)
        requests = srv.requests
    assert result.summary.complete
    capabilities = EndpointCapabilities.model_validate_json((out / "endpoint.json").read_text())
    assert capabilities.max_images == 2 and capabilities.max_images_probed == 6
    answers = {a["case_id"]: AnswerRecord.model_validate(a)
               for a in read_jsonl(out / "answers.jsonl")}
    for case in dataset.spatial:
        record = answers[case["id"]]
        assert record.spatial is not None
        urls = _image_urls(_request_of(requests, dataset.marker(case["id"])))
        if len(case["images"]) <= 2:
            assert record.spatial.layout == "parts" and len(urls) == len(case["images"])
            continue
        assert record.spatial.layout == "mosaic" and len(urls) == 1
        frames = [(dataset.root / i).read_bytes() for i in case["images"]]
        assert urls[0] == image_data_url(mosaic_png(frames))
    summary = RunSummary.model_validate_json((out / "summary.json").read_text())
    assert summary.spatial is not None and summary.spatial.endpoint_max_images == 2
    assert summary.spatial.layouts == {"mosaic": 3, "parts": 3}
    text = message_text(_request_of(requests, "[spatial-count-object_count_across_frames]").body)
    assert "tiled in one image in time order" in text and "labelled with its number" in text


def test_the_mosaic_tiles_frames_in_order_each_labelled() -> None:
    rng = np.random.default_rng(0)
    frames = [np.full((30, 40, 3), 40 * (i + 1), dtype=np.uint8) for i in range(5)]
    frames[4] = rng.integers(0, 255, size=(20, 40, 3), dtype=np.uint8)  # a smaller frame
    pngs = [cv2.imencode(".png", f)[1].tobytes() for f in frames]
    mosaic = cv2.imdecode(np.frombuffer(mosaic_png(pngs), dtype=np.uint8), cv2.IMREAD_COLOR)
    assert mosaic.shape == (2 * 30, 3 * 40, 3)  # 3 columns, 2 rows, cells of the largest frame
    for i in range(4):  # frame i sits in cell i, its label over its top-left corner only
        y, x = (i // 3) * 30, (i % 3) * 40
        cell = mosaic[y:y + 30, x:x + 40]
        assert (cell[-5:, -10:] == 40 * (i + 1)).all()
        assert (cell[:3, :3] == 0).all() and (cell[:16, :16] > 150).any()  # white on black
    assert np.array_equal(mosaic[30 + 20:, 40:80], np.zeros((10, 40, 3), np.uint8))  # padding
    assert mosaic_png(pngs) == mosaic_png(pngs)


def test_layout_and_text_follow_the_endpoint_limit() -> None:
    case = SpatialCase(id="c", images=["assets/a.png", "assets/b.png", "assets/c.png"],
                       question="How far apart are they?", answer_type="number", unit="m")
    assert [layout_for(case, m) for m in (None, 1, 2, 3, 8)] == [
        "parts", "mosaic", "mosaic", "parts", "parts"]
    assert spatial_text(case, "parts") == (
        "These are 3 frames of one recording, in time order; frame 1 is the first.\n"
        "How far apart are they?\nAnswer with a single number in metres (m).")


def test_a_changed_frame_re_asks_only_the_cases_that_show_it(tmp_path: Path) -> None:
    dataset = make_spatial_dataset(tmp_path / "ds")
    out = tmp_path / "run"
    with OpenAICompatibleServer(_script(dataset)) as srv, client_for(srv.base_url) as client:
        run_model(dataset.root, client, out, max_concurrency=2, describe=False)
        first = {p.name: p.read_bytes() for p in out.iterdir()}
        n = len(srv.requests)
        again = run_model(dataset.root, client, out, max_concurrency=2, describe=False)
        assert again.calls_made == 0 and len(srv.requests) == n
        assert {p.name: p.read_bytes() for p in out.iterdir()} == first
        write_png(dataset.root / "assets/frame-001005.png", seed=7)  # only the count case's
        third = run_model(dataset.root, client, out, max_concurrency=2, describe=False)
        asked = [r for r in srv.requests[n:]]
    assert third.calls_made == 1 and third.skipped == 7
    assert "[spatial-count-object_count_across_frames]" in message_text(asked[0].body)


def test_nothing_private_of_spatial_cases_reaches_the_server(tmp_path: Path) -> None:
    dataset = make_spatial_dataset(tmp_path / "ds")
    with OpenAICompatibleServer(_script(dataset), max_images=2) as srv, \
            client_for(srv.base_url) as client:
        run_model(dataset.root, client, tmp_path / "run", max_concurrency=2)
        bodies = [json.dumps(r.body) + json.dumps(r.headers) for r in srv.requests + srv.probes]
    assert len(bodies) > len(dataset.spatial)
    assert all(CANARY not in b and "spatial_labels" not in b and "audit" not in b
               and "center_world" not in b for b in bodies)
    for label in dataset.labels:  # no answer text except as a public choice
        if label["answer_type"] == "number":
            assert all(f'"{label["answer"]}"' not in b for b in bodies)
    for path in (tmp_path / "run").iterdir():
        assert CANARY not in path.read_text()


def test_spatial_ids_must_be_unique_across_both_files(tmp_path: Path) -> None:
    dataset = make_spatial_dataset(tmp_path / "ds")
    rows = [dict(c) for c in dataset.spatial]
    rows[1]["id"] = dataset.cases[0]["id"]
    (dataset.root / "spatial_cases.jsonl").write_text("".join(json.dumps(r) + "\n"
                                                              for r in rows))
    with pytest.raises(ValueError, match=r"spatial_cases.jsonl:2: field 'id' repeats"):
        load_public_spatial_cases(dataset.root, load_public_cases(dataset.root))


def test_a_spatial_image_outside_assets_is_refused(tmp_path: Path) -> None:
    dataset = make_spatial_dataset(tmp_path / "ds")
    rows = [dict(c) for c in dataset.spatial]
    rows[0]["images"] = ["audit/spatial_labels.jsonl"]
    (dataset.root / "spatial_cases.jsonl").write_text("".join(json.dumps(r) + "\n"
                                                              for r in rows))
    with pytest.raises(ValueError, match=r"spatial_cases.jsonl:1: field 'images.0'"):
        load_public_spatial_cases(dataset.root, load_public_cases(dataset.root))


def test_a_dataset_without_spatial_cases_writes_todays_files(tmp_path: Path) -> None:
    dataset = make_spatial_dataset(tmp_path / "ds")
    (dataset.root / "spatial_cases.jsonl").unlink()
    out = tmp_path / "run"
    with OpenAICompatibleServer(default=Reply("yes")) as srv, client_for(srv.base_url) as client:
        run_model(dataset.root, client, out, max_concurrency=2, describe=False)
        assert max(image_count(p.body) for p in srv.probes) == 4  # probes as today
    assert "spatial" not in json.loads((out / "summary.json").read_text())
    assert not [k for k in json.loads((out / "config.json").read_text()) if "spatial" in k]
    assert all("spatial" not in a for a in read_jsonl(out / "answers.jsonl"))


def test_spatial_cases_go_through_the_batch_api_like_direct_calls(tmp_path: Path) -> None:
    from eval_assets.model_runs.batch import BatchAPI, BatchRunner
    from eval_assets_tests.fakes.batch_server import FakeBatchServer
    from eval_assets_tests.model_runs.test_batch import TIMING, _client, answer_by_text

    dataset = make_spatial_dataset(tmp_path / "ds", cases_per_frame=1)
    with FakeBatchServer(answer_by_text) as srv, _client(srv.base_url) as client:
        runner = BatchRunner(BatchAPI(srv.base_url, "not-needed"), max_tokens=256, wait_s=5,
                             poll_s=0.01)
        batched = run_model(dataset.root, client, tmp_path / "batch", batch=runner,
                            describe=False)
    with OpenAICompatibleServer(answer_by_text) as chat, _client(chat.base_url) as client:
        direct = run_model(dataset.root, client, tmp_path / "direct", max_concurrency=2,
                           describe=False)
        again = run_model(dataset.root, client, tmp_path / "batch", max_concurrency=2,
                          describe=False)
    assert batched.summary.complete and direct.summary.complete
    assert again.calls_made == 0 and again.skipped == len(dataset.cases) + len(dataset.spatial)

    def records(run: Path) -> list[dict]:
        return [{k: v for k, v in a.items() if k not in TIMING}
                for a in read_jsonl(run / "answers.jsonl")]
    assert records(tmp_path / "batch") == records(tmp_path / "direct")
    assert sum(1 for a in records(tmp_path / "batch") if a.get("spatial")) == 6


def test_the_preflight_probes_up_to_the_most_frames_a_case_shows(tmp_path: Path) -> None:
    from eval_assets.model_runs.preflight import image_counts_probed

    assert image_counts_probed() == image_counts_probed(4) == [1, 2, 4]
    assert image_counts_probed(6) == [1, 2, 4, 6] and image_counts_probed(9) == [1, 2, 4, 8, 9]
    dataset = make_spatial_dataset(tmp_path / "ds")
    spatial = (dataset.root / "spatial_cases.jsonl").read_text()
    (dataset.root / "spatial_cases.jsonl").unlink()
    out = tmp_path / "run"
    with OpenAICompatibleServer(_script(dataset)) as srv, client_for(srv.base_url) as client:
        run_model(dataset.root, client, out, describe=False)
        first = EndpointCapabilities.model_validate_json((out / "endpoint.json").read_text())
        n = len(srv.probes)
        (dataset.root / "spatial_cases.jsonl").write_text(spatial)
        run_model(dataset.root, client, out, describe=False)  # 4 probed, 6 needed: probed again
        second = EndpointCapabilities.model_validate_json((out / "endpoint.json").read_text())
        m = len(srv.probes)
        run_model(dataset.root, client, out, describe=False)  # now stored
        assert len(srv.probes) == m > n
    assert (first.max_images, first.max_images_probed) == (4, 4)
    assert (second.max_images, second.max_images_probed) == (6, 6)
