"""How every ``eval-assets`` command ends when something goes wrong: a few lines, never a traceback.

Bad input (:class:`~eval_assets.errors.InputError` and its kin) exits with code 2 and its own
message, which names the file, the field or stream, and the fix. Anything else is unexpected:
one line with the exception and a hint, exit code 1. A write the machine refused (a full disk,
a read-only or unwritable output) names the path, the cause and the fix, exit code 1
(:mod:`eval_assets.output_errors`). ``--debug`` (or ``EVAL_ASSETS_DEBUG=1``)
prints the traceback as well.
"""

from __future__ import annotations

import functools
import os
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import ParamSpec, TypeVar

import click
import typer
from rich.markup import escape

from eval_assets.console import make_console, print_error, showing_progress
from eval_assets.env_names import check_env_var_name
from eval_assets.errors import InputError
from eval_assets.output_errors import not_a_folder, output_problem

P = ParamSpec("P")
R = TypeVar("R")

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2

_debug = False


def set_debug(enabled: bool) -> None:
    """Show tracebacks of handled errors (the ``--debug`` flag)."""
    global _debug
    _debug = enabled


def debug_enabled() -> bool:
    """Whether ``--debug`` or ``EVAL_ASSETS_DEBUG`` asked for tracebacks."""
    return _debug or os.environ.get("EVAL_ASSETS_DEBUG", "") not in ("", "0")


# Every config error of the package (models file, judge config, ...) is an InputError.
_BAD_INPUT_TYPES: tuple[type[BaseException], ...] = (
    InputError, FileNotFoundError, NotADirectoryError)
# The options naming where a command writes (a full disk's error may name no file).
_OUTPUT_OPTIONS = ("output", "storage_root")


def env_name_option(value: str | None, option: str, example: str = "OPENAI_API_KEY") -> None:
    """Refuse an option that should NAME an environment variable but holds a key (exit 2).

    Checked before the value reaches any config, message or run record; the message masks it
    (:func:`eval_assets.env_names.check_env_var_name`).
    """
    if not value:
        return
    try:
        check_env_var_name(value, option, example=example)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint=option) from None


def guarded(command: Callable[P, R]) -> Callable[P, R]:
    """Wrap a Typer command: its long loops draw progress bars, and errors end as short messages
    with the right exit code."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        console = make_console()

        def note(message: Warning | str, category: type[Warning], *_: object, **__: object) -> None:
            # The project's own warnings (an n/a metric, a skipped row) are facts for the reader:
            # one line each, not Python's file:line dump.
            console.print(f"  [yellow]note:[/] {escape(str(message))}")

        try:
            with showing_progress(console), warnings.catch_warnings():
                warnings.showwarning = note
                return command(*args, **kwargs)
        except (typer.Exit, typer.Abort, typer.exceptions.TyperException,
                click.exceptions.ClickException, click.exceptions.Exit, KeyboardInterrupt):
            raise  # usage errors and deliberate exits: click already says the right thing
        except Exception as exc:
            console = make_console()
            if debug_enabled():
                console.print(traceback.format_exc(), markup=False, highlight=False)
            # A full disk, a read-only or unwritable output; an error naming no file is put
            # on the fullest disk written, the command's own output folders measured first.
            refused = output_problem(exc, [v for k, v in kwargs.items()
                                           if k in _OUTPUT_OPTIONS and isinstance(v, Path)])
            if refused is not None:
                print_error(console, refused)
                raise typer.Exit(EXIT_FAILED) from None
            # A path through a file where a folder must be ($EVAL_ASSETS_HOME naming a file).
            folder = not_a_folder(exc)
            if folder is not None or isinstance(exc, _BAD_INPUT_TYPES):
                print_error(console, folder or str(exc))
                raise typer.Exit(EXIT_BAD_INPUT) from None
            print_error(console, f"{type(exc).__name__}: {exc}",
                        hint="" if debug_enabled() else "Rerun with --debug for the traceback.")
            raise typer.Exit(EXIT_FAILED) from None

    return wrapper
