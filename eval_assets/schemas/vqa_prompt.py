"""The dimOS runner's VQA question text: how a question and its choices are written, and read back.

The client writes it (:mod:`eval_assets.model_runs.prompts`); the local models read the choices
back out of it (:mod:`eval_assets.local_models`). Changing it changes answers: it must come with a
new ``PROMPT_VERSION``.
"""

from __future__ import annotations

import json

_CHOICES_PREFIX = "\nChoices: "
_ANSWER_SUFFIX = "\nAnswer with exactly one choice."


def question_text(question: str, choices: list[str]) -> str:
    """The user text of a VQA case, exactly as the dimOS runner builds it."""
    return f"{question}{_CHOICES_PREFIX}{json.dumps(choices)}{_ANSWER_SUFFIX}"


def parse_choices(text: str) -> list[str] | None:
    """The choices list of a VQA prompt text, or ``None`` when the text holds none.

    Reads the last ``Choices: [...]`` line, the one :func:`question_text` writes.
    """
    start = text.rfind(_CHOICES_PREFIX)
    if start < 0:
        return None
    line = text[start + len(_CHOICES_PREFIX):].split("\n", 1)[0]
    try:
        value = json.loads(line)
    except json.JSONDecodeError:
        return None
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return value
    return None
