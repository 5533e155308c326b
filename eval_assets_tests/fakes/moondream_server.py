"""A real Moondream-compatible HTTP server on 127.0.0.1 for tests.

It speaks the part of the Moondream ``/v1`` API that ``moondream.vl(...).detect`` calls (checked
against the installed client, moondream 2.6.1, ``cloud_vl.CloudVL.detect``)::

    POST {endpoint}/detect
    headers: Content-Type: application/json, X-Moondream-Auth: <key> (when a key is configured)
    body:    {"image_url": "data:image/jpeg;base64,...", "object": "red ball"}
    reply:   {"objects": [{"x_min": 0.1, "y_min": 0.2, "x_max": 0.3, "y_max": 0.4}, ...]}

The server decodes the JPEG it receives and answers with ``answer(image_rgb, object_name)``: a
list of normalised boxes (turned into the reply above), an :class:`HttpError` or a
:class:`RawResponse`. Every request is recorded with its headers, JSON body and decoded image.

    with MoondreamServer(answer=color_detector_answer(), api_key="k") as srv:
        detector = MoondreamDetector(api_key="k", endpoint=srv.endpoint)
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import cv2
import numpy as np


@dataclass(frozen=True)
class HttpError:
    """An error status with a JSON ``{"error": message}`` body."""

    status: int
    message: str = "error"


@dataclass(frozen=True)
class RawResponse:
    """Any status and bytes, e.g. a 200 whose body is not a detect result."""

    status: int = 200
    body: bytes = b""


NormalisedBox = tuple[float, float, float, float]
Answer = Callable[[np.ndarray, str], "list[NormalisedBox] | HttpError | RawResponse"]


@dataclass(frozen=True)
class RecordedRequest:
    """One request as received: path, headers (lower-cased names), JSON body, decoded image."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    image: np.ndarray | None


def decode_data_url(url: str) -> np.ndarray:
    """RGB ``uint8`` image of a ``data:image/...;base64,`` URL (the client sends JPEG)."""
    header, _, payload = url.partition(",")
    if not header.startswith("data:image/") or ";base64" not in header:
        raise ValueError(f"not a base64 image data URL: {header[:40]!r}")
    raw = np.frombuffer(base64.b64decode(payload), dtype=np.uint8)
    bgr = cv2.imdecode(raw, cv2.IMREAD_COLOR)
    if bgr is None:
        raise ValueError("the data URL does not hold a decodable image")
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def color_detector_answer() -> Answer:
    """Answer with the colour detector run on the received image: a model that really looks."""
    from eval_assets.perception.color_detector import ColorShapeDetector

    detector = ColorShapeDetector()

    def answer(image: np.ndarray, object_name: str) -> list[NormalisedBox]:
        h, w = image.shape[:2]
        return [(b.box_xyxy[0] / w, b.box_xyxy[1] / h, b.box_xyxy[2] / w, b.box_xyxy[3] / h)
                for b in detector.detect(image, object_name)]

    return answer


class MoondreamServer:
    """Context manager running the fake server on an ephemeral port of 127.0.0.1."""

    def __init__(self, answer: Answer, api_key: str | None = None) -> None:
        """``api_key``: when set, requests without that ``X-Moondream-Auth`` get HTTP 401."""
        self.answer = answer
        self.api_key = api_key
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def endpoint(self) -> str:
        """The ``/v1`` base URL to give the client."""
        assert self._server is not None, "start the server first (use it as a context manager)"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> MoondreamServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean

            def _send(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                try:
                    body = json.loads(raw)
                    image = decode_data_url(body["image_url"])
                except (ValueError, KeyError) as exc:
                    with owner._lock:
                        owner.requests.append(RecordedRequest(self.path, headers, {}, None))
                    self._send(400, json.dumps({"error": f"bad request: {exc}"}).encode())
                    return
                with owner._lock:
                    owner.requests.append(RecordedRequest(self.path, headers, body, image))
                if self.path != "/v1/detect":
                    self._send(404, json.dumps({"error": f"no route {self.path}"}).encode())
                    return
                if owner.api_key is not None and \
                        headers.get("x-moondream-auth") != owner.api_key:
                    self._send(401, json.dumps({"error": "invalid API key"}).encode())
                    return
                result = owner.answer(image, str(body.get("object", "")))
                if isinstance(result, HttpError):
                    self._send(result.status, json.dumps({"error": result.message}).encode())
                elif isinstance(result, RawResponse):
                    self._send(result.status, result.body)
                else:
                    objects = [{"x_min": b[0], "y_min": b[1], "x_max": b[2], "y_max": b[3]}
                               for b in result]
                    self._send(200, json.dumps({"request_id": f"req-{len(owner.requests)}",
                                                "objects": objects}).encode())

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # A short poll keeps shutdown (and so each test) fast.
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,),
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
