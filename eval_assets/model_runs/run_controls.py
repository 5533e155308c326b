"""The controls a run asks on request: every case (or every case of some families) asked again
in a changed form, each switched on by one ``eval-assets vqa run`` flag and one ``vlm`` resource
field. A new control of this kind is one entry of :data:`RUN_CONTROLS`; the CLI reads the table
(:mod:`eval_assets.model_runs.cli`)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RUN_CONTROLS", "RunControl"]


@dataclass(frozen=True)
class RunControl:
    """One control: ``name`` is the ``vqa run`` parameter behind ``flag`` (``--flag/--no-flag``),
    ``help`` its help text, ``switch`` the keyword of
    :func:`~eval_assets.model_runs.runner.run_model` and the field of the Dagster ``vlm``
    resource that turn it on. ``default``: whether ``vqa run`` asks it unless told not to, the
    ``vlm`` resource's default (``eval_assets_tests/cli/test_vocabulary.py`` holds them equal),
    so that ``vqa run`` and the pipeline give the same numbers for the same model."""

    name: str
    flag: str
    help: str
    switch: str
    default: bool = True

    @property
    def option(self) -> str:
        """The on/off declaration Click reads (``--flip/--no-flip``)."""
        return f"{self.flag}/--no-{self.flag.removeprefix('--')}"


RUN_CONTROLS: tuple[RunControl, ...] = (
    RunControl(
        "circular", "--circular",
        "Also ask every case with its choices rotated (CircularEval, position bias; "
        "rotations.jsonl). A case of k choices then costs k calls.",
        "rotations"),
    RunControl(
        "flip", "--flip",
        "Also ask every left/right case about its image mirrored (FlipEval; flips.jsonl): "
        "one more call per such case.",
        "flips"),
    RunControl(
        "time_flip", "--time-flip",
        "Also ask every multi-frame case of a TimeFlip family with its frames reversed "
        "(time_flips.jsonl): one more call per such case.",
        "time_flips"),
    RunControl(
        "repeat_frames", "--repeat-frames",
        "Also ask every multi-frame case of a RepeatFrames family with each frame shown "
        "twice (repeat_frames.jsonl): one more call per such case.",
        "repeat_frames"),
)
"""In the order ``vqa run --help`` lists them (after ``--describe``)."""
