"""The one base class for errors caused by what a user passed in (a file, a field, a flag), and
the one way to word them.

The command line prints these as a short message with exit code 2 and no traceback; anything else
is a bug and keeps its traceback. Messages name the file, the field or stream, and the fix:
:func:`validation_message` words a pydantic ``ValidationError`` so, :func:`yaml_problem` a YAML
parser error.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError


class InputError(Exception):
    """Bad input: the message says which file or field, what is wrong, and how to fix it."""


def yaml_problem(exc: Exception) -> str:
    """A YAML parser error in one line: ``not valid YAML (<problem> at line L, column C)``.

    The parser's own message spans several lines with a code excerpt; a config error names the
    file, this and the fix.
    """
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    problem = getattr(exc, "problem", None) or type(exc).__name__
    return f"not valid YAML ({problem}{where})"


@dataclass(frozen=True)
class FieldProblem:
    """The first problem pydantic found, in the words a message uses."""

    field: str
    """Dotted location (``a.0.b``); empty for a rule across fields (its message names them)."""
    message: str
    """Pydantic's message, without the ``Value error, `` of a validator's ``ValueError``."""
    kind: str
    """Pydantic's error type, e.g. ``extra_forbidden``, ``missing``, ``int_parsing``."""
    input: Any
    """The offending value as given."""


def first_problem(exc: ValidationError) -> FieldProblem:
    """The first of ``exc``'s errors (a message names one problem, and fixing it shows the next)."""
    first = exc.errors()[0]
    return FieldProblem(field=".".join(str(part) for part in first["loc"]),
                        message=str(first["msg"]).removeprefix("Value error, "),
                        kind=str(first["type"]), input=first.get("input"))


def validation_message(exc: ValidationError, source: str, *, fix: str | None = None,
                       fields: Iterable[str] | None = None) -> str:
    """One line naming the file (``source``), the field and the fix for pydantic's first error.

    - a rule across fields, or a document that does not parse: ``<source>: <message>`` (the
      message names the fields), then ``; fix: <fix>`` when ``fix`` is given;
    - an unknown field, when ``fields`` lists the known ones:
      ``<source>: unknown field 'x'; fix: use only a, b``;
    - otherwise ``<source>: field 'x': <message>; fix: <fix>`` (default fix: correct or remove
      the field).
    """
    problem = first_problem(exc)
    if not problem.field:
        return f"{source}: {problem.message}" + (f"; fix: {fix}" if fix is not None else "")
    if problem.kind == "extra_forbidden" and fields is not None:
        return f"{source}: unknown field {problem.field!r}; fix: use only {', '.join(fields)}"
    fix = fix if fix is not None else f"correct or remove {problem.field!r}"
    return f"{source}: field {problem.field!r}: {problem.message}; fix: {fix}"
