"""The one request builder for every model call, and the one reading of a reply.

:func:`eval_assets.openai_chat.open_endpoint` opens an endpoint; a :class:`RequestBuilder` made
from the same :class:`~eval_assets.schemas.endpoint.Endpoint` says what each request carries and
how each reply is read, for all three callers: the models under test
(:class:`eval_assets.model_runs.client.OpenAIVLMClient`), the LLM judge
(:class:`eval_assets.metrics.judge_client.OpenAIJudge`) and the question author
(:class:`eval_assets.vqa.authors.VLMAuthor`). The endpoint's quirks hold for every one of them:

- **token-limit parameter**: requests are built with the limit under ``max_tokens``
  (:meth:`RequestBuilder.request`, the form a caller hashes for its cache keys) and sent under the
  endpoint's parameter (:meth:`RequestBuilder.wire`): the configured ``token_limit_param``, the
  preflight's finding (:meth:`RequestBuilder.learn`), or the other one after the server refused
  this one with a 400 naming it (:meth:`RequestBuilder.send` re-sends once and keeps the finding
  for every later request). The key of a call therefore does not depend on the parameter name.
- **structured output**: ``response_format`` is sent when the caller asks for one, unless the
  preflight found the endpoint does not take it (``unsupported``); then the request goes without,
  and the caller reads the JSON out of the text as it always does. A 400 refusing a
  ``response_format`` the caller configured is not worked around: it is recorded as the call's
  failure, naming the server's reason (a configured schema the server cannot honour is a setting
  to fix, and a silent fallback to free text would change what the judge is).
- **seed**: the optional ``seed`` a sampling repeat sends is dropped for every later request
  once the server refused it with a 400 naming it (:meth:`RequestBuilder.send` re-sends once;
  :attr:`RequestBuilder.sends_seed`). Not probed by the preflight: most endpoints take it, and a
  probe would cost every run a call that only repeats use.
- **think tags and reasoning**: :meth:`RequestBuilder.read` classifies a reply (:class:`Classified`:
  answered, truncated, refused, empty, or the call's failure category) after taking out the
  endpoint's ``think_tags`` (:func:`strip_thinking`). A reply whose content is empty but whose
  ``reasoning_content`` (or ``reasoning``) holds text is read from there and says so
  (``answer_field``): the model answered, only in the other field, and asking again would pay for
  the same reply again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from eval_assets.openai_chat import ChatClient
from eval_assets.retry import RetryPolicy
from eval_assets.schemas.chat import ChatResult, Message, Outcome
from eval_assets.schemas.endpoint import Endpoint, EndpointCapabilities, TokenLimitParam

log = logging.getLogger(__name__)

TOKEN_LIMIT_PARAMS: tuple[TokenLimitParam, ...] = ("max_tokens", "max_completion_tokens")
CANONICAL_TOKEN_LIMIT = "max_tokens"
"""The name the token limit has in a request as built (and hashed): the one most servers take."""


@dataclass(frozen=True)
class Thinking:
    """A reply's content with its inline reasoning taken out."""

    text: str
    reasoning: str | None
    unclosed: bool


def strip_thinking(content: str, tags: Sequence[tuple[str, str]]) -> Thinking:
    """``content`` without the pairs of ``tags`` and what they held.

    An opening tag with no closing tag after it holds the rest of the reply: ``unclosed``.
    """
    text, thoughts, unclosed = content, [], False
    for opening, closing in tags:
        kept: list[str] = []
        rest = text
        while (start := rest.find(opening)) >= 0:
            kept.append(rest[:start])
            end = rest.find(closing, start + len(opening))
            if end < 0:
                thoughts.append(rest[start + len(opening):])
                rest, unclosed = "", True
                break
            thoughts.append(rest[start + len(opening):end])
            rest = rest[end + len(closing):]
        text = "".join(kept) + rest
    reasoning = "\n".join(t.strip() for t in thoughts if t.strip()) or None
    return Thinking(text=text.strip() if thoughts else text, reasoning=reasoning,
                    unclosed=unclosed)


@dataclass(frozen=True)
class Classified:
    """A reply classified: its outcome, the answer text (None: none) and all its reasoning.

    ``answer_field`` names the message field the answer was read from when it was not the
    content (``reasoning_content`` or ``reasoning``: the content was empty); None otherwise.
    """

    outcome: Outcome
    text: str | None
    reasoning: str | None
    answer_field: str | None = None

    @property
    def answers(self) -> bool:
        """Whether the reply stands as the model's answer (answered, truncated, refused)."""
        return self.outcome in ("answered", "truncated", "refused")


def classify(result: ChatResult, think_tags: Sequence[tuple[str, str]]) -> Classified:
    """The outcome of one call, its answer text after the thinking, and its reasoning.

    ``answered``: text is left after the think tags are taken out, or the content is empty and
    the reasoning field holds the reply (read from there, ``answer_field`` says which);
    ``truncated``: ``finish_reason`` is ``length`` or a think tag was never closed; ``refused``:
    a ``refusal`` or ``finish_reason: content_filter``; ``empty``: no text anywhere; else the
    call's failure category.
    """
    refused = bool(result.refusal) or result.finish_reason == "content_filter"
    if result.error_category == "empty_response" and refused:
        return Classified("refused", None, result.reasoning)  # a refusal without content
    if not result.ok and result.error_category != "empty_response":
        return Classified(result.error_category or "unexpected_error", None, result.reasoning)
    thinking = strip_thinking(result.content or "", think_tags)
    reasoning = "\n".join(r for r in (result.reasoning, thinking.reasoning) if r) or None
    if refused:
        return Classified("refused", thinking.text or None, reasoning)
    if result.finish_reason == "length" or thinking.unclosed:
        return Classified("truncated", thinking.text or None, reasoning)
    if thinking.text.strip():
        return Classified("answered", thinking.text, reasoning)
    if result.reasoning and result.reasoning.strip() and not thinking.reasoning:
        # Content empty, the reply in the reasoning field (a server whose reasoning parser took
        # the whole reply): that is what the model answered, and what was paid for. The text
        # moves to the answer (kept once; answer_field says where it came from).
        return Classified("answered", result.reasoning.strip(), None,
                          answer_field=result.reasoning_field or "reasoning_content")
    return Classified("empty", None, reasoning)


def _other(param: TokenLimitParam) -> TokenLimitParam:
    return "max_completion_tokens" if param == "max_tokens" else "max_tokens"


# How servers say a request field is not taken: OpenAI "Unsupported parameter: 'max_tokens' is
# not supported with this model" (code unsupported_parameter), pydantic-based servers "Extra
# inputs are not permitted", others "unrecognized"/"unknown". Naming the field is not enough:
# vLLM's "'max_tokens' or 'max_completion_tokens' is too large" is about the context length.
_REFUSAL_WORDS = ("unsupported", "not supported", "unrecognized", "unknown", "not permitted",
                  "extra inputs", "not allowed")


def refuses_field(result: ChatResult, field: str) -> bool:
    """Whether ``result`` is the server's 400 (or 422) refusing the request field ``field``."""
    message = (result.error_message or "").lower()
    return (result.error_category == "client_error" and field in message
            and any(word in message for word in _REFUSAL_WORDS))


class RequestBuilder:
    """What every request to one endpoint carries, and how its replies are read.

    Thread-safe: one builder serves every worker of a caller; what it learns (the token-limit
    parameter from a refusal or the preflight, structured output from the preflight) holds for
    every later request.
    """

    def __init__(self, endpoint: Endpoint, *, temperature: float = 0.0) -> None:
        self.endpoint = endpoint
        self.model = endpoint.api_model
        self.temperature = temperature
        self.think_tags = endpoint.think_tags
        self._lock = threading.Lock()
        self._param: TokenLimitParam = endpoint.token_limit_param
        self._structured = True
        self._seed = True

    def __repr__(self) -> str:
        return f"RequestBuilder({self.model!r}, {self._param})"

    @property
    def token_limit_param(self) -> TokenLimitParam:
        """The request field that carries the token limit on the wire."""
        return self._param

    @property
    def structured_output(self) -> bool:
        """False when the preflight found the endpoint refuses ``response_format``."""
        return self._structured

    @property
    def sends_seed(self) -> bool:
        """False once the endpoint refused the optional ``seed`` parameter (then never sent)."""
        return self._seed

    def learn(self, capabilities: EndpointCapabilities) -> None:
        """Take what the preflight found: the token-limit parameter, structured output."""
        with self._lock:
            self._param = capabilities.token_limit_param
            self._structured = capabilities.structured_output != "unsupported"

    def use_token_limit_param(self, param: TokenLimitParam) -> None:
        """Send the token limit under ``param`` from now on."""
        with self._lock:
            self._param = param

    # --- building ------------------------------------------------------------------------------
    def request(self, messages: Sequence[Message] | Sequence[Mapping[str, Any]], *,
                max_tokens: int | None, response_format: Mapping[str, Any] | None = None,
                temperature: float | None = None, **extra: Any) -> dict[str, Any]:
        """The request as built: ``model``, ``messages``, ``temperature``, then ``max_tokens``
        (None: no limit is sent), ``response_format`` (None: not sent) and ``extra``.

        ``temperature`` (None: the builder's) is set for one request by a caller that samples
        on purpose (sampling repeats, :mod:`eval_assets.model_runs.prompt_controls`); it is
        set here, so every request still gets its temperature in this one place.

        The token limit is named ``max_tokens`` here whatever the endpoint takes, so a hash of
        this dict (the judge's journal key) does not change with the parameter; :meth:`wire`
        gives the body actually sent.
        """
        body: dict[str, Any] = {"model": self.model, "messages": list(messages),
                                "temperature": (self.temperature if temperature is None
                                                else temperature)}
        if max_tokens is not None:
            body[CANONICAL_TOKEN_LIMIT] = max_tokens
        # Absent unless asked for: some endpoints reject a response_format they do not know.
        if response_format is not None:
            body["response_format"] = dict(response_format)
        body.update(extra)
        return body

    def wire(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """``request`` as this endpoint takes it: the token limit under its parameter, no
        ``response_format`` where structured output is refused and no ``seed`` where it was
        refused. Key order is kept."""
        param = self._param
        drop_format = not self._structured
        drop_seed = not self._seed
        body: dict[str, Any] = {}
        for key, value in request.items():
            if key in TOKEN_LIMIT_PARAMS:
                body[param] = value
            elif (key == "response_format" and drop_format) or (key == "seed" and drop_seed):
                continue
            else:
                body[key] = value
        return body

    # --- sending -------------------------------------------------------------------------------
    def send(self, chat: ChatClient, request: Mapping[str, Any], *, label: str = "",
             jitter_key: str | None = None, policy: RetryPolicy | None = None) -> ChatResult:
        """Send ``request`` (as built by :meth:`request`) through ``chat``; never raises.

        A 400 naming the token-limit parameter sent switches to the other one and re-sends the
        request once, at once (a refusal costs no tokens); the finding holds for every later
        request of this builder. The two names mean the same limit, so the reply is the one the
        request asked for. A 400 refusing the optional ``seed`` (OpenAI, vLLM, llama.cpp and
        Ollama take it, Anthropic's compatibility layer ignores it, a server that forbids unknown
        fields refuses it) drops it from then on the same way: the reply is then sampled
        without one (:attr:`sends_seed` says so). At most one re-send per finding.
        """
        body = self.wire(request)
        result = chat.complete(body, label=label, jitter_key=jitter_key, policy=policy)
        for _ in range(2):  # the token limit and the seed may each be refused once
            if result.ok or not self._learn_refusal(chat, body, result):
                return result
            again = self.wire(request)
            if again == body:
                return result
            retried = chat.complete(again, label=label, jitter_key=jitter_key, policy=policy)
            # The refused request was an HTTP request of this call too: counted, and its time.
            result = retried.model_copy(update={
                "attempts": result.attempts + retried.attempts,
                "wall_s": result.wall_s + retried.wall_s,
                "waited_s": result.waited_s + retried.waited_s})
            body = again
        return result

    def _learn_refusal(self, chat: ChatClient, body: Mapping[str, Any],
                       result: ChatResult) -> bool:
        """Take a 400 refusing a field of ``body`` this builder can do without or rename; False
        when ``result`` is no such refusal."""
        sent = next((key for key in TOKEN_LIMIT_PARAMS if key in body), None)
        if sent is not None and refuses_field(result, sent):
            with self._lock:
                if self._param == sent:  # not a toggle: workers refused together land on one
                    self._param = _other(sent)
            log.info("%s refused %r; sending the token limit as %r from now on",
                     chat.base_url, sent, self._param)
            return True
        if "seed" in body and refuses_field(result, "seed"):
            with self._lock:
                self._seed = False
            log.warning("%s refused the 'seed' parameter; sampling repeats are sent without "
                        "one from now on (not reproducible by the server)", chat.base_url)
            return True
        return False

    # --- reading -------------------------------------------------------------------------------
    def read(self, result: ChatResult) -> Classified:
        """The reply classified with this endpoint's think tags (:func:`classify`)."""
        return classify(result, self.think_tags)

    def strip(self, text: str) -> Thinking:
        """``text`` without this endpoint's think tags (for a reply stored before it is read)."""
        return strip_thinking(text, self.think_tags)
