"""Clients for VLMs under test: the ``VLMClient`` protocol and its OpenAI-compatible implementation.

A client turns one public case (or one frame to describe) into one stored record. It never raises
for a failed call: the failure is recorded with its category so the run continues and the next run
retries it. Retries are ours (the ``openai`` client runs with ``max_retries=0``) so that we can
count attempts, honour ``Retry-After`` and classify what went wrong.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from eval_assets.errors import InputError
from eval_assets.http_retry import parse_retry_after
from eval_assets.metrics.vqa import match_choice
from eval_assets.predictions.prompts import (
    PROMPT_VERSION,
    Message,
    description_messages,
    vqa_messages,
)
from eval_assets.schemas.predictions import (
    RETRYABLE_CATEGORIES,
    AnswerRecord,
    DescriptionRecord,
    GenerationConfig,
    ModelSpec,
    TokenUsage,
)
from eval_assets.schemas.vqa import Case

# Requests need some key; a placeholder (never the user's OPENAI_API_KEY, which the openai client
# would otherwise pick up and send to whatever base_url is configured) when no env var is named.
_NO_KEY = "not-needed"
_MAX_ERROR_CHARS = 500
_MAX_RAW_CHARS = 2000


class ClientSettings(BaseModel):
    """How to reach one model and how hard to try. ``api_key_env`` is a variable NAME, not a key."""

    model_config = ConfigDict(frozen=True)

    base_url: str
    model: str
    endpoint_id: str | None = Field(
        default=None,
        description="Stable name of the endpoint hashed instead of base_url, for servers whose "
        "URL changes between runs (a local model on a free port: 'serve://random?seed=0').",
    )
    api_key_env: str | None = None
    temperature: float = 0.0
    max_tokens: int = Field(default=256, gt=0)
    timeout_s: float = Field(default=60.0, gt=0)
    max_concurrency: int = Field(default=4, ge=1)
    max_retries: int = Field(default=4, ge=0, description="Retries after the first attempt.")
    backoff_base_s: float = Field(default=1.0, ge=0)
    backoff_max_s: float = Field(default=60.0, ge=0)
    retry_after_max_s: float = Field(
        default=600.0, ge=0, description="Longest Retry-After honoured; longer waits are capped."
    )
    requery: str | None = Field(
        default=None, description="Ask again even what is stored: a token such as the night of "
        "a nightly run (part of the generation config hash).")

    def generation_config(self) -> GenerationConfig:
        """The part of the settings that can change an answer (hashed for resume)."""
        endpoint = self.endpoint_id or self.base_url.rstrip("/")
        return GenerationConfig(model=self.model, base_url=endpoint,
                                temperature=self.temperature, max_tokens=self.max_tokens,
                                prompt_version=PROMPT_VERSION, requery=self.requery)

    def api_key(self) -> str:
        """The key from ``api_key_env``; a clear error when that variable is not set."""
        if not self.api_key_env:
            return _NO_KEY
        key = os.environ.get(self.api_key_env, "")
        if not key:
            raise ValueError(
                f"api_key_env names the environment variable {self.api_key_env!r}, which is not "
                f"set or empty; export it with the API key of {self.base_url}, or leave "
                f"api_key_env empty for a server that needs no key"
            )
        return key


class VLMClient(Protocol):
    """A model under test: answers public cases and describes frames, one record per call."""

    @property
    def generation(self) -> GenerationConfig:
        """What determines this client's answers."""
        ...

    def answer(self, case: Case, png: bytes) -> AnswerRecord:
        """Ask one multiple-choice case about its image; failures come back as records."""
        ...

    def describe(self, frame: str, image: str, png: bytes) -> DescriptionRecord:
        """Ask for a free-text description of one frame; failures come back as records."""
        ...

    def public_settings(self) -> dict[str, Any]:
        """Settings safe to write into a run's config.json (no secrets)."""
        ...


@dataclass(frozen=True)
class CallOutcome:
    """One logical call after retries: the reply text or an error category, and its cost."""

    text: str | None
    usage: TokenUsage | None
    latency_s: float | None
    wall_s: float
    attempts: int
    error_category: str | None = None
    error_message: str | None = None
    raw_response: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the call produced a reply."""
        return self.error_category is None


class _Failure(Exception):
    """A classified failed attempt (internal: turned into a record, never escapes the client)."""

    def __init__(self, category: str, message: str, retry_after_s: float | None = None,
                 raw: str | None = None) -> None:
        super().__init__(message)
        self.category = category
        self.retry_after_s = retry_after_s
        self.raw = raw


def backoff_delay(retry: int, base_s: float, max_s: float, rng: random.Random) -> float:
    """Exponential backoff with equal jitter for the ``retry``-th retry (1-based).

    Half the delay is fixed so waits grow reliably; the jittered half spreads concurrent workers
    that failed together so they do not all come back at the same instant.
    """
    delay = min(max_s, base_s * (2 ** (retry - 1)))
    return delay / 2 + rng.uniform(0, delay / 2)


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more chars]"


def _classify(exc: Exception) -> _Failure:
    """Map an exception from the openai client to a failure category."""
    import openai  # imported on first use: the code location loads faster without it
    if isinstance(exc, openai.APITimeoutError):
        return _Failure("timeout", f"no response within the timeout: {exc}")
    if isinstance(exc, openai.APIConnectionError):
        return _Failure("connection_error", f"{type(exc).__name__}: {exc}")
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        retry_after = parse_retry_after(dict(exc.response.headers))
        message = _truncate(f"HTTP {status}: {exc.message}", _MAX_ERROR_CHARS)
        if status == 429:
            return _Failure("rate_limited", message, retry_after)
        if status >= 500:
            return _Failure("server_error", message, retry_after)
        if status == 408:
            return _Failure("timeout", message, retry_after)
        return _Failure("client_error", message)
    if isinstance(exc, (openai.APIResponseValidationError, json.JSONDecodeError)):
        return _Failure("malformed_response", f"response body is not valid JSON: {exc}")
    return _Failure("unexpected_error",
                    _truncate(f"{type(exc).__name__}: {exc}", _MAX_ERROR_CHARS))


def _reply_text(completion: Any) -> tuple[str, TokenUsage | None]:
    """The first choice's message text and the usage, or a classified failure."""
    from openai.types.chat import ChatCompletion

    if not isinstance(completion, ChatCompletion):
        raw = completion if isinstance(completion, str) else repr(completion)
        raise _Failure("malformed_response",
                       "response body is not a chat completion JSON object",
                       raw=_truncate(raw, _MAX_RAW_CHARS))
    choices = completion.choices
    if not choices:
        raise _Failure("malformed_response", "response has no 'choices'",
                       raw=_truncate(completion.model_dump_json(), _MAX_RAW_CHARS))
    message = getattr(choices[0], "message", None)
    content = getattr(message, "content", None)
    if not isinstance(content, str):
        raise _Failure("empty_response", "the first choice has no message content",
                       raw=_truncate(completion.model_dump_json(), _MAX_RAW_CHARS))
    usage = None
    if completion.usage is not None:
        usage = TokenUsage(prompt_tokens=completion.usage.prompt_tokens,
                           completion_tokens=completion.usage.completion_tokens,
                           total_tokens=completion.usage.total_tokens)
    return content, usage


class OpenAIVLMClient:
    """A :class:`VLMClient` for any OpenAI-compatible ``/v1/chat/completions`` endpoint.

    Thread-safe: one instance serves every worker of a run (the HTTP connection pool is shared).
    """

    def __init__(self, settings: ClientSettings) -> None:
        self.settings = settings
        self._generation = settings.generation_config()
        self._config_hash = self._generation.config_hash()
        import openai

        self._client = openai.OpenAI(
            base_url=settings.base_url, api_key=settings.api_key(), max_retries=0,
            timeout=settings.timeout_s,
        )
        self._rng = random.Random()
        self._rng_lock = threading.Lock()

    @property
    def generation(self) -> GenerationConfig:
        """What determines this client's answers."""
        return self._generation

    @property
    def config_hash(self) -> str:
        """sha256 of :attr:`generation`."""
        return self._config_hash

    def public_settings(self) -> dict[str, Any]:
        """Every setting, for config.json: the key's variable name is kept, never its value.

        An ephemeral ``base_url`` (a local server on a free port) is left out when
        ``endpoint_id`` names the endpoint, so config.json does not change between runs.
        """
        exclude = {"base_url"} if self.settings.endpoint_id else set()
        return self.settings.model_dump(mode="json", exclude=exclude)

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def __enter__(self) -> OpenAIVLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _attempt(self, messages: list[Message]) -> tuple[str, TokenUsage | None]:
        try:
            completion = self._client.chat.completions.create(
                model=self.settings.model, messages=messages,  # type: ignore[arg-type]
                temperature=self.settings.temperature, max_tokens=self.settings.max_tokens,
            )
        except Exception as exc:
            raise _classify(exc) from exc
        return _reply_text(completion)

    def _delay(self, failure: _Failure, retry: int) -> float:
        if failure.retry_after_s is not None:
            return min(failure.retry_after_s, self.settings.retry_after_max_s)
        with self._rng_lock:
            return backoff_delay(retry, self.settings.backoff_base_s,
                                 self.settings.backoff_max_s, self._rng)

    def chat(self, messages: list[Message]) -> CallOutcome:
        """One logical call: attempts with backoff until a reply, a final error, or no retries."""
        start = time.perf_counter()
        attempts = 0
        while True:
            attempts += 1
            t0 = time.perf_counter()
            try:
                text, usage = self._attempt(messages)
            except _Failure as failure:
                latency = time.perf_counter() - t0
                retryable = failure.category in RETRYABLE_CATEGORIES
                if not retryable or attempts > self.settings.max_retries:
                    return CallOutcome(
                        text=None, usage=None, latency_s=latency,
                        wall_s=time.perf_counter() - start, attempts=attempts,
                        error_category=failure.category, error_message=str(failure),
                        raw_response=failure.raw,
                    )
                time.sleep(self._delay(failure, attempts))
                continue
            return CallOutcome(text=text, usage=usage, latency_s=time.perf_counter() - t0,
                               wall_s=time.perf_counter() - start, attempts=attempts)

    def _common(self, outcome: CallOutcome) -> dict[str, Any]:
        return {
            "model": self.settings.model,
            "config_hash": self._config_hash,
            "status": "success" if outcome.ok else "failed",
            "raw_response": outcome.text if outcome.ok else outcome.raw_response,
            "latency_s": outcome.latency_s,
            "wall_s": outcome.wall_s,
            "usage": outcome.usage,
            "error_category": outcome.error_category,
            "error_message": outcome.error_message,
            "attempts": outcome.attempts,
        }

    def answer(self, case: Case, png: bytes) -> AnswerRecord:
        """Ask one case with the dimOS runner prompt and map the reply to a choice."""
        outcome = self.chat(vqa_messages(png, case.question, case.choices))
        choice = tier = None
        if outcome.ok:
            match = match_choice(outcome.text, case.choices)
            choice, tier = match.choice, match.tier
        return AnswerRecord(case_id=case.case_id, choice=choice, extraction_tier=tier,
                            **self._common(outcome))

    def describe(self, frame: str, image: str, png: bytes) -> DescriptionRecord:
        """Ask for a free-text description of one frame."""
        outcome = self.chat(description_messages(png))
        return DescriptionRecord(frame=frame, image=image, **self._common(outcome))


class ModelsFileError(InputError, ValueError):
    """The models file cannot be used; the message names the file, the entry, the field, the fix."""


def load_model_specs(path: Path) -> list[ModelSpec]:
    """The models declared in a ``models.yaml`` (a top-level ``models:`` list), names unique."""
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelsFileError(
            f"{path} does not exist; create it with a 'models:' list "
            f"(see data/models.yaml in the repository)"
        ) from None
    except yaml.YAMLError as exc:
        raise ModelsFileError(f"{path} is not valid YAML ({_first_line(exc)}). Fix the syntax "
                              "there (see data/models.yaml in the repository).") from exc
    entries = document.get("models") if isinstance(document, dict) else None
    if not isinstance(entries, list) or not entries:
        raise ModelsFileError(f"{path}: expected a top-level 'models:' list with at least one "
                              "entry. Fix: start the file with 'models:' and list '- name: ...' "
                              "entries under it.")
    specs: list[ModelSpec] = []
    for i, entry in enumerate(entries):
        try:
            specs.append(ModelSpec.model_validate(entry))
        except ValidationError as exc:
            problems = "; ".join(
                f"field {'.'.join(str(p) for p in err['loc']) or '(entry)'!r}: {err['msg']}"
                for err in exc.errors()[:3])
            raise ModelsFileError(f"{path}: models[{i}] is invalid: {problems}. Fix that entry "
                                  "(fields: name, model, base_url, serve, seed, api_key_env, "
                                  "max_tokens, max_concurrency, timeout_s).") from exc
    names = [s.name for s in specs]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ModelsFileError(f"{path}: model names must be unique, repeated: {duplicates}. Fix: "
                              "rename or remove the repeated entries.")
    for spec in specs:
        if spec.base_url is None and spec.serve is None:
            raise ModelsFileError(f"{path}: model {spec.name!r} has neither 'base_url' nor "
                                  "'serve'. Fix: give the endpoint URL or the local model to "
                                  "serve.")
    return specs


def _first_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


def find_model_spec(specs: list[ModelSpec], name: str, source: Path) -> ModelSpec:
    """The spec called ``name``; the error lists the declared names."""
    for spec in specs:
        if spec.name == name:
            return spec
    raise ValueError(f"model {name!r} is not declared in {source}; declared: "
                     f"{[s.name for s in specs]}; add it there or pass --base-url")
