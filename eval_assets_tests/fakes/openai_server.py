"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests, scripted per test.

    script = [HttpError(429, {"Retry-After": "0"}), Reply('{"score": 8}')]
    with OpenAICompatibleServer(script=script) as srv:
        client = OpenAI(base_url=srv.base_url, api_key="k")
        ...
        srv.requests[0].body["messages"]

Each ``POST /v1/chat/completions`` is answered by the next behaviour of the script:

- a sequence: consumed in order; once spent, ``default`` answers (or a 500 saying the script
  ran out, so a test that makes more calls than it planned fails loudly);
- a callable ``(body) -> Behaviour``: called under a lock, for concurrent clients whose order is
  not fixed. :func:`route_by_text` builds one that keeps a queue per marker found in the messages.

Behaviours: :class:`Reply` (a chat completion with this content), :class:`HttpError` (status,
headers such as ``Retry-After``, OpenAI error body) and :class:`RawResponse` (any bytes); each can
wait ``delay_s`` first, to provoke client timeouts. Every request is recorded (path, headers, body).
``GET /v1/models`` lists ``models`` (recorded apart, in :attr:`OpenAICompatibleServer.listings`:
the preflight asks it once, and it is no chat request).

Server behaviours (keyword arguments, applied to every request before the script, as the real
servers named do): ``token_param="max_completion_tokens"`` refuses ``max_tokens`` with OpenAI's
400 ``unsupported_parameter``; ``max_images=0`` answers an image part with llama.cpp's 500
"Unsupported content part type" (no projector), ``max_images=1`` refuses more with vLLM's 400
(``--limit-mm-per-prompt``); ``enforce_schema`` makes ``response_format`` json_schema replies
validate (else it is ignored, as vLLM >= 0.12 ignores ``guided_json``); ``logprobs`` returns
logprobs when asked; ``refuse_fields=("seed",)`` refuses those optional request fields with Azure
OpenAI's 400 "Unrecognized request argument supplied: seed" (a server strict about unknown
fields). The capability preflight's probes (text holding
:data:`eval_assets.model_runs.preflight.PROBE_MARKER`) are answered by ``probe_reply``, not the
script (a callable ``(body) -> Behaviour`` too, for probes answered differently in turn), and
recorded in :attr:`OpenAICompatibleServer.probes` instead of ``requests``, so a script plans
only the run's calls. Every chat completion names the request's model as the one that answered,
unless ``served_model`` names another (a proxy falling back to another deployment).

Judge mode: :func:`rubric_judge` builds a script that reads the AVLM rubric's **Ground Truth** and
**Prediction** sections out of each request and replies with a verdict whose score a function of
the two texts decides; :func:`overlap_score` is such a function (a crude but honest judge: 10 less
the word bigrams the two texts do not share), ``lambda gt, pred: 10`` a judge that cannot judge.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    """HTTP 200 with a chat completion whose message content is ``content`` (None: null)."""

    content: str | None
    delay_s: float = 0.0
    finish_reason: str = "stop"
    usage: Mapping[str, Any] | None = None  # None: all counts 0
    reasoning_content: str | None = None  # sent as message.reasoning_content when set
    reasoning: str | None = None  # sent as message.reasoning when set (vLLM's later name)
    refusal: str | None = None  # sent as message.refusal when set


@dataclass(frozen=True)
class HttpError:
    """An error status with OpenAI's error body (or ``body``) and extra ``headers``."""

    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    body: Any = None
    delay_s: float = 0.0


@dataclass(frozen=True)
class RawResponse:
    """Any status and bytes, e.g. a 200 that is not JSON.

    ``chunked``: sent with ``Transfer-Encoding: chunked`` in 64 KiB chunks and no
    ``Content-Length``, so the client learns the size only by reading.
    """

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: Mapping[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    chunked: bool = False


Behaviour = Reply | HttpError | RawResponse
Script = Sequence[Behaviour] | Callable[[dict[str, Any]], Behaviour]


@dataclass(frozen=True)
class RecordedRequest:
    """One request as received: method, path, headers (lower-cased names) and decoded JSON body."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


def message_text(body: Mapping[str, Any]) -> str:
    """All text of a chat request's messages, joined by newlines (string or multimodal content)."""
    parts: list[str] = []
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content
                         if isinstance(p, Mapping) and p.get("type") == "text")
    return "\n".join(parts)


def route_by_text(routes: Mapping[str, Sequence[Behaviour]],
                  default: Behaviour | None = None) -> Callable[[dict[str, Any]], Behaviour]:
    """A script that answers from the queue of the first marker found in the request's text.

    Each marker's queue is consumed in order and its last behaviour repeats once it is spent
    (so ``[HttpError(500)]`` means "always 500"). Requests matching no marker get ``default``, or
    a 500 naming the problem.
    """
    queues = {marker: deque(items) for marker, items in routes.items()}
    for marker, items in routes.items():
        if not items:
            raise ValueError(f"route {marker!r} needs at least one behaviour")

    def script(body: dict[str, Any]) -> Behaviour:
        text = message_text(body)
        for marker, queue in queues.items():
            if marker in text:
                return queue.popleft() if len(queue) > 1 else queue[0]
        if default is not None:
            return default
        return HttpError(500, body={"error": {"message": "fake server: no route matches",
                                              "type": "fake_server", "param": None,
                                              "code": None}})

    return script


_GT_SECTION = re.compile(r"\*\*Ground Truth\*\*\n(.*?)\n\n\*\*Conversation\*\*", re.DOTALL)
_PRED_SECTION = re.compile(r"\*\*Prediction\*\*\n(.*?)\n\n\*\*Metadata\*\*", re.DOTALL)


def rubric_texts(body: Mapping[str, Any]) -> tuple[str, str]:
    """The ground truth and the prediction a judge request asks about (empty when absent)."""
    text = message_text(body)
    gt, pred = _GT_SECTION.search(text), _PRED_SECTION.search(text)
    return (gt.group(1) if gt else ""), (pred.group(1) if pred else "")


def _bigrams(text: str) -> set[tuple[str, str]]:
    words = re.findall(r"[a-z0-9]+", text.lower())
    return set(itertools.pairwise(words))


def overlap_score(ground_truth: str, prediction: str) -> int:
    """10 less the number of word bigrams only one of the texts has, at least 1."""
    return max(1, 10 - len(_bigrams(ground_truth) ^ _bigrams(prediction)))


def rubric_judge(score: Callable[[str, str], Any], *, delay_s: float = 0.0,
                 omit_score: Callable[[str, str], bool] | None = None
                 ) -> Callable[[dict[str, Any]], Behaviour]:
    """A judge script: ``score(ground_truth, prediction)`` is the reply's ``score`` value.

    The value goes into the JSON as is (42, -3, "7", None), so a test can make the judge break
    the rubric in any way; ``omit_score`` drops the key altogether for the texts it accepts.
    """

    def script(body: dict[str, Any]) -> Behaviour:
        gt, pred = rubric_texts(body)
        verdict: dict[str, Any] = {"score": score(gt, pred), "reasoning": "by the fake judge",
                                   "strengths": [], "weaknesses": [],
                                   "metadata_alignment": "n/a"}
        if omit_score is not None and omit_score(gt, pred):
            del verdict["score"]
        return Reply(json.dumps(verdict), delay_s=delay_s)

    return script


def completion_body(content: str | None, model: str, number: int,
                    finish_reason: str = "stop",
                    usage: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """OpenAI's ``chat.completion`` response shape (``usage`` None: all counts 0)."""
    return {
        "id": f"chatcmpl-fake-{number}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "finish_reason": finish_reason, "logprobs": None}],
        "usage": dict(usage) if usage is not None else {
            "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


def reply_body(reply: Reply, model: str, number: int) -> dict[str, Any]:
    """The chat completion of ``reply``, its reasoning and refusal fields included when set."""
    body = completion_body(reply.content, model, number, reply.finish_reason, reply.usage)
    message = body["choices"][0]["message"]
    for name in ("reasoning_content", "reasoning", "refusal"):
        if getattr(reply, name) is not None:
            message[name] = getattr(reply, name)
    return body


PROBE_MARKER = "Preflight probe."  # eval_assets.model_runs.preflight.PROBE_MARKER (a test checks)


def image_count(body: Mapping[str, Any]) -> int:
    """The number of image parts in a chat request's messages."""
    return sum(1 for message in body.get("messages") or [] if isinstance(message, Mapping)
               and isinstance(message.get("content"), list)
               for part in message["content"]
               if isinstance(part, Mapping) and part.get("type") == "image_url")


def _openai_error(status: int, message: str, param: str | None = None,
                  code: str | None = None, kind: str = "invalid_request_error") -> HttpError:
    return HttpError(status, body={"error": {"message": message, "type": kind, "param": param,
                                             "code": code}})


def _schema_instance(schema: Mapping[str, Any]) -> Any:
    """A value that validates against a simple schema (enum, integer bounds, a number: its
    minimum or 2.0, objects)."""
    if "enum" in schema:
        return schema["enum"][0]
    if schema.get("type") == "object":
        return {k: _schema_instance(v) for k, v in (schema.get("properties") or {}).items()}
    if schema.get("type") == "integer":
        return int(schema.get("minimum", 0))
    if schema.get("type") == "number":
        return float(schema.get("minimum", 2.0))
    return "x"


class OpenAICompatibleServer:
    """A threaded HTTP server speaking the chat-completions API, on a free port of 127.0.0.1."""

    def __init__(self, script: Script = (), *, default: Behaviour | None = None,
                 models: Sequence[str] = ("fake-model",), token_param: str = "max_tokens",
                 max_images: int | None = None, enforce_schema: bool = False,
                 logprobs: bool = False,
                 probe_reply: Behaviour | Callable[[dict[str, Any]], Behaviour] | None = None,
                 refuse_fields: Sequence[str] = (), served_model: str | None = None) -> None:
        self.token_param = token_param
        self.refuse_fields = tuple(refuse_fields)
        self.max_images = max_images
        self.enforce_schema = enforce_schema
        self.logprobs = logprobs
        self.probe_reply = probe_reply if probe_reply is not None else Reply("A")
        self.served_model = served_model
        self._probes: list[RecordedRequest] = []
        self._listings: list[RecordedRequest] = []
        self._script_fn = script if callable(script) else None
        self._queue: deque[Behaviour] = deque() if callable(script) else deque(script)
        self._default = default
        self._models = list(models)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._requests: list[RecordedRequest] = []
        self._in_flight = 0
        self._max_in_flight = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle -------------------------------------------------------------------------
    def start(self) -> OpenAICompatibleServer:
        """Bind a free port and serve in a daemon thread."""
        handler = _make_handler(self)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        # A short poll interval makes stop() quick (shutdown waits for the next poll).
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,),
                                        name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; delayed handlers wake up and drop their answers."""
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> OpenAICompatibleServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- what tests use ----------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The bound port."""
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``: what ``OpenAI(base_url=...)`` wants."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        """A copy of every request received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def probes(self) -> list[RecordedRequest]:
        """A copy of every preflight probe received so far, in arrival order."""
        with self._lock:
            return list(self._probes)

    @property
    def listings(self) -> list[RecordedRequest]:
        """A copy of every ``GET`` received so far (the preflight's ``/v1/models``)."""
        with self._lock:
            return list(self._listings)

    @property
    def max_in_flight(self) -> int:
        """The most chat requests the server held at once (received, not yet answered): a test
        sees that a client's calls overlapped without timing them."""
        with self._lock:
            return self._max_in_flight

    def push(self, *behaviours: Behaviour) -> None:
        """Append behaviours to a sequence script."""
        with self._lock:
            self._queue.extend(behaviours)

    # --- used by the handler -----------------------------------------------------------------
    def _record(self, request: RecordedRequest) -> None:
        probe = isinstance(request.body, dict) and PROBE_MARKER in message_text(request.body)
        with self._lock:
            if request.method == "GET":
                self._listings.append(request)
            else:
                (self._probes if probe else self._requests).append(request)

    def _held(self, delta: int) -> None:
        with self._lock:
            self._in_flight += delta
            self._max_in_flight = max(self._max_in_flight, self._in_flight)

    def _refusal(self, body: dict[str, Any]) -> Behaviour | None:
        """The server's own refusal of a request it cannot take (before any script)."""
        if self.token_param == "max_completion_tokens" and "max_tokens" in body:
            return _openai_error(400, "Unsupported parameter: 'max_tokens' is not supported "
                                 "with this model. Use 'max_completion_tokens' instead.",
                                 param="max_tokens", code="unsupported_parameter")
        refused = [f for f in self.refuse_fields if f in body]
        if refused:
            return _openai_error(400, f"Unrecognized request argument supplied: {refused[0]}")
        images = image_count(body)
        if self.max_images == 0 and images:
            return _openai_error(500, 'Unsupported content part type: "image_url"',
                                 kind="server_error")
        if self.max_images is not None and images > self.max_images:
            return _openai_error(400, f"At most {self.max_images} image(s) may be provided in "
                                 f"one request. You can set `--limit-mm-per-prompt` to increase "
                                 f"this limit if the model supports it.")
        return None

    def _shape(self, body: dict[str, Any], reply: Reply) -> Reply:
        """``reply`` as the server's output settings make it (schema enforced)."""
        fmt = body.get("response_format")
        if self.enforce_schema and isinstance(fmt, Mapping) and fmt.get("type") == "json_schema":
            schema = (fmt.get("json_schema") or {}).get("schema") or {}
            return Reply(json.dumps(_schema_instance(schema)), delay_s=reply.delay_s)
        return reply

    def _next(self, body: dict[str, Any]) -> Behaviour:
        refusal = self._refusal(body)
        if refusal is not None:
            return refusal
        if PROBE_MARKER in message_text(body):
            if callable(self.probe_reply):
                with self._lock:
                    return self.probe_reply(body)
            return self.probe_reply
        with self._lock:
            if self._script_fn is not None:
                return self._script_fn(body)
            if self._queue:
                return self._queue.popleft()
        if self._default is not None:
            return self._default
        return HttpError(500, body={"error": {"message": "fake server: script exhausted",
                                              "type": "fake_server", "param": None,
                                              "code": None}})

    def _models_body(self) -> dict[str, Any]:
        return {"object": "list", "data": [{"id": m, "object": "model", "created": 0,
                                            "owned_by": "fake"} for m in self._models]}

    def _wait(self, delay_s: float) -> bool:
        """Sleep ``delay_s`` unless the server stops first; False when it stopped."""
        return not self._stop.wait(delay_s) if delay_s > 0 else True


class _Handler(BaseHTTPRequestHandler):
    """The fake's request handler; :func:`_make_handler` binds it to one server."""

    fake: OpenAICompatibleServer
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle on, the body waits for the client's
    # delayed ACK (~40 ms per response on keep-alive connections), which skews timings.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        return  # keep test output clean

    def _send(self, status: int, payload: bytes, content_type: str = "application/json",
              headers: Mapping[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout test): nothing to answer

    def _send_chunked(self, status: int, payload: bytes, content_type: str,
                      headers: Mapping[str, str]) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Transfer-Encoding", "chunked")
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            for start in range(0, len(payload), 65536):
                piece = payload[start:start + 65536]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client stopped reading: that is the point

    def _json(self, status: int, body: Any, headers: Mapping[str, str] | None = None) -> None:
        self._send(status, json.dumps(body).encode(), headers=headers)

    def do_GET(self) -> None:
        self.fake._record(RecordedRequest("GET", self.path, _lower(self.headers.items()), None))
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, self.fake._models_body())
        else:
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "fake"}})

    def do_POST(self) -> None:
        self.fake._held(+1)
        try:
            self._post()
        finally:
            self.fake._held(-1)

    def _post(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode("utf-8", "replace")
        self.fake._record(RecordedRequest("POST", self.path, _lower(self.headers.items()), body))
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "fake"}})
            return
        if not isinstance(body, dict):
            self._json(400, {"error": {"message": "body is not a JSON object",
                                       "type": "invalid_request_error"}})
            return
        behaviour = self.fake._next(body)
        if not self.fake._wait(behaviour.delay_s):
            return
        if isinstance(behaviour, Reply):
            number = len(self.fake.requests)
            reply = reply_body(self.fake._shape(body, behaviour),
                               self.fake.served_model or str(body.get("model", "")), number)
            if self.fake.logprobs and body.get("logprobs"):
                reply["choices"][0]["logprobs"] = {"content": [
                    {"token": "A", "logprob": -0.01, "bytes": [65], "top_logprobs": []}]}
            self._json(200, reply)
        elif isinstance(behaviour, HttpError):
            error_body = behaviour.body if behaviour.body is not None else {
                "error": {"message": f"fake HTTP {behaviour.status}", "type": "fake_error",
                          "param": None, "code": None}}
            self._json(behaviour.status, error_body, behaviour.headers)
        elif behaviour.chunked:
            self._send_chunked(behaviour.status, behaviour.body, behaviour.content_type,
                               behaviour.headers)
        else:
            self._send(behaviour.status, behaviour.body, behaviour.content_type,
                       behaviour.headers)


def _make_handler(server: OpenAICompatibleServer) -> type[BaseHTTPRequestHandler]:
    return type("Handler", (_Handler,), {"fake": server})


def _lower(items: Any) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in items}


_PLANNED_WAIT = re.compile(r"waiting ([0-9.]+) s \(([^)]+)\) before retry")


def planned_waits(records: Iterable[logging.LogRecord]) -> list[tuple[float, str]]:
    """The waits a :class:`~eval_assets.openai_chat.ChatClient` announced before retrying, as
    (seconds, why) from its log records (capture ``eval_assets.openai_chat`` at DEBUG); the log
    rounds them to 0.1 s.

    What the client planned, not what a busy machine's clock shows: a test asserts "no wait" or
    "the server's Retry-After" with it instead of bounding wall time from above."""
    return [(float(m.group(1)), m.group(2)) for r in records
            if r.name == "eval_assets.openai_chat" and (m := _PLANNED_WAIT.search(r.getMessage()))]


def wait_for(predicate: Callable[[], bool], timeout_s: float = 5.0) -> bool:
    """Poll ``predicate`` until true or ``timeout_s`` passes (for asserting on async arrivals)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()
