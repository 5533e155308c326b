"""Records of the predictions stage: model answers and descriptions of a public dataset.

Public cases are :class:`eval_assets.schemas.vqa.Case`. Everything here crosses a file boundary:
the append-only journals and the run folder's ``config.json``, ``answers.jsonl``,
``descriptions.jsonl``, ``rotations.jsonl`` and ``summary.json`` (written), and
``data/models.yaml`` (read).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, NamedTuple

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from eval_assets.errors import InputError
from eval_assets.hashing import canonical_json_sha256

# The run folder's file names are the layout's; re-exported for the run's readers and writers.
from eval_assets.layout import RUN_ANSWERS as RUN_ANSWERS
from eval_assets.layout import RUN_ANSWERS_JOURNAL as RUN_ANSWERS_JOURNAL
from eval_assets.layout import RUN_CONFIG as RUN_CONFIG
from eval_assets.layout import RUN_DESCRIPTIONS as RUN_DESCRIPTIONS
from eval_assets.layout import RUN_DESCRIPTIONS_JOURNAL as RUN_DESCRIPTIONS_JOURNAL
from eval_assets.layout import RUN_FLIPS as RUN_FLIPS
from eval_assets.layout import RUN_FLIPS_JOURNAL as RUN_FLIPS_JOURNAL
from eval_assets.layout import RUN_LOCK as RUN_LOCK
from eval_assets.layout import RUN_REPEAT_FRAMES as RUN_REPEAT_FRAMES
from eval_assets.layout import RUN_REPEAT_FRAMES_JOURNAL as RUN_REPEAT_FRAMES_JOURNAL
from eval_assets.layout import RUN_REPEATS as RUN_REPEATS
from eval_assets.layout import RUN_REPEATS_JOURNAL as RUN_REPEATS_JOURNAL
from eval_assets.layout import RUN_ROTATIONS as RUN_ROTATIONS
from eval_assets.layout import RUN_ROTATIONS_JOURNAL as RUN_ROTATIONS_JOURNAL
from eval_assets.layout import RUN_STRUCTURED as RUN_STRUCTURED
from eval_assets.layout import RUN_STRUCTURED_JOURNAL as RUN_STRUCTURED_JOURNAL
from eval_assets.layout import RUN_SUMMARY as RUN_SUMMARY
from eval_assets.layout import RUN_TEMPLATES as RUN_TEMPLATES
from eval_assets.layout import RUN_TEMPLATES_JOURNAL as RUN_TEMPLATES_JOURNAL
from eval_assets.layout import RUN_TIME_FLIPS as RUN_TIME_FLIPS
from eval_assets.layout import RUN_TIME_FLIPS_JOURNAL as RUN_TIME_FLIPS_JOURNAL

# Failure categories of answers and descriptions, and the token counts, are those of the one chat
# client (eval_assets.openai_chat), defined with its call result.
from eval_assets.schemas.chat import RETRYABLE_CATEGORIES as RETRYABLE_CATEGORIES
from eval_assets.schemas.chat import ChatErrorCategory as ErrorCategory
from eval_assets.schemas.chat import Outcome as Outcome
from eval_assets.schemas.chat import TokenUsage as TokenUsage
from eval_assets.schemas.concurrency import ConcurrencyHistory
from eval_assets.schemas.cost import Price, RunCost
from eval_assets.schemas.endpoint import Endpoint, split_endpoint_fields

Status = Literal["success", "failed"]


class GenerationConfig(BaseModel):
    """What determines a model's answers; its hash keys stored records for resume.

    Anything that changes the request (and so possibly the answer) belongs here; anything that
    only changes how requests are scheduled (concurrency, timeouts, retries) does not.
    """

    model_config = ConfigDict(frozen=True)

    model: str
    base_url: str
    temperature: float = 0.0
    max_tokens: int
    prompt_version: str
    requery: str | None = Field(
        default=None, description="A token that forces fresh answers (the nightly run sets the "
        "night), since a hosted model behind the same name and settings can drift.")

    def config_hash(self) -> str:
        """sha256 of the canonical JSON of this config (sorted keys, no whitespace).

        ``requery`` is left out when unset, so hashes of ordinary runs stay what they were.
        """
        document = self.model_dump(mode="json", exclude={"requery"} if self.requery is None
                                   else set())
        return canonical_json_sha256(document)


class _CallRecord(BaseModel):
    """Fields shared by every stored model call."""

    model_config = ConfigDict(frozen=True)

    model: str
    config_hash: str
    status: Status
    raw_response: str | None = None
    latency_s: float | None = Field(
        default=None, description="Seconds of the last HTTP attempt (the one that produced this)."
    )
    wall_s: float | None = Field(
        default=None, description="Seconds from the first attempt to the end, backoff included."
    )
    usage: TokenUsage | None = None
    # Left out when False, so a direct call's record is written exactly as before.
    batch: bool = Field(
        default=False, exclude_if=lambda v: not v,
        description="Answered through the Batch API: billed at the batch price "
        "(eval_assets.schemas.cost.Price.batch_share).")
    error_category: ErrorCategory | None = None
    error_message: str | None = None
    attempts: int
    content_sha256: str | None = Field(
        default=None, description="Hash of everything the model saw (prompt, question, choices, "
        "image bytes); a stored record is reused only for identical content.")
    outcome: Outcome | None = Field(
        default=None, description="What the reply came to (eval_assets.chat_request.classify); "
        "None on records written before outcomes: see outcome_of().")
    reasoning: str | None = Field(
        default=None, description="The reply's reasoning (reasoning_content/reasoning, or the "
        "text of its think tags), kept out of raw_response.")
    unread_reply: str | None = Field(
        default=None, description="The text of a truncated or refused answer, kept here and "
        "never read: its raw_response is '' so that every scorer counts it wrong.")
    answer_field: str | None = Field(
        default=None, exclude_if=lambda v: v is None,
        description="The message field the answer was read from when the content was empty "
        "(reasoning_content or reasoning: the model replied only there); absent: the content.")
    served_model: str | None = Field(
        default=None, exclude_if=lambda v: v is None,
        description="The reply's own 'model' field: the model the server says answered "
        "(eval_assets.served_model); absent: the reply named none, or a record older than it.")


def outcome_of(record: _CallRecord) -> Outcome:
    """A record's outcome; a record older than outcomes is answered, or its failure category."""
    if record.outcome is not None:
        return record.outcome
    if record.status == "success":
        return "answered"
    if record.error_category == "empty_response":
        return "empty"
    return record.error_category or "unexpected_error"


ImageLayout = Literal["parts", "mosaic"]


class SpatialAsked(BaseModel):
    """How a spatial case (``spatial_cases.jsonl``) was asked: its answer type, how many frames
    it shows, and how they were sent (``parts``: one image part each, in time order; ``mosaic``:
    tiled into one labelled image, for an endpoint that takes fewer images per request)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    answer_type: Literal["choice", "number"]
    images: int = Field(ge=1, description="frames the case shows")
    layout: ImageLayout


class AnswerRecord(_CallRecord):
    """A model's answer to one public case, or why there is none."""

    kind: Literal["answer"] = "answer"
    case_id: str
    choice: str | None = None
    extraction_tier: str | None = None
    spatial: SpatialAsked | None = Field(
        default=None, exclude_if=lambda v: v is None,
        description="set on the answer to a spatial case (absent on dimOS's cases)")


class RotationRecord(_CallRecord):
    """A model's answer to one public case asked again with its choices rotated (CircularEval).

    Rotation ``r`` of a case with choices ``c`` shows ``c[r:] + c[:r]``; rotation 0 is the case
    itself, whose answer is the :class:`AnswerRecord` in ``answers.jsonl``, so rotations here are
    1 .. len(c) - 1. The request is built exactly like a case's (same prompt, question and image)
    from public fields only; ``choices`` is the order the model was shown.
    """

    kind: Literal["rotation"] = "rotation"
    case_id: str
    rotation: int = Field(ge=1, description="r: the choices shown are choices[r:] + choices[:r]")
    choices: list[str] = Field(min_length=2, description="the choices in the order shown")
    choice: str | None = None
    extraction_tier: str | None = None


class FlipRecord(_CallRecord):
    """A model's answer to a left/right case asked about its image mirrored (FlipEval).

    The request is built from public fields only (:mod:`eval_assets.model_runs.flips`): the
    image flipped horizontally, "left" and "right" swapped in the question and the choices (the
    choices then shown in the case's own order when they are the same set). ``question`` and
    ``choices`` are what the model was shown.
    """

    kind: Literal["flip"] = "flip"
    case_id: str
    question: str
    choices: list[str] = Field(min_length=2, description="the choices in the order shown")
    choice: str | None = None
    extraction_tier: str | None = None


class TimeControlRecord(_CallRecord):
    """A model's answer to a multi-frame case asked again with its frames changed in time:
    reversed (``time_flip``, TimeFlip) or each shown twice in a row (``repeat_frames``).

    The request is built from public fields only (:mod:`eval_assets.model_runs.time_controls`),
    like the spatial case's own; ``images`` and ``choices`` are what the model was shown, so the
    scorer can tell a record of another dataset's case from one of this case.
    """

    kind: Literal["time_control"] = "time_control"
    control: Literal["time_flip", "repeat_frames"]
    case_id: str
    images: list[str] = Field(min_length=1, description="the frames in the order shown")
    choices: list[str] | None = Field(default=None, description="the choices in the order shown")
    choice: str | None = None
    extraction_tier: str | None = None
    spatial: SpatialAsked


class PromptVariantRecord(_CallRecord):
    """A model's answer to a case (dimOS's or a spatial one) asked another way
    (:mod:`eval_assets.prompt_controls`): in another template (``templates``), once more at a
    temperature above 0 (``repeats``), or with a JSON schema of its choices or of a number with
    its unit (``structured``).

    The request is built from public fields only (:mod:`eval_assets.model_runs.prompt_controls`);
    ``text`` is the user text the model was shown. ``raw_response`` is the reply as sent back
    (the JSON object of a structured answer), ``choice`` the answer read from it: both are kept.
    A number case has no ``choices``; its ``raw_response`` is read by the scorer.
    """

    kind: Literal["prompt_variant"] = "prompt_variant"
    control: Literal["templates", "repeats", "structured"]
    case_id: str
    template: Literal["record", "paraphrase", "format"] = "record"
    repeat: int = Field(default=0, ge=0, description="the repeat index (sent as the seed)")
    seed_refused: bool = Field(
        default=False, description="a repeat sent without its seed: the endpoint refused the "
        "seed parameter, so the server sampled without one")
    temperature: float | None = Field(
        default=None, description="the temperature of this request; None: the run's")
    text: str = Field(description="the user text as shown (question and choices)")
    choices: list[str] | None = Field(default=None, min_length=2,
                                      description="the choices shown; None: a number case")
    choice: str | None = None
    extraction_tier: str | None = None

    @field_validator("template", mode="before")
    @classmethod
    def _renamed(cls, template: object) -> object:
        # Journals written before the format template covered number families named it
        # "lettered" (then dimOS's only format change); read them as the same template.
        return "format" if template == "lettered" else template


def rotate_choices(choices: list[str], rotation: int) -> list[str]:
    """``choices[r:] + choices[:r]``: the order rotation ``r`` shows (0 is the original)."""
    r = rotation % len(choices)
    return list(choices[r:]) + list(choices[:r])


class DescriptionRecord(_CallRecord):
    """A model's free-text description of one frame (for the vision metrics, CHAIR, the judge)."""

    kind: Literal["description"] = "description"
    frame: str = Field(description="Frame id, the image file's stem, e.g. ``frame-000100``.")
    image: str = Field(description="The image path inside the dataset, e.g. ``assets/x.png``.")


class RunConfig(BaseModel):
    """``config.json`` of a run folder: what was asked of whom. Never holds an API key."""

    model_config = ConfigDict(frozen=True)

    dataset: str
    cases_sha256: str
    num_cases: int
    num_frames: int
    spatial_cases_sha256: str | None = Field(
        default=None, exclude_if=lambda v: v is None,
        description="sha256 of spatial_cases.jsonl; absent when the dataset has none")
    num_spatial_cases: int | None = Field(default=None, exclude_if=lambda v: v is None)
    generation: GenerationConfig
    config_hash: str
    describe: bool
    description_prompt: str | None
    rotations: bool = Field(
        default=False, description="Each case was also asked with its choices rotated "
        "(CircularEval; rotations.jsonl).")
    max_concurrency: int
    client: dict[str, Any] = Field(description="Client settings (api_key_env is a name only).")


class LatencyStats(BaseModel):
    """Latency summary of successful calls, in seconds."""

    model_config = ConfigDict(frozen=True)

    count: int
    mean: float | None
    p50: float | None
    p95: float | None
    max: float | None


class CallSummary(BaseModel):
    """Counts, errors, latency and tokens of one kind of call (answers or descriptions)."""

    model_config = ConfigDict(frozen=True)

    total: int
    success: int
    failed: int
    missing: int = Field(description="Items with no stored record yet (an interrupted run).")
    error_counts: dict[str, int]
    unmatched_choices: int = Field(
        default=0, description="Successful answers that name no choice (parse failures)."
    )
    outcomes: dict[str, int] = Field(
        default_factory=dict, description="Standing records by outcome (answered, truncated, "
        "refused, empty, server_error, ...); missing items are not counted.")
    answered_from: dict[str, int] = Field(
        default_factory=dict, exclude_if=lambda v: not v,
        description="Standing answers read from a field other than the content, by field "
        "(reasoning_content, reasoning: the content was empty); absent when none.")
    latency_s: LatencyStats
    tokens: TokenUsage
    attempts: int


class SpatialRunSummary(BaseModel):
    """How a run asked the spatial cases: their number, the most frames one shows, the most
    images the endpoint takes per request (its preflight's ``max_images``; None: not probed),
    and how many standing answers sent the frames as parts or as a labelled mosaic."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cases: int
    most_images_per_case: int
    endpoint_max_images: int | None
    layouts: dict[str, int] = Field(description="standing answers by layout (parts, mosaic)")


class RunSummary(BaseModel):
    """``summary.json`` of a run folder. Scoring against labels is a separate stage."""

    model_config = ConfigDict(frozen=True)

    model: str
    config_hash: str
    public_sha256: str | None = Field(
        default=None, description="The public content these answers were given to (cases, "
        "spatial cases and images: eval_assets.model_runs.runner.public_fingerprint); a metric "
        "refuses them against a dataset of other content. None: a run before it was recorded.")
    complete: bool = Field(
        description="Every case (and frame, and rotation when asked) has a successful record.")
    answers: CallSummary
    descriptions: CallSummary | None
    rotations: CallSummary | None = Field(
        default=None, description="The rotated re-asks (CircularEval); None when not asked.")
    cost: RunCost | None = Field(
        default=None, description="What every call of the run folder cost (usage.jsonl: "
        "answers, descriptions, rotations, controls, probes, every retry of a failed one); "
        "None: the model has no price.")
    concurrency: ConcurrencyHistory | None = Field(
        default=None, description="The adaptive concurrency limit's history (models reached "
        "over HTTP); absent for a local model, which keeps its max_concurrency.")
    spatial: SpatialRunSummary | None = Field(
        default=None, exclude_if=lambda v: v is None,
        description="The spatial cases' layouts; absent for a dataset without spatial cases.")
    served_models: dict[str, int] = Field(
        default_factory=dict, exclude_if=lambda v: not v,
        description="The model each standing reply (answers, descriptions, rotations) named, "
        "counted (eval_assets.served_model); absent: no reply named one.")
    served_mismatch: bool = Field(
        default=False, exclude_if=lambda v: not v,
        description="Some of those replies came from another model than the declared one (the "
        "match rule of eval_assets.served_model); the run warned, naming them.")


def _unset(value: object) -> bool:
    return value is None


class PromptControls(NamedTuple):
    """The prompt-control switches of one run (``run_model``'s keywords of the same names)."""

    templates: bool
    repeats: int
    repeat_temperature: float
    structured: bool
    prompt_control_cases: int


PROMPT_CONTROLS_OFF = PromptControls(templates=False, repeats=1, repeat_temperature=0.7,
                                     structured=False, prompt_control_cases=100)
"""The defaults: no prompt control asked (the ``vlm`` resource's, and ``vqa run``'s for a model
whose entry sets none); the temperature and the cases apply once a control is on."""

PROMPT_CONTROL_FIELDS = tuple(PromptControls._fields)
"""The entry fields that set a prompt control (ModelSpec's fields of the same names)."""


class ModelSpec(BaseModel):
    """One entry of ``data/models.yaml``: a model under test (its name) and its endpoint.

    The entry writes the endpoint's fields flat beside ``name`` (``serve: random``,
    ``base_url: ...``, ``max_retries: 2``; a nested ``endpoint:`` mapping is accepted too). A
    field the entry leaves out keeps the caller's value (the Dagster ``vlm`` resource or the CLI
    options, whose defaults are the endpoint's): see :meth:`Endpoint.over`.
    """

    # An invalid api_key_env (a pasted key) is never repeated by the error (see Endpoint).
    model_config = ConfigDict(frozen=True, extra="forbid", hide_input_in_errors=True)

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    endpoint: Endpoint = Field(default_factory=Endpoint)
    price: Price | None = Field(None, description="USD per 1M tokens; None: no price set")
    budget_usd: float | None = Field(
        None, ge=0, description="most one run of this model may spend (needs price)")
    batch: bool = Field(False, description="nightly runs go through the Batch API (half price)")
    # The prompt controls (validity.md). None: not set by the entry, so the Dagster `vlm`
    # resource's value is used (PromptControls.over). An unset field is left out of the dump, so
    # an entry without them hashes exactly as before they existed (its data version, and so its
    # cells, stay as they were: eval_assets.defs.assets.sources.model_versions).
    templates: bool | None = Field(
        None, exclude_if=_unset, description="also ask the paraphrase and format templates")
    repeats: int | None = Field(
        None, ge=1, exclude_if=_unset, description="ask each selected case k times (1: off)")
    repeat_temperature: float | None = Field(
        None, gt=0, exclude_if=_unset, description="the temperature of the repeats")
    structured: bool | None = Field(
        None, exclude_if=_unset, description="also ask with a JSON schema of the answer")
    prompt_control_cases: int | None = Field(
        None, ge=1, exclude_if=_unset,
        description="cases per family and recording the prompt controls ask")

    @model_validator(mode="before")
    @classmethod
    def _flat_endpoint_fields(cls, data: Any) -> Any:
        return split_endpoint_fields(data) if isinstance(data, Mapping) else data

    @property
    def api_model(self) -> str:
        """The ``model`` field of each request: ``model``, else the served model's id, else name."""
        return self.endpoint.api_model or self.name

    def prompt_controls(self, defaults: PromptControls) -> PromptControls:
        """The prompt controls this model is asked with: the entry's where it sets them, else
        ``defaults`` (the ``vlm`` resource's)."""
        return PromptControls(**{
            name: default if (own := getattr(self, name)) is None else own
            for name, default in defaults._asdict().items()})


class ModelsFileError(InputError, ValueError):
    """The models file cannot be used; the message names the file, the entry, the field, the fix."""


def _problem(err: Mapping[str, Any]) -> str:
    # Not errors.validation_message on purpose: a models-file entry lists up to three problems at
    # once, and names the endpoint's fields as the entry writes them (flat, without 'endpoint.').
    loc = [str(p) for p in err["loc"]]
    if loc[:1] == ["endpoint"] and len(loc) > 1:
        loc = loc[1:]
    return f"field {'.'.join(loc) or '(entry)'!r}: {err['msg']}"


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
        raise ModelsFileError(f"{path} is not valid YAML ({' '.join(str(exc).split())}). Fix "
                              "the syntax there (see data/models.yaml in the repository).") from exc
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
            problems = "; ".join(_problem(err) for err in exc.errors()[:3])
            raise ModelsFileError(f"{path}: models[{i}] is invalid: {problems}. Fix that entry "
                                  f"(fields: name, price, budget_usd, batch, the prompt "
                                  f"controls {', '.join(PROMPT_CONTROL_FIELDS)} and the "
                                  f"endpoint's: {', '.join(Endpoint.model_fields)}).") from exc
    names = [s.name for s in specs]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ModelsFileError(f"{path}: model names must be unique, repeated: {duplicates}. Fix: "
                              "rename or remove the repeated entries.")
    for spec in specs:
        if spec.endpoint.base_url is None and spec.endpoint.serve is None:
            raise ModelsFileError(f"{path}: model {spec.name!r} has neither 'base_url' nor "
                                  "'serve'. Fix: give the endpoint URL or the local model to "
                                  "serve.")
    return specs

