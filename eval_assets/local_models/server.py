"""``eval-assets serve``: an OpenAI-compatible chat server for the local baselines.

Speaks the subset of the API the VLM client and the LLM judge use: ``POST /v1/chat/completions``
(non-streaming, with an optional ``response_format``, ``temperature`` in [0, 2] and integer
``seed``) and ``GET /v1/models``. A ``temperature`` above 0 samples, reproducibly for the same
request and ``seed``; 0, or none sent (unlike OpenAI's default of 1: a fixture answers the same
way unless asked to sample), is the model's deterministic reply. A ``json_schema``
response format outside the subset the local models build (see
:func:`eval_assets.local_models.response_format.parse_response_format`) is a 400, never a free-text
reply. Bound to 127.0.0.1 by default; it is a benchmark fixture, not a service.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from eval_assets.hashing import text_sha256
from eval_assets.local_models.base import MAX_TEMPERATURE, LocalModel
from eval_assets.local_models.registry import load_local_model
from eval_assets.local_models.response_format import (
    UnsupportedResponseFormat,
    parse_response_format,
)

DEFAULT_MAX_TOKENS = 256
_STARTUP_TIMEOUT_S = 60.0


def _error(status: int, message: str, kind: str, code: str | None = None,
           param: str | None = None) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind, "param": param,
                                   "code": code}}, status_code=status)


@dataclass(frozen=True)
class _Checked:
    """The parts of a valid request a model is called with."""

    messages: list[dict[str, Any]]
    max_tokens: int
    response_format: dict[str, Any] | None
    temperature: float
    seed: int | None


def _validate(body: Any, model_id: str) -> _Checked | JSONResponse:
    """The messages, max_tokens, response_format, temperature and seed of a request, or the
    error to send."""
    if not isinstance(body, dict):
        return _error(400, "request body must be a JSON object", "invalid_request_error")
    if body.get("model") != model_id:
        return _error(404, f"model {body.get('model')!r} is not served here; this server serves "
                      f"{model_id!r}", "invalid_request_error", "model_not_found")
    if body.get("stream"):
        return _error(400, "streaming is not supported by this server; send stream=false",
                      "invalid_request_error")
    messages = body.get("messages")
    if (not isinstance(messages, list) or not messages
            or not all(isinstance(m, dict) and "role" in m for m in messages)):
        return _error(400, "'messages' must be a non-empty list of {role, content} objects",
                      "invalid_request_error")
    max_tokens = body.get("max_tokens", body.get("max_completion_tokens", DEFAULT_MAX_TOKENS))
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        return _error(400, "'max_tokens' must be a positive integer", "invalid_request_error")
    temperature = body.get("temperature")
    temperature = 0.0 if temperature is None else temperature
    if (not isinstance(temperature, int | float) or isinstance(temperature, bool)
            or not 0 <= temperature <= MAX_TEMPERATURE):
        return _error(400, f"'temperature' must be a number from 0 to {MAX_TEMPERATURE:g}, not "
                      f"{temperature!r}", "invalid_request_error", param="temperature")
    seed = body.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        return _error(400, f"'seed' must be an integer or null, not {seed!r}",
                      "invalid_request_error", param="seed")
    response_format = body.get("response_format")
    try:
        # Checked here too, so no model ever answers a format it would not honour.
        parse_response_format(response_format)
    except UnsupportedResponseFormat as exc:
        return _error(400, str(exc), "invalid_request_error", param="response_format")
    return _Checked(messages, max_tokens, response_format, float(temperature), seed)


def create_app(model: LocalModel) -> Starlette:
    """A Starlette app serving ``model`` under its name."""

    async def list_models(request: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [
            {"id": model.name, "object": "model", "created": 0, "owned_by": "eval-assets"}]})

    async def chat_completions(request: Request) -> JSONResponse:
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "request body is not valid JSON", "invalid_request_error")
        checked = _validate(body, model.name)
        if isinstance(checked, JSONResponse):
            return checked
        messages = checked.messages
        # Model calls block (SmolLM2 takes ~0.3 s); keep the event loop free for other requests.
        try:
            reply = await run_in_threadpool(model.complete, messages, checked.max_tokens,
                                            checked.response_format,
                                            temperature=checked.temperature, seed=checked.seed)
        except UnsupportedResponseFormat as exc:
            return _error(400, str(exc), "invalid_request_error", param="response_format")
        request_id = text_sha256(repr(messages))[:24]
        return JSONResponse({
            "id": f"chatcmpl-{request_id}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model.name,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": reply.text}}],
            "usage": {"prompt_tokens": reply.prompt_tokens,
                      "completion_tokens": reply.completion_tokens,
                      "total_tokens": reply.prompt_tokens + reply.completion_tokens},
        })

    return Starlette(routes=[
        Route("/v1/models", list_models, methods=["GET"]),
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
    ])


def serve(model: str, host: str = "127.0.0.1", port: int = 8000, seed: int = 0) -> None:
    """Load the local model ``model`` and serve it until interrupted (blocking)."""
    app = create_app(load_local_model(model, seed))
    uvicorn.run(app, host=host, port=port, log_level="info")


@contextlib.contextmanager
def serve_in_thread(model: str | LocalModel = "random", port: int = 0, seed: int = 0,
                    host: str = "127.0.0.1") -> Iterator[str]:
    """Serve a local model from a background thread; yields its base URL (``.../v1``).

    ``model`` is a name from :data:`~eval_assets.local_models.registry.LOCAL_MODELS` (built with
    ``seed``) or an already loaded model, which lets one model load serve several servers.
    ``port=0`` picks a free port. The model is loaded before the server starts, so the URL is
    ready to use when it is yielded; the server stops when the block exits.
    """
    local = load_local_model(model, seed) if isinstance(model, str) else model
    name = local.name
    app = create_app(local)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning",
                                           lifespan="off"))
    thread = threading.Thread(target=server.run, name=f"serve-{name}", daemon=True)
    thread.start()
    deadline = time.monotonic() + _STARTUP_TIMEOUT_S
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError(f"the {name!r} server on {host}:{port} failed to start; "
                               f"is the port in use? choose another with port=")
        if time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError(f"the {name!r} server did not start within "
                               f"{_STARTUP_TIMEOUT_S:.0f} s")
        time.sleep(0.01)
    try:
        bound_port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://{host}:{bound_port}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
