"""One endpoint type: where a chat model is reached, as whom, how hard to try, within what limits.

An :class:`Endpoint` is held by every caller of a chat model: each entry of the models file
(:class:`eval_assets.schemas.predictions.ModelSpec`), the judge config
(:class:`eval_assets.metrics.judge_config.JudgeConfig`) and the question author config
(:class:`eval_assets.vqa.authors.AuthorConfig`); the Dagster resources build theirs from the same
defaults. Every field has one default, here.

:func:`eval_assets.openai_chat.open_endpoint` is the one way to open it: a ``serve`` endpoint
without ``base_url`` starts that local model (:mod:`eval_assets.local_models`) in this process for
the duration; otherwise ``base_url`` is called. Either way the caller gets a ``ChatClient``.

The YAML files write an endpoint's fields flat, beside the caller's own settings
(``base_url: ...``, ``max_retries: 2``); :func:`split_endpoint_fields` gathers them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from eval_assets.env_names import check_env_var_name
from eval_assets.errors import InputError
from eval_assets.schemas.chat import TokenUsage

# One default per retry setting, for every caller (eval_assets.retry.RetryPolicy too).
DEFAULT_MAX_RETRIES = 4
"""Retries of a transient failure after the first try."""
DEFAULT_BACKOFF_BASE_S = 1.0
"""The first backoff; each further retry doubles it."""
DEFAULT_BACKOFF_MAX_S = 60.0
"""The longest backoff."""
DEFAULT_JITTER = 0.5
"""The share of a backoff that is random (equal jitter: half fixed, half drawn)."""
DEFAULT_RETRY_AFTER_MAX_S = 600.0
"""Longest ``Retry-After`` honoured by default; a longer one fails the call."""
DEFAULT_ANNOUNCE_WAIT_S = 10.0
"""Waits at least this long are logged as warnings, with their length."""

# The local models eval_assets.local_models.registry builds, by name (a test keeps them equal).
LOCAL_MODEL_NAMES = ("random", "blind-smollm2")
# Those of them that never see the image: a run they serve is the report's blind baseline.
BLIND_LOCAL_MODELS = ("blind-smollm2",)

# Requests need some key; a placeholder (never the user's OPENAI_API_KEY, which an SDK would
# otherwise pick up and send to whatever base_url is configured) when no variable is named.
NO_KEY = "not-needed"


TokenLimitParam = Literal["max_tokens", "max_completion_tokens"]
DEFAULT_THINK_TAGS: tuple[tuple[str, str], ...] = (("<think>", "</think>"),)


class EndpointError(InputError, ValueError):
    """An endpoint that cannot be opened (no URL, an unset key variable); the message says why."""


class Endpoint(BaseModel):
    """An OpenAI-compatible chat endpoint: target, identity, retry policy, limits.

    ``base_url`` is called when set; else the local model ``serve`` is started (with ``seed``).
    ``api_key_env`` is the NAME of the environment variable holding the key, never the key.
    """

    # hide_input_in_errors: a key pasted into api_key_env must not reach a message or log
    # through pydantic's "input_value=..." (each model holding an Endpoint sets it too).
    model_config = ConfigDict(frozen=True, extra="forbid", hide_input_in_errors=True)

    base_url: str | None = Field(None, description="OpenAI-compatible endpoint (.../v1)")
    serve: str | None = Field(None, description="local model started when base_url is absent")
    seed: int = Field(0, description="seed of the served local model")
    model: str | None = Field(None, description="model id sent; default: the served model")
    api_key_env: str | None = Field(
        None, description="NAME of the variable holding the key; None: no key is sent")
    timeout_s: float = Field(60.0, gt=0, description="seconds per HTTP attempt")
    max_concurrency: int = Field(4, ge=1, description="requests in flight")
    max_retries: int = Field(DEFAULT_MAX_RETRIES, ge=0,
                             description="retries of a transient failure after the first try")
    backoff_base_s: float = Field(DEFAULT_BACKOFF_BASE_S, ge=0)
    backoff_max_s: float = Field(DEFAULT_BACKOFF_MAX_S, ge=0)
    jitter: float = Field(DEFAULT_JITTER, ge=0, le=1,
                          description="random share taken off each backoff; 0: none")
    retry_after_max_s: float = Field(
        DEFAULT_RETRY_AFTER_MAX_S, ge=0,
        description="longest Retry-After honoured; a longer one fails as retry_after_too_long")
    announce_wait_s: float = Field(
        DEFAULT_ANNOUNCE_WAIT_S, ge=0, description="waits this long or longer are logged")
    max_tokens: int = Field(256, gt=0, description="reply token limit of each request")
    max_reply_bytes: int | None = Field(
        None, ge=1, description="largest reply body read, else reply_too_large; None: derived "
        "from max_tokens (eval_assets.openai_chat.default_reply_limits)")
    max_reply_chars: int | None = Field(
        None, ge=1, description="longest reply accepted, else reply_too_large; None: derived "
        "from max_tokens")
    token_limit_param: TokenLimitParam = Field(
        "max_tokens", description="the request field carrying max_tokens; the preflight "
        "switches to max_completion_tokens when the server refuses this one")
    think_tags: tuple[tuple[str, str], ...] = Field(
        DEFAULT_THINK_TAGS, description="opening and closing tags of inline reasoning, "
        "stripped from a reply before its answer is read; an unclosed one: truncated")

    @field_validator("base_url", "model", "api_key_env", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        # Dagster resources and CLI options spell "unset" as an empty string.
        return None if value == "" else value

    @field_validator("api_key_env")
    @classmethod
    def _a_name_not_a_key(cls, value: str | None) -> str | None:
        # Refused here, before the value can be echoed ("variable 'sk-…' is not set") or stored
        # (run folder, Dagster run config and event log); the message masks it.
        return check_env_var_name(value, "api_key_env") if value else value

    @field_validator("serve")
    @classmethod
    def _known_local_model(cls, value: str | None) -> str | None:
        if value is not None and value not in LOCAL_MODEL_NAMES:
            raise ValueError(f"unknown local model {value!r}; serve one of "
                             f"{sorted(LOCAL_MODEL_NAMES)}, or remove 'serve' and set base_url")
        return value

    @property
    def api_model(self) -> str:
        """The ``model`` of each request: ``model``, else the served model's name, else ''."""
        return self.model or self.serve or ""

    @property
    def served(self) -> bool:
        """Whether opening this endpoint starts a local model (``serve`` and no ``base_url``)."""
        return self.base_url is None and self.serve is not None

    def api_key(self) -> str:
        """The key from ``api_key_env`` (:data:`NO_KEY` when none is named); error when unset."""
        if not self.api_key_env:
            return NO_KEY
        key = os.environ.get(self.api_key_env, "")
        if not key:
            raise EndpointError(
                f"api_key_env names the environment variable {self.api_key_env!r}, which is not "
                f"set or empty; export it with the API key of {self.base_url or self.serve}, or "
                f"leave api_key_env empty for a server that needs no key")
        return key

    def over(self, base: Endpoint) -> Endpoint:
        """``base`` with every field this endpoint sets explicitly (the rest stay ``base``'s)."""
        return base.model_copy(update={name: getattr(self, name) for name in self.model_fields_set})


ENDPOINT_FIELDS = frozenset(Endpoint.model_fields)


def split_endpoint_fields(data: Mapping[str, Any], renames: Mapping[str, str] | None = None,
                          ) -> dict[str, Any]:
    """``data`` with its flat endpoint fields gathered under ``endpoint``.

    ``renames`` maps a caller's own key to an endpoint field (the judge's ``max_workers`` is
    ``max_concurrency``). A nested ``endpoint:`` mapping is accepted too; its fields come first,
    flat ones override them. Unknown keys stay where they are, for the caller's validation.
    """
    renames = dict(renames or {})
    out: dict[str, Any] = {}
    nested = data.get("endpoint")
    endpoint: dict[str, Any] = (dict(nested) if isinstance(nested, Mapping)
                                else nested.model_dump(exclude_unset=True)
                                if isinstance(nested, Endpoint) else {})
    for key, value in data.items():
        field = renames.get(key, key)
        if key == "endpoint":
            continue
        if field in ENDPOINT_FIELDS:
            endpoint[field] = value
        else:
            out[key] = value
    if nested is not None and not isinstance(nested, Mapping | Endpoint):
        out["endpoint"] = nested  # let validation name the wrong type
    else:
        out["endpoint"] = endpoint
    return out


ReasoningWhere = Literal["none", "reasoning_content", "reasoning", "inline"]


class EndpointCapabilities(BaseModel):
    """``endpoint.json`` of a run folder: what the preflight found the endpoint can do.

    Made by :func:`eval_assets.model_runs.preflight.preflight` before a run asks any case, and
    reused while ``config_sha256`` (the hash of the settings that decide the endpoint's
    behaviour) is unchanged.
    """

    model_config = ConfigDict(frozen=True)

    config_sha256: str = Field(description="hash of the endpoint settings probed")
    preflight_version: int
    model: str
    endpoint: str = Field(description="the endpoint probed (a served model: its stable id)")
    token_limit_param: TokenLimitParam = Field(
        description="the token-limit field the server accepts; the client sends this one")
    images: bool = Field(description="a request with one image was answered")
    max_images: int = Field(ge=0, description="most images one request was answered with "
                                              "(probed 1, 2, 4, ... up to max_images_probed)")
    max_images_probed: int
    data_url_images: bool = Field(description="a base64 data: URL image was accepted")
    structured_output: Literal["enforced", "ignored", "unsupported"] = Field(
        description="a canary json_schema reply validated (enforced), did not (ignored: the "
        "parameter was accepted but not followed) or the request was refused (unsupported)")
    reasoning: ReasoningWhere = Field(description="where reasoning arrived in the probes")
    logprobs: bool = Field(description="logprobs came back when asked (never required)")
    calls: int = Field(description="requests the preflight sent")
    usage: TokenUsage | None = Field(
        default=None, description="tokens of the probes' replies, summed (priced as the run's "
        "'probes' cost); None: the server reported none, or a record older than this field")
    seconds: float = Field(description="wall time of the preflight")
    notes: list[str] = Field(default_factory=list, description="what each probe saw")
    served_models: dict[str, int] = Field(
        default_factory=dict, description="the model each probe's reply named ('model'), "
        "counted (eval_assets.served_model checks them against the declared model)")
    listed_models: dict[str, list[str]] | None = Field(
        default=None, description="what GET /v1/models listed: each model id with its aliases; "
        "None: the endpoint lists none (no such route, or an unreadable answer)")
