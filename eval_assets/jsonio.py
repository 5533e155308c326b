"""Reading and writing JSON and JSON-lines files: one home for every format the project writes.

Writes are atomic (:mod:`eval_assets.atomic`): a reader never sees half a file. The formatting
arguments keep each file's bytes as they have always been; the defaults (indent 2, ASCII escapes,
insertion order, a final newline) are how dimOS writes its JSON documents, and a JSON line is
``json.dumps(row)`` as dimOS writes its jsonl. A file that does not parse, or a record that does
not validate, raises a ``ValueError`` naming the file (and line), the field and the fix.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from eval_assets.atomic import write_text_atomic
from eval_assets.errors import validation_message

M = TypeVar("M", bound=BaseModel)

REGENERATE = "regenerate the file"
"""The fix for a file the project wrote itself: it was not edited by hand on purpose."""


def dumps_json(document: Any, *, indent: int | None = 2, sort_keys: bool = False,
               ensure_ascii: bool = True, newline: bool = True, allow_nan: bool = True) -> str:
    """``document`` as JSON text (by default as dimOS writes a JSON document).

    ``allow_nan=False`` refuses NaN and infinities (which are not JSON) with a ``ValueError``
    instead of writing them.
    """
    text = json.dumps(document, indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii,
                      allow_nan=allow_nan)
    return text + "\n" if newline else text


def write_json(path: Path, document: Any, *, indent: int | None = 2, sort_keys: bool = False,
               ensure_ascii: bool = True, newline: bool = True) -> Path:
    """Write :func:`dumps_json` of ``document`` to ``path`` atomically; returns ``path``."""
    return write_text_atomic(Path(path), dumps_json(
        document, indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii, newline=newline))


def read_json(path: Path) -> Any:
    """The JSON document in ``path`` (UTF-8); a file that does not parse names itself."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}, column "
                         f"{exc.colno}); fix: {REGENERATE}") from exc


def dumps_jsonl(rows: Iterable[Any], *, sort_keys: bool = False) -> str:
    """One ``json.dumps(row)`` line per row, each ending in a newline."""
    return "".join(json.dumps(row, sort_keys=sort_keys) + "\n" for row in rows)


def write_jsonl(path: Path, rows: Iterable[Any], *, sort_keys: bool = False) -> Path:
    """Write :func:`dumps_jsonl` of ``rows`` to ``path`` atomically; returns ``path``."""
    return write_text_atomic(Path(path), dumps_jsonl(rows, sort_keys=sort_keys))


def parse_model(text: str | bytes, model: type[M], source: str, fix: str = REGENERATE) -> M:
    """``model`` validated from JSON ``text``; an invalid one raises a ``ValueError`` whose one
    line names ``source`` (a file, or ``file:line``), the field and ``fix``."""
    try:
        return model.model_validate_json(text)
    except ValidationError as exc:
        raise ValueError(
            validation_message(exc, f"{source} is not a valid {model.__name__} record", fix=fix)
        ) from exc


def read_model(path: Path, model: type[M], fix: str = REGENERATE) -> M:
    """The ``model`` record stored as JSON in ``path`` (see :func:`parse_model`)."""
    path = Path(path)
    return parse_model(path.read_bytes(), model, str(path), fix)


def iter_jsonl(path: Path, model: type[M], fix: str = REGENERATE) -> Iterator[M]:
    """The ``model`` records of a JSON-lines file one line at a time (blank lines skipped), so a
    long file is never all in memory; a bad line names the file and line number."""
    path = Path(path)
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if line.strip():
                yield parse_model(line, model, f"{path}:{number}", fix)


def read_jsonl(path: Path, model: type[M], fix: str = REGENERATE) -> list[M]:
    """Every ``model`` record of a JSON-lines file (see :func:`iter_jsonl`)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist")
    return list(iter_jsonl(path, model, fix))
