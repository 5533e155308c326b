"""The judge's configuration: its endpoint, how it asks, how far it is trusted; ``judge.yaml``.

:class:`JudgeConfig` holds an :class:`~eval_assets.schemas.endpoint.Endpoint` (where the judge is,
its key variable, retries, limits) beside the judge's own settings (rubric placement, reply tries,
calibration, AVLM compatibility). ``judge.yaml`` writes the endpoint's fields flat, as before
(``serve``, ``base_url``, ``model``, ``max_retries``, ...); ``max_workers`` is the endpoint's
``max_concurrency`` and ``backoff_jitter`` its ``jitter``. :meth:`JudgeConfig.from_yaml` is the
one loader of the file.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from eval_assets.errors import InputError, first_problem, yaml_problem
from eval_assets.metrics.judge_journal import JOURNAL_CONTENT_LIMIT
from eval_assets.metrics.judge_prompt import MetadataPlacement
from eval_assets.schemas.cost import Price
from eval_assets.schemas.endpoint import Endpoint, split_endpoint_fields

# AVLM's variable for the judge's key: the judge's key variable unless the config names another.
DEFAULT_API_KEY_ENV = "CLIENT_API_KEY"
# The judge's own names of two endpoint fields (AVLM's and this project's older configs).
ENDPOINT_RENAMES = {"max_workers": "max_concurrency", "backoff_jitter": "jitter"}
_ENDPOINT_NAMES = {field: key for key, field in ENDPOINT_RENAMES.items()}

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


class JudgeConfigError(InputError, ValueError):
    """A judge config or environment that cannot work; the message names the field and the fix."""


class JudgeConfig(BaseModel):
    """How to reach the judge (its endpoint), how it asks, and how far to trust it.

    The one loader of ``judge.yaml`` is :meth:`from_yaml`, used by the CLI and the Dagster
    resource alike; :func:`eval_assets.metrics.judge_client.open_judge` turns a config into a
    running judge (starting the local model named by ``serve`` when there is no ``base_url``).
    Without ``model`` a served judge answers as its local model's name.
    """

    # An invalid api_key_env (a pasted key) is never repeated by the error (see Endpoint).
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    endpoint: Endpoint
    temperature: float = 0.0
    reply_tries: int = Field(5, ge=1, description="tries for a reply without a valid score")
    metadata_placement: MetadataPlacement = "auto"
    metadata_max_chars: int = Field(0, ge=0, description="0: never truncate")
    metadata_compact: bool = True
    domain: str | None = None
    extra_guidance: str | None = None
    response_format: dict[str, Any] | None = Field(
        None, description="sent as the request's response_format; None: not sent")
    avlm_compat: bool = Field(
        False, description="AVLM's score coercions instead of failures (counted by kind)")
    price: Price | None = Field(None, description="USD per 1M tokens of the judge's calls; "
                                "None: no price set (the report says so, never $0)")
    calibration_pairs: int = Field(8, ge=0, le=32, description="0: no calibration")
    calibration_frames: int = Field(3, ge=1)
    calibration_min_agreement: float = Field(0.75, ge=0, le=1)
    calibration_max_tokens: int = Field(16, ge=1)

    @model_validator(mode="before")
    @classmethod
    def _flat_endpoint_fields(cls, data: Any) -> Any:
        """The endpoint's fields written flat; the judge's key variable defaults to AVLM's."""
        if not isinstance(data, Mapping):
            return data
        values = split_endpoint_fields(data, ENDPOINT_RENAMES)
        endpoint = values["endpoint"]
        if isinstance(endpoint, dict):
            endpoint.setdefault("api_key_env", DEFAULT_API_KEY_ENV)
        return values

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

    @model_validator(mode="after")
    def _endpoint_rules(self) -> JudgeConfig:
        """An endpoint is a base_url or a served model; a served model answers to its own name."""
        endpoint = self.endpoint
        if endpoint.base_url is None and endpoint.serve is None:
            raise ValueError("field 'base_url' is required when 'serve' is absent; fix: set "
                             "base_url (an OpenAI-compatible endpoint) and model, or serve a "
                             "local model (serve: blind-smollm2)")
        if not endpoint.model and endpoint.base_url is not None:
            raise ValueError("field 'model' is required with base_url; fix: set model to "
                             "the endpoint's model id")
        if endpoint.base_url is None and endpoint.model and endpoint.model != endpoint.serve:
            raise ValueError(f"field 'model' is {endpoint.model!r} but the served model answers "
                             f"as {endpoint.serve!r}; fix: remove 'model' or set it to "
                             f"{endpoint.serve!r}")
        if (endpoint.max_reply_chars or 0) > JOURNAL_CONTENT_LIMIT:
            raise ValueError(f"field 'max_reply_chars' is {endpoint.max_reply_chars}; it must be "
                             f"at most {JOURNAL_CONTENT_LIMIT} (the journal keeps no more)")
        return self

    @property
    def model(self) -> str:
        """The judge's model id (``model_used`` in outputs)."""
        return self.endpoint.api_model

    @property
    def seed(self) -> int:
        """Seed of the calibration sample, the backoff jitter and a served model."""
        return self.endpoint.seed

    @property
    def max_workers(self) -> int:
        """Rows judged at once: the endpoint's ``max_concurrency``."""
        return self.endpoint.max_concurrency

    @property
    def max_reply_chars(self) -> int:
        """The longest reply parsed; longer is an ``oversized_reply`` (unset: the journal's cap)."""
        return self.endpoint.max_reply_chars or JOURNAL_CONTENT_LIMIT

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
            raise FileNotFoundError(f"{path}: judge config not found; fix: pass --judge-config "
                                    f"with a YAML file that sets base_url and model, or serve")
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
            # validation_message's wording, with the field named as the YAML writes it.
            problem = first_problem(exc)
            where = _field_name(problem.field, data)
            if not where:  # a rule across fields: the message names them
                raise JudgeConfigError(f"{path}: {problem.message}") from None
            raise JudgeConfigError(f"{path}: field {where!r}: {problem.message}; fix: correct "
                                   f"or remove {where!r} (see JudgeConfig)") from None

    def settings_record(self) -> dict[str, Any]:
        """The non-secret settings written into ``llm_judge_predictions.json``."""
        endpoint = self.endpoint
        return {
            "model_used": self.model,
            "max_workers": endpoint.max_concurrency,
            "metadata_mode": self.metadata_placement,
            "metadata_max_chars": self.metadata_max_chars,
            "metadata_compact": self.metadata_compact,
            "temperature": self.temperature,
            "max_tokens": endpoint.max_tokens,
            "timeout_s": endpoint.timeout_s,
            "max_retries": endpoint.max_retries,
            "reply_tries": self.reply_tries,
            # Only when set, so files from configs without one stay as they were.
            **({"response_format": self.response_format}
               if self.response_format is not None else {}),
        }


def _field_name(field: str, data: Mapping[str, Any]) -> str:
    """A validation error's dotted field as the YAML writes it (endpoint fields are flat there)."""
    parts = field.split(".") if field else []
    if parts[:1] == ["endpoint"] and len(parts) > 1:
        parts = parts[1:]
        key = _ENDPOINT_NAMES.get(parts[0])
        if key is not None and key in data:
            parts[0] = key
    return ".".join(parts)
