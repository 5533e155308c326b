"""Clients for VLMs under test: the ``VLMClient`` protocol and its OpenAI-compatible implementation.

A client turns one public case (or one frame to describe) into one stored record. It never raises
for a failed call: the failure is recorded with its category so the run continues and the next run
retries it. HTTP, retries, ``Retry-After`` and the reply cap are the one chat client's
(:class:`eval_assets.openai_chat.ChatClient`); this module builds the prompts and the records.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from eval_assets.choices import match_choice
from eval_assets.errors import InputError
from eval_assets.openai_chat import (
    DEFAULT_ANNOUNCE_WAIT_S,
    DEFAULT_RETRY_AFTER_MAX_S,
    ChatClient,
    RetryPolicy,
)
from eval_assets.predictions.prompts import (
    PROMPT_VERSION,
    Message,
    description_messages,
    vqa_messages,
)
from eval_assets.schemas.chat import ChatResult
from eval_assets.schemas.predictions import (
    AnswerRecord,
    DescriptionRecord,
    GenerationConfig,
    ModelSpec,
)
from eval_assets.schemas.vqa import Case

# Requests need some key; a placeholder (never the user's OPENAI_API_KEY, which an SDK would
# otherwise pick up and send to whatever base_url is configured) when no env var is named.
_NO_KEY = "not-needed"


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
        default=DEFAULT_RETRY_AFTER_MAX_S, ge=0,
        description="Longest Retry-After honoured; a longer one fails the call as "
        "retry_after_too_long (never shortened).")
    announce_wait_s: float = Field(
        default=DEFAULT_ANNOUNCE_WAIT_S, ge=0,
        description="A wait between tries this long or longer is logged as a warning.")
    max_reply_bytes: int | None = Field(
        default=None, ge=1, description="Largest reply body read; larger is a reply_too_large "
        "failure. None: derived from max_tokens (eval_assets.openai_chat.default_reply_limits).")
    max_reply_chars: int | None = Field(
        default=None, ge=1, description="Longest reply text accepted as an answer; longer is a "
        "reply_too_large failure. None: derived from max_tokens.")
    requery: str | None = Field(
        default=None, description="Ask again even what is stored: a token such as the night of "
        "a nightly run (part of the generation config hash).")

    def generation_config(self) -> GenerationConfig:
        """The part of the settings that can change an answer (hashed for resume)."""
        endpoint = self.endpoint_id or self.base_url.rstrip("/")
        return GenerationConfig(model=self.model, base_url=endpoint,
                                temperature=self.temperature, max_tokens=self.max_tokens,
                                prompt_version=PROMPT_VERSION, requery=self.requery)

    def retry_policy(self) -> RetryPolicy:
        """The chat client's retry policy from these settings (equal jitter: half fixed)."""
        return RetryPolicy(max_retries=self.max_retries, backoff_base_s=self.backoff_base_s,
                           backoff_max_s=self.backoff_max_s, jitter=0.5,
                           retry_after_max_s=self.retry_after_max_s,
                           announce_wait_s=self.announce_wait_s)

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


class OpenAIVLMClient:
    """A :class:`VLMClient` for any OpenAI-compatible ``/v1/chat/completions`` endpoint.

    Thread-safe: one instance serves every worker of a run (the HTTP connection pool is shared).
    """

    def __init__(self, settings: ClientSettings) -> None:
        self.settings = settings
        self._generation = settings.generation_config()
        self._config_hash = self._generation.config_hash()
        self._chat = ChatClient(
            settings.base_url, api_key=settings.api_key(), timeout_s=settings.timeout_s,
            policy=settings.retry_policy(), max_reply_bytes=settings.max_reply_bytes,
            max_reply_chars=settings.max_reply_chars)

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
        self._chat.close()

    def __enter__(self) -> OpenAIVLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def chat(self, messages: list[Message], label: str = "") -> ChatResult:
        """One logical call: attempts with backoff until a reply, a final error, or no retries."""
        return self._chat.complete(
            {"model": self.settings.model, "messages": messages,
             "temperature": self.settings.temperature, "max_tokens": self.settings.max_tokens},
            label=label)

    def _common(self, result: ChatResult) -> dict[str, Any]:
        return {
            "model": self.settings.model,
            "config_hash": self._config_hash,
            "status": "success" if result.ok else "failed",
            "raw_response": result.content if result.ok else result.raw_response,
            "latency_s": result.latency_s,
            "wall_s": result.wall_s,
            "usage": result.usage,
            "error_category": result.error_category,
            "error_message": result.error_message,
            "attempts": result.attempts,
        }

    def answer(self, case: Case, png: bytes) -> AnswerRecord:
        """Ask one case with the dimOS runner prompt and map the reply to a choice."""
        result = self.chat(vqa_messages(png, case.question, case.choices), label=case.id)
        choice = tier = None
        if result.ok and result.content is not None:
            match = match_choice(result.content, case.choices)
            choice, tier = match.choice, match.tier
        return AnswerRecord(case_id=case.id, choice=choice, extraction_tier=tier,
                            **self._common(result))

    def describe(self, frame: str, image: str, png: bytes) -> DescriptionRecord:
        """Ask for a free-text description of one frame."""
        result = self.chat(description_messages(png), label=frame)
        return DescriptionRecord(frame=frame, image=image, **self._common(result))


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
