"""Capability preflight: what an endpoint can do, found before a run asks any case.

Servers differ in ways that break an evaluation silently (see the project README, "Preflight,
outcomes and reasoning"), so :func:`preflight` asks a few small requests first and writes what it
found to the run folder's ``endpoint.json`` (:class:`EndpointCapabilities`):

1. the token-limit parameter: a text request with the configured one (``max_tokens`` by
   default); a 400 naming it (OpenAI's reasoning models: "Use 'max_completion_tokens'
   instead") switches to the other, and every later request of the run carries the one that
   worked;
2. images: one base64 ``data:`` URL image (what every case sends), then 2 and 4 while they are
   accepted (and on, doubling, up to the most frames a spatial case of the run shows); no image
   accepted stops the run here, before any case, with :class:`PreflightError`;
3. structured output: a canary ``json_schema`` no model would follow unprompted; ``enforced``
   only when the reply validates (a server that ignores the parameter answers 200 anyway);
4. logprobs, asked once, recorded, never required;
5. where reasoning arrives (``reasoning_content``, ``reasoning``, inline think tags), read off
   every probe's reply.

Cost: 5 to 7 small requests (16 tokens each, the canary up to 64), once per endpoint setting:
the record is reused while its ``config_sha256`` (the hash of the settings that decide how the
endpoint behaves: where it is, the model, the token-limit parameter configured, the think tags)
is unchanged. A failed preflight is written too but never reused. The probes' tokens are summed
in the record's ``usage``: the run prices them as its "probes" cost, and a budget counts them
as spent in the invocation that sent them (``on_probed``).
"""

from __future__ import annotations

import hashlib
import io
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from eval_assets.atomic import write_text_atomic
from eval_assets.chat_request import RequestBuilder, refuses_field
from eval_assets.layout import RUN_ENDPOINT
from eval_assets.model_runs.prompts import image_data_url
from eval_assets.openai_chat import ChatClient, RetryPolicy
from eval_assets.schemas.chat import ChatResult, Message, TokenUsage
from eval_assets.schemas.endpoint import (
    Endpoint,
    EndpointCapabilities,
    EndpointError,
    ReasoningWhere,
    TokenLimitParam,
)


class ClientSettings(Protocol):
    """What the preflight reads of a model's client settings
    (:class:`eval_assets.model_runs.client.ClientSettings` is one): a protocol, so that the client,
    which runs the preflight, is not imported back."""

    @property
    def endpoint(self) -> Endpoint: ...

    @property
    def endpoint_id(self) -> str | None: ...

    @property
    def base_url(self) -> str: ...

    @property
    def model(self) -> str: ...

PREFLIGHT_VERSION = 1
MAX_IMAGES_PROBED = 4
PROBE_TOKENS = 16
CANARY_TOKENS = 64
CANARY_VALUE = "preflight-canary-7f3a"
PROBE_MARKER = "Preflight probe."
"""Opens every probe's text, so logs and test servers can tell probes from cases."""
CANARY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"canary": {"type": "string", "enum": [CANARY_VALUE]},
                   "count": {"type": "integer", "minimum": 41, "maximum": 41}},
    "required": ["canary", "count"],
    "additionalProperties": False,
}
# Probes after the first are retried at most once: a 500 to an image part is an answer here.
_PROBE_POLICY = RetryPolicy(max_retries=1, backoff_base_s=0.2, backoff_max_s=1.0)


class PreflightError(EndpointError):
    """The endpoint cannot run the benchmark (it takes no image, or answers nothing)."""


def _settings_hash(settings: ClientSettings) -> str:
    """sha256 of what decides the endpoint's behaviour (not retries, timeouts, concurrency)."""
    endpoint = settings.endpoint
    document = {"preflight_version": PREFLIGHT_VERSION,
                "endpoint": settings.endpoint_id or settings.base_url.rstrip("/"),
                "model": settings.model, "token_limit_param": endpoint.token_limit_param,
                "think_tags": [list(pair) for pair in endpoint.think_tags]}
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _probe_png(shade: int) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (16, 16), (shade, 128, 255 - shade)).save(buffer, format="PNG")
    return buffer.getvalue()


def _text(prompt: str) -> list[Message]:
    return [{"role": "user", "content": f"{PROBE_MARKER} {prompt}"}]


def _images_message(count: int) -> list[Message]:
    parts: list[dict[str, Any]] = [
        {"type": "text",
         "text": f"{PROBE_MARKER} How many images are there? Reply with the number only."}]
    parts += [{"type": "image_url", "image_url": {"url": image_data_url(_probe_png(40 * i))}}
              for i in range(count)]
    return [{"role": "user", "content": parts}]


def _accepted(result: ChatResult) -> bool:
    """The server took the request (2xx), whatever the reply held."""
    return result.status_code is not None and 200 <= result.status_code < 300


def _canary_valid(content: str | None) -> bool:
    try:
        doc = json.loads((content or "").strip())
    except ValueError:
        return False
    return (isinstance(doc, dict) and set(doc) == {"canary", "count"}
            and doc["canary"] == CANARY_VALUE and doc["count"] == 41
            and not isinstance(doc["count"], bool))


class _Prober:
    """Sends the probes and remembers what they saw."""

    def __init__(self, chat: ChatClient, settings: ClientSettings) -> None:
        self.chat = chat
        self.model = settings.model
        self.think_tags = settings.endpoint.think_tags
        # The one request builder, so probes are built as every later request is.
        self.requests = RequestBuilder(settings.endpoint, temperature=0.0)
        self.calls = 0
        self.usage: TokenUsage | None = None
        self.notes: list[str] = []
        self.reasoning: ReasoningWhere = "none"

    def ask(self, messages: list[Message], label: str, *, tokens: int = PROBE_TOKENS,
            policy: RetryPolicy | None = _PROBE_POLICY, **extra: Any) -> ChatResult:
        # Sent as built, not through RequestBuilder.send: a refusal here is the finding.
        request = self.requests.wire(self.requests.request(messages, max_tokens=tokens, **extra))
        self.calls += 1
        result = self.chat.complete(request, label=f"preflight {label}", policy=policy)
        self.usage = add_usage(self.usage, result.usage)
        self._see_reasoning(result)
        what = result.error_message or (f"HTTP {result.status_code}" if result.status_code
                                         else "no response")
        self.notes.append(f"{label}: {what}"[:300])
        return result

    @property
    def param(self) -> TokenLimitParam:
        """The token-limit parameter the probes send."""
        return self.requests.token_limit_param

    def _see_reasoning(self, result: ChatResult) -> None:
        if result.reasoning_field in ("reasoning_content", "reasoning"):
            self.reasoning = result.reasoning_field  # type: ignore[assignment]
        elif self.reasoning == "none" and any(
                opening in (result.content or "") for opening, _ in self.think_tags):
            self.reasoning = "inline"


def add_usage(total: TokenUsage | None, more: TokenUsage | None) -> TokenUsage | None:
    """``total`` and ``more`` summed field by field (a field neither reports stays None)."""
    if more is None or total is None:
        return more or total

    def plus(a: int | None, b: int | None) -> int | None:
        return None if a is None and b is None else (a or 0) + (b or 0)

    return TokenUsage(prompt_tokens=plus(total.prompt_tokens, more.prompt_tokens),
                      completion_tokens=plus(total.completion_tokens, more.completion_tokens),
                      total_tokens=plus(total.total_tokens, more.total_tokens),
                      reasoning_tokens=plus(total.reasoning_tokens, more.reasoning_tokens))


def _other(param: TokenLimitParam) -> TokenLimitParam:
    return "max_completion_tokens" if param == "max_tokens" else "max_tokens"


def _token_limit(prober: _Prober, where: str) -> None:
    """Find the token-limit parameter with a text request; raise when none is answered."""
    text = _text("Reply with the single letter A.")
    result = prober.ask(text, f"text with {prober.param}", policy=None)
    if not _accepted(result) and refuses_field(result, prober.param):
        prober.requests.use_token_limit_param(_other(prober.param))
        result = prober.ask(text, f"text with {prober.param}", policy=None)
    if not _accepted(result):
        raise PreflightError(
            f"{where}: the endpoint did not answer a one-line text request "
            f"({result.error_category}: {result.error_message}). Fix: check base_url, model "
            f"and api_key_env, and that the server is up; nothing was asked yet")


def image_counts_probed(needed: int = 1) -> list[int]:
    """The image counts probed, in order: 1, 2, 4 (:data:`MAX_IMAGES_PROBED`), then doubling up
    to ``needed`` (the most a run's case sends in one request), ``needed`` itself last."""
    counts = [1]
    while counts[-1] < max(MAX_IMAGES_PROBED, needed):
        counts.append(min(counts[-1] * 2, max(MAX_IMAGES_PROBED, needed)))
    return counts


def _images(prober: _Prober, where: str, needed: int = 1) -> int:
    """The most images one request was answered with (0: not even one)."""
    most = 0
    for count in image_counts_probed(needed):
        result = prober.ask(_images_message(count), f"{count} image(s)")
        if not _accepted(result):
            if count == 1:
                raise PreflightError(
                    f"{where}: model {prober.model!r} did not accept an image sent as a base64 "
                    f"data: URL ({result.error_message}); every case sends one, so the run "
                    f"stops before asking any. Fix: serve a vision model (llama.cpp: start the "
                    f"server with its --mmproj projector; vLLM: a multimodal model), or point "
                    f"base_url at one")
            break
        most = count
    return most


def _structured(prober: _Prober) -> str:
    fmt = {"type": "json_schema",
           "json_schema": {"name": "preflight_canary", "strict": True, "schema": CANARY_SCHEMA}}
    result = prober.ask(_text("Say hello in one short sentence."), "canary json_schema",
                        tokens=CANARY_TOKENS, response_format=fmt)
    if not _accepted(result):
        return "unsupported"
    return "enforced" if _canary_valid(result.content) else "ignored"


def _run_probes(chat: ChatClient, settings: ClientSettings,
                config_sha256: str, images: int = 1) -> EndpointCapabilities:
    where = f"endpoint {settings.endpoint_id or settings.base_url} (model {settings.model!r})"
    start = time.perf_counter()
    prober = _Prober(chat, settings)
    _token_limit(prober, where)
    error: PreflightError | None = None
    try:
        most = _images(prober, where, images)
    except PreflightError as exc:
        most, error = 0, exc
    structured = _structured(prober) if error is None else "unsupported"
    logprobs = False
    if error is None:
        result = prober.ask(_text("Reply with A."), "logprobs", logprobs=True)
        logprobs = _accepted(result) and result.has_logprobs
    record = EndpointCapabilities(
        config_sha256=config_sha256, preflight_version=PREFLIGHT_VERSION, model=settings.model,
        endpoint=settings.endpoint_id or settings.base_url, token_limit_param=prober.param,
        images=most > 0, max_images=most,
        max_images_probed=image_counts_probed(images)[-1],
        data_url_images=most > 0, structured_output=structured, reasoning=prober.reasoning,
        logprobs=logprobs, calls=prober.calls, usage=prober.usage,
        seconds=round(time.perf_counter() - start, 3), notes=prober.notes)
    if error is not None:
        raise PreflightError(f"{error} (probes recorded in {RUN_ENDPOINT})", record)
    return record


def load_capabilities(run_dir: Path) -> EndpointCapabilities | None:
    """The run folder's ``endpoint.json``, or None when absent or unreadable."""
    path = Path(run_dir) / RUN_ENDPOINT
    try:
        return EndpointCapabilities.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _write(run_dir: Path, record: EndpointCapabilities) -> None:
    text = json.dumps(record.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"
    write_text_atomic(Path(run_dir) / RUN_ENDPOINT, text)


def preflight(chat: ChatClient, settings: ClientSettings, run_dir: Path,
              images: int = 1,
              on_probed: Callable[[EndpointCapabilities], None] | None = None,
              ) -> EndpointCapabilities:
    """The endpoint's capabilities: ``run_dir``'s ``endpoint.json`` when still valid, else probed.

    ``settings`` is the model's :class:`~eval_assets.model_runs.client.ClientSettings`;
    ``images`` is the most a case of the run sends in one request: a stored record that probed
    fewer, all of them accepted, is probed again up to it (spatial cases show several frames).
    ``on_probed`` is called with the record when probes were sent (not when the stored record
    is reused), failed preflights included: a budget counts what they cost.
    Raises :class:`PreflightError` (after writing what the probes saw) when the endpoint answers
    no text request or takes no image.
    """
    config_sha256 = _settings_hash(settings)
    stored = load_capabilities(run_dir)
    if (stored is not None and stored.config_sha256 == config_sha256 and stored.images
            and stored.preflight_version == PREFLIGHT_VERSION
            and (stored.max_images < stored.max_images_probed
                 or stored.max_images_probed >= images)):
        return stored
    try:
        record = _run_probes(chat, settings, config_sha256, images)
    except PreflightError as exc:
        if len(exc.args) > 1 and isinstance(exc.args[1], EndpointCapabilities):
            _write(run_dir, exc.args[1])
            if on_probed is not None:
                on_probed(exc.args[1])
            raise PreflightError(exc.args[0]) from None
        raise
    _write(run_dir, record)
    if on_probed is not None:
        on_probed(record)
    return record
