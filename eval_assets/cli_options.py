"""The ``eval-assets`` vocabulary: one spelling per concept, the ``--help`` panels, and the old
spellings kept as hidden deprecated aliases.

Every command spells a concept the same way: the models file ``--models-file``, a model's name
``--model``, the folder written ``--output``, the storage root ``--storage-root``, the judge
config ``--judge-config``, the label overrides ``--labels-dir``, the annotations
``--annotations-dir``. ``eval_assets_tests/cli/test_vocabulary.py`` walks every command and fails
on a second spelling, an option outside a panel, or a default that differs from the Dagster
resource's without saying so in its help.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

__all__ = [
    "AUDIT", "CONTROLS", "CORRECTION", "FRAMES", "INPUT", "JUDGE", "MODELS", "OUTPUT", "PANELS",
    "PERCEPTION", "QUESTIONS", "RUN", "SCENE", "SENSORS", "SERVER", "deprecated_alias",
    "models_file_option", "prefer", "resource_note", "storage_root_option",
]

# The --help panels, in the order a reader meets them.
INPUT = "Input"
MODELS = "Models"
JUDGE = "Judge"
FRAMES = "Frames"
QUESTIONS = "Questions"
PERCEPTION = "Perception"
CONTROLS = "Controls"
AUDIT = "Audit"
CORRECTION = "Correction"
SCENE = "Scene"
SENSORS = "Sensors"
SERVER = "Server"
OUTPUT = "Output"
RUN = "Run"
PANELS = (INPUT, MODELS, JUDGE, FRAMES, QUESTIONS, PERCEPTION, CONTROLS, AUDIT, CORRECTION, SCENE,
          SENSORS, SERVER, OUTPUT, RUN)

MODELS_FILE_HELP = ("Models file: the models under test and their endpoints (default "
                    "$EVAL_ASSETS_MODELS or data/models.yaml, as the Dagster pipeline reads).")
STORAGE_ROOT_HELP = "Storage root (default $EVAL_ASSETS_HOME or ./.eval_assets)."


def resource_note(resource: str, field: str, value: object) -> str:
    """What an option's help says when its default is not the Dagster resource's."""
    return f"The Dagster `{resource}` resource's `{field}` defaults to {value!r}."


def models_file_option(help: str = MODELS_FILE_HELP) -> Any:
    """``--models-file FILE`` in the Models panel."""
    return typer.Option(None, "--models-file", help=help, rich_help_panel=MODELS)


def storage_root_option(help: str = STORAGE_ROOT_HELP, panel: str = OUTPUT) -> Any:
    """``--storage-root DIR``."""
    return typer.Option(None, "--storage-root", help=help, rich_help_panel=panel)


def deprecated_alias(old: str, new: str, *short: str) -> Any:
    """A hidden option spelled the old way: it still works, and one line on standard error
    says to use ``new``. The command takes it as a parameter of its own and calls
    :func:`prefer`."""

    def note(value: Path | None) -> Path | None:
        if value is not None:
            typer.echo(f"note: {'/'.join((old, *short))} is deprecated; use {new}", err=True)
        return value

    return typer.Option(None, old, *short, hidden=True, callback=note,
                        help=f"Deprecated spelling of {new}.")


def prefer(value: Path | None, old_value: Path | None) -> Path | None:
    """The canonical option's value, else the deprecated alias's."""
    return value if value is not None else old_value
