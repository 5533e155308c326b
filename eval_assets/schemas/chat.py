"""What one call to an OpenAI-compatible chat-completions endpoint gave: reply or failure, and cost.

Made by :class:`eval_assets.openai_chat.ChatClient` for every caller (models under test, the LLM
judge, the question author); each caller turns it into its own record.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

# One OpenAI-style chat message: {"role": ..., "content": text or a list of text/image parts}.
Message = dict[str, Any]

# Why a call gave no reply. The first four are transient and retried within the call (so are HTTP
# 409 and 425, reported as ``client_error``); the rest come from a server that answered, so the
# same request again would not help (a later run asks again anyway).
ChatErrorCategory = Literal[
    "rate_limited",  # HTTP 429
    "server_error",  # HTTP 5xx
    "timeout",  # no response within timeout_s (or HTTP 408)
    "connection_error",  # refused, reset, DNS, a broken transfer
    "client_error",  # other HTTP 4xx (bad request, auth, unknown model)
    "malformed_response",  # a 200 whose body is not a chat completion (not JSON, no choices)
    "empty_response",  # a chat completion whose first choice has no message content
    "reply_too_large",  # a body or message longer than the reply cap: never read as an answer
    "retry_after_too_long",  # Retry-After asked for a longer wait than the configured maximum
    "unexpected_error",  # anything else raised while calling or reading
]
RETRYABLE_CATEGORIES: frozenset[str] = frozenset(
    {"rate_limited", "server_error", "timeout", "connection_error"}
)

# What one reply came to (eval_assets.chat_request.classify, for every caller). The first
# three are the model's answers and stand (truncated and refused ones score as wrong); every
# other outcome is no answer: the record is failed, so a rerun asks again. ``empty`` is a reply
# with no text left (none at all, or only inline thinking; a reply only in reasoning_content is
# answered from there); the rest are the call's failure categories.
ReplyOutcome = Literal["answered", "truncated", "refused", "empty"]
Outcome = Literal[
    "answered", "truncated", "refused", "empty",
    "rate_limited", "server_error", "timeout", "connection_error", "client_error",
    "malformed_response", "reply_too_large", "retry_after_too_long", "unexpected_error",
]
ANSWER_OUTCOMES: frozenset[str] = frozenset({"answered", "truncated", "refused"})


class TokenUsage(BaseModel):
    """Token counts as reported by the server (absent fields stay ``None``)."""

    model_config = ConfigDict(frozen=True)

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    reasoning_tokens: int | None = Field(
        default=None, description="Of completion_tokens, those spent reasoning "
        "(completion_tokens_details.reasoning_tokens), when the server says.")

    @model_serializer(mode="wrap")
    def _without_unknown_reasoning(self, handler: SerializerFunctionWrapHandler) -> Any:
        # Left out when unknown, so records of models that do not reason read as before.
        data = handler(self)
        if isinstance(data, dict) and data.get("reasoning_tokens") is None:
            data.pop("reasoning_tokens", None)
        return data


class ChatResult(BaseModel):
    """One logical call after its retries: the reply text, or a failure with its category.

    Cost is accounted whether the call succeeded or not: ``usage`` of the reply that ended the
    call (when the server reported it), ``latency_s`` of the last HTTP attempt, ``wall_s`` from
    the first attempt to the end (waits included), ``waited_s`` of that spent waiting.
    """

    model_config = ConfigDict(frozen=True)

    content: str | None = None
    finish_reason: str | None = None
    usage: TokenUsage | None = None
    latency_s: float | None = Field(
        default=None, description="Seconds of the last HTTP attempt (None: none was sent).")
    wall_s: float = Field(description="Seconds from the first attempt to the end, waits included.")
    waited_s: float = Field(default=0.0, description="Seconds spent waiting between attempts.")
    attempts: int = Field(ge=0, description="HTTP requests sent (1 + retries).")
    status_code: int | None = Field(
        default=None, description="HTTP status of the last attempt (None: no response).")
    error_category: ChatErrorCategory | None = None
    error_message: str | None = None
    raw_response: str | None = Field(
        default=None, description="An excerpt of a body that is not a chat completion.")
    reasoning: str | None = Field(
        default=None, description="Reasoning sent beside the content (reasoning_content or "
        "reasoning); inline think tags stay in content.")
    reasoning_field: str | None = Field(
        default=None, description="The message field the reasoning came in.")
    refusal: str | None = Field(default=None, description="The message's refusal, if any.")
    has_logprobs: bool = Field(default=False, description="The first choice carried logprobs.")
    retry_after_s: float | None = Field(
        default=None, description="The wait the last attempt's refusal asked for (Retry-After), "
        "when it was a retryable status that named one.")
    served_model: str | None = Field(
        default=None, description="The reply's own 'model' field: the model the server says "
        "answered (eval_assets.served_model checks it against the declared one).")

    @property
    def ok(self) -> bool:
        """Whether the call produced a reply (its content may still be anything)."""
        return self.error_category is None


def text_of(messages: list[Message]) -> str:
    """The text a text-only model sees: every text part of every message, images dropped."""
    parts: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content
                         if isinstance(p, dict) and p.get("type") == "text")
    return "\n".join(parts)
