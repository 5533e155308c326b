"""The one base class for errors caused by what a user passed in (a file, a field, a flag).

The command line prints these as a short message with exit code 2 and no traceback; anything else
is a bug and keeps its traceback. Messages name the file, the field or stream, and the fix.
"""

from __future__ import annotations


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
