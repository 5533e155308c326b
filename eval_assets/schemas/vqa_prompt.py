"""The dimOS runner's VQA question text: how a question and its choices are written, and read back.

The client writes it (:mod:`eval_assets.model_runs.prompts`); the local models read the choices
back out of it (:mod:`eval_assets.local_models`). Changing it changes answers: it must come with a
new ``PROMPT_VERSION``.
"""

from __future__ import annotations

import json
import re

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


# The lettered-options template (eval_assets.prompt_controls): the question, then one line per
# choice under this header, answered by letter. The header is what the local models look for, so
# a prompt that merely holds "A) ..." lines (a judge's) is never read as lettered choices.
_OPTIONS_HEADER = "\nOptions:"
_LETTERED_SUFFIX = "\nAnswer with the letter of exactly one option."
_OPTION_LINE = re.compile(r"^([A-Z])\) (.+)$")


def lettered_text(question: str, choices: list[str]) -> str:
    """The user text of a case with its choices lettered: ``A) left`` lines, answered by
    letter."""
    lines = "".join(f"\n{chr(ord('A') + i)}) {c}" for i, c in enumerate(choices))
    return f"{question}{_OPTIONS_HEADER}{lines}{_LETTERED_SUFFIX}"


def parse_lettered(text: str) -> list[tuple[str, str]] | None:
    """The (letter, choice) pairs of a lettered prompt text (:func:`lettered_text`), or None
    when the text holds none."""
    start = text.rfind(_OPTIONS_HEADER)
    if start < 0:
        return None
    pairs = []
    for line in text[start + len(_OPTIONS_HEADER):].split("\n")[1:]:
        m = _OPTION_LINE.match(line)
        if m is None:
            break
        pairs.append((m.group(1), m.group(2)))
    return pairs or None
