"""The CLI speaks one vocabulary: one spelling per concept in every command (the old spellings
only as hidden, deprecated aliases), every option in a ``--help`` panel, and every default the
Dagster resource's, or the difference said in the option's help."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.core import TyperOption
from typer.testing import CliRunner

from eval_assets.cli import MODELS_ENV, _models_file_in_env, app
from eval_assets.cli_options import PANELS, resource_note
from eval_assets.defs.resources import (
    JudgeResource,
    PerceptionResource,
    ProjectStorage,
    QuestionAuthorResource,
    ScoringResource,
    VLMClientResource,
)
from eval_assets.errors import InputError
from eval_assets.model_runs.run_controls import RUN_CONTROLS
from eval_assets.schemas.endpoint import Endpoint
from eval_assets.schemas.predictions import PROMPT_CONTROLS_OFF

# Canonical spelling -> (the concept, the spellings no command may use for it).
VOCABULARY: dict[str, tuple[str, frozenset[str]]] = {
    "--models-file": ("the models file", frozenset({
        "--models", "--model-file", "--models-yaml", "--models-path", "--models-config"})),
    "--model": ("a model's name", frozenset({"--model-name", "--model-id", "--name"})),
    "--output": ("the folder a command writes", frozenset({
        "--out", "-o", "--output-dir", "--out-dir", "--outdir", "--output-path"})),
    "--storage-root": ("the storage root", frozenset({
        "--root", "--storage", "--home", "--storage-dir", "--output-root", "--data-root"})),
    "--judge-config": ("the judge config", frozenset({
        "--config", "-c", "--judge", "--judge-file", "--judge-yaml"})),
    "--labels-dir": ("the label overrides' folder", frozenset({
        "--labels", "--overrides", "--overrides-dir", "--labels-folder"})),
    "--annotations-dir": ("the annotations' folder", frozenset({
        "--annotations", "--annotations-folder"})),
    "--recording": ("a recording's name (its partition key)", frozenset({
        "--recording-name", "--rec", "--recording-key", "--partition"})),
    "--recordings-dir": ("the recordings folder", frozenset({
        "--recordings", "--recordings-folder"})),
    "--base-url": ("an OpenAI-compatible endpoint", frozenset({
        "--url", "--endpoint", "--api-base", "--base"})),
    "--api-key-env": ("the NAME of the API key's variable", frozenset({
        "--api-key", "--key-env", "--api-key-var"})),
}
# Hidden old spellings that still work (with a one-line note): (command, alias) -> canonical.
DEPRECATED = {
    ("score judge", "--models"): "--models-file",
    ("score judge", "--config"): "--judge-config",
}
# Every command that reads the models file offers --models-file.
READS_MODELS_FILE = {"run", "demo", "vqa run", "score judge"}

RESOURCES: dict[str, Any] = {"storage": ProjectStorage, "perception": PerceptionResource,
             "question_author": QuestionAuthorResource, "vlm": VLMClientResource,
             "scoring": ScoringResource, "judge": JudgeResource}
# The resources whose fields a command's options stand for, first match first: an option named
# as one of their fields is compared with it.
RESOURCES_OF = {
    "run": ("storage",), "demo": ("storage",), "ui": ("storage",),
    "labels override": ("storage",), "labels list": ("storage",),
    "labels migrate-annotations": ("storage", "scoring"),
    "vqa generate": ("question_author", "perception", "storage"),
    "vqa run": ("vlm",), "score judge": ("judge",),
}
# Options named otherwise than their field.
RENAMED = {**{("vqa run", c.name): ("vlm", c.switch) for c in RUN_CONTROLS},
           ("score judge", "judge_config"): ("judge", "config_file")}
# What an option left out (None) means, in the resource's terms; any other None falls back to
# what the resource's empty field does (the same default_* function: $EVAL_ASSETS_HOME, ...).
_ENDPOINT = Endpoint()
UNSET: dict[tuple[str, str], object] = {
    ("vlm", "max_tokens"): _ENDPOINT.max_tokens, ("vlm", "timeout_s"): _ENDPOINT.timeout_s,
    ("vlm", "max_retries"): _ENDPOINT.max_retries,
    ("vlm", "max_concurrency"): 0,  # adaptive over HTTP, a local model's entry
    **{("vlm", name): value for name, value in PROMPT_CONTROLS_OFF._asdict().items()},
    ("question_author", "vocabulary"): QuestionAuthorResource.model_fields["vocabulary"]
    .get_default(call_default_factory=True),
}


def _commands() -> Iterator[tuple[str, Any]]:
    def walk(command: Any, path: tuple[str, ...]) -> Iterator[tuple[str, Any]]:
        if hasattr(command, "commands"):  # a group, as Click's
            for name, sub in command.commands.items():
                yield from walk(sub, (*path, name))
        else:
            yield " ".join(path), command

    yield from walk(typer.main.get_command(app), ())


def _options(command: Any) -> list[TyperOption]:
    return [p for p in command.params if isinstance(p, TyperOption)]


def test_one_spelling_per_concept() -> None:
    forbidden = {old: canon for canon, (_, olds) in VOCABULARY.items() for old in olds}
    clashes = []
    for name, command in _commands():
        for option in _options(command):
            for spelling in [*option.opts, *option.secondary_opts]:
                canon = forbidden.get(spelling)
                if canon is None:
                    continue
                if DEPRECATED.get((name, option.opts[0])) == canon and option.hidden:
                    continue
                clashes.append(f"{name} {spelling}: spell {VOCABULARY[canon][0]} {canon}")
            dest = (option.name or "").replace("_", "-")
            canon_of_dest = f"--{dest}"
            if canon_of_dest in VOCABULARY and not option.hidden \
                    and canon_of_dest not in option.opts:
                clashes.append(f"{name} {option.opts}: spell {canon_of_dest}")
    assert clashes == []


def test_the_old_spellings_are_hidden_aliases() -> None:
    commands = dict(_commands())
    for (name, alias), canon in DEPRECATED.items():
        options = {o.opts[0]: o for o in _options(commands[name])}
        assert options[alias].hidden and canon in options and not options[canon].hidden
        assert f"Deprecated spelling of {canon}" in (options[alias].help or "")


def test_every_command_that_reads_the_models_file_offers_models_file() -> None:
    commands = dict(_commands())
    for name in READS_MODELS_FILE:
        assert "--models-file" in {o.opts[0] for o in _options(commands[name])}, name


def test_every_option_sits_in_a_help_panel() -> None:
    outside = [f"{name} {option.opts[0]}: {option.rich_help_panel!r}"
               for name, command in _commands() for option in _options(command)
               if not option.hidden and option.rich_help_panel not in PANELS]
    assert outside == []


def _resource_default(resource: str, field: str) -> object:
    return RESOURCES[resource].model_fields[field].get_default(call_default_factory=True)


def test_defaults_are_the_resources_or_the_help_says_so() -> None:
    compared, differ = 0, []
    for name, command in _commands():
        for option in _options(command):
            if option.hidden or option.required or option.name is None:
                continue
            where = RENAMED.get((name, option.name))
            if where is None:
                where = next(((r, option.name) for r in RESOURCES_OF.get(name, ())
                              if option.name in RESOURCES[r].model_fields), None)
            if where is None:
                continue
            resource, field = where
            cli = option.default if option.default is not None else UNSET.get(where, "")
            if isinstance(cli, str) and option.name == "vocabulary":
                cli = [n.strip() for n in cli.split(",")]
            compared += 1
            theirs = _resource_default(resource, field)
            if cli != theirs and resource_note(resource, field, theirs) not in (option.help or ""):
                differ.append(f"{name} {option.opts[0]}: {cli!r}, the `{resource}` resource's "
                              f"{field}: {theirs!r}, and its help does not say so")
    assert differ == []
    assert compared >= 30  # the walk does find the options


def test_vqa_run_asks_the_controls_the_vlm_resource_asks() -> None:
    # The same model gives the same numbers through `vqa run` and the pipeline.
    for control in RUN_CONTROLS:
        assert control.default is _resource_default("vlm", control.switch), control


def test_a_deprecated_spelling_works_and_says_so(tmp_path: Path) -> None:
    missing = tmp_path / "judge.yaml"
    result = CliRunner().invoke(app, ["score", "judge", str(tmp_path), "-c", str(missing)])
    assert "note: --config/-c is deprecated; use --judge-config" in result.output
    assert result.exit_code == 2 and str(missing) in result.output  # the alias's value was read


def test_run_takes_the_models_file(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["run", str(tmp_path / "rec.db"), "--models-file",
                                      str(tmp_path / "nowhere.yaml")])
    assert result.exit_code == 2 and "--models-file" in result.output
    models = tmp_path / "models.yaml"
    models.write_text("models: []\n")
    before = os.environ.get(MODELS_ENV)
    with _models_file_in_env(models):
        assert os.environ[MODELS_ENV] == str(models.resolve())
    assert os.environ.get(MODELS_ENV) == before
    with pytest.raises(InputError):
        _models_file_in_env(tmp_path / "nowhere.yaml").__enter__()
