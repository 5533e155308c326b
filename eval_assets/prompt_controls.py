"""The controls on how a case is asked (``../shared/specs/validity.md``): prompt templates,
sampling repeats and structured answers.

- **Templates** (FormatSpread, arXiv 2310.11324): each dimOS family is asked in three wordings
  that ask the same thing: ``record`` (dimOS's wording, the case as generated), ``paraphrase``
  (another sentence, the same choices line) and ``lettered`` (dimOS's question, the choices as
  ``A) left`` lines, answered by letter and mapped back to the choice).
- **Repeats** (lmms-eval's stability metrics): a case asked ``k`` times at a temperature above 0
  (each with its repeat index as the request's ``seed``).
- **Structured**: a case asked with a JSON schema whose one field is an enum of its choices,
  where the endpoint's preflight found structured output.

:func:`templates` (``TEMPLATES``) reads each family's paraphrase from its one declaration
(:class:`eval_assets.family_spec.FamilySpec`). The family and the object a question names are
read back from the public question text against the declared wording, so the alternative
wordings are built at ask time from public fields only; a question that matches no family's
wording (a dataset by another generator, an LLM-authored question) is not asked in another
template. Which cases a control
asks is drawn from the case id (:func:`selected`): up to ``per_family`` per family and dataset.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from eval_assets.choices import match_choice
from eval_assets.family_spec import families
from eval_assets.schemas.vqa import Case
from eval_assets.schemas.vqa_prompt import lettered_text, question_text

__all__ = [
    "PROMPT_CONTROLS",
    "STRUCTURED_FORMAT_NAME",
    "TEMPLATE_NAMES",
    "PromptControl",
    "TemplateName",
    "Wording",
    "answer_schema",
    "check_per_family",
    "check_repeats",
    "question_family",
    "read_structured",
    "selected",
    "templates",
    "wording",
]
# TEMPLATES is served by the module's __getattr__ (read from the declarations when asked).

PromptControl = Literal["templates", "repeats", "structured"]
PROMPT_CONTROLS: tuple[PromptControl, ...] = ("templates", "repeats", "structured")
TemplateName = Literal["record", "paraphrase", "lettered"]
TEMPLATE_NAMES: tuple[TemplateName, ...] = ("record", "paraphrase", "lettered")

def templates() -> dict[str, str]:
    """Family -> its paraphrase of dimOS's question (``{name}``: the object the question names,
    read back from the case's own question), from each family's one declaration
    (:class:`eval_assets.family_spec.FamilySpec`'s ``paraphrase``). The record wording is the
    declared ``question``; the lettered template keeps it and changes only how the choices are
    shown."""
    return {s.name: s.paraphrase for s in families("dimos") if s.paraphrase is not None}


def __getattr__(name: str) -> object:
    """``TEMPLATES``: :func:`templates`, read from the declarations when asked."""
    if name == "TEMPLATES":
        return templates()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _pattern(template: str) -> re.Pattern[str]:
    # dimOS's wording with {name} as a group: the whole question must match, so a question that
    # carries anything else (another generator's) is not taken for this family.
    head, _, tail = template.partition("{name}")
    if not _:
        return re.compile(re.escape(template))
    return re.compile(re.escape(head) + r"(?P<name>.+?)" + re.escape(tail))


def question_family(question: str) -> tuple[str, str | None] | None:
    """(family, the object named) of a question worded as dimOS words it; None when it matches
    no family's wording. The name is None for a family whose question names no object."""
    for spec in families("dimos"):
        m = _pattern(spec.question).fullmatch(question)
        if m is not None:
            return spec.name, m.groupdict().get("name")
    return None


@dataclass(frozen=True)
class Wording:
    """A case as one template asks it: the user text, and whether the choices are lettered."""

    template: TemplateName
    text: str
    lettered: bool


def wording(case: Case, template: TemplateName) -> Wording | None:
    """``case`` asked in ``template``; None when its question is not in dimOS's wording (no
    family to paraphrase)."""
    if template == "record":
        return Wording("record", question_text(case.question, case.choices), False)
    found = question_family(case.question)
    if found is None:
        return None
    family, name = found
    if template == "lettered":
        return Wording("lettered", lettered_text(case.question, case.choices), True)
    paraphrase = templates().get(family)
    if paraphrase is None:
        return None
    question = paraphrase.format(name=name) if name is not None else paraphrase
    return Wording("paraphrase", question_text(question, case.choices), False)


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


def _draw(control: PromptControl, case_id: str) -> bytes:
    return hashlib.sha256(f"{control}|{case_id}".encode()).digest()


def selected(cases: Sequence[Case], control: PromptControl, per_family: int) -> list[Case]:
    """The cases ``control`` asks, in case order: per family (read from the question), the
    ``per_family`` with the lowest SHA-256 of control and case id. A case's draw does not depend
    on the others, so a grown dataset keeps most earlier selections (and their journalled
    calls)."""
    check_per_family(per_family)
    by_family: dict[str, list[Case]] = {}
    for case in cases:
        found = question_family(case.question)
        if found is not None:
            by_family.setdefault(found[0], []).append(case)
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


def read_structured(text: str | None, choices: Sequence[str]) -> str | None:
    """The choice of a structured reply: its ``answer`` field when the text is that JSON object
    and the field names a choice (read as the free-text matcher reads one); None otherwise (a
    parse failure: the schema was not honoured)."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(value, Mapping) or not isinstance(value.get("answer"), str):
        return None
    return match_choice(value["answer"], choices).choice
