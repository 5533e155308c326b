"""Clients for VLMs under test: the ``VLMClient`` protocol and its OpenAI-compatible implementation.

A client turns one public case (or one frame to describe) into one stored record. It never raises
for a failed call: the failure is recorded with its category so the run continues and the next run
retries it. HTTP, retries, ``Retry-After`` and the reply cap are the one chat client's
(:class:`eval_assets.openai_chat.ChatClient`); the request body and the reading of the reply are
the one request builder's (:class:`eval_assets.chat_request.RequestBuilder`); this module turns
cases into messages and replies into records.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

from eval_assets.chat_request import RequestBuilder
from eval_assets.choices import match_choice
from eval_assets.model_runs.preflight import preflight
from eval_assets.model_runs.prompts import (
    PROMPT_VERSION,
    description_messages,
    vqa_messages,
)
from eval_assets.model_runs.spatial import SpatialAsk
from eval_assets.openai_chat import ChatClient, chat_client, open_endpoint
from eval_assets.prompt_controls import read_structured
from eval_assets.schemas.chat import ChatResult, Message
from eval_assets.schemas.endpoint import Endpoint, EndpointCapabilities, split_endpoint_fields
from eval_assets.schemas.predictions import (
    AnswerRecord,
    DescriptionRecord,
    GenerationConfig,
    ModelSpec,
    SpatialAsked,
)
from eval_assets.schemas.spatial import SpatialCase
from eval_assets.schemas.vqa import Case


class ClientSettings(BaseModel):
    """How one model under test is asked: its endpoint (as reached), and the generation settings.

    Built by :func:`open_model` from a models-file entry; flat endpoint fields are accepted too
    (``ClientSettings.model_validate({"base_url": ..., "model": ...})``) for a fixed endpoint.
    """

    model_config = ConfigDict(frozen=True)

    endpoint: Endpoint
    endpoint_id: str | None = Field(
        default=None,
        description="Stable name of the endpoint hashed instead of base_url, for servers whose "
        "URL changes between runs (a local model on a free port: 'serve://random?seed=0').",
    )
    temperature: float = 0.0
    requery: str | None = Field(
        default=None, description="Ask again even what is stored: a token such as the night of "
        "a nightly run (part of the generation config hash).")

    @model_validator(mode="before")
    @classmethod
    def _flat_endpoint_fields(cls, data: Any) -> Any:
        return split_endpoint_fields(data) if isinstance(data, Mapping) else data

    @model_validator(mode="after")
    def _reachable(self) -> ClientSettings:
        if not self.endpoint.base_url or not self.endpoint.api_model:
            raise ValueError("client settings need the endpoint's base_url and model; open a "
                             "declared model with open_model() to serve a local one")
        return self

    @property
    def base_url(self) -> str:
        """The URL called."""
        return str(self.endpoint.base_url)

    @property
    def model(self) -> str:
        """The model id sent with each request."""
        return self.endpoint.api_model

    @property
    def max_concurrency(self) -> int:
        """Requests in flight."""
        return self.endpoint.max_concurrency

    def generation_config(self) -> GenerationConfig:
        """The part of the settings that can change an answer (hashed for resume)."""
        endpoint = self.endpoint_id or self.base_url.rstrip("/")
        return GenerationConfig(model=self.model, base_url=endpoint,
                                temperature=self.temperature,
                                max_tokens=self.endpoint.max_tokens,
                                prompt_version=PROMPT_VERSION, requery=self.requery)

    def public(self) -> dict[str, Any]:
        """Every setting, flat, for config.json: the key's variable name, never its value.

        An ephemeral ``base_url`` (a local server on a free port) is left out when
        ``endpoint_id`` names the endpoint, so config.json does not change between runs.
        """
        exclude = {"base_url"} if self.endpoint_id else set()
        return {**self.endpoint.model_dump(mode="json", exclude=exclude),
                **self.model_dump(mode="json", exclude={"endpoint"})}


class VLMClient(Protocol):
    """A model under test: answers public cases and describes frames, one record per call."""

    @property
    def generation(self) -> GenerationConfig:
        """What determines this client's answers."""
        ...

    @property
    def sends_seed(self) -> bool:
        """False once the endpoint refused the optional ``seed`` parameter."""
        ...

    def answer(self, case: Case, png: bytes) -> AnswerRecord:
        """Ask one multiple-choice case about its image; failures come back as records."""
        ...

    def describe(self, frame: str, image: str, png: bytes) -> DescriptionRecord:
        """Ask for a free-text description of one frame; failures come back as records."""
        ...

    def answer_spatial(self, ask: SpatialAsk, messages: list[Message]) -> AnswerRecord:
        """Ask one spatial case with its prepared messages; failures come back as records."""
        ...

    def public_settings(self) -> dict[str, Any]:
        """Settings safe to write into a run's config.json (no secrets)."""
        ...

    def answer_text(self, case: Case | SpatialCase, messages: list[Message], *,
                    lettered: bool = False, temperature: float | None = None,
                    seed: int | None = None,
                    response_format: dict[str, Any] | None = None) -> AnswerRecord:
        """Ask ``case`` (dimOS's or a spatial one) with prepared ``messages`` (another template,
        a sampling repeat, a structured answer); failures come back as records."""
        ...


class OpenAIVLMClient:
    """A :class:`VLMClient` for any OpenAI-compatible ``/v1/chat/completions`` endpoint.

    Thread-safe: one instance serves every worker of a run (the HTTP connection pool is shared).
    :meth:`prepare` runs the endpoint's capability preflight (the runner calls it before any
    case); its token-limit parameter is then the one each request carries.
    """

    def __init__(self, settings: ClientSettings, chat: ChatClient | None = None) -> None:
        self.settings = settings
        self._generation = settings.generation_config()
        self._config_hash = self._generation.config_hash()
        # The client open_endpoint() opened, or one for the fixed endpoint of the settings.
        self._chat = chat if chat is not None else chat_client(
            settings.endpoint, settings.endpoint.api_key())
        self.capabilities: EndpointCapabilities | None = None
        self.requests = RequestBuilder(settings.endpoint, temperature=settings.temperature)

    @property
    def generation(self) -> GenerationConfig:
        """What determines this client's answers."""
        return self._generation

    @property
    def config_hash(self) -> str:
        """sha256 of :attr:`generation`."""
        return self._config_hash

    @property
    def sends_seed(self) -> bool:
        """False once the endpoint refused the optional ``seed`` parameter (see
        :meth:`eval_assets.chat_request.RequestBuilder.send`)."""
        return self.requests.sends_seed

    def public_settings(self) -> dict[str, Any]:
        """Every setting, for config.json (:meth:`ClientSettings.public`: no secret)."""
        return self.settings.public()

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._chat.close()

    def __enter__(self) -> OpenAIVLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def metered(self, meter: Callable[[ChatResult], object]) -> Iterator[None]:
        """Tell ``meter`` of every call this client's chat client completes while the block
        runs (a run's :class:`~eval_assets.model_runs.ledger.UsageLedger`): answers, probes,
        controls, every re-send alike."""
        previous, self._chat.meter = self._chat.meter, meter
        try:
            yield
        finally:
            self._chat.meter = previous

    def prepare(self, run_dir: Path, images: int = 1,
                on_probed: Callable[[EndpointCapabilities], None] | None = None,
                ) -> EndpointCapabilities:
        """Probe the endpoint (or reuse ``run_dir``'s ``endpoint.json``) before any case;
        ``images``: the most one case sends in a request (probed up to it); ``on_probed``: called
        with the record when probes were sent (a budget counts them).

        Raises :class:`~eval_assets.model_runs.preflight.PreflightError` when the endpoint
        cannot take an image.
        """
        self.capabilities = preflight(self._chat, self.settings, run_dir, images=images,
                                      on_probed=on_probed)
        self.requests.learn(self.capabilities)
        return self.capabilities

    @property
    def token_limit_param(self) -> str:
        """The request field carrying the token limit: the preflight's, else the configured
        (or the other, once the server refused it)."""
        return self.requests.token_limit_param

    def request_body(self, messages: list[Message]) -> dict[str, Any]:
        """The chat-completions request of ``messages`` as sent (also each line of a batch)."""
        return self.requests.wire(self._request(messages))

    def _request(self, messages: list[Message]) -> dict[str, Any]:
        return self.requests.request(messages, max_tokens=self.settings.endpoint.max_tokens)

    def chat(self, messages: list[Message], label: str = "") -> ChatResult:
        """One logical call: attempts with backoff until a reply, a final error, or no retries."""
        return self.requests.send(self._chat, self._request(messages), label=label)

    def _common(self, result: ChatResult) -> tuple[dict[str, Any], str | None]:
        """The record fields of a call, and the answer text (None: the reply is no answer)."""
        reply = self.requests.read(result)
        fields = {
            "model": self.settings.model,
            "config_hash": self._config_hash,
            "status": "success" if reply.answers else "failed",
            "raw_response": (reply.text if reply.answers else result.raw_response),
            "latency_s": result.latency_s,
            "wall_s": result.wall_s,
            "usage": result.usage,
            "error_category": None if reply.answers else (
                result.error_category or "empty_response"),
            "error_message": None if reply.answers else (
                result.error_message or "the reply has no text besides its reasoning"),
            "attempts": result.attempts,
            "outcome": reply.outcome,
            "reasoning": reply.reasoning,
            "answer_field": reply.answer_field,
            "served_model": result.served_model,
        }
        return fields, reply.text if reply.outcome == "answered" else None

    def answer(self, case: Case, png: bytes) -> AnswerRecord:
        """Ask one case with the dimOS runner prompt and map the reply to a choice."""
        return self.answer_from(
            case, self.chat(vqa_messages(png, case.question, case.choices), label=case.id))

    def answer_from(self, case: Case, result: ChatResult) -> AnswerRecord:
        """The record of a reply to ``case`` however it came (a call, a batch's output line).

        Only an ``answered`` reply is read for a choice; a truncated or refused one stands
        with none (it scores as wrong).
        """
        return self._answer_record(case.id, case.choices, result)

    def answer_text(self, case: Case | SpatialCase, messages: list[Message], *,
                    lettered: bool = False, temperature: float | None = None,
                    seed: int | None = None,
                    response_format: dict[str, Any] | None = None) -> AnswerRecord:
        """Ask ``case`` (dimOS's or a spatial one) with prepared ``messages``: another
        template's wording (``lettered``: a bare letter names a choice), a sampling repeat
        (``temperature`` for this request, and ``seed`` sent so a server that takes one samples
        reproducibly; dropped where the server refuses it, :attr:`sends_seed`), or a structured
        answer (``response_format``: a choice case's reply's ``answer`` field is read for the
        choice; ``raw_response`` keeps the JSON as sent back, which is all a number case keeps:
        the scorer reads its value).
        """
        choices = case.choices or []
        extra: dict[str, Any] = {} if seed is None else {"seed": seed}
        request = self.requests.request(messages, max_tokens=self.settings.endpoint.max_tokens,
                                        response_format=response_format,
                                        temperature=temperature, **extra)
        result = self.requests.send(self._chat, request, label=case.id)
        if response_format is None:
            return self._answer_record(case.id, choices, result, lettered=lettered)
        fields, text = self._common(result)
        if text is None and fields["status"] == "success":
            fields.update(raw_response="", unread_reply=fields["raw_response"])
        choice = read_structured(text, choices) if choices else None
        return AnswerRecord(case_id=case.id, choice=choice,
                            extraction_tier=None if choice is None else "json", **fields)

    def answer_spatial(self, ask: SpatialAsk, messages: list[Message]) -> AnswerRecord:
        """Ask one spatial case (its frames as parts, or their mosaic, in ``messages``)."""
        return self.spatial_answer_from(ask, self.chat(messages, label=ask.case.id))

    def spatial_answer_from(self, ask: SpatialAsk, result: ChatResult) -> AnswerRecord:
        """The record of a reply to a spatial case however it came; a ``choice`` case's reply
        is mapped to a choice, a ``number`` case's is kept as text (the scorer parses it)."""
        return self._answer_record(ask.case.id, ask.case.choices, result, ask.asked)

    def _answer_record(self, case_id: str, choices: list[str] | None, result: ChatResult,
                       spatial: SpatialAsked | None = None, *,
                       lettered: bool = False) -> AnswerRecord:
        fields, text = self._common(result)
        choice = tier = None
        if text is not None:
            if choices:
                match = match_choice(text, choices, lettered=lettered)
                choice, tier = match.choice, match.tier
        elif fields["status"] == "success":
            # Truncated or refused: the scorers read raw_response, so it holds nothing to read.
            fields.update(raw_response="", unread_reply=fields["raw_response"])
        return AnswerRecord(case_id=case_id, choice=choice, extraction_tier=tier,
                            spatial=spatial, **fields)

    def describe(self, frame: str, image: str, png: bytes) -> DescriptionRecord:
        """Ask for a free-text description of one frame."""
        return self.describe_from(frame, image, self.chat(description_messages(png), label=frame))

    def describe_from(self, frame: str, image: str, result: ChatResult) -> DescriptionRecord:
        """The record of a description however it came (a call, a batch's output line)."""
        fields, _ = self._common(result)
        return DescriptionRecord(frame=frame, image=image, **fields)


@contextlib.contextmanager
def open_model(spec: ModelSpec, base: Endpoint | None = None, *, base_url: str | None = None,
               temperature: float = 0.0, requery: str | None = None) -> Iterator[OpenAIVLMClient]:
    """A client for a declared model, its local model served in this process meanwhile.

    The entry's endpoint fields override ``base`` (the caller's settings: the Dagster resource or
    the CLI options; default: the endpoint defaults); ``base_url`` (e.g. ``--base-url``) overrides
    the entry's. Opened by :func:`eval_assets.openai_chat.open_endpoint`, the one way to open an
    endpoint.
    """
    endpoint = spec.endpoint.over(base or Endpoint()).model_copy(
        update={"model": spec.api_model})
    with open_endpoint(endpoint, base_url=base_url) as opened:
        settings = ClientSettings(endpoint=opened.endpoint, endpoint_id=opened.endpoint_id,
                                  temperature=temperature, requery=requery)
        with OpenAIVLMClient(settings, chat=opened.chat) as client:
            yield client
