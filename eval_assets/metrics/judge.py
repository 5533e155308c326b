"""LLM-as-judge for open-ended answers, compatible with NVIDIA AVLM ``avlm/evals/qa_llm_judge/``.

Rows with ``evaluation_type == "open_ended"`` (schema: :mod:`eval_assets.metrics.predictions`) are
scored 1-10 by any OpenAI-compatible chat endpoint with the AVLM rubric
(:mod:`eval_assets.metrics.judge_prompt`). How a reply is read, and both score rules, are in
:mod:`eval_assets.metrics.judge_reply`.

The judge never invents a score. By default a reply counts only when its ``score`` is an integer
1..10 (or a string or float holding one); anything else is a failure with its category
(``missing_score``, ``score_out_of_range``, ``invalid_score``, ``parse_error``,
``empty_response``, ``oversized_reply``), asked again up to ``reply_tries`` times, then kept in the
failure count and out of the mean. ``avlm_compat: true`` applies AVLM's coercions instead (> 10
divided by 10, round half to even, clamp to 1..10, no score becomes 1), and every coerced row is
counted by kind (``avlm_coercions``) so the numbers can be compared with AVLM's knowingly.

Where we differ from the reference, on purpose: API errors are retried by the project's one
chat client (:mod:`eval_assets.openai_chat`: exponential backoff with jitter, honouring
Retry-After, a Retry-After beyond ``retry_after_max_s`` failing as ``retry_after_too_long``); a
row that still fails is a recorded failure with a category and the run goes on; a summary with
nothing scored says ``null``, not AVLM's 0 (kept in compatibility mode); a reply longer than
``max_reply_chars`` is an ``oversized_reply`` failure in both modes (AVLM has no limit), and a body
over ``max_reply_bytes`` (or a reply over the journal's 65,536 characters) is not even read: a
``reply_too_large`` failure; results keep input order and carry no timestamp, so the same replies
give byte-identical files. Two additions guard the numbers themselves:

- every call is journalled (:mod:`eval_assets.metrics.judge_journal`), so a rerun after a crash
  repeats only the calls that were in flight, and replies are never paid for twice;
- before any row, the judge must pass a calibration (:mod:`eval_assets.metrics.judge_calibration`):
  ranking reference descriptions above corrupted copies. A judge that fails has its scores
  withheld and no row is judged. A judge that is also a model under test is flagged
  ``self_judging``.

``response_format`` (off by default, so requests stay AVLM's) asks the endpoint for structured
output; ``response_format: judgement_schema`` in YAML means :data:`JUDGEMENT_SCHEMA_FORMAT`, the
rubric's reply as a JSON schema, which small local judges cannot write reliably unaided.

Error categories: ``infer_failed``, ``missing_gt``, ``missing_pred``, ``empty_response``,
``parse_error``, ``missing_score``, ``score_out_of_range``, ``invalid_score``,
``oversized_reply``, ``reply_too_large``, ``timeout``, ``rate_limited``,
``retry_after_too_long``, ``api_failed`` (any other failed call: HTTP errors, connection errors,
a 200 that is not a chat completion), ``processing_error``. Every call's token usage and latency
are journalled with it.

The API key is read from the environment variable the config names, handed to the client, and
redacted from every error message and journalled reply; it is never written or logged.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import logging
import os
import random
import statistics
import threading
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from eval_assets import progress
from eval_assets.errors import yaml_problem
from eval_assets.metrics.judge_calibration import CalibrationReport, calibrate
from eval_assets.metrics.judge_journal import (
    JOURNAL_CONTENT_LIMIT,
    JOURNAL_FILE,
    LOCK_FILE,
    CallPurpose,
    JudgeCallRecord,
    call_key,
    open_journal,
    request_sha256,
)
from eval_assets.metrics.judge_prompt import MetadataPlacement, build_messages
from eval_assets.metrics.judge_reply import JudgeOutcome as JudgeOutcome
from eval_assets.metrics.judge_reply import ReplyProblem, read_reply
from eval_assets.metrics.judge_reply import ScoreError as ScoreError
from eval_assets.metrics.judge_reply import avlm_score as avlm_score
from eval_assets.metrics.judge_reply import extract_json as extract_json
from eval_assets.metrics.judge_reply import normalize_score as normalize_score
from eval_assets.metrics.judge_reply import strict_score as strict_score
from eval_assets.metrics.predictions import (
    InferenceLayout,
    PredictionRow,
    ScoringWarning,
    read_predictions,
    write_json_atomic,
)
from eval_assets.openai_chat import (
    DEFAULT_ANNOUNCE_WAIT_S,
    DEFAULT_RETRY_AFTER_MAX_S,
    ChatClient,
    RetryPolicy,
    backoff_delay,
)
from eval_assets.journal import Journal, exclusive_run_lock
from eval_assets.schemas.predictions import ModelSpec

log = logging.getLogger(__name__)

# The chat client's failure categories the judge reports as they are; any other failed call is
# ``api_failed`` (AVLM's name).
_OWN_CATEGORIES = frozenset({"timeout", "rate_limited", "reply_too_large", "retry_after_too_long"})

DEFAULT_API_KEY_ENV = "CLIENT_API_KEY"
SERVED_API_KEY = "local-server"

ScoringMode = Literal["strict", "avlm_compat"]

# The rubric's reply as an OpenAI structured-output format. The rubric asks for lists of
# strengths and weaknesses, but the local server builds flat objects only, and the outcome
# keeps whatever type the reply has.
JUDGEMENT_SCHEMA_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {
        "name": "judgement",
        "schema": {
            "type": "object",
            "properties": {
                "score": {"type": "integer", "minimum": 1, "maximum": 10},
                "reasoning": {"type": "string"},
                "strengths": {"type": "string"},
                "weaknesses": {"type": "string"},
                "metadata_alignment": {"type": "string"},
            },
            "required": ["score", "reasoning", "strengths", "weaknesses", "metadata_alignment"],
        },
    },
}
# Calibration asks for the score alone: a few tokens instead of a paragraph per call.
SCORE_ONLY_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {
        "name": "score",
        "schema": {
            "type": "object",
            "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 10}},
            "required": ["score"],
        },
    },
}
SCORE_ONLY_GUIDANCE = ('For this request, reply with the score only, as {"score": <1-10>}, and '
                       'no other field or text.')
# Names a YAML config may give instead of spelling out a response format.
RESPONSE_FORMAT_SHORTHANDS: dict[str, dict[str, Any]] = {
    "judgement_schema": JUDGEMENT_SCHEMA_FORMAT,
}


class JudgeConfigError(ValueError):
    """A judge config or environment that cannot work; the message names the field and the fix."""


class JudgeConfig(BaseModel):
    """How to reach the judge, how hard to try, and how far to trust it.

    The one loader of ``judge.yaml`` is :meth:`from_yaml`, used by the CLI and the Dagster
    resource alike; :func:`open_judge` turns a config into a running judge (starting the local
    model named by ``serve`` when there is no ``base_url``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str | None = Field(None, description="OpenAI-compatible endpoint; None: serve")
    serve: str | None = Field(None, description="local model to start when base_url is absent")
    model: str = Field("", description="model id sent; default: the served model")
    api_key_env: str = DEFAULT_API_KEY_ENV
    temperature: float = 0.0
    max_tokens: int = Field(1000, ge=1)
    timeout_s: float = Field(60.0, gt=0)
    max_retries: int = Field(3, ge=0, description="extra attempts after a failed API call")
    reply_tries: int = Field(5, ge=1, description="tries for a reply without a valid score")
    backoff_base_s: float = Field(1.0, ge=0)
    backoff_max_s: float = Field(30.0, ge=0)
    backoff_jitter: float = Field(0.25, ge=0, le=1, description="0: no jitter")
    retry_after_max_s: float = Field(
        DEFAULT_RETRY_AFTER_MAX_S, ge=0,
        description="longest Retry-After honoured; longer fails as retry_after_too_long")
    announce_wait_s: float = Field(
        DEFAULT_ANNOUNCE_WAIT_S, ge=0, description="waits this long or longer are logged")
    max_reply_bytes: int | None = Field(
        None, ge=1, description="largest reply body read, else reply_too_large; None: derived "
        "from the journal's reply limit (see eval_assets.openai_chat)")
    seed: int = 0
    max_workers: int = Field(8, ge=1)
    metadata_placement: MetadataPlacement = "auto"
    metadata_max_chars: int = Field(0, ge=0, description="0: never truncate")
    metadata_compact: bool = True
    domain: str | None = None
    extra_guidance: str | None = None
    response_format: dict[str, Any] | None = Field(
        None, description="sent as the request's response_format; None: not sent")
    max_reply_chars: int = Field(
        16000, ge=1, le=JOURNAL_CONTENT_LIMIT,
        description="a longer reply is an oversized_reply failure, never parsed")
    avlm_compat: bool = Field(
        False, description="AVLM's score coercions instead of failures (counted by kind)")
    calibration_pairs: int = Field(8, ge=0, le=32, description="0: no calibration")
    calibration_frames: int = Field(3, ge=1)
    calibration_min_agreement: float = Field(0.75, ge=0, le=1)
    calibration_max_tokens: int = Field(16, ge=1)

    @field_validator("response_format", mode="before")
    @classmethod
    def _expand_response_format(cls, value: Any) -> Any:
        """A shorthand name becomes its format (a copy: configs must not share one dict)."""
        if isinstance(value, str):
            if value not in RESPONSE_FORMAT_SHORTHANDS:
                raise ValueError(f"unknown response_format {value!r}; use one of "
                                 f"{sorted(RESPONSE_FORMAT_SHORTHANDS)} or an OpenAI "
                                 f"response_format mapping such as {{type: json_schema, ...}}")
            return copy.deepcopy(RESPONSE_FORMAT_SHORTHANDS[value])
        if isinstance(value, dict) and not isinstance(value.get("type"), str):
            raise ValueError("a response_format mapping needs a 'type' (text, json_object or "
                             "json_schema)")
        return value

    @field_validator("serve")
    @classmethod
    def _known_local_model(cls, value: str | None) -> str | None:
        from eval_assets.predictions.baselines import LOCAL_MODELS

        if value is not None and value not in LOCAL_MODELS:
            raise ValueError(f"unknown local model {value!r}; serve one of "
                             f"{sorted(LOCAL_MODELS)}, or remove 'serve' and set base_url")
        return value

    @model_validator(mode="after")
    def _endpoint(self) -> JudgeConfig:
        """An endpoint is a base_url or a served model; a served model answers to its own name."""
        if self.base_url is None and self.serve is None:
            raise ValueError("field 'base_url' is required when 'serve' is absent; fix: set "
                             "base_url (an OpenAI-compatible endpoint) and model, or serve a "
                             "local model (serve: blind-smollm2)")
        if not self.model:
            if self.base_url is not None:
                raise ValueError("field 'model' is required with base_url; fix: set model to "
                                 "the endpoint's model id")
            object.__setattr__(self, "model", self.serve)
        elif self.base_url is None and self.model != self.serve:
            raise ValueError(f"field 'model' is {self.model!r} but the served model answers as "
                             f"{self.serve!r}; fix: remove 'model' or set it to {self.serve!r}")
        return self

    def retry_policy(self) -> RetryPolicy:
        """The chat client's retry policy from these settings."""
        return RetryPolicy(max_retries=self.max_retries, backoff_base_s=self.backoff_base_s,
                           backoff_max_s=self.backoff_max_s, jitter=self.backoff_jitter,
                           retry_after_max_s=self.retry_after_max_s,
                           announce_wait_s=self.announce_wait_s)

    @property
    def scoring_mode(self) -> ScoringMode:
        """``avlm_compat`` when AVLM's coercions are on, else ``strict``."""
        return "avlm_compat" if self.avlm_compat else "strict"

    @classmethod
    def from_yaml(cls, path: Path, **overrides: Any) -> JudgeConfig:
        """Load and validate a YAML config; errors name the file, the field and the fix.

        ``overrides`` (e.g. ``avlm_compat=True`` from a CLI flag) replace the file's values.
        """
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: judge config not found; fix: pass --config with a "
                                    f"YAML file that sets base_url and model, or serve")
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise JudgeConfigError(f"{path}: {yaml_problem(exc)}; fix: correct the syntax"
                                   ) from None
        if not isinstance(data, dict):
            raise JudgeConfigError(f"{path}: expected a mapping of settings, got "
                                   f"{type(data).__name__}; fix: write 'key: value' lines")
        if "api_key" in data:
            # Never echo the value: it is a secret that should not be in the file at all.
            raise JudgeConfigError(
                f"{path}: field 'api_key' is not allowed (a key must not be stored in a file); "
                f"fix: remove it and export the key in the environment variable named by "
                f"'api_key_env' (default {DEFAULT_API_KEY_ENV})")
        try:
            return cls.model_validate({**data, **overrides})
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            message = str(first["msg"]).removeprefix("Value error, ")
            if not where:  # a rule across fields: the message names them
                raise JudgeConfigError(f"{path}: {message}") from None
            raise JudgeConfigError(f"{path}: field {where!r}: {message}; fix: correct or "
                                   f"remove {where!r} (see JudgeConfig)") from None

    def resolve_api_key(self) -> str:
        """The key from the environment variable ``api_key_env``; error when it is unset."""
        key = os.environ.get(self.api_key_env, "")
        if not key:
            raise JudgeConfigError(
                f"environment variable {self.api_key_env} is not set; fix: export "
                f"{self.api_key_env}=<API key of the judge endpoint> (or set api_key_env)")
        return key

    def settings_record(self) -> dict[str, Any]:
        """The non-secret settings written into ``llm_judge_predictions.json``."""
        return {
            "model_used": self.model,
            "max_workers": self.max_workers,
            "metadata_mode": self.metadata_placement,
            "metadata_max_chars": self.metadata_max_chars,
            "metadata_compact": self.metadata_compact,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
            "reply_tries": self.reply_tries,
            # Only when set, so files from configs without one stay as they were.
            **({"response_format": self.response_format}
               if self.response_format is not None else {}),
        }


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

    def __init__(self, config: JudgeConfig, *, api_key: str | None = None) -> None:
        if config.base_url is None:
            raise JudgeConfigError(f"judge {config.model!r} has no base_url; use open_judge() "
                                   f"to start the served model {config.serve!r}")
        self.config = config
        self._api_key = api_key if api_key is not None else config.resolve_api_key()
        # Replies up to the journal's limit are read (and paid for, and journalled); the judge's
        # own max_reply_chars then decides whether one is parsed.
        self._client = ChatClient(config.base_url, api_key=self._api_key,
                                  timeout_s=config.timeout_s, policy=config.retry_policy(),
                                  max_reply_bytes=config.max_reply_bytes,
                                  max_reply_chars=JOURNAL_CONTENT_LIMIT)
        self._journal: Journal[JudgeCallRecord] | None = None
        self._counts_lock = threading.Lock()
        self.calls_made = 0
        self.calls_replayed = 0

    def __repr__(self) -> str:
        return f"OpenAIJudge(model={self.config.model!r}, base_url={self.config.base_url!r})"

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
        """The chat request body: exactly what is sent and what the journal key hashes."""
        cfg = self.config
        request: dict[str, Any] = {"model": cfg.model, "messages": messages,
                                   "temperature": cfg.temperature, "max_tokens": max_tokens}
        # Absent unless configured: some endpoints reject a response_format they do not know.
        if response_format is not None:
            request["response_format"] = response_format
        return request

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
        result = self._client.complete(request, label=label,
                                       jitter_key=f"{jitter_key}:{reply_try}")
        common = {"key": key, "request_sha256": digest, "reply_try": reply_try,
                  "purpose": purpose, "label": label, "calls": result.attempts,
                  "usage": result.usage, "latency_s": result.latency_s, "wall_s": result.wall_s}
        # A reply without content was still a reply (paid for): the judge reads it as an
        # empty_response and may ask again.
        if result.ok or result.error_category == "empty_response":
            text = None if result.content is None else self._redact(result.content)
            record = JudgeCallRecord(
                status="success", content_chars=len(text or ""),
                content=None if text is None else text[:JOURNAL_CONTENT_LIMIT], **common)
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
        policy = self.config.retry_policy()
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
            read = read_reply(record.content, record.content_chars,
                              max_chars=self.config.max_reply_chars, avlm_compat=avlm_compat)
            if isinstance(read, JudgeOutcome):
                return dataclasses.replace(read, attempts=calls)
            problem = read
        return JudgeOutcome.failure(problem.category, self._redact(
            f"{problem.message} (after {tries} tries)"), calls)

    def judge(self, row: PredictionRow) -> JudgeOutcome:
        """Score one row; a reply without a valid score is asked again up to ``reply_tries``."""
        cfg = self.config
        messages, placement = build_messages(
            ground_truth=row.ground_truth or "", conversation=row.prompt_turns(),
            prediction=row.prediction or "", metadata=row.metadata,
            placement=cfg.metadata_placement, domain=cfg.domain,
            extra_guidance=cfg.extra_guidance, metadata_max_chars=cfg.metadata_max_chars,
            metadata_compact=cfg.metadata_compact)
        outcome = self._ask(row, messages, max_tokens=cfg.max_tokens,
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
        guidance = "\n\n".join(p for p in (cfg.extra_guidance, SCORE_ONLY_GUIDANCE) if p)
        messages, _ = build_messages(
            ground_truth=row.ground_truth or "", conversation=row.prompt_turns(),
            prediction=row.prediction or "", metadata=row.metadata,
            placement=cfg.metadata_placement, domain=cfg.domain, extra_guidance=guidance,
            metadata_max_chars=cfg.metadata_max_chars, metadata_compact=cfg.metadata_compact)
        return self._ask(row, messages, max_tokens=cfg.calibration_max_tokens,
                         response_format=SCORE_ONLY_FORMAT if cfg.response_format else None,
                         tries=1, purpose="calibration", avlm_compat=False)


@contextlib.contextmanager
def open_judge(config: JudgeConfig, *, api_key: str | None = None) -> Iterator[OpenAIJudge]:
    """A client for the configured judge; a ``serve`` judge's local server runs meanwhile.

    With ``base_url`` the key comes from ``api_key`` or the variable ``api_key_env``; a served
    local model needs none. The yielded judge's ``config`` has the URL actually used.
    """
    with contextlib.ExitStack() as stack:
        if config.base_url is None:
            from eval_assets.predictions.serve import serve_in_thread

            url = stack.enter_context(serve_in_thread(model=str(config.serve), port=0,
                                                      seed=config.seed))
            judge = OpenAIJudge(config.model_copy(update={"base_url": url}),
                                api_key=SERVED_API_KEY)
        else:
            judge = OpenAIJudge(config, api_key=api_key)
        stack.callback(judge.close)
        yield judge


def self_judging_models(config: JudgeConfig, specs: Sequence[ModelSpec]) -> list[str]:
    """Names of the models under test that are the judge itself (same model id or served model).

    A model grading its own kind of output is not an independent judge; the results say so.
    """
    judge_ids = {config.model} | ({config.serve} if config.serve else set())
    return [spec.name for spec in specs
            if judge_ids & ({spec.name, spec.api_model} | ({spec.serve} if spec.serve else set()))]


def precheck(row: PredictionRow) -> JudgeOutcome | None:
    """The failure a row has before any judge sees it (AVLM's order), or None if judgeable."""
    if row.inference_status != "success":
        return JudgeOutcome.failure("infer_failed",
                                    f"Inference failed: {row.inference_status or 'none'}")
    if not row.ground_truth:
        return JudgeOutcome.failure("missing_gt", "Missing ground truth (gt) field")
    if not row.prediction:
        return JudgeOutcome.failure("missing_pred", "Missing prediction (pred) field")
    return None


@dataclass(frozen=True)
class JudgedRow:
    """A row and its outcome."""

    row: PredictionRow
    outcome: JudgeOutcome


def open_ended_rows(rows: Sequence[PredictionRow], limit: int | None = None) -> list[PredictionRow]:
    """The rows the judge scores, in input order, optionally only the first ``limit``."""
    selected = []
    for row in rows:
        if row.evaluation_type is None:
            warnings.warn(f"{row.source}: missing evaluation_type (id={row.id!r}); row skipped",
                          ScoringWarning, stacklevel=2)
        elif row.evaluation_type == "open_ended":
            selected.append(row)
    return selected if limit is None else selected[:max(0, limit)]


def _guarded(judge: Judge, method: str, row: PredictionRow) -> JudgeOutcome:
    try:
        return getattr(judge, method)(row)
    except Exception as exc:  # a plug-in judge's bug must not sink the other rows
        log.exception("judge %s raised on row %s", judge.name, row.id)
        return JudgeOutcome.failure(
            "processing_error", f"Error processing entry: {type(exc).__name__}: {exc}")


def judge_rows(rows: Sequence[PredictionRow], judge: Judge, *, max_workers: int) -> list[JudgedRow]:
    """Judge every row on a bounded thread pool; results come back in input order."""
    if not rows:
        return []
    with progress.task("judge rows", total=len(rows)) as advance:

        def one(row: PredictionRow) -> JudgedRow:
            early = precheck(row)
            judged = JudgedRow(row, early if early is not None else _guarded(judge, "judge", row))
            advance(1)
            return judged

        with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(rows))),
                                thread_name_prefix="judge") as pool:
            return list(pool.map(one, rows))


def result_record(judged: JudgedRow, model_used: str) -> dict[str, Any]:
    """One entry of ``results``: AVLM's keys, plus ``error_category`` and ``attempts``.

    A score that AVLM compatibility coerced also lists how (``avlm_coercions``, last key).
    """
    row, out = judged.row, judged.outcome
    if out.ok:
        record = {
            "score": out.score, "reasoning": out.reasoning, "strengths": out.strengths,
            "weaknesses": out.weaknesses, "metadata_alignment": out.metadata_alignment,
            "index": row.index, "id": row.id, "gt": row.ground_truth, "pred": row.prediction,
            "conversation": row.prompt_turns(), "metadata": row.metadata,
            "model_used": model_used, "metadata_mode_used": out.metadata_mode_used,
            "class": row.question_class, "attempts": out.attempts,
        }
        if out.coercions:
            record["avlm_coercions"] = list(out.coercions)
        return record
    return {
        "index": row.index, "id": row.id, "error": out.error, "error_category": out.error_category,
        "score": None, "gt": row.ground_truth, "pred": row.prediction,
        "conversation": row.prompt_turns(), "metadata": row.metadata,
        "inference_status": row.inference_status, "class": row.question_class,
        "attempts": out.attempts,
    }


def _is_failure(result: Mapping[str, Any]) -> bool:
    # AVLM's own files mark failures with score 0; ours with an error and a null score.
    return bool(result.get("error")) or not result.get("score")


def score_distribution(scores: Sequence[int]) -> dict[str, int]:
    """AVLM's buckets: 9-10, 8, 7, 6, 1-5."""
    return {
        "excellent_9_10": sum(1 for s in scores if s >= 9),
        "good_8": sum(1 for s in scores if s == 8),
        "fair_7": sum(1 for s in scores if s == 7),
        "poor_6": sum(1 for s in scores if s == 6),
        "very_poor_1_5": sum(1 for s in scores if 1 <= s <= 5),
    }


def judge_statistics(results: Sequence[Mapping[str, Any]], *,
                     avlm_compat: bool = False) -> dict[str, Any]:
    """The ``statistics`` block of ``llm_judge_predictions.json`` (AVLM keys and arithmetic).

    With nothing scored the score fields are null; AVLM writes 0 there, which compatibility mode
    keeps.
    """
    scores = [int(r["score"]) for r in results if not _is_failure(r)]
    explicit = sum(1 for r in results if r.get("error"))
    stats: dict[str, Any] = {
        "total_entries": len(results),
        "successful_evaluations": len(scores),
        "failed_evaluations": len(results) - len(scores),
        "explicit_errors": explicit,
        "invalid_responses": len(results) - len(scores) - explicit,
        "success_rate": len(scores) / len(results) * 100 if results else 0,
    }
    if scores:
        stats.update({
            "mean_score": statistics.mean(scores),
            "median_score": statistics.median(scores),
            "std_dev": statistics.stdev(scores) if len(scores) > 1 else 0,
            "min_score": min(scores), "max_score": max(scores),
            "score_distribution": score_distribution(scores),
        })
    else:
        empty = 0 if avlm_compat else None
        stats.update({"mean_score": empty, "median_score": empty, "std_dev": empty,
                      "min_score": empty, "max_score": empty,
                      "score_distribution": score_distribution([])})
    return stats


def _median(scores: Sequence[int]) -> float | int:
    ordered = sorted(scores)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2


def _summary(results: Sequence[Mapping[str, Any]], avlm_compat: bool) -> dict[str, Any]:
    scores = [int(r["score"]) for r in results if not _is_failure(r)]
    empty = 0 if avlm_compat else None
    return {
        "total_judged": len(results),
        "num_success": len(scores),
        "num_failed": len(results) - len(scores),
        "mean_score": sum(scores) / len(scores) if scores else empty,
        "median_score": _median(scores) if scores else empty,
        "min_score": min(scores) if scores else empty,
        "max_score": max(scores) if scores else empty,
        "score_distribution": score_distribution(scores),
    }


def summarize_judge_results(results: Sequence[Mapping[str, Any]], *,
                            avlm_compat: bool = False) -> dict[str, Any]:
    """The ``llm_judge_results.json`` summary; failures are counted, never averaged.

    With nothing scored, mean, median, min and max are null (AVLM's 0 in compatibility mode).
    """
    summary = _summary(results, avlm_compat)
    by_class: dict[Any, list[Mapping[str, Any]]] = {}
    for result in results:
        by_class.setdefault(result.get("class"), []).append(result)
    summary["per_class"] = {cls: _summary(group, avlm_compat) for cls, group in by_class.items()}
    return summary


def coercion_counts(judged: Sequence[JudgedRow]) -> dict[str, Any]:
    """AVLM-compatibility coercions: rows coerced, and rows per kind (a row may have two kinds)."""
    by_kind: dict[str, int] = {}
    rows = 0
    for item in judged:
        if item.outcome.ok and item.outcome.coercions:
            rows += 1
            for kind in item.outcome.coercions:
                by_kind[kind] = by_kind.get(kind, 0) + 1
    return {"rows": rows, "by_kind": dict(sorted(by_kind.items()))}


def judge_predictions_document(judged: Sequence[JudgedRow], *, model_used: str,
                               metadata: Mapping[str, Any],
                               avlm_compat: bool = False) -> dict[str, Any]:
    """The ``llm_judge_predictions.json`` document: statistics, results, failures, metadata.

    In compatibility mode an ``avlm_coercions`` block follows AVLM's keys.
    """
    results = [result_record(item, model_used) for item in judged]
    failures = [{"index": r["index"], "id": r["id"], "error": r["error"],
                 "category": r["error_category"]} for r in results if r.get("error")]
    counts: dict[str, int] = {}
    for failure in failures:
        counts[failure["category"]] = counts.get(failure["category"], 0) + 1
    document = {
        "statistics": judge_statistics(results, avlm_compat=avlm_compat),
        "results": results,
        "failures": failures,
        "error_counts_by_category": counts,
        "metadata": dict(metadata),
    }
    if avlm_compat:
        document["avlm_coercions"] = coercion_counts(judged)
    return document


def withheld_status(calibration: CalibrationReport) -> str:
    """The status of a judge whose scores are withheld, with its agreement."""
    return f"withheld: judge failed calibration (agreement {calibration.agreement or 0:.0%})"


def judge_status(calibration: CalibrationReport, num_success: int) -> str:
    """``scored``, ``nothing scored`` or ``withheld: judge failed calibration (agreement X%)``."""
    if calibration.withheld:
        return withheld_status(calibration)
    return "scored" if num_success else "nothing scored"


@dataclass(frozen=True)
class JudgeReport:
    """What :func:`judge_dir` wrote, and what it cost (the costs are not written: they vary).

    ``calls_made`` counts HTTP calls this run made; ``calls_replayed`` replies read back from the
    journal instead.
    """

    predictions: dict[str, Any]
    results: dict[str, Any]
    predictions_path: Path
    results_path: Path
    calibration: CalibrationReport
    journal_path: Path | None = None
    calls_made: int = 0
    calls_replayed: int = 0
    calibration_s: float = 0.0
    judging_s: float = 0.0

    @property
    def status(self) -> str:
        """``scored``, ``nothing scored`` or ``withheld: ...``."""
        return str(self.results["status"])

    @property
    def scored(self) -> bool:
        """True when at least one row has a score."""
        return int(self.results["num_success"]) > 0


def _calibration_scorer(judge: Judge) -> Any:
    method = "score_only" if callable(getattr(judge, "score_only", None)) else "judge"
    return lambda row: _guarded(judge, method, row)


def judge_dir(inference_dir: Path, config: JudgeConfig, *, judge: Judge | None = None,
              limit: int | None = None,
              self_judging_models: Sequence[str] = ()) -> JudgeReport:
    """Calibrate the judge, judge ``INFERENCE_DIR/predictions.jsonl``, write ``llm_judge/``.

    ``judge`` defaults to the configured one (:func:`open_judge`, which starts a served model);
    ``limit`` keeps only the first open-ended rows; ``self_judging_models`` names the models
    under test that are the judge itself. An :class:`OpenAIJudge` journals every call in
    ``llm_judge/judge.journal.jsonl``, so a rerun repeats only calls that were in flight. A judge
    that fails calibration judges no row: the results say ``withheld`` and hold no score.
    """
    layout = InferenceLayout(Path(inference_dir))
    rows = open_ended_rows(read_predictions(layout.predictions), limit)
    out_dir = layout.judge_predictions.parent
    journal_path = out_dir / JOURNAL_FILE
    with contextlib.ExitStack() as stack:
        # The judge first: a missing key must fail before anything is written.
        active: Judge = judge if judge is not None else stack.enter_context(open_judge(config))
        try:
            stack.enter_context(exclusive_run_lock(out_dir / LOCK_FILE))
        except RuntimeError as exc:
            raise JudgeConfigError(str(exc)) from None
        client = active if isinstance(active, OpenAIJudge) else None
        if client is not None:
            try:
                journal = stack.enter_context(open_journal(journal_path))
            except ValueError as exc:
                raise JudgeConfigError(str(exc)) from None
            stack.enter_context(client.journalled(journal))
        made_before = client.calls_made if client else 0
        replayed_before = client.calls_replayed if client else 0
        started = time.monotonic()
        calibration = calibrate(
            rows, _calibration_scorer(active), max_pairs=config.calibration_pairs,
            max_frames=config.calibration_frames,
            min_agreement=config.calibration_min_agreement, seed=config.seed)
        calibrated = time.monotonic()
        if calibration.withheld:
            log.warning("judge %s failed calibration (%d of %d pairs agreed); its scores are "
                        "withheld and no row is judged", active.name, calibration.agreed,
                        calibration.evaluated)
        judged = [] if calibration.withheld else judge_rows(rows, active,
                                                             max_workers=config.max_workers)
        finished = time.monotonic()
        calls_made = (client.calls_made - made_before) if client else 0
        calls_replayed = (client.calls_replayed - replayed_before) if client else 0
    document = judge_predictions_document(
        judged, model_used=active.name, avlm_compat=config.avlm_compat,
        metadata={"inference_dir": str(inference_dir), **config.settings_record(),
                  "model_used": active.name})
    summary = summarize_judge_results(document["results"], avlm_compat=config.avlm_compat)
    status = judge_status(calibration, summary["num_success"])
    document["metadata"].update({"scoring_mode": config.scoring_mode, "status": status,
                                 "self_judging": bool(self_judging_models)})
    summary.update({
        "status": status,
        "scoring_mode": config.scoring_mode,
        "failure_counts": document["error_counts_by_category"],
        "num_withheld": len(rows) if calibration.withheld else 0,
        "self_judging": bool(self_judging_models),
        "self_judging_models": list(self_judging_models),
        "calibration": calibration.model_dump(mode="json"),
    })
    if config.avlm_compat:
        summary["avlm_coercions"] = document["avlm_coercions"]
    write_json_atomic(layout.judge_predictions, document)
    write_json_atomic(layout.judge_results, summary)
    stats = document["statistics"]
    log.info("judge %s: %s; %d rows, %d scored, %d failed %s; calibration %s in %.1f s; %d calls "
             "made, %d replayed from the journal", active.name, status, len(rows),
             stats["successful_evaluations"], stats["failed_evaluations"],
             document["error_counts_by_category"], calibration.status, calibrated - started,
             calls_made, calls_replayed)
    return JudgeReport(document, summary, layout.judge_predictions, layout.judge_results,
                       calibration, journal_path if client else None, calls_made,
                       calls_replayed, calibrated - started, finished - calibrated)
