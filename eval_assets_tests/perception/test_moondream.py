"""The Moondream detector through the real ``moondream`` client, against a local HTTP server."""

from __future__ import annotations

import socket

import numpy as np
import pytest

from eval_assets.perception import PerceptionConfig, default_vocabulary
from eval_assets.perception.box_segmenters import RegionSegmenter
from eval_assets.perception.color_detector import ColorShapeDetector
from eval_assets.perception.moondream_detector import MoondreamDetector
from eval_assets.perception.protocols import (
    ConfigurationError,
    PerceptionError,
    detect_and_segment,
)
from eval_assets_tests.fakes.moondream_server import (
    HttpError,
    MoondreamServer,
    RawResponse,
    color_detector_answer,
)
from eval_assets_tests.perception.conftest import RectifiedSample
from eval_assets_tests.perception.test_color_detector import box_iou

pytest.importorskip("moondream", reason="the moondream client is part of the dev extra")

IMAGE = np.full((480, 640, 3), 120, dtype=np.uint8)


def test_normalised_boxes_become_pixel_edges_and_are_clipped() -> None:
    replies = [(0.1, 0.2, 0.5, 0.6), (-0.25, 0.9, 0.25, 1.5), (1.2, 0.1, 1.4, 0.3)]
    with MoondreamServer(answer=lambda image, name: replies) as srv:
        boxes = MoondreamDetector(api_key=None, endpoint=srv.endpoint).detect(IMAGE, "a cup")
        request = srv.requests[0]
    assert [b.box_xyxy for b in boxes] == [(64.0, 96.0, 320.0, 288.0), (0.0, 432.0, 160.0, 480.0)]
    assert all(b.score == 1.0 for b in boxes)
    assert request.path == "/v1/detect"
    assert request.body["object"] == "a cup"
    assert request.body["image_url"].startswith("data:image/jpeg;base64,")
    assert request.image is not None and request.image.shape == IMAGE.shape
    assert "x-moondream-auth" not in request.headers


def test_boxes_of_a_real_frame_match_the_local_model(rectified_sample: RectifiedSample) -> None:
    image = rectified_sample.images[0]
    local = ColorShapeDetector()
    with MoondreamServer(answer=color_detector_answer(), api_key="secret") as srv:
        remote = MoondreamDetector(api_key="secret", endpoint=srv.endpoint)
        assert remote.version.startswith("moondream-client-2.")
        found = detect_and_segment(image, default_vocabulary(), remote, RegionSegmenter())
        assert {r.headers["x-moondream-auth"] for r in srv.requests} == {"secret"}
        assert [r.body["object"] for r in srv.requests] == default_vocabulary()
    expected = detect_and_segment(image, default_vocabulary(), local, RegionSegmenter())
    # The client re-encodes the frame as JPEG (quality 95), so boxes may move by a pixel.
    assert [d.name for d, _ in found] == [d.name for d, _ in expected]
    for (got, _), (want, _) in zip(found, expected, strict=True):
        assert got.detector == "moondream" and got.label_index == want.label_index
        assert box_iou(got.box_xyxy, want.box_xyxy) >= 0.9


def test_a_wrong_key_is_reported_with_the_variable_to_fix() -> None:
    with MoondreamServer(answer=lambda image, name: [], api_key="right") as srv:
        detector = MoondreamDetector(api_key="wrong", endpoint=srv.endpoint,
                                     api_key_env="MY_MD_KEY")
        with pytest.raises(PerceptionError, match="HTTP 401") as err:
            detector.detect(IMAGE, "red ball")
    assert "moondream_api_key_env" in str(err.value) and "'red ball'" in str(err.value)


@pytest.mark.parametrize(
    ("answer", "match"),
    [
        (HttpError(500, "model crashed"), "HTTP 500.*model crashed"),
        (RawResponse(200, b"<html>not json</html>"), "not a Moondream detect result"),
        (RawResponse(200, b'{"points": []}'), "not a Moondream detect result"),
        (RawResponse(200, b'{"objects": {"x_min": 0}}'), "should be a list"),
        (RawResponse(200, b'{"objects": [{"x_min": 0.1, "y_min": 0.1}]}'), "object 0"),
        (RawResponse(200, b'{"objects": [{"x_min": "a", "y_min": 0, "x_max": 1, '
                          b'"y_max": 1}]}'), "object 0"),
    ],
)
def test_server_failures_are_errors_not_empty_results(answer: object, match: str) -> None:
    with MoondreamServer(answer=lambda image, name: answer) as srv:  # type: ignore[arg-type,return-value]
        detector = MoondreamDetector(api_key=None, endpoint=srv.endpoint)
        with pytest.raises(PerceptionError, match=match):
            detector.detect(IMAGE, "red ball")


def test_an_unreachable_endpoint_names_the_setting() -> None:
    with socket.socket() as s:  # a port that was free a moment ago and has no listener
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    detector = MoondreamDetector(api_key=None, endpoint=f"http://127.0.0.1:{port}/v1")
    with pytest.raises(PerceptionError, match="moondream_endpoint"):
        detector.detect(IMAGE, "red ball")


def test_neither_key_nor_endpoint_is_a_configuration_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigurationError) as err:
        MoondreamDetector(api_key=None, endpoint=None)
    message = str(err.value)
    for needle in ("MOONDREAM_API_KEY", "moondream_api_key_env", "moondream_endpoint"):
        assert needle in message
    monkeypatch.delenv("TEAM_MD_KEY", raising=False)
    config = PerceptionConfig(detector="moondream", moondream_api_key_env="TEAM_MD_KEY")
    with pytest.raises(ConfigurationError, match="TEAM_MD_KEY"):
        config.build_detector()


def test_the_key_comes_from_the_configured_environment_variable(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEAM_MD_KEY", "k-123")
    with MoondreamServer(answer=lambda image, name: [(0.0, 0.0, 0.5, 0.5)],
                         api_key="k-123") as srv:
        config = PerceptionConfig(detector="moondream", moondream_api_key_env="TEAM_MD_KEY",
                                  moondream_endpoint=srv.endpoint)
        boxes = config.build_detector().detect(IMAGE, "red ball")
    assert [b.box_xyxy for b in boxes] == [(0.0, 0.0, 320.0, 240.0)]
