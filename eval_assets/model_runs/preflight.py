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
   every probe's reply;
6. which model answered: each probe reply's ``model`` field is counted and ``GET /v1/models``'s
   listing kept (:mod:`eval_assets.served_model`); another model than the declared one is a
   warning here, and every case's reply is checked the same way.

The first probe must come back as a chat completion with a choice holding text (or reasoning):
an endpoint that answers an HTML page, an empty body or no choices is refused before any case,
naming what it answered. After it, the other probes (1, 2, 4, ... images, the canary, logprobs,
the listing) go out together, a few at a time. A probe answered 429 is no finding: it is asked
again under the client's own retry policy (``Retry-After`` honoured), and still refused it
stops the preflight with nothing recorded, never a capability set to "no".

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
import logging
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

from eval_assets.atomic import write_text_atomic
from eval_assets.chat_request import RequestBuilder, refuses_field
from eval_assets.layout import RUN_ENDPOINT
from eval_assets.model_runs.prompts import image_data_url
from eval_assets.openai_chat import ChatClient
from eval_assets.retry import RetryPolicy
from eval_assets.schemas.chat import ChatResult, Message, TokenUsage
from eval_assets.schemas.endpoint import (
    Endpoint,
    EndpointCapabilities,
    EndpointError,
    ReasoningWhere,
    TokenLimitParam,
)
from eval_assets.served_model import ServedModelWarning, mismatch_message, parse_listing

log = logging.getLogger(__name__)


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

PREFLIGHT_VERSION = 2  # 2: the served model and the /v1/models listing recorded
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
PROBE_WORKERS = 4
"""Probes in flight at once after the first (a small pool: the preflight is a few requests)."""


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
    """The server took the request (2xx) and sent a chat completion back, whatever it held."""
    return (result.status_code is not None and 200 <= result.status_code < 300
            and result.error_category != "malformed_response")


def _answered(result: ChatResult) -> bool:
    """A chat completion whose first choice holds text, or reasoning (a model that spent the
    probe's few tokens thinking still answered)."""
    return _accepted(result) and bool(result.content or result.reasoning) and (
        result.error_category in (None, "empty_response"))


def _what_came(result: ChatResult) -> str:
    """What a reply that is no answer held, in words: its status, why, how its body began."""
    status = f"HTTP {result.status_code}" if result.status_code else "no response"
    began = " ".join((result.raw_response or "").split())[:120]
    return (f"{status}, {result.error_message or 'a choice without text'}"
            + (f"; the body began {began!r}" if began else ""))


def _canary_valid(content: str | None) -> bool:
    try:
        doc = json.loads((content or "").strip())
    except ValueError:
        return False
    return (isinstance(doc, dict) and set(doc) == {"canary", "count"}
            and doc["canary"] == CANARY_VALUE and doc["count"] == 41
            and not isinstance(doc["count"], bool))


class _Prober:
    """Sends the probes (several threads at once) and remembers what they saw."""

    def __init__(self, chat: ChatClient, settings: ClientSettings, where: str) -> None:
        self.chat = chat
        self.model = settings.model
        self.where = where
        self.think_tags = settings.endpoint.think_tags
        # The one request builder, so probes are built as every later request is.
        self.requests = RequestBuilder(settings.endpoint, temperature=0.0)
        self.calls = 0
        self.usage: TokenUsage | None = None
        self.reasoning: ReasoningWhere = "none"
        self.served: Counter[str] = Counter()
        self._notes: list[tuple[int, str]] = []
        self._lock = threading.Lock()

    @property
    def notes(self) -> list[str]:
        """What each probe saw, in the order the probes were planned."""
        return [note for _, note in sorted(self._notes, key=lambda n: n[0])]

    def ask(self, messages: list[Message], label: str, *, tokens: int = PROBE_TOKENS,
            policy: RetryPolicy | None = _PROBE_POLICY, order: int = 0,
            **extra: Any) -> ChatResult:
        # Sent as built, not through RequestBuilder.send: a refusal here is the finding.
        request = self.requests.wire(self.requests.request(messages, max_tokens=tokens, **extra))
        result = self.chat.complete(request, label=f"preflight {label}", policy=policy)
        limited = result.error_category in ("rate_limited", "retry_after_too_long")
        if limited and policy is not None and result.error_category == "rate_limited":
            # A 429 is no finding: asked again as any call is (the client's own retry policy,
            # Retry-After honoured).
            self._saw(result, label, order)
            wait = min(result.retry_after_s or 0.0, self.chat.policy.retry_after_max_s)
            log.debug("preflight %s: rate-limited; waiting %.1f s (Retry-After) before asking "
                      "again under the client's retry policy", label, wait)
            time.sleep(wait)
            result = self.chat.complete(request, label=f"preflight {label}", policy=None)
            limited = result.error_category in ("rate_limited", "retry_after_too_long")
        self._saw(result, label, order)
        if limited:
            raise PreflightError(
                f"{self.where}: the preflight's {label!r} probe was refused as rate-limited "
                f"after {result.attempts} tries ({result.error_message}); a refusal says nothing "
                "of what the endpoint can do, so nothing is recorded and no case was asked. "
                "Fix: rerun once the rate limit has reset, or give this endpoint a larger "
                "limit (a rerun continues where this one stopped)")
        return result

    def _saw(self, result: ChatResult, label: str, order: int) -> None:
        what = result.error_message or (f"HTTP {result.status_code}" if result.status_code
                                         else "no response")
        with self._lock:
            self.calls += result.attempts
            self.usage = add_usage(self.usage, result.usage)
            self._see_reasoning(result)
            if result.served_model:
                self.served[result.served_model] += 1
            self._notes.append((order, f"{label}: {what}"[:300]))

    @property
    def param(self) -> TokenLimitParam:
        """The token-limit parameter the probes send."""
        return self.requests.token_limit_param

    def _see_reasoning(self, result: ChatResult) -> None:
        if result.reasoning_field in ("reasoning_content", "reasoning"):
            # The first field seen stands: probes answer in any order, one field per server.
            if self.reasoning in ("none", "inline"):
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
    """Find the token-limit parameter with a text request; raise when none is answered, or
    when the answer is no chat completion with text (an HTML page, an empty body, no
    choices)."""
    text = _text("Reply with the single letter A.")
    result = prober.ask(text, f"text with {prober.param}", policy=None)
    if not _accepted(result) and refuses_field(result, prober.param):
        prober.requests.use_token_limit_param(_other(prober.param))
        result = prober.ask(text, f"text with {prober.param}", policy=None, order=1)
    if result.status_code is None or not 200 <= result.status_code < 300:
        raise PreflightError(
            f"{where}: the endpoint did not answer a one-line text request "
            f"({result.error_category}: {result.error_message}). Fix: check base_url, model "
            f"and api_key_env, and that the server is up; nothing was asked yet")
    if not _answered(result):
        raise PreflightError(
            f"{where}: the endpoint answered a one-line text request with no chat completion "
            f"holding an answer ({_what_came(result)}), so every case would be wasted; no case "
            "was asked. Fix: point base_url at the server's OpenAI-compatible API (its "
            "/v1 root, where POST /v1/chat/completions answers), and check that the model "
            "replies with text")


def image_counts_probed(needed: int = 1) -> list[int]:
    """The image counts probed, in order: 1, 2, 4 (:data:`MAX_IMAGES_PROBED`), then doubling up
    to ``needed`` (the most a run's case sends in one request), ``needed`` itself last."""
    counts = [1]
    while counts[-1] < max(MAX_IMAGES_PROBED, needed):
        counts.append(min(counts[-1] * 2, max(MAX_IMAGES_PROBED, needed)))
    return counts


def _most_images(prober: _Prober, where: str, replies: dict[int, ChatResult]) -> int:
    """The most images one request was answered with, every smaller count answered too;
    raises when not even one image was taken."""
    most = 0
    for count in sorted(replies):
        if not _accepted(replies[count]):
            if count == 1:
                raise PreflightError(
                    f"{where}: model {prober.model!r} did not accept an image sent as a base64 "
                    f"data: URL ({replies[count].error_message}); every case sends one, so the "
                    f"run stops before asking any. Fix: serve a vision model (llama.cpp: start "
                    f"the server with its --mmproj projector; vLLM: a multimodal model), or "
                    f"point base_url at one")
            break
        most = count
    return most


def _structured(result: ChatResult) -> str:
    if not _accepted(result):
        return "unsupported"
    return "enforced" if _canary_valid(result.content) else "ignored"


_CANARY_FORMAT = {"type": "json_schema", "json_schema": {
    "name": "preflight_canary", "strict": True, "schema": CANARY_SCHEMA}}


def _run_probes(chat: ChatClient, settings: ClientSettings,
                config_sha256: str, images: int = 1) -> EndpointCapabilities:
    where = f"endpoint {settings.endpoint_id or settings.base_url} (model {settings.model!r})"
    start = time.perf_counter()
    prober = _Prober(chat, settings, where)
    _token_limit(prober, where)
    counts = image_counts_probed(images)
    # The rest are independent of one another: sent together, a few at a time, each with its
    # place in the notes (after the text probes).
    with ThreadPoolExecutor(PROBE_WORKERS, thread_name_prefix="preflight") as pool:
        listing = pool.submit(chat.get_json, "models")
        shown = {n: pool.submit(prober.ask, _images_message(n), f"{n} image(s)", order=2 + i)
                 for i, n in enumerate(counts)}
        canary = pool.submit(prober.ask, _text("Say hello in one short sentence."),
                             "canary json_schema", tokens=CANARY_TOKENS,
                             response_format=_CANARY_FORMAT, order=2 + len(counts))
        asked = pool.submit(prober.ask, _text("Reply with A."), "logprobs", logprobs=True,
                            order=3 + len(counts))
        replies = {n: future.result() for n, future in shown.items()}
        canary_reply, logprobs_reply = canary.result(), asked.result()
    error: PreflightError | None = None
    try:
        most = _most_images(prober, where, replies)
    except PreflightError as exc:
        most, error = 0, exc
    listed = parse_listing(listing.result())  # a GET, free: not among the calls
    served = dict(sorted(prober.served.items()))
    notes = prober.notes
    warning = mismatch_message(f"the preflight of {where}", settings.model, served, listed)
    if warning is not None:  # said before any case is asked; each case's reply is checked too
        warnings.warn(warning, ServedModelWarning, stacklevel=2)
        notes.append(warning[:300])
    record = EndpointCapabilities(
        config_sha256=config_sha256, preflight_version=PREFLIGHT_VERSION, model=settings.model,
        endpoint=settings.endpoint_id or settings.base_url, token_limit_param=prober.param,
        images=most > 0, max_images=most, max_images_probed=counts[-1],
        data_url_images=most > 0,
        structured_output=_structured(canary_reply) if error is None else "unsupported",
        reasoning=prober.reasoning,
        logprobs=error is None and _accepted(logprobs_reply) and logprobs_reply.has_logprobs,
        calls=prober.calls, usage=prober.usage,
        seconds=round(time.perf_counter() - start, 3), notes=notes, served_models=served,
        listed_models=listed)
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
