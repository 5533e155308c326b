"""The rows of AVLM's ``predictions.jsonl``, which the MCQ scorer and the LLM judge read.

One JSON object per line, with the fields NVIDIA AVLM's ``run_inference.py`` writes:

- ``index`` (int): position in the benchmark; ``id`` (str or int): the case id;
- ``class`` (str): question class, the ``per_class`` key of every result;
- ``evaluation_type``: ``"mcq"`` (letter scoring) or ``"open_ended"`` (LLM judge); others ignored;
- ``inference_status``: ``"success"``, anything else is an inference failure;
- ``ground_truth`` (str): for MCQ ``"(B) text"``; ``prediction`` (str or null): the model's answer;
- ``conversations`` (list): the prompt as sent (sharegpt ``from/value`` or chat ``role/content``);
- ``metadata`` (any JSON): the event evidence only the judge sees.

Optional: ``conversation`` (HF chat style, used when ``conversations`` is absent), ``prompt`` (str),
``choices`` (list of str in letter order: the lenient MCQ tier's exact-text match). Other fields are
kept and ignored. The inference folder's file names (AVLM's own) are in :mod:`eval_assets.layout`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from eval_assets.errors import first_problem
from eval_assets.jsonio import write_json
from eval_assets.layout import AVLM_PREDICTIONS

# What a row field must look like, for the "fix" half of error messages.
_FIELD_HINTS = {
    "index": "an integer",
    "id": "a string or an integer",
    "class": "a string (the question class)",
    "evaluation_type": 'a string such as "mcq" or "open_ended"',
    "inference_status": 'a string ("success" when inference worked)',
    "ground_truth": 'a string (for MCQ "(A) choice text")',
    "prediction": "a string (or null when inference produced nothing)",
    "conversations": "a list of turns",
    "conversation": "a list of turns",
    "prompt": "a string",
    "choices": "a list of strings in letter order",
}


class PredictionsError(ValueError):
    """A predictions file or row that cannot be scored; the message names file, line, field, fix."""


class ScoringWarning(UserWarning):
    """A row that is skipped rather than scored (no ground-truth letter, no evaluation_type)."""


class PredictionRow(BaseModel):
    """One row of ``predictions.jsonl``; unknown fields are kept, known ones are type-checked."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, frozen=True)

    index: int | None = None
    id: str | int | None = None
    class_: str | None = Field(default=None, alias="class")
    evaluation_type: str | None = None
    inference_status: str | None = None
    ground_truth: str | None = None
    prediction: str | None = None
    conversations: list[Any] | None = None
    conversation: list[Any] | None = None
    prompt: str | None = None
    choices: list[str] | None = None
    metadata: Any = None

    _source: str = PrivateAttr(default="<row>")

    @classmethod
    def parse(cls, data: Mapping[str, Any], source: str) -> PredictionRow:
        """Validate one decoded row; ``source`` (``file:line``) is quoted in every later error."""
        try:
            row = cls.model_validate(dict(data))
        except ValidationError as exc:
            problem = first_problem(exc)
            field = problem.field or "<row>"
            top = field.split(".")[0]
            hint = _FIELD_HINTS.get(top, "the documented type")
            # The offending value as JSON, cut short: what the user wrote, in their notation.
            got = json.dumps(problem.input, ensure_ascii=False, default=str)[:80]
            raise PredictionsError(
                f"{source}: field {field!r}: {problem.message} (got {got}); fix: write {top!r} as "
                f"{hint}"
            ) from None
        row._source = source
        return row

    @property
    def source(self) -> str:
        """Where the row came from (``path:line``), for error messages."""
        return self._source

    @property
    def question_class(self) -> str | None:
        """The ``class`` field (``class`` is a Python keyword, hence the name)."""
        return self.class_

    def has(self, field: str) -> bool:
        """Whether the row spelled out ``field`` (its JSON name), even as null."""
        name = "class_" if field == "class" else field
        return name in self.model_fields_set or field in (self.model_extra or {})

    def require(self, *fields: str, why: str) -> None:
        """Raise a :class:`PredictionsError` naming the first of ``fields`` the row lacks."""
        for field in fields:
            if not self.has(field):
                raise PredictionsError(
                    f"{self.source}: field {field!r} is missing ({why}); fix: add {field!r} as "
                    f"{_FIELD_HINTS.get(field, 'the documented type')}"
                )

    def prompt_turns(self) -> Any:
        """The prompt as recorded: ``conversations``, else ``conversation``, else ``prompt``."""
        for value in (self.conversations, self.conversation, self.prompt):
            if value is not None:
                return value
        return None

    def question_text(self) -> str:
        """Text of the last user turn (or ``prompt``): where lettered choices are listed."""
        if self.prompt is not None and self.conversations is None and self.conversation is None:
            return self.prompt
        text = ""
        for turn in self.conversations or self.conversation or []:
            if not isinstance(turn, Mapping):
                continue
            if turn.get("from") == "human":
                text = str(turn.get("value") or "")
            elif turn.get("role") == "user":
                text = _content_text(turn.get("content"))
        return text


def _content_text(content: Any) -> str:
    """Text of a chat ``content``: a string, or the ``text`` parts of a multimodal list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text"))
            for part in content
            if isinstance(part, Mapping) and part.get("type") == "text" and part.get("text")
        )
    return ""


def rows_from_dicts(
    rows: Iterable[Mapping[str, Any]], source: str = "<memory>"
) -> list[PredictionRow]:
    """Validate in-memory rows (e.g. from a VLM client); errors quote ``source`` and row number."""
    return [PredictionRow.parse(row, f"{source} row {n}") for n, row in enumerate(rows, start=1)]


def read_predictions(path: Path) -> list[PredictionRow]:
    """Read and validate ``predictions.jsonl``; blank lines are skipped, as AVLM does."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: predictions file not found; run inference first so that it writes "
            f"{AVLM_PREDICTIONS} into the inference folder, or pass the folder that holds it"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise PredictionsError(
            f"{path}: not UTF-8 text (byte {exc.start}); fix: write the file as UTF-8 JSON lines"
        ) from None
    rows: list[PredictionRow] = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        source = f"{path}:{line_no}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise PredictionsError(
                f"{source}: not valid JSON ({exc.msg} at column {exc.colno}); fix: write exactly "
                f"one JSON object per line"
            ) from None
        if not isinstance(data, dict):
            raise PredictionsError(
                f"{source}: a JSON {type(data).__name__} where a row object was expected; fix: "
                f"write one JSON object per line"
            )
        rows.append(PredictionRow.parse(data, source))
    return rows


def write_avlm_json(path: Path, document: Any) -> Path:
    """Write ``document`` atomically, exactly as AVLM's ``write_json`` writes it: indent 2, UTF-8
    (non-ASCII kept as is), no final newline."""
    return write_json(path, document, ensure_ascii=False, newline=False)
