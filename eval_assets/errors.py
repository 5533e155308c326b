"""The one base class for errors caused by what a user passed in (a file, a field, a flag).

The command line prints these as a short message with exit code 2 and no traceback; anything else
is a bug and keeps its traceback. Messages name the file, the field or stream, and the fix.
"""

from __future__ import annotations


class InputError(Exception):
    """Bad input: the message says which file or field, what is wrong, and how to fix it."""
