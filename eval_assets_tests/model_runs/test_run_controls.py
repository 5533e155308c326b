"""The run controls' table: what ``vqa run`` offers (its flags and their help, unchanged by
reading them from the table) and what each flag switches on (a ``run_model`` keyword, a field
of the ``vlm`` resource)."""

from __future__ import annotations

import inspect
from typing import Any

import typer.main

from eval_assets.cli import app
from eval_assets.defs.resources import VLMClientResource
from eval_assets.model_runs.run_controls import RUN_CONTROLS
from eval_assets.model_runs.runner import run_model

# Every option of `vqa run`, in the order --help lists them: (flag, its off flag or "").
VQA_RUN_FLAGS = [
    ("--model", ""), ("--base-url", ""), ("--output", ""), ("--storage-root", ""),
    ("--api-key-env", ""),
    ("--max-concurrency", ""), ("--max-tokens", ""), ("--timeout-s", ""), ("--max-retries", ""),
    ("--describe", "--no-describe"), ("--circular", "--no-circular"), ("--flip", "--no-flip"),
    ("--time-flip", "--no-time-flip"), ("--repeat-frames", "--no-repeat-frames"),
    ("--time-control-share", ""), ("--templates", "--no-templates"), ("--repeats", ""),
    ("--repeat-temperature", ""), ("--structured", "--no-structured"),
    ("--prompt-control-cases", ""), ("--models-file", ""), ("--budget-usd", ""),
    ("--batch", "--no-batch"), ("--batch-wait-s", ""),
]
CONTROL_HELP = {
    "--circular": "Also ask every case with its choices rotated (CircularEval, position bias; "
                  "rotations.jsonl). A case of k choices then costs k calls.",
    "--flip": "Also ask every left/right case about its image mirrored (FlipEval; flips.jsonl): "
              "one more call per such case.",
    "--time-flip": "Also ask every multi-frame case of a TimeFlip family with its frames "
                   "reversed (time_flips.jsonl): one more call per such case.",
    "--repeat-frames": "Also ask every multi-frame case of a RepeatFrames family with each "
                       "frame shown twice (repeat_frames.jsonl): one more call per such case.",
}


def _vqa_run() -> Any:
    # Typer's groups carry their subcommands in ``commands``, as Click's do.
    group: Any = typer.main.get_command(app)
    return group.commands["vqa"].commands["run"]


def test_vqa_run_lists_its_flags_and_the_controls_help() -> None:
    options = [p for p in _vqa_run().params if p.param_type_name == "option"]
    assert [(p.opts[0], p.secondary_opts[0] if p.secondary_opts else "")
            for p in options] == VQA_RUN_FLAGS
    controls = {p.opts[0]: p for p in options if p.opts[0] in CONTROL_HELP}
    # On by default, as the pipeline asks them (eval_assets_tests/cli/test_vocabulary.py).
    assert {flag: p.help for flag, p in controls.items()} == {
        c.flag: f"{CONTROL_HELP[c.flag]} On by default, as the Dagster `vlm` resource's "
                f"`{c.switch}`." for c in RUN_CONTROLS}
    assert all(p.default is True and p.is_flag for p in controls.values())


def test_each_control_switches_a_run_model_keyword_and_a_vlm_resource_field() -> None:
    keywords = inspect.signature(run_model).parameters
    fields = VLMClientResource.model_fields
    for control in RUN_CONTROLS:
        assert keywords[control.switch].default is False, control
        assert fields[control.switch].annotation is bool, control
    assert len({c.name for c in RUN_CONTROLS}) == len({c.switch for c in RUN_CONTROLS}) == \
        len(RUN_CONTROLS)
