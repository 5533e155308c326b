"""The one client for OpenAI-compatible ``/chat/completions`` endpoints, with one retry policy.

Every caller uses :class:`ChatClient`, opened from its :class:`eval_assets.endpoint.Endpoint`:
the models under test (:class:`eval_assets.model_runs.client.OpenAIVLMClient`), the LLM judge
(:class:`eval_assets.metrics.judge_client.OpenAIJudge`) and the question author
(:class:`eval_assets.vqa.authors.VLMAuthor`). A call never raises: it returns a
:class:`eval_assets.schemas.chat.ChatResult` holding the reply text, or a failure with its category,
and in both cases what it cost (tokens the server reported, seconds, attempts).

Retries (:class:`RetryPolicy`): connection errors, timeouts and HTTP 408, 409, 425, 429 and 5xx are
tried again, up to ``max_retries`` times (a retry at a positive ``Retry-After`` counts half); any
other status, and a 200 that is not a chat completion, fail at once. Between tries the client waits
what the server's ``Retry-After`` asks (seconds or an HTTP date, or ``retry-after-ms``), else an
exponential backoff whose jitter comes from a generator seeded by the request itself (or the
caller's ``jitter_key``): no global random state, and the same request waits the same.
``Retry-After: 0`` (or a past date) is no hint: the backoff applies. A 429 without a hint waits a
backoff growing fourfold, jitter added (the defaults: 81 s or more over the four retries, past a
minute's rate-limit window). A run's adaptive controller may hold each retry further
(:attr:`ChatClient.retry_wait`), and make a 429's retry free while it paces the limiter
(:attr:`ChatClient.retry_charge`: waiting one's turn at a rate limit is no failed attempt). A
wait of ``announce_wait_s`` or more is logged as a warning with its length. A ``Retry-After``
beyond ``retry_after_max_s`` is not shortened: the call fails at once as ``retry_after_too_long``,
naming the wait asked for.

Replies are read in chunks up to a cap (:func:`default_reply_limits`, or the caller's
``max_reply_bytes`` / ``max_reply_chars``): a body or message over it is a ``reply_too_large``
failure, never an answer, and the rest of the body is not downloaded.

The transport is ``httpx2`` (what the ``openai`` SDK installs; plain ``httpx`` where that is what is
installed), imported when the first client is built, so importing this module stays cheap.
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from eval_assets.hashing import bytes_sha256
from eval_assets.retry import RetryPolicy, backoff_delay, is_retryable_status, parse_retry_after
from eval_assets.schemas.chat import ChatErrorCategory, ChatResult, TokenUsage
from eval_assets.schemas.endpoint import (
    NO_KEY,
    Endpoint,
    EndpointError,
)

log = logging.getLogger(__name__)

AttemptObserver = Callable[[int | None, float, Mapping[str, str]], None]
"""Told of every HTTP attempt: its status (None: no reply), latency and rate-limit headers."""

_PACING_HEADERS = ("retry-after", "retry-after-ms", "x-ratelimit-limit-requests",
                   "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests")


_MAX_ERROR_CHARS = 500
_MAX_RAW_CHARS = 2000
_ERROR_BODY_BYTES = 65536  # what is read of an error body (its message is all we keep)
_CHUNK_BYTES = 65536


def default_reply_limits(max_tokens: int | None) -> tuple[int, int]:
    """The reply cap ``(body bytes, message characters)`` for a request of ``max_tokens``.

    Generous: 64 characters per token (a token is 3-4 characters of ordinary text) with 4,096 at
    least, and 64 KiB of JSON envelope plus 8 bytes per character (escapes). A request without
    ``max_tokens`` gets the cap of 4,096 tokens. A 256-token request: 16,384 characters and
    192 KiB; a reply beyond either cannot come from a server that honours ``max_tokens``.
    """
    tokens = max_tokens if max_tokens is not None and max_tokens > 0 else 4096
    chars = max(4096, 64 * tokens)
    return 65536 + 8 * chars, chars


def _httpx() -> ModuleType:
    try:
        import httpx2 as httpx
    except ImportError:  # an older openai SDK brings httpx instead
        import httpx  # type: ignore[no-redef,import-not-found]
    return httpx


@dataclass(frozen=True)
class _Attempt:
    """One HTTP try: a reply, or a failure and whether another try may help."""

    content: str | None = None
    finish_reason: str | None = None
    usage: TokenUsage | None = None
    status_code: int | None = None
    category: ChatErrorCategory | None = None
    message: str | None = None
    raw: str | None = None
    retryable: bool = False
    retry_after_s: float | None = None
    reasoning: str | None = None
    reasoning_field: str | None = None
    refusal: str | None = None
    has_logprobs: bool = False
    served_model: str | None = None


class _DeadlinePassed(Exception):
    """The body kept coming for longer than ``timeout_s``."""


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more chars]"


def _seconds(value: float) -> str:
    return f"{value:.1f} s" if value < 100 else f"{value:.0f} s"


def _usage(value: Any) -> TokenUsage | None:
    if not isinstance(value, Mapping):
        return None

    def count(key: str) -> int | None:
        number = value.get(key)
        return number if isinstance(number, int) and not isinstance(number, bool) else None

    details = value.get("completion_tokens_details")
    reasoning = details.get("reasoning_tokens") if isinstance(details, Mapping) else None
    return TokenUsage(prompt_tokens=count("prompt_tokens"),
                      completion_tokens=count("completion_tokens"),
                      total_tokens=count("total_tokens"),
                      reasoning_tokens=reasoning if isinstance(reasoning, int)
                      and not isinstance(reasoning, bool) else None)


# Where servers put reasoning beside the content: vLLM, DeepSeek and LM Studio used
# ``reasoning_content``; vLLM renamed it ``reasoning`` (and later dropped it).
REASONING_FIELDS = ("reasoning_content", "reasoning")


def _reasoning(message: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """The reasoning text of a message and the field it came in (``(None, None)``: none)."""
    for name in REASONING_FIELDS:
        text = _message_text(message.get(name))
        if text:
            return text, name
    return None, None


def _message_text(content: Any) -> str | None:
    """A message's text: a string, or the text parts of a list of content parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, Mapping)]
        texts = [p for p in parts if isinstance(p, str)]
        return "".join(texts) if texts else None
    return None


def _error_text(raw: bytes) -> str:
    """The message of an error body: OpenAI's ``{"error": {"message": ...}}`` or the text."""
    text = raw.decode("utf-8", "replace").strip()
    try:
        doc = json.loads(text)
    except ValueError:
        return text or "(empty body)"
    if isinstance(doc, Mapping):
        error = doc.get("error", doc.get("detail"))
        if isinstance(error, Mapping) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(error, str):
            return error
    return text


def _status_category(status: int) -> ChatErrorCategory:
    if status == 429:
        return "rate_limited"
    if status == 408:
        return "timeout"
    if status >= 500:
        return "server_error"
    return "client_error"


class ChatClient:
    """An OpenAI-compatible chat-completions endpoint: one :meth:`complete` per logical call.

    Thread-safe: one instance serves every worker (the connection pool is shared). ``api_key``
    is sent as a bearer token (none when ``None``) and replaced by ``[REDACTED]`` in every
    message the client writes. Reply caps left ``None`` follow each request's ``max_tokens``
    (:func:`default_reply_limits`).
    """

    def __init__(self, base_url: str, *, api_key: str | None = None, timeout_s: float = 60.0,
                 policy: RetryPolicy | None = None, max_reply_bytes: int | None = None,
                 max_reply_chars: int | None = None, max_connections: int = 100) -> None:
        if timeout_s <= 0:
            raise ValueError(f"timeout_s is {timeout_s}; it must be more than 0")
        for name, value in (("max_reply_bytes", max_reply_bytes),
                            ("max_reply_chars", max_reply_chars)):
            if value is not None and value < 1:
                raise ValueError(f"{name} is {value}; it must be at least 1 (or None)")
        self.base_url = base_url.rstrip("/")
        self.url = f"{self.base_url}/chat/completions"
        self.timeout_s = timeout_s
        self.policy = policy or RetryPolicy()
        self.max_reply_bytes = max_reply_bytes
        self.max_reply_chars = max_reply_chars
        self._api_key = api_key or ""
        # Set by a run's adaptive concurrency controller; the client's own behaviour is the same.
        self.observer: AttemptObserver | None = None
        # Also set by the controller: waits out each retry's wait itself (given the seconds the
        # call asks, returns the seconds waited), so that it knows which requests are only
        # waiting, and holds the retry further where it spaces requests at a learnt or announced
        # rate or lets one probe at a time test a rate limiter that gave no hint.
        self.retry_wait: Callable[[float], float] | None = None
        # Also set by the controller: what a retry after this thread's last attempt costs of
        # max_retries, given what it would cost (0 for a 429 while the controller paces the
        # limiter and the endpoint answers others: waiting one's turn is no failed attempt).
        self.retry_charge: Callable[[float], float] | None = None
        self.meter: Callable[[ChatResult], object] = lambda _: None  # a run's ledger
        self._seen = threading.local()
        httpx = _httpx()
        self._httpx = httpx
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "User-Agent": "eval-assets"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._http = httpx.Client(
            headers=headers, timeout=httpx.Timeout(timeout_s), follow_redirects=False,
            limits=httpx.Limits(max_connections=max_connections,
                                max_keepalive_connections=max_connections))

    def __repr__(self) -> str:
        return f"ChatClient({self.base_url!r})"

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def reply_limits(self, max_tokens: int | None) -> tuple[int, int]:
        """The ``(bytes, characters)`` cap of a reply to a request of ``max_tokens``.

        A configured character cap and no byte cap: the bytes follow the characters (64 KiB
        plus 8 bytes per character, as in :func:`default_reply_limits`).
        """
        default_bytes, default_chars = default_reply_limits(max_tokens)
        chars = self.max_reply_chars or default_chars
        if self.max_reply_bytes is not None:
            return self.max_reply_bytes, chars
        return (65536 + 8 * chars if self.max_reply_chars else default_bytes), chars

    def get_json(self, path: str) -> Any:
        """The JSON of ``GET base_url/path`` (``models``), or None: an optional route failed."""
        with contextlib.suppress(Exception):
            response = self._http.get(f"{self.base_url}/{path}")
            return response.json() if response.is_success else None
        return None

    # --- one logical call --------------------------------------------------------------------
    def complete(self, request: Mapping[str, Any], *, label: str = "",
                 jitter_key: str | None = None, policy: RetryPolicy | None = None) -> ChatResult:
        """POST ``request`` (a chat-completions body) with retries; never raises.

        ``label`` names the call in log lines; ``jitter_key`` seeds the backoff jitter (default:
        the request's SHA-256); ``policy`` replaces the client's retry policy for this call.
        """
        body = json.dumps(request, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        max_tokens = request.get("max_tokens", request.get("max_completion_tokens"))
        max_bytes, max_chars = self.reply_limits(max_tokens if isinstance(max_tokens, int)
                                                 else None)
        seed = jitter_key if jitter_key is not None else bytes_sha256(body)
        rng = random.Random(seed)
        policy = policy or self.policy
        where = f"{self.base_url}" + (f" [{label}]" if label else "")
        start = time.perf_counter()
        attempts, waited = 0, 0.0
        spent = 0.0  # of max_retries: a retry the server scheduled costs half (see below)
        while True:
            attempts += 1
            t0 = time.perf_counter()
            attempt = self._attempt(body, max_bytes, max_chars)
            latency = time.perf_counter() - t0
            if self.observer is not None:
                self.observer(attempt.status_code, latency, getattr(self._seen, "headers", {}))
            cost = {"latency_s": latency, "attempts": attempts, "waited_s": waited,
                    "wall_s": time.perf_counter() - start}
            if attempt.category is None:
                return self._result(attempt, cost)
            log.debug("%s: attempt %d failed: %s", where, attempts, self._redact(attempt.message))
            hinted = attempt.retry_after_s is not None and attempt.retry_after_s > 0
            # A retry at the wait the server named costs half a retry: the server said when it
            # can answer, so the call follows it twice as far (a gateway failing 30 % of
            # requests with Retry-After then fails one call in 50,000 with the defaults, not
            # one in 400). The controller may say it costs nothing (retry_charge).
            charge = 0.5 if hinted else 1.0
            if attempt.retryable and self.retry_charge is not None:
                charge = self.retry_charge(charge)
            if not attempt.retryable or spent + charge > policy.max_retries:
                return self._result(attempt, cost)
            spent += charge
            # Retry-After: 0 (or a date already past) is no hint: retrying at once is the storm
            # the server is refusing, so it gets the backoff like a missing or garbled header.
            if attempt.retry_after_s is not None and attempt.retry_after_s > 0:
                wait, why = attempt.retry_after_s, "Retry-After"
                if wait > policy.retry_after_max_s:
                    message = (f"the server asked to wait {_seconds(wait)} before retrying "
                               f"(Retry-After), more than retry_after_max_s="
                               f"{policy.retry_after_max_s:g}; not waiting. {attempt.message}")
                    log.warning("%s: %s", where, self._redact(message))
                    return self._result(attempt, cost, error_category="retry_after_too_long",
                                        error_message=_truncate(message, 2 * _MAX_ERROR_CHARS))
            else:
                wait, why = backoff_delay(attempts, policy, rng,
                                          rate_limited=attempt.status_code == 429), "backoff"
            level = logging.WARNING if wait >= policy.announce_wait_s else logging.DEBUG
            log.log(level, "%s: %s; waiting %s (%s) before retry %d of %d", where,
                    self._redact(attempt.message), _seconds(wait), why, attempts,
                    policy.max_retries)
            if self.retry_wait is not None:
                waited += self.retry_wait(wait)
            else:
                time.sleep(wait)
                waited += wait

    def _result(self, attempt: _Attempt, cost: Mapping[str, Any], **changes: Any) -> ChatResult:
        fields: dict[str, Any] = {
            "content": attempt.content, "finish_reason": attempt.finish_reason,
            "usage": attempt.usage, "status_code": attempt.status_code,
            "error_category": attempt.category, "error_message": attempt.message,
            "raw_response": attempt.raw, "reasoning": attempt.reasoning,
        "reasoning_field": attempt.reasoning_field, "refusal": attempt.refusal,
        "has_logprobs": attempt.has_logprobs, "served_model": attempt.served_model,
        "retry_after_s": attempt.retry_after_s, **cost, **changes}
        fields.update({k: self._redact(fields[k]) for k in ("error_message", "raw_response")})
        self.meter(result := ChatResult(**fields))  # each complete() returns here: counted once
        return result

    # --- one HTTP try -------------------------------------------------------------------------
    def _redact(self, text: str | None) -> str | None:
        # A short placeholder ("local") is no secret, and replacing it would garble the text.
        if text is None or len(self._api_key) < 8:
            return text
        return text.replace(self._api_key, "[REDACTED]")

    def _read(self, response: Any, limit: int, deadline: float) -> tuple[bytes, bool]:
        """Up to ``limit`` bytes of the body and whether there was more (not read)."""
        chunks: list[bytes] = []
        size = 0
        stream: Iterator[bytes] = response.iter_bytes(_CHUNK_BYTES)
        for chunk in stream:
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                return b"".join(chunks)[:limit], True
            if time.perf_counter() > deadline:
                raise _DeadlinePassed
        return b"".join(chunks), False

    def _attempt(self, body: bytes, max_bytes: int, max_chars: int) -> _Attempt:
        httpx = self._httpx
        deadline = time.perf_counter() + self.timeout_s
        self._seen.headers = {}
        try:
            with self._http.stream("POST", self.url, content=body) as response:
                status = response.status_code
                if self.observer is not None:
                    self._seen.headers = {k: response.headers[k] for k in _PACING_HEADERS
                                          if k in response.headers}
                if not 200 <= status < 300:
                    raw, _ = self._read(response, _ERROR_BODY_BYTES, deadline)
                    retryable = is_retryable_status(status)
                    return _Attempt(
                        status_code=status, category=_status_category(status),
                        message=_truncate(f"HTTP {status}: {_error_text(raw)}", _MAX_ERROR_CHARS),
                        retryable=retryable,
                        retry_after_s=parse_retry_after(response.headers) if retryable else None)
                declared = response.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > max_bytes:
                    return _Attempt(status_code=status, category="reply_too_large", message=(
                        f"the reply body has {int(declared)} bytes (Content-Length), more than "
                        f"max_reply_bytes={max_bytes}; it was not read"))
                data, more = self._read(response, max_bytes, deadline)
                if more:
                    return _Attempt(status_code=status, category="reply_too_large", message=(
                        f"the reply body is longer than max_reply_bytes={max_bytes}; it was not "
                        f"read past that"))
        except (httpx.TimeoutException, _DeadlinePassed) as exc:
            detail = f": {type(exc).__name__}" if isinstance(exc, httpx.TimeoutException) else (
                ": the body was still arriving")
            return _Attempt(category="timeout", retryable=True,
                            message=f"Timeout after {self.timeout_s:g}s{detail}")
        except httpx.TransportError as exc:
            return _Attempt(category="connection_error", retryable=True, message=_truncate(
                f"connection error: {type(exc).__name__}: {exc}", _MAX_ERROR_CHARS))
        except Exception as exc:  # a bug or an odd library error must not sink the run
            return _Attempt(category="unexpected_error", message=_truncate(
                f"{type(exc).__name__}: {exc}", _MAX_ERROR_CHARS))
        return _read_completion(data, status, max_chars)


def _read_completion(data: bytes, status: int, max_chars: int) -> _Attempt:
    """The first choice's text and the usage of a 200 body, or why there is none."""
    def malformed(why: str) -> _Attempt:
        raw = data.decode("utf-8", "replace")
        return _Attempt(status_code=status, category="malformed_response",
                        message=f"malformed response: {why}",
                        raw=_truncate(raw, _MAX_RAW_CHARS))

    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        return malformed(f"the body is not valid JSON ({exc})")
    if not isinstance(doc, dict):
        return malformed(f"the body is a JSON {type(doc).__name__}, not a chat completion")
    choices = doc.get("choices")
    if not isinstance(choices, list) or not choices:
        return malformed("the body has no 'choices'")
    first = choices[0] if isinstance(choices[0], Mapping) else {}
    message = first.get("message")
    message = message if isinstance(message, Mapping) else {}
    content = _message_text(message.get("content"))
    finish = first.get("finish_reason")
    finish_reason = finish if isinstance(finish, str) else None
    usage = _usage(doc.get("usage"))
    reasoning, reasoning_field = _reasoning(message)
    refusal = message.get("refusal") if isinstance(message.get("refusal"), str) else None
    served = doc.get("model")
    extra: dict[str, Any] = {"reasoning": reasoning, "reasoning_field": reasoning_field,
                             "refusal": refusal, "has_logprobs": first.get("logprobs") is not None,
                             "served_model": served if isinstance(served, str) else None}
    if content is None:
        return _Attempt(status_code=status, category="empty_response", usage=usage,
                        finish_reason=finish_reason,
                        message="the first choice has no message content"
                        + (" (only reasoning)" if reasoning else ""),
                        raw=_truncate(data.decode("utf-8", "replace"), _MAX_RAW_CHARS), **extra)
    if len(content) > max_chars:
        return _Attempt(status_code=status, category="reply_too_large", usage=usage,
                        finish_reason=finish_reason, message=(
                            f"the reply has {len(content)} characters, more than "
                            f"max_reply_chars={max_chars}; it is not an answer"))
    return _Attempt(content=content, finish_reason=finish_reason, usage=usage,
                    status_code=status, **extra)


# --- opening an endpoint ---------------------------------------------------------------------
def retry_policy(endpoint: Endpoint) -> RetryPolicy:
    """The retry policy an endpoint asks for."""
    return RetryPolicy(max_retries=endpoint.max_retries, backoff_base_s=endpoint.backoff_base_s,
                       backoff_max_s=endpoint.backoff_max_s, jitter=endpoint.jitter,
                       retry_after_max_s=endpoint.retry_after_max_s,
                       announce_wait_s=endpoint.announce_wait_s)


def chat_client(endpoint: Endpoint, api_key: str, *,
                max_reply_chars: int | None = None) -> ChatClient:
    """A client for the endpoint's ``base_url``; ``max_reply_chars`` overrides its reply cap."""
    if endpoint.base_url is None:
        raise EndpointError(f"endpoint {endpoint.api_model!r} has no base_url; open it with "
                            f"open_endpoint() to start the served model {endpoint.serve!r}")
    return ChatClient(endpoint.base_url, api_key=api_key, timeout_s=endpoint.timeout_s,
                      policy=retry_policy(endpoint), max_reply_bytes=endpoint.max_reply_bytes,
                      max_reply_chars=max_reply_chars or endpoint.max_reply_chars)


@dataclass(frozen=True)
class OpenEndpoint:
    """An endpoint being called: its client, and the endpoint as it is reached.

    ``endpoint.base_url`` is the URL actually called; ``endpoint_id`` names a served model stably
    (``serve://random?seed=0``), since its URL is a free port that changes between runs.
    """

    endpoint: Endpoint
    endpoint_id: str | None
    api_key: str
    chat: ChatClient


@contextlib.contextmanager
def open_endpoint(endpoint: Endpoint, *, base_url: str | None = None,
                  max_reply_chars: int | None = None) -> Iterator[OpenEndpoint]:
    """Open ``endpoint``: call its ``base_url``, or serve its local model in this process.

    The one way every caller (models under test, judge) opens an endpoint. ``base_url`` (e.g.
    ``--base-url``) replaces the endpoint's. A served model needs no key (its ``api_key_env`` is
    dropped); any other endpoint reads the key from ``api_key_env``, and an unset variable is an
    :class:`~eval_assets.schemas.endpoint.EndpointError` before anything starts.
    ``max_reply_chars`` overrides the reply cap the client reads. The local server and the
    client's connections close when the block exits.
    """
    url = base_url or endpoint.base_url
    with contextlib.ExitStack() as stack:
        if url is not None:
            opened = endpoint.model_copy(update={"base_url": url})
            endpoint_id = None
            api_key = opened.api_key()
        elif endpoint.serve is not None:
            from eval_assets.local_models.server import serve_in_thread

            url = stack.enter_context(serve_in_thread(model=endpoint.serve, port=0,
                                                      seed=endpoint.seed))
            opened = endpoint.model_copy(update={"base_url": url, "api_key_env": None})
            endpoint_id = f"serve://{endpoint.serve}?seed={endpoint.seed}"
            api_key = NO_KEY
        else:
            raise EndpointError(f"endpoint {endpoint.api_model!r} has neither base_url nor "
                                f"serve; give one")
        chat = chat_client(opened, api_key, max_reply_chars=max_reply_chars)
        stack.callback(chat.close)
        yield OpenEndpoint(endpoint=opened, endpoint_id=endpoint_id, api_key=api_key, chat=chat)
