"""Batch mode: a run's calls through the OpenAI Batch API (half price, results within 24 h).

The pending calls of a run become one JSONL file of chat-completion requests, uploaded to
``/v1/files`` and submitted as a batch (``/v1/batches``); each line's ``custom_id`` is the hash of
the call's journal key, so a batch's output maps back onto exactly the calls of the run that are
still pending, and the records it yields are journalled by content like any answer: a batch
answer and a direct answer are interchangeable. The batch is polled with backoff for at most
``wait_s``; a run that ends before the batch does leaves its id in ``batch.json`` in the run
folder (the cell stays incomplete), and the next run (or tick) collects it instead of asking
again. Only one batch per run folder is in flight; calls that appear meanwhile wait for it.
"""

from __future__ import annotations

import hashlib
import json
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from eval_assets.atomic import write_text_atomic
from eval_assets.openai_chat import _read_completion, default_reply_limits
from eval_assets.schemas.chat import ChatResult

BATCH_STATE = "batch.json"
"""The run folder's record of the batch in flight."""
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})


class BatchState(BaseModel):
    """A submitted batch: its id, input file, and the custom ids of the calls it holds."""

    batch_id: str
    input_file_id: str
    custom_ids: list[str]


@dataclass(frozen=True)
class BatchItem:
    """One pending call: its id (hash of its journal key), request body, and what to do with
    the reply (journal its record)."""

    custom_id: str
    body: dict[str, Any]
    finish: Callable[[ChatResult], None]


@dataclass(frozen=True)
class BatchOutcome:
    """How a batch run ended: the batch in flight (None: none), and the calls collected."""

    in_flight: str | None
    collected: int
    submitted: int


def custom_id(kind: str, key: Sequence[Any]) -> str:
    """The ``custom_id`` of a call: its kind and the hash of its journal key."""
    return f"{kind}-" + hashlib.sha256(json.dumps(list(key)).encode("utf-8")).hexdigest()[:40]


class BatchAPI:
    """The few calls of OpenAI's Files and Batches APIs a batch run needs (stdlib HTTP)."""

    def __init__(self, base_url: str, api_key: str, timeout_s: float = 60.0) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {api_key}"}
        self.timeout_s = timeout_s

    def _call(self, method: str, path: str, data: bytes | None = None,
              content_type: str = "application/json") -> bytes:
        request = urllib.request.Request(
            self.base_url + path, data=data, method=method,
            headers={**self._headers, **({"Content-Type": content_type} if data else {})})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                return bytes(response.read())
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"batch API {method} {path}: HTTP {exc.code} "
                               f"{exc.read()[:300]!r}") from exc

    def _json(self, method: str, path: str, body: Mapping[str, Any] | None = None,
              ) -> dict[str, Any]:
        data = None if body is None else json.dumps(body).encode("utf-8")
        result: dict[str, Any] = json.loads(self._call(method, path, data))
        return result

    def upload(self, jsonl: bytes, name: str = "batch.jsonl") -> str:
        """Upload a batch input file (multipart, ``purpose=batch``); its file id."""
        boundary = uuid.uuid4().hex
        parts = (f'--{boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\n'
                 f"batch\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
                 f'filename="{name}"\r\nContent-Type: application/jsonl\r\n\r\n'
                 ).encode() + jsonl + f"\r\n--{boundary}--\r\n".encode()
        doc = json.loads(self._call("POST", "/files", parts,
                                    f"multipart/form-data; boundary={boundary}"))
        return str(doc["id"])

    def create(self, input_file_id: str) -> str:
        """Create a chat-completions batch of an uploaded file; its batch id."""
        return str(self._json("POST", "/batches", {
            "input_file_id": input_file_id, "endpoint": "/v1/chat/completions",
            "completion_window": "24h"})["id"])

    def get(self, batch_id: str) -> dict[str, Any]:
        """The batch object (``status``, ``output_file_id``, ``error_file_id``)."""
        return self._json("GET", f"/batches/{batch_id}")

    def content(self, file_id: str) -> bytes:
        """A file's content (the output or errors JSONL)."""
        return self._call("GET", f"/files/{file_id}/content")


def result_of(line: Mapping[str, Any], max_chars: int) -> ChatResult:
    """A batch output (or errors) line as the chat client's result of the same call."""
    response = line.get("response") or {}
    status = response.get("status_code")
    body = response.get("body")
    if status == 200 and isinstance(body, Mapping):
        attempt = _read_completion(json.dumps(body).encode("utf-8"), 200, max_chars)
        return ChatResult(content=attempt.content, finish_reason=attempt.finish_reason,
                          usage=attempt.usage, wall_s=0.0, attempts=1, status_code=200,
                          error_category=attempt.category, error_message=attempt.message,
                          raw_response=attempt.raw, served_model=attempt.served_model)
    error = line.get("error") or (body.get("error") if isinstance(body, Mapping) else None)
    category = "server_error" if status is None or status >= 500 else "client_error"
    return ChatResult(wall_s=0.0, attempts=1, status_code=status, error_category=category,
                      error_message=f"batch: {json.dumps(error)[:500]}")


class BatchRunner:
    """Submits a run's pending calls as one batch and collects it, resumably (module doc)."""

    def __init__(self, api: BatchAPI, *, max_tokens: int, wait_s: float = 0.0,
                 poll_s: float = 1.0, poll_max_s: float = 60.0,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.api = api
        self.max_chars = default_reply_limits(max_tokens)[1]
        self.wait_s, self.poll_s, self.poll_max_s = wait_s, poll_s, poll_max_s
        self._sleep = sleep

    def run(self, items: Sequence[BatchItem], out_dir: Path) -> BatchOutcome:
        """Collect the batch in flight (or submit ``items`` as one), polling up to ``wait_s``."""
        path = Path(out_dir) / BATCH_STATE
        state = BatchState.model_validate_json(path.read_text()) if path.is_file() else None
        submitted = 0
        if state is None:
            if not items:
                return BatchOutcome(in_flight=None, collected=0, submitted=0)
            state = self._submit(items)
            write_text_atomic(path, state.model_dump_json(indent=2) + "\n")
            submitted = len(items)
        batch = self._poll(state.batch_id)
        if batch.get("status") not in TERMINAL:
            return BatchOutcome(in_flight=state.batch_id, collected=0, submitted=submitted)
        collected = self._collect(batch, {i.custom_id: i for i in items})
        path.unlink()
        return BatchOutcome(in_flight=None, collected=collected, submitted=submitted)

    def _submit(self, items: Sequence[BatchItem]) -> BatchState:
        lines = "".join(json.dumps({"custom_id": i.custom_id, "method": "POST",
                                    "url": "/v1/chat/completions", "body": i.body}) + "\n"
                        for i in items)
        file_id = self.api.upload(lines.encode("utf-8"))
        return BatchState(batch_id=self.api.create(file_id), input_file_id=file_id,
                          custom_ids=[i.custom_id for i in items])

    def _poll(self, batch_id: str) -> dict[str, Any]:
        """Poll with doubling intervals until a terminal status or ``wait_s`` has passed."""
        deadline = time.monotonic() + self.wait_s
        delay = self.poll_s
        while True:
            batch = self.api.get(batch_id)
            left = deadline - time.monotonic()
            if batch.get("status") in TERMINAL or left <= 0:
                return batch
            self._sleep(min(delay, left))
            delay = min(delay * 2, self.poll_max_s)

    def _collect(self, batch: Mapping[str, Any], items: Mapping[str, BatchItem]) -> int:
        """Journal every line of the output and errors files whose call is still pending."""
        collected = 0
        for key in ("output_file_id", "error_file_id"):
            file_id = batch.get(key)
            if not file_id:
                continue
            for raw in self.api.content(str(file_id)).decode("utf-8").splitlines():
                if not raw.strip():
                    continue
                line = json.loads(raw)
                item = items.get(str(line.get("custom_id")))
                if item is not None:
                    item.finish(result_of(line, self.max_chars))
                    collected += 1
        return collected


def batch_runner_for(base_url: str, api_key: str, *, max_tokens: int, timeout_s: float,
                     wait_s: float = 0.0) -> BatchRunner:
    """The batch runner of an endpoint (its URL, key and reply cap), polling up to ``wait_s``."""
    return BatchRunner(BatchAPI(base_url, api_key, timeout_s), max_tokens=max_tokens,
                       wait_s=wait_s)
