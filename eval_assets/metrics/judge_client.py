"""The judge as a client of its endpoint: :class:`OpenAIJudge`, and :func:`open_judge`.

Every reply try is looked up in the judge's journal by the SHA-256 of its request before it is
sent, and journalled as soon as it is answered; API errors are retried by the one chat client
(:mod:`eval_assets.openai_chat`), a reply without a valid score is asked again up to
``reply_tries`` times. The API key is redacted from every error message and journalled reply.

Requests are built, sent and read by the one request builder
(:class:`eval_assets.chat_request.RequestBuilder`), as the models' are: the token limit goes under
the parameter the endpoint takes (a server that refuses ``max_tokens`` gets
``max_completion_tokens``), ``response_format`` is dropped where the endpoint refuses it, think
tags are taken out before the score is read, and a reply only in ``reasoning_content`` is read
(and journalled) from there. The journal key hashes the request as built, with the limit named
``max_tokens``, so it is the same whichever parameter the server wants.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import random
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any, Protocol, runtime_checkable

from eval_assets.chat_request import RequestBuilder
from eval_assets.journal import Journal
from eval_assets.metrics.avlm_rows import PredictionRow
from eval_assets.metrics.judge_config import (
    SCORE_ONLY_FORMAT,
    SCORE_ONLY_GUIDANCE,
    JudgeConfig,
    JudgeConfigError,
)
from eval_assets.metrics.judge_journal import (
    JOURNAL_CONTENT_LIMIT,
    CallPurpose,
    JudgeCallRecord,
    call_key,
    request_sha256,
)
from eval_assets.metrics.judge_prompt import build_messages
from eval_assets.metrics.judge_reply import JudgeOutcome, ReplyProblem, read_reply
from eval_assets.openai_chat import (
    ChatClient,
    backoff_delay,
    chat_client,
    open_endpoint,
    retry_policy,
)
from eval_assets.schemas.endpoint import EndpointError

log = logging.getLogger(__name__)

# The chat client's failure categories the judge reports as they are; any other failed call is
# ``api_failed`` (AVLM's name).
_OWN_CATEGORIES = frozenset({"timeout", "rate_limited", "reply_too_large", "retry_after_too_long"})


@runtime_checkable
class Judge(Protocol):
    """Anything that scores one judgeable row (inference succeeded, gt and prediction present).

    A judge may also offer ``score_only(row)``, a cheaper call used for calibration.
    """

    @property
    def name(self) -> str:
        """The judge's name in outputs (``model_used``)."""
        ...

    def judge(self, row: PredictionRow) -> JudgeOutcome:
        """Score ``row``; report trouble as a failure outcome rather than raising."""
        ...


class OpenAIJudge:
    """The :class:`Judge` for an OpenAI-compatible chat endpoint, through the one chat client.

    With a journal attached (:meth:`journalled`), every reply try is looked up by the SHA-256 of
    its request before it is sent, and journalled (fsynced) as soon as it is answered.
    """

    def __init__(self, config: JudgeConfig, *, api_key: str | None = None,
                 chat: ChatClient | None = None) -> None:
        if config.endpoint.base_url is None:
            raise JudgeConfigError(f"judge {config.model!r} has no base_url; use open_judge() "
                                   f"to start the served model {config.endpoint.serve!r}")
        self.config = config
        self._api_key = api_key if api_key is not None else judge_api_key(config)
        # Replies up to the journal's limit are read (and paid for, and journalled); the judge's
        # own max_reply_chars then decides whether one is parsed.
        self._client = chat if chat is not None else chat_client(
            config.endpoint, self._api_key, max_reply_chars=JOURNAL_CONTENT_LIMIT)
        self._requests = RequestBuilder(config.endpoint, temperature=config.temperature)
        self._journal: Journal[JudgeCallRecord] | None = None
        self._counts_lock = threading.Lock()
        self.calls_made = 0
        self.calls_replayed = 0

    def __repr__(self) -> str:
        return (f"OpenAIJudge(model={self.config.model!r}, "
                f"base_url={self.config.endpoint.base_url!r})")

    @property
    def name(self) -> str:
        """The judge model's name."""
        return self.config.model

    def close(self) -> None:
        """Close the HTTP connections."""
        self._client.close()

    @contextlib.contextmanager
    def journalled(self, journal: Journal[JudgeCallRecord]) -> Iterator[None]:
        """Look up and record every call in ``journal`` while the block runs."""
        previous, self._journal = self._journal, journal
        try:
            yield
        finally:
            self._journal = previous

    def _redact(self, text: str) -> str:
        return text.replace(self._api_key, "[REDACTED]") if self._api_key else text

    def _request(self, messages: list[Mapping[str, str]], max_tokens: int,
                 response_format: dict[str, Any] | None) -> dict[str, Any]:
        """The chat request as built (what the journal key hashes): model, messages,
        temperature, ``max_tokens`` and, when configured, ``response_format``. What is sent is
        this under the endpoint's own names (:meth:`RequestBuilder.wire`)."""
        return self._requests.request(messages, max_tokens=max_tokens,
                                      response_format=response_format)

    def _reply(self, request: dict[str, Any], reply_try: int, jitter_key: str, *,
               label: str, purpose: CallPurpose, delay_s: float) -> JudgeCallRecord:
        """Reply try ``reply_try`` of ``request``: from the journal if answered, else asked now."""
        digest = request_sha256(request)
        key = call_key(digest, reply_try)
        journal = self._journal
        if journal is not None and journal.succeeded(key):
            stored = journal.get(key)
            if stored is not None:
                with self._counts_lock:
                    self.calls_replayed += 1
                return stored
        if delay_s:
            time.sleep(delay_s)
        result = self._requests.send(self._client, request, label=label,
                                     jitter_key=f"{jitter_key}:{reply_try}")
        common = {"key": key, "request_sha256": digest, "reply_try": reply_try,
                  "purpose": purpose, "label": label, "calls": result.attempts,
                  "usage": result.usage, "latency_s": result.latency_s, "wall_s": result.wall_s}
        # A reply without content was still a reply (paid for): the judge reads it as an
        # empty_response and may ask again. One whose content is empty but whose reasoning
        # field holds the reply is journalled with that text, and says where it came from.
        if result.ok or result.error_category == "empty_response":
            reply = self._requests.read(result)
            content = reply.text if reply.answer_field else result.content
            text = None if content is None else self._redact(content)
            record = JudgeCallRecord(
                status="success", content_chars=len(text or ""),
                content=None if text is None else text[:JOURNAL_CONTENT_LIMIT],
                content_from=reply.answer_field, **common)
        else:
            category = str(result.error_category)
            if category not in _OWN_CATEGORIES:
                category = "api_failed"
            tries = f"{result.attempts} attempt{'s' if result.attempts != 1 else ''}"
            message = self._redact(f"API call failed after {tries}: {result.error_message}")
            log.debug("judge call %s failed: %s", label, message)
            record = JudgeCallRecord(status="failed", error_category=category, error=message,
                                     **common)
        with self._counts_lock:
            self.calls_made += record.calls
        if journal is not None:
            journal.append(record)
        return record

    def _ask(self, row: PredictionRow, messages: list[Mapping[str, str]], *, max_tokens: int,
             response_format: dict[str, Any] | None, tries: int, purpose: CallPurpose,
             avlm_compat: bool) -> JudgeOutcome:
        """Ask until a reply gives a score, ``tries`` replies at most; API failures end it."""
        request = self._request(messages, max_tokens, response_format)
        # Per row, so jitter does not depend on which thread asks first.
        jitter_key = f"{self.config.seed}:{purpose}:{row.index}:{row.id}"
        rng = random.Random(jitter_key)
        policy = retry_policy(self.config.endpoint)
        label = f"{purpose}:{row.id}"
        calls = 0
        problem = ReplyProblem("empty_response", "no reply")
        for reply_try in range(tries):
            delay = backoff_delay(reply_try, policy, rng) if reply_try else 0.0
            record = self._reply(request, reply_try, jitter_key, label=label, purpose=purpose,
                                 delay_s=delay)
            calls += record.calls
            if record.status == "failed":
                return JudgeOutcome.failure(record.error_category or "api_failed",
                                            record.error or "", calls)
            read = self._read(record, avlm_compat)
            if isinstance(read, JudgeOutcome):
                return dataclasses.replace(read, attempts=calls)
            problem = read
        return JudgeOutcome.failure(problem.category, self._redact(
            f"{problem.message} (after {tries} tries)"), calls)

    def _read(self, record: JudgeCallRecord, avlm_compat: bool) -> JudgeOutcome | ReplyProblem:
        """A journalled reply read for its score, after the endpoint's think tags are taken out
        (at read time, so the journal keeps the reply as it came and a change of tags costs no
        call)."""
        content = record.content
        if content is not None:
            thinking = self._requests.strip(content)
            if thinking.unclosed and not thinking.text.strip():
                return ReplyProblem("empty_response", "the judge's reply ends inside an unclosed "
                                    "think tag (its token limit ran out while thinking; raise "
                                    "max_tokens)")
            content = thinking.text
        return read_reply(content, record.content_chars, max_chars=self.config.max_reply_chars,
                          avlm_compat=avlm_compat)

    def judge(self, row: PredictionRow) -> JudgeOutcome:
        """Score one row; a reply without a valid score is asked again up to ``reply_tries``."""
        cfg = self.config
        messages, placement = build_messages(
            ground_truth=row.ground_truth or "", conversation=row.prompt_turns(),
            prediction=row.prediction or "", metadata=row.metadata,
            placement=cfg.metadata_placement, domain=cfg.domain,
            extra_guidance=cfg.extra_guidance, metadata_max_chars=cfg.metadata_max_chars,
            metadata_compact=cfg.metadata_compact)
        outcome = self._ask(row, messages, max_tokens=cfg.endpoint.max_tokens,
                            response_format=cfg.response_format, tries=cfg.reply_tries,
                            purpose="row", avlm_compat=cfg.avlm_compat)
        if outcome.ok:
            return dataclasses.replace(outcome, metadata_mode_used=placement)
        return outcome

    def score_only(self, row: PredictionRow) -> JudgeOutcome:
        """The rubric score alone, for calibration: one short, strictly read reply.

        Same rubric and evidence as :meth:`judge`, plus guidance asking for ``{"score": N}``
        only, ``calibration_max_tokens`` tokens, and a score-only schema when the endpoint takes
        structured output (``response_format`` is configured).
        """
        cfg = self.config
        return self._ask(row, self._score_only_messages(row),
                         max_tokens=cfg.calibration_max_tokens,
                         response_format=SCORE_ONLY_FORMAT if cfg.response_format else None,
                         tries=1, purpose="calibration", avlm_compat=False)

    def score_only_request(self, row: PredictionRow) -> dict[str, Any]:
        """The request body :meth:`score_only` sends for ``row`` (what its journal key hashes)."""
        cfg = self.config
        return self._request(self._score_only_messages(row), cfg.calibration_max_tokens,
                             SCORE_ONLY_FORMAT if cfg.response_format else None)

    def _score_only_messages(self, row: PredictionRow) -> list[Mapping[str, str]]:
        cfg = self.config
        guidance = "\n\n".join(p for p in (cfg.extra_guidance, SCORE_ONLY_GUIDANCE) if p)
        messages, _ = build_messages(
            ground_truth=row.ground_truth or "", conversation=row.prompt_turns(),
            prediction=row.prediction or "", metadata=row.metadata,
            placement=cfg.metadata_placement, domain=cfg.domain, extra_guidance=guidance,
            metadata_max_chars=cfg.metadata_max_chars, metadata_compact=cfg.metadata_compact)
        return messages


def judge_api_key(config: JudgeConfig) -> str:
    """The judge's key, from the variable ``api_key_env``; error when it is unset."""
    name = config.endpoint.api_key_env
    try:
        return config.endpoint.api_key()
    except EndpointError:
        raise JudgeConfigError(
            f"environment variable {name} is not set; fix: export "
            f"{name}=<API key of the judge endpoint> (or set api_key_env)") from None


@contextlib.contextmanager
def open_judge(config: JudgeConfig) -> Iterator[OpenAIJudge]:
    """A client for the configured judge; a ``serve`` judge's local server runs meanwhile.

    Opened by :func:`eval_assets.openai_chat.open_endpoint`, like every endpoint. With
    ``base_url`` the key comes from the variable ``api_key_env`` (an unset one fails before
    anything starts); a served local model needs none. The yielded judge's ``config`` has the
    URL actually used.
    """
    served = config.endpoint.served
    secret = "" if served else judge_api_key(config)
    with open_endpoint(config.endpoint, max_reply_chars=JOURNAL_CONTENT_LIMIT) as opened:
        reached = config.model_copy(update={"endpoint": opened.endpoint})
        # Only a real key is redacted from replies; a served model's placeholder is no secret.
        with contextlib.closing(OpenAIJudge(reached, api_key=secret, chat=opened.chat)) as judge:
            yield judge
