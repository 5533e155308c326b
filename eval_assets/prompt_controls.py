"""The controls on how a case is asked (``../shared/specs/validity.md``): prompt templates,
sampling repeats and structured answers.

- **Templates** (FormatSpread, arXiv 2310.11324): each family, dimOS's and the spatial and
  motion ones, is asked in three wordings that ask the same thing: ``record`` (the declared
  wording, the case as generated), ``paraphrase`` (the family's declared paraphrase, the same
  choices line or unit) and ``format`` (the declared question in another answer format: a
  choice family's choices as ``A) left`` lines, answered by letter and mapped back to the
  choice; a number family's answer asked as an ``Answer: <number> <unit>`` line).
- **Repeats** (lmms-eval's stability metrics): a case asked ``k`` times at a temperature above 0
  (each with its repeat index as the request's ``seed``).
- **Structured**: a case asked with a JSON schema, where the endpoint's preflight found
  structured output: an enum of its choices (:func:`answer_schema`), or for a number family a
  number with its unit (:func:`number_schema`: ``{"value": number, "unit": enum}``, the unit
  from the family's declaration).

:func:`templates` (``TEMPLATES``) reads each family's paraphrase from its one declaration
(:class:`eval_assets.family_spec.FamilySpec`). The family and the fields a question fills in
(object names, an image's position) are read back from the public question text against the
declared wording (:func:`read_question`), so the alternative wordings are built at ask time from
public fields only; a question that matches no family's
wording (a dataset by another generator, an LLM-authored question) is not asked in another
template. Which cases a control
asks is drawn from the case id (:func:`selected`): up to ``per_family`` per family and dataset.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from eval_assets.choices import match_choice
from eval_assets.family_spec import families
from eval_assets.schemas.spatial import SpatialCase
from eval_assets.schemas.vqa import Case
from eval_assets.schemas.vqa_prompt import lettered_text, question_text

__all__ = [
    "PROMPT_CONTROLS",
    "STRUCTURED_FORMAT_NAME",
    "TEMPLATE_NAMES",
    "PromptControl",
    "QuestionRead",
    "SpatialWording",
    "TemplateName",
    "Wording",
    "answer_schema",
    "check_per_family",
    "check_repeats",
    "number_schema",
    "question_family",
    "read_question",
    "read_structured",
    "read_structured_number",
    "selected",
    "spatial_wording",
    "templates",
    "wording",
]
# TEMPLATES is served by the module's __getattr__ (read from the declarations when asked).

PromptControl = Literal["templates", "repeats", "structured"]
PROMPT_CONTROLS: tuple[PromptControl, ...] = ("templates", "repeats", "structured")
TemplateName = Literal["record", "paraphrase", "format"]
TEMPLATE_NAMES: tuple[TemplateName, ...] = ("record", "paraphrase", "format")
# The fields a declared question may fill in (family_spec.FamilySpec.question): object names and
# an image's position.
_FIELDS = ("name", "other", "names", "k")


def templates() -> dict[str, str]:
    """Family -> its paraphrase of the declared question (its fields, ``{name}`` etc., read back
    from the case's own question), from each family's one declaration
    (:class:`eval_assets.family_spec.FamilySpec`'s ``paraphrase``), dimOS's and the spatial
    ones. The record wording is the declared ``question``; the format template keeps it and
    changes only how the answer is asked for."""
    return {s.name: s.paraphrase for s in families() if s.paraphrase is not None}


def __getattr__(name: str) -> object:
    """``TEMPLATES``: :func:`templates`, read from the declarations when asked."""
    if name == "TEMPLATES":
        return templates()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _pattern(template: str, lead: bool) -> re.Pattern[str]:
    # The declared wording with each field as a group: the whole question must match, so a
    # question that carries anything else (another generator's) is not taken for the family. A
    # spatial question may be led by a sentence about its frames (the generator's "These images
    # are frames of one video, in time order. "), kept as the group ``lead``.
    parts = re.split(r"\{(" + "|".join(_FIELDS) + r")\}", template)
    out = [r"(?P<lead>(?:[^?]*?\. )?)"] if lead else []
    seen: set[str] = set()
    for i, part in enumerate(parts):
        if i % 2 == 0:
            out.append(re.escape(part))
        elif part in seen:
            out.append(f"(?P={part})")
        else:
            seen.add(part)
            out.append(rf"(?P<{part}>.+?)")
    return re.compile("".join(out), re.DOTALL)


@dataclass(frozen=True)
class QuestionRead:
    """A question read back against its family's declared wording: the family, the fields it
    filled in (``name``, ``other``, ``names``, ``k``) and the sentence that led it ("" if
    none)."""

    family: str
    fields: dict[str, str]
    lead: str = ""


def read_question(question: str) -> QuestionRead | None:
    """The family and the filled-in fields of a question worded as its family's declaration
    words it (dimOS's exactly; a spatial one possibly led by a sentence about its frames); None
    when it matches no declared family's wording."""
    for spec in families():
        m = _pattern(spec.question, lead=spec.file == "spatial").fullmatch(question)
        if m is not None:
            found = m.groupdict()
            lead = found.pop("lead", None) or ""
            return QuestionRead(spec.name, {k: v for k, v in found.items() if v is not None},
                                lead)
    return None


def question_family(question: str) -> tuple[str, str | None] | None:
    """(family, the object named) of a question worded as its family's declaration words it
    (:func:`read_question`); None when it matches no family's wording. The name is None for a
    family whose question names no object."""
    found = read_question(question)
    return None if found is None else (found.family, found.fields.get("name"))


def _paraphrased(found: QuestionRead) -> str | None:
    paraphrase = templates().get(found.family)
    return None if paraphrase is None else found.lead + paraphrase.format(**found.fields)


@dataclass(frozen=True)
class Wording:
    """A case as one template asks it: the user text, and whether the choices are lettered."""

    template: TemplateName
    text: str
    lettered: bool


def _known(template: str) -> None:
    if template not in TEMPLATE_NAMES:
        raise ValueError(f"template {template!r} is not one of {list(TEMPLATE_NAMES)} (the "
                         "lettered-options template is now 'format')")


def wording(case: Case, template: TemplateName) -> Wording | None:
    """A dimOS ``case`` asked in ``template``; None when its question is not in its family's
    declared wording (no family to paraphrase)."""
    _known(template)
    if template == "record":
        return Wording("record", question_text(case.question, case.choices), False)
    found = read_question(case.question)
    if found is None:
        return None
    if template == "format":
        return Wording("format", lettered_text(case.question, case.choices), True)
    question = _paraphrased(found)
    if question is None:
        return None
    return Wording("paraphrase", question_text(question, case.choices), False)


AnswerStyle = Literal["plain", "lettered", "answer_line"]


@dataclass(frozen=True)
class SpatialWording:
    """A spatial case's question as one template asks it, and how its answer is asked for:
    ``plain`` (as the run asks it: a choice case's choices line, a number in the unit),
    ``lettered`` (the choices as ``A) left`` lines, answered by letter) or ``answer_line`` (a
    number asked as an ``Answer: <number> <unit>`` line). The runner adds the frames' intro
    (:func:`eval_assets.model_runs.spatial.spatial_text`)."""

    template: TemplateName
    question: str
    style: AnswerStyle

    @property
    def lettered(self) -> bool:
        """Whether a bare letter names a choice."""
        return self.style == "lettered"


def spatial_wording(case: SpatialCase, template: TemplateName) -> SpatialWording | None:
    """A spatial ``case`` asked in ``template``; None when its question is not in its family's
    declared wording, or the family declares no paraphrase."""
    _known(template)
    if template == "record":
        return SpatialWording("record", case.question, "plain")
    found = read_question(case.question)
    if found is None:
        return None
    if template == "format":
        return SpatialWording("format", case.question,
                              "lettered" if case.answer_type == "choice" else "answer_line")
    question = _paraphrased(found)
    return None if question is None else SpatialWording("paraphrase", question, "plain")


def check_per_family(per_family: int) -> int:
    """``per_family`` when it is a count of cases that can be asked; else a ValueError naming
    the setting and the fix."""
    if per_family < 1:
        raise ValueError(f"prompt_control_cases is {per_family!r}; it must be at least 1 (the "
                         "cases per family and recording the prompt controls ask; default 100)")
    return per_family


def check_repeats(repeats: int, temperature: float) -> int:
    """``repeats`` when it and ``temperature`` make a sampling repeat; else a ValueError naming
    the setting and the fix."""
    if repeats < 1:
        raise ValueError(f"repeats is {repeats!r}; it must be at least 1 (1: no repeats)")
    if repeats > 1 and not temperature > 0:
        raise ValueError(f"repeats is {repeats} at repeat_temperature {temperature!r}: "
                         "repeats measure sampling, so the temperature must be above 0 "
                         "(e.g. 0.7)")
    return repeats


AnyCase = TypeVar("AnyCase", Case, SpatialCase)


def _draw(control: PromptControl, case_id: str) -> bytes:
    return hashlib.sha256(f"{control}|{case_id}".encode()).digest()


def selected(cases: Sequence[AnyCase], control: PromptControl,
             per_family: int) -> list[AnyCase]:
    """The cases ``control`` asks (dimOS's or spatial ones), in case order: per family (read
    from the question), the
    ``per_family`` with the lowest SHA-256 of control and case id. A case's draw does not depend
    on the others, so a grown dataset keeps most earlier selections (and their journalled
    calls)."""
    check_per_family(per_family)
    by_family: dict[str, list[AnyCase]] = {}
    for case in cases:
        found = read_question(case.question)
        if found is not None:
            by_family.setdefault(found.family, []).append(case)
    chosen = {c.id for group in by_family.values()
              for c in sorted(group, key=lambda c: _draw(control, c.id))[:per_family]}
    return [c for c in cases if c.id in chosen]


STRUCTURED_FORMAT_NAME = "answer"


def answer_schema(choices: Sequence[str]) -> dict[str, Any]:
    """The ``response_format`` asking for ``{"answer": <one of the choices>}``: a flat object
    schema the local models and OpenAI structured outputs both honour."""
    return {"type": "json_schema", "json_schema": {
        "name": STRUCTURED_FORMAT_NAME, "strict": True,
        "schema": {"type": "object",
                   "properties": {"answer": {"type": "string", "enum": list(choices)}},
                   "required": ["answer"], "additionalProperties": False}}}


def _json_object(text: str | None) -> Mapping[str, Any] | None:
    """``text`` read as a JSON object; None for no reply, invalid JSON or another JSON value."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # invalid JSON, an integer past Python's digit limit,
        return None  # or nesting past the recursion limit: the schema was not honoured
    return value if isinstance(value, Mapping) else None


def read_structured(text: str | None, choices: Sequence[str]) -> str | None:
    """The choice of a structured reply: its ``answer`` field when the text is that JSON object
    and the field names a choice (read as the free-text matcher reads one); None otherwise (a
    parse failure: the schema was not honoured)."""
    value = _json_object(text)
    if value is None or not isinstance(value.get("answer"), str):
        return None
    return match_choice(value["answer"], choices).choice


def number_schema(unit: str | None) -> dict[str, Any]:
    """The ``response_format`` asking a number family for ``{"value": <number>, "unit": <the
    family's declared unit>}`` (a count: ``{"value": <number>}``): a flat object schema with a
    JSON number, which OpenAI structured outputs and the local models' decoding
    (:mod:`eval_assets.local_models.response_format`) both honour."""
    properties: dict[str, Any] = {"value": {"type": "number"}}
    if unit is not None:
        properties["unit"] = {"type": "string", "enum": [unit]}
    return {"type": "json_schema", "json_schema": {
        "name": STRUCTURED_FORMAT_NAME, "strict": True,
        "schema": {"type": "object", "properties": properties,
                   "required": list(properties), "additionalProperties": False}}}


def read_structured_number(text: str | None, unit: str | None) -> float | None:
    """The number of a structured reply to :func:`number_schema`: its finite ``value`` when the
    text is that JSON object and its ``unit`` is the one asked (a count: none); None otherwise
    (a parse failure: the schema was not honoured)."""
    value = _json_object(text)
    if value is None:
        return None
    number = value.get("value")
    if isinstance(number, bool) or not isinstance(number, int | float):
        return None
    if unit is not None and value.get("unit") != unit:
        return None
    return float(number) if math.isfinite(number) else None
