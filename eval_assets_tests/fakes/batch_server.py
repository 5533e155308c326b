"""A fake OpenAI Batch API over real HTTP: ``/v1/files`` and ``/v1/batches``.

Uploads a JSONL input file (multipart, as the SDK sends it), creates a batch, and moves it one
status per poll through ``validating`` → ``in_progress`` → ``completed`` (``hold()`` keeps it in
progress, ``release()`` lets it finish). On completion every input line is answered by
``reply(body)``, the same kind of script the chat fake takes: a :class:`Reply` becomes an output
line with the line's ``custom_id`` and a chat completion body; an :class:`HttpError` becomes a line
of the errors file.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from eval_assets_tests.fakes.openai_server import (
    PROBE_MARKER,
    HttpError,
    Reply,
    completion_body,
    message_text,
)

ReplyFn = Callable[[dict[str, Any]], Reply | HttpError]
PROGRESSION = ("validating", "in_progress", "completed")


class FakeBatchServer:
    """The fake Batch API on a free port of 127.0.0.1; a context manager."""

    def __init__(self, reply: ReplyFn) -> None:
        self.reply = reply
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.polls = 0
        self.chat_calls = 0  # stays 0: a batch run never calls chat completions
        self.probes = 0  # the capability preflight's few direct calls, answered like OpenAI's
        self._held = False
        self._lock = threading.RLock()  # _finish adds files while holding it
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeBatchServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def hold(self) -> None:
        """Keep every batch in progress (a run ends while its batch is in flight)."""
        self._held = True

    def release(self) -> None:
        """Let batches finish on their next polls."""
        self._held = False

    def add_file(self, content: bytes) -> str:
        with self._lock:
            file_id = f"file-{len(self.files) + 1}"
            self.files[file_id] = content
        return file_id

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        if body.get("input_file_id") not in self.files:
            raise KeyError(body.get("input_file_id"))
        with self._lock:
            batch_id = f"batch_{len(self.batches) + 1}"
            batch = {"id": batch_id, "object": "batch", "endpoint": body["endpoint"],
                     "input_file_id": body["input_file_id"], "status": PROGRESSION[0],
                     "output_file_id": None, "error_file_id": None,
                     "completion_window": body.get("completion_window")}
            self.batches[batch_id] = batch
        return batch

    def poll(self, batch_id: str) -> dict[str, Any]:
        with self._lock:
            self.polls += 1
            batch = self.batches[batch_id]
            step = PROGRESSION.index(batch["status"]) if batch["status"] in PROGRESSION else -1
            if 0 <= step < len(PROGRESSION) - 1 and not (self._held and step >= 1):
                batch["status"] = PROGRESSION[step + 1]
                finished = batch["status"] == "completed"
            else:
                finished = False
        if finished:
            self._finish(batch)
        return dict(batch)

    def _finish(self, batch: dict[str, Any]) -> None:
        out, errors = [], []
        for number, raw in enumerate(self.files[batch["input_file_id"]].splitlines(), 1):
            line = json.loads(raw)
            behaviour = self.reply(line["body"])
            if isinstance(behaviour, Reply):
                out.append({"id": f"req-{number}", "custom_id": line["custom_id"], "error": None,
                            "response": {"status_code": 200, "body": completion_body(
                                behaviour.content, line["body"]["model"], number,
                                behaviour.finish_reason, behaviour.usage)}})
            else:
                errors.append({"id": f"req-{number}", "custom_id": line["custom_id"],
                               "response": {"status_code": behaviour.status, "body": {
                                   "error": {"message": "fake failure"}}}, "error": None})
        with self._lock:
            if out:
                batch["output_file_id"] = self.add_file(
                    "".join(json.dumps(x) + "\n" for x in out).encode())
            if errors:
                batch["error_file_id"] = self.add_file(
                    "".join(json.dumps(x) + "\n" for x in errors).encode())


def _file_part(body: bytes, content_type: str) -> bytes:
    """The content of the multipart part named ``file``."""
    boundary = content_type.split("boundary=", 1)[1].encode()
    for part in body.split(b"--" + boundary):
        head, _, content = part.partition(b"\r\n\r\n")
        if b'name="file"' in head:
            return content.removesuffix(b"\r\n")
    raise ValueError("no file part")


def _handler(fake: FakeBatchServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def _send(self, status: int, payload: bytes | dict[str, Any]) -> None:
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            data = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.path == "/v1/files":
                content = _file_part(data, self.headers["Content-Type"])
                self._send(200, {"id": fake.add_file(content), "object": "file",
                                 "purpose": "batch", "bytes": len(content)})
            elif self.path == "/v1/batches":
                try:
                    self._send(200, fake.create(json.loads(data)))
                except KeyError:
                    self._send(404, {"error": {"message": "no such input file"}})
            elif self.path.endswith("/chat/completions") and PROBE_MARKER in message_text(
                    body := json.loads(data)):
                # The real Batch API's host serves chat completions too: the preflight probes
                # it directly before a batch is spent.
                fake.probes += 1
                self._send(200, completion_body("A", body["model"], fake.probes, "stop", None))
            else:
                if self.path.endswith("/chat/completions"):
                    fake.chat_calls += 1
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_GET(self) -> None:
            batch = re.fullmatch(r"/v1/batches/([\w-]+)", self.path)
            file = re.fullmatch(r"/v1/files/([\w-]+)/content", self.path)
            if batch and batch[1] in fake.batches:
                self._send(200, fake.poll(batch[1]))
            elif file and file[1] in fake.files:
                self._send(200, fake.files[file[1]])
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

    return Handler
