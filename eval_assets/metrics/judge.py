"""LLM-as-judge for open-ended answers, compatible with NVIDIA AVLM ``avlm/evals/qa_llm_judge/``.

Rows with ``evaluation_type == "open_ended"`` (schema: :mod:`eval_assets.metrics.predictions`) are
scored 1-10 by any OpenAI-compatible chat endpoint with the AVLM rubric
(:mod:`eval_assets.metrics.judge_prompt`). The reply's JSON is the text from the first ``{`` to the
last ``}``; the score is normalised as AVLM does (number or numeric string, > 10 divided by 10,
round half to even, clamp to 1..10, a reply without a score gets 1).

Where we differ from the reference, on purpose: empty or unparseable replies are retried
(``reply_tries``), API errors are retried with exponential backoff and jitter (honouring
Retry-After), and a row that still fails is a recorded failure with a category — the run goes on,
and the failure never enters the mean (its ``score`` is null, not 0). Results keep input order.
No timestamp is written, so the same replies give byte-identical files.

``response_format`` (off by default, so requests stay AVLM's) asks the endpoint for structured
output; ``response_format: judgement_schema`` in YAML means :data:`JUDGEMENT_SCHEMA_FORMAT`, the
rubric's reply as a JSON schema, which small local judges cannot write reliably unaided.

Error categories: ``infer_failed``, ``missing_gt``, ``missing_pred``, ``empty_response``,
``parse_error``, ``timeout``, ``rate_limited``, ``api_failed``, ``processing_error``.

The API key is read from the environment variable the config names, handed to the client, and
redacted from every error message; it is never written or logged.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import os
import random
import statistics
import time
import warnings
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import openai
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from eval_assets.http_retry import parse_retry_after
from eval_assets.metrics.judge_prompt import MetadataPlacement, build_messages
from eval_assets.metrics.predictions import (
    InferenceLayout,
    PredictionRow,
    ScoringWarning,
    read_predictions,
    write_json_atomic,
)

log = logging.getLogger(__name__)

# Statuses worth another try: the request may succeed later. Anything else (400, 401, 404, ...)
# fails the row at once, since repeating the same request cannot fix it.
_RETRYABLE_STATUS = {408, 409, 425, 429}

DEFAULT_API_KEY_ENV = "CLIENT_API_KEY"

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
# Names a YAML config may give instead of spelling out a response format.
RESPONSE_FORMAT_SHORTHANDS: dict[str, dict[str, Any]] = {
    "judgement_schema": JUDGEMENT_SCHEMA_FORMAT,
}


class JudgeConfigError(ValueError):
    """A judge config or environment that cannot work; the message names the field and the fix."""


class JudgeConfig(BaseModel):
    """How to reach the judge and how hard to try. Loadable from YAML with :meth:`from_yaml`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str
    model: str
    api_key_env: str = DEFAULT_API_KEY_ENV
    temperature: float = 0.0
    max_tokens: int = Field(1000, ge=1)
    timeout_s: float = Field(60.0, gt=0)
    max_retries: int = Field(3, ge=0, description="extra attempts after a failed API call")
    reply_tries: int = Field(5, ge=1, description="tries for an empty or unparseable reply")
    backoff_base_s: float = Field(1.0, ge=0)
    backoff_max_s: float = Field(30.0, ge=0)
    backoff_jitter: float = Field(0.25, ge=0, le=1, description="0: no jitter")
    retry_after_max_s: float = Field(60.0, ge=0)
    seed: int = 0
    max_workers: int = Field(8, ge=1)
    metadata_placement: MetadataPlacement = "auto"
    metadata_max_chars: int = Field(0, ge=0, description="0: never truncate")
    metadata_compact: bool = True
    domain: str | None = None
    extra_guidance: str | None = None
    response_format: dict[str, Any] | None = Field(
        None, description="sent as the request's response_format; None: not sent")

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

    @classmethod
    def from_yaml(cls, path: Path) -> JudgeConfig:
        """Load and validate a YAML config; errors name the file, the field and the fix."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: judge config not found; fix: pass --config with a "
                                    f"YAML file that sets at least base_url and model")
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise JudgeConfigError(f"{path}: not valid YAML ({exc})") from None
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
            return cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise JudgeConfigError(f"{path}: field {where!r}: {first['msg']}; fix: correct or "
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


@dataclass(frozen=True)
class JudgeOutcome:
    """A judge's verdict on one row: a 1-10 score, or an error with its category."""

    score: int | None
    reasoning: str = ""
    strengths: Any = field(default_factory=list)
    weaknesses: Any = field(default_factory=list)
    metadata_alignment: Any = ""
    metadata_mode_used: str | None = None
    error: str | None = None
    error_category: str | None = None
    attempts: int = 0

    @property
    def ok(self) -> bool:
        """True when the row has a score."""
        return self.error is None and self.score is not None

    @classmethod
    def failure(cls, category: str, error: str, attempts: int = 0) -> JudgeOutcome:
        """A recorded failure: no score, an error message and its category."""
        return cls(score=None, error=error, error_category=category, attempts=attempts)


@runtime_checkable
class Judge(Protocol):
    """Anything that scores one judgeable row (inference succeeded, gt and prediction present)."""

    @property
    def name(self) -> str:
        """The judge's name in outputs (``model_used``)."""
        ...

    def judge(self, row: PredictionRow) -> JudgeOutcome:
        """Score ``row``; report trouble as a failure outcome rather than raising."""
        ...


def normalize_score(raw: Any) -> int:
    """AVLM's score rule: number or numeric string; > 10 is /10; round half to even; clamp 1..10.

    Anything else (missing, null, text) counts as 0 and is clamped to 1. Infinity and NaN raise
    ``ValueError`` (an unusable reply, retried like unparseable JSON).
    """
    if isinstance(raw, bool):
        raw = int(raw)
    elif isinstance(raw, str):
        try:
            raw = float(raw.strip())
        except ValueError:
            raw = 0
    if not isinstance(raw, int | float):
        raw = 0
    if not math.isfinite(raw):
        raise ValueError(f"score {raw!r} is not a finite number")
    if raw > 10:
        raw = raw / 10
    return min(10, max(1, round(raw)))


def extract_json(text: str) -> dict[str, Any]:
    """The JSON object from the first ``{`` to the last ``}`` of ``text``; ValueError otherwise."""
    start, end = text.find("{"), text.rfind("}")
    if start == -1 or end == -1:
        raise ValueError("no JSON object in the reply")
    parsed = json.loads(text[start:end + 1])
    if not isinstance(parsed, dict):
        raise ValueError(f"the reply's JSON is a {type(parsed).__name__}, not an object")
    return parsed


def backoff_delay(attempt: int, config: JudgeConfig, rng: random.Random) -> float:
    """Backoff ``base * 2**attempt``, capped at ``backoff_max_s``, less a seeded jitter."""
    delay = min(config.backoff_max_s, config.backoff_base_s * (2 ** attempt))
    if config.backoff_jitter:
        delay *= 1.0 - config.backoff_jitter * rng.random()
    return delay


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms``, ``retry-after`` seconds or date)."""
    return parse_retry_after(headers)


class _CallFailed(Exception):
    """API retries are spent; carries the category and a redacted message."""

    def __init__(self, category: str, message: str, attempts: int) -> None:
        super().__init__(message)
        self.category = category
        self.message = message
        self.attempts = attempts


class OpenAIJudge:
    """The :class:`Judge` for an OpenAI-compatible chat endpoint; retries are ours, not openai's."""

    def __init__(self, config: JudgeConfig, *, api_key: str | None = None) -> None:
        self.config = config
        self._api_key = api_key if api_key is not None else config.resolve_api_key()
        self._client = openai.OpenAI(base_url=config.base_url, api_key=self._api_key,
                                     max_retries=0, timeout=config.timeout_s)

    def __repr__(self) -> str:
        return f"OpenAIJudge(model={self.config.model!r}, base_url={self.config.base_url!r})"

    @property
    def name(self) -> str:
        """The judge model's name."""
        return self.config.model

    def close(self) -> None:
        """Close the HTTP connections."""
        self._client.close()

    def _redact(self, text: str) -> str:
        return text.replace(self._api_key, "[REDACTED]") if self._api_key else text

    def _rng(self, row: PredictionRow) -> random.Random:
        # Per row, so jitter does not depend on which thread asks first.
        return random.Random(f"{self.config.seed}:{row.index}:{row.id}")

    def _call(self, messages: list[Mapping[str, str]], rng: random.Random,
              row: PredictionRow) -> tuple[str | None, int]:
        """One chat completion with API-error retries: (content, calls made)."""
        cfg = self.config
        total = cfg.max_retries + 1
        category, message = "api_failed", ""
        # Absent unless configured: some endpoints reject a response_format they do not know.
        extra: dict[str, Any] = ({"response_format": cfg.response_format}
                                 if cfg.response_format is not None else {})
        for attempt in range(total):
            wait: float | None = None
            try:
                response = self._client.chat.completions.create(
                    model=cfg.model, messages=messages,  # type: ignore[arg-type]
                    temperature=cfg.temperature, max_tokens=cfg.max_tokens, **extra)
                # A 200 whose body is not a chat completion comes back as a str or raises a
                # JSON error: a server fault, retried like a 5xx.
                choices = getattr(response, "choices", None)
                if choices is None or not isinstance(choices, list):
                    raise ValueError(f"not a chat completion ({type(response).__name__})")
                return (choices[0].message.content if choices else None), attempt + 1
            except ValueError as exc:
                category, message = "api_failed", f"malformed response: {exc}"
            except openai.APITimeoutError:
                category, message = "timeout", f"Timeout after {cfg.timeout_s}s"
            except openai.APIStatusError as exc:
                status = exc.status_code
                category = "rate_limited" if status == 429 else "api_failed"
                message = f"HTTP {status}: {exc.message}"
                wait = retry_after_s(exc.response.headers)
                if status not in _RETRYABLE_STATUS and status < 500:
                    raise _CallFailed(category, self._redact(
                        f"API call failed with non-retryable {message}"), attempt + 1) from None
            except openai.APIConnectionError as exc:
                category, message = "api_failed", f"connection error: {exc.message}"
            except openai.APIResponseValidationError as exc:
                category, message = "api_failed", f"malformed response: {exc.message}"
            log.debug("judge call for row %s failed (attempt %d/%d): %s", row.id, attempt + 1,
                      total, self._redact(message))
            if attempt + 1 < total:
                if wait is not None:
                    time.sleep(min(wait, cfg.retry_after_max_s))
                else:
                    time.sleep(backoff_delay(attempt, cfg, rng))
        raise _CallFailed(category, self._redact(f"API call failed after {total} attempts: "
                                                 f"{message}"), total)

    def judge(self, row: PredictionRow) -> JudgeOutcome:
        """Score one row; empty or unparseable replies are asked again up to ``reply_tries``."""
        cfg = self.config
        messages, placement = build_messages(
            ground_truth=row.ground_truth or "", conversation=row.prompt_turns(),
            prediction=row.prediction or "", metadata=row.metadata,
            placement=cfg.metadata_placement, domain=cfg.domain,
            extra_guidance=cfg.extra_guidance, metadata_max_chars=cfg.metadata_max_chars,
            metadata_compact=cfg.metadata_compact)
        rng = self._rng(row)
        calls = 0
        category, error = "empty_response", ""
        for reply_try in range(cfg.reply_tries):
            if reply_try:
                time.sleep(backoff_delay(reply_try - 1, cfg, rng))
            try:
                content, made = self._call(messages, rng, row)
            except _CallFailed as failed:
                return JudgeOutcome.failure(failed.category, failed.message,
                                            calls + failed.attempts)
            calls += made
            text = (content or "").strip()
            if not text:
                category = "empty_response"
                error = (f"Empty response from the judge (no content in "
                         f"choices[0].message.content) after {reply_try + 1} tries")
                continue
            try:
                parsed = extract_json(text)
                score = normalize_score(parsed.get("score", 0))
            except ValueError as exc:
                category = "parse_error"
                error = self._redact(f"Failed to parse the judge reply as JSON after "
                                     f"{reply_try + 1} tries: {exc}")
                continue
            return JudgeOutcome(
                score=score, reasoning=parsed.get("reasoning", ""),
                strengths=parsed.get("strengths", []), weaknesses=parsed.get("weaknesses", []),
                metadata_alignment=parsed.get("metadata_alignment", ""),
                metadata_mode_used=placement, attempts=calls)
        return JudgeOutcome.failure(category, error, calls)


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


def judge_rows(rows: Sequence[PredictionRow], judge: Judge, *, max_workers: int) -> list[JudgedRow]:
    """Judge every row on a bounded thread pool; results come back in input order."""

    def one(row: PredictionRow) -> JudgedRow:
        early = precheck(row)
        if early is not None:
            return JudgedRow(row, early)
        try:
            return JudgedRow(row, judge.judge(row))
        except Exception as exc:  # a plug-in judge's bug must not sink the other rows
            log.exception("judge %s raised on row %s", judge.name, row.id)
            return JudgedRow(row, JudgeOutcome.failure(
                "processing_error", f"Error processing entry: {type(exc).__name__}: {exc}"))

    if not rows:
        return []
    with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(rows))),
                            thread_name_prefix="judge") as pool:
        return list(pool.map(one, rows))


def result_record(judged: JudgedRow, model_used: str) -> dict[str, Any]:
    """One entry of ``results``: AVLM's keys, plus ``error_category`` and ``attempts``."""
    row, out = judged.row, judged.outcome
    if out.ok:
        return {
            "score": out.score, "reasoning": out.reasoning, "strengths": out.strengths,
            "weaknesses": out.weaknesses, "metadata_alignment": out.metadata_alignment,
            "index": row.index, "id": row.id, "gt": row.ground_truth, "pred": row.prediction,
            "conversation": row.prompt_turns(), "metadata": row.metadata,
            "model_used": model_used, "metadata_mode_used": out.metadata_mode_used,
            "class": row.question_class, "attempts": out.attempts,
        }
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


def judge_statistics(results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``statistics`` block of ``llm_judge_predictions.json`` (AVLM keys and arithmetic)."""
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
        stats.update({"mean_score": 0, "median_score": 0, "std_dev": 0, "min_score": 0,
                      "max_score": 0, "score_distribution": score_distribution([])})
    return stats


def _median(scores: Sequence[int]) -> float | int:
    ordered = sorted(scores)
    if not ordered:
        return 0
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2


def _summary(results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    scores = [int(r["score"]) for r in results if not _is_failure(r)]
    return {
        "total_judged": len(results),
        "num_success": len(scores),
        "num_failed": len(results) - len(scores),
        "mean_score": sum(scores) / len(scores) if scores else 0,
        "median_score": _median(scores),
        "min_score": min(scores) if scores else 0,
        "max_score": max(scores) if scores else 0,
        "score_distribution": score_distribution(scores),
    }


def summarize_judge_results(results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``llm_judge_results.json`` document; failures are counted, never averaged."""
    summary = _summary(results)
    by_class: dict[Any, list[Mapping[str, Any]]] = {}
    for result in results:
        by_class.setdefault(result.get("class"), []).append(result)
    summary["per_class"] = {cls: _summary(group) for cls, group in by_class.items()}
    return summary


def judge_predictions_document(judged: Sequence[JudgedRow], *, model_used: str,
                               metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The ``llm_judge_predictions.json`` document: statistics, results, failures, metadata."""
    results = [result_record(item, model_used) for item in judged]
    failures = [{"index": r["index"], "id": r["id"], "error": r["error"],
                 "category": r["error_category"]} for r in results if r.get("error")]
    counts: dict[str, int] = {}
    for failure in failures:
        counts[failure["category"]] = counts.get(failure["category"], 0) + 1
    return {
        "statistics": judge_statistics(results),
        "results": results,
        "failures": failures,
        "error_counts_by_category": counts,
        "metadata": dict(metadata),
    }


@dataclass(frozen=True)
class JudgeReport:
    """What :func:`judge_dir` wrote."""

    predictions: dict[str, Any]
    results: dict[str, Any]
    predictions_path: Path
    results_path: Path


def judge_dir(inference_dir: Path, config: JudgeConfig, *, judge: Judge | None = None,
              limit: int | None = None) -> JudgeReport:
    """Judge ``INFERENCE_DIR/predictions.jsonl`` and write both ``llm_judge/`` files.

    ``judge`` defaults to an :class:`OpenAIJudge` built from ``config``; ``limit`` keeps only the
    first open-ended rows.
    """
    layout = InferenceLayout(Path(inference_dir))
    rows = open_ended_rows(read_predictions(layout.predictions), limit)
    owned = judge is None
    active: Judge = OpenAIJudge(config) if judge is None else judge
    try:
        judged = judge_rows(rows, active, max_workers=config.max_workers)
    finally:
        if owned and isinstance(active, OpenAIJudge):
            active.close()
    metadata = {"inference_dir": str(inference_dir), **config.settings_record(),
                "model_used": active.name}
    document = judge_predictions_document(judged, model_used=active.name, metadata=metadata)
    summary = summarize_judge_results(document["results"])
    write_json_atomic(layout.judge_predictions, document)
    write_json_atomic(layout.judge_results, summary)
    stats = document["statistics"]
    log.info("judged %d rows with %s: %d scored, %d failed %s", stats["total_entries"],
             active.name, stats["successful_evaluations"], stats["failed_evaluations"],
             document["error_counts_by_category"])
    return JudgeReport(document, summary, layout.judge_predictions, layout.judge_results)
