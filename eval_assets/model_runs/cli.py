"""Commands that run a model under test, registered by ``eval_assets.cli``:

    eval-assets serve --model random|blind-smollm2 [--port 8000] [--seed 0]
    eval-assets vqa run DATASET --model NAME [--base-url URL] [--output DIR] [--no-circular]

``vqa run`` mirrors ``dimos evals vqa run``: it answers a public dataset's cases with one model
and writes a run folder (config.json, answers.jsonl, descriptions.jsonl, summary.json); scoring
against the private labels is a separate step. Rerunning the same command resumes: completed
answers are kept, only missing and failed ones are asked again.

The run controls (``--circular``: every case with its choices rotated, for CircularEval and
position bias, into ``rotations.jsonl``; ``--flip``, ``--time-flip``, ``--repeat-frames``) are on
by default, as the Dagster pipeline asks them (the ``vlm`` resource's ``rotations``, ``flips``,
``time_flips``, ``repeat_frames``): the same model gives the same numbers either way. A run as
cheap as dimOS's, one call per case, turns them off (``--no-circular --no-flip --no-time-flip
--no-repeat-frames``).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from eval_assets.cli_errors import EXIT_BAD_INPUT, env_name_option, guarded
from eval_assets.cli_options import (
    CONTROLS,
    MODELS,
    OUTPUT,
    RUN,
    SERVER,
    models_file_option,
    storage_root_option,
)
from eval_assets.local_models.registry import LOCAL_MODELS
from eval_assets.model_runs.run_controls import RUN_CONTROLS, RunControl
from eval_assets.schemas.cost import NO_PRICE
from eval_assets.schemas.predictions import RunSummary


@guarded
def serve_command(
    model: str = typer.Option(..., help=f"Local model to serve: {', '.join(LOCAL_MODELS)}.",
                              rich_help_panel=MODELS),
    port: int = typer.Option(8000, help="TCP port (0 picks a free one).", rich_help_panel=SERVER),
    seed: int = typer.Option(0, help="Seed of the random model.", rich_help_panel=MODELS),
    host: str = typer.Option("127.0.0.1", help="Interface to bind; keep it local.",
                             rich_help_panel=SERVER),
) -> None:
    """Serve a local baseline behind an OpenAI-compatible /v1/chat/completions API."""
    from eval_assets.local_models.server import serve

    if model not in LOCAL_MODELS:
        raise typer.BadParameter(f"{model!r} is not a local model; choose one of "
                                 f"{sorted(LOCAL_MODELS)}", param_hint="--model")
    typer.echo(f"serving {model} at http://{host}:{port}/v1 (Ctrl-C to stop)")
    serve(model, host=host, port=port, seed=seed)


def _folder_name(model: str) -> str:
    """A model id as a folder name (``Qwen/Qwen2.5-VL`` → ``Qwen-Qwen2.5-VL``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", model).strip("-.") or "model"


def _echo_cost(summary: RunSummary) -> None:
    cost = summary.cost
    if cost is None:
        typer.echo(f"cost: {NO_PRICE}")
        return
    batched = (f" ({cost.batch_calls} calls through the Batch API at "
               f"{cost.price.batch_share:.0%} of the price)" if cost.batch_calls else "")
    calls = sum(k.calls for k in cost.by_kind.values())
    typer.echo(f"cost: ${cost.total_usd:.4f} for every call of the run folder ({calls} calls, "
               f"usage.jsonl){batched}")
    typer.echo("  " + ", ".join(f"{kind} ${k.usd:.4f} ({k.calls})"
                                for kind, k in cost.by_kind.items()))
    budget = cost.budget
    if budget is not None:
        typer.echo(f"budget: ${budget.spent_usd:.4f} spent of ${budget.budget_usd:.4f}, "
                   f"${budget.remaining_usd:.4f} remain"
                   + (f"; stopped with {budget.calls_left} calls left, rerun to continue "
                      "(nothing asked is asked again)" if budget.stopped else ""))


# The CLI option of each control by run_model keyword: the table's, and the prompt controls'.
_OPTION_OF = {**{c.switch: c.flag for c in RUN_CONTROLS}, "templates": "--templates",
              "repeats": "--repeats", "structured": "--structured"}


def _echo_not_asked(not_asked: dict[str, str] | None) -> None:
    for switch, why in (not_asked or {}).items():
        typer.echo(f"warning: {_OPTION_OF.get(switch, switch)} was not asked: {why}", err=True)


def _with_run_controls(command: Callable[..., None]) -> Callable[..., None]:
    """Give ``command`` one on/off option per :data:`RUN_CONTROLS` entry, listed right after
    ``--describe`` with the table's default (the ``vlm`` resource's); Typer passes them into its
    ``**controls``."""
    signature = inspect.signature(command, eval_str=True)
    params = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
    at = [p.name for p in params].index("describe") + 1
    options = [inspect.Parameter(c.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=bool,
                                 default=typer.Option(c.default, c.option,
                                                      help=f"{c.help} {_default_note(c)}",
                                                      rich_help_panel=CONTROLS))
               for c in RUN_CONTROLS]
    # Typer reads the options from the signature: the table's enter it there, not in the def.
    command.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[*params[:at], *options, *params[at:]])
    return command


def _default_note(control: RunControl) -> str:
    """How a control's default compares with the pipeline's, for its ``--help``."""
    return (f"On by default, as the Dagster `vlm` resource's `{control.switch}`."
            if control.default else
            f"Off by default, as the Dagster `vlm` resource's `{control.switch}`.")


@guarded
@_with_run_controls
def vqa_run_command(
    dataset: Path = typer.Argument(..., help="A public dataset folder (cases.jsonl + assets/)."),
    model: str = typer.Option(..., help="A model declared in the models file, or any model id "
                                        "served at --base-url.", rich_help_panel=MODELS),
    base_url: str | None = typer.Option(None, help="OpenAI-compatible endpoint (…/v1).",
                                        rich_help_panel=MODELS),
    output: Path | None = typer.Option(
        None, help="Run folder (default <storage root>/runs/<dataset>-<content hash>/<model>).",
        rich_help_panel=OUTPUT),
    storage_root: Path | None = storage_root_option(),
    api_key_env: str | None = typer.Option(
        None, help="NAME of the environment variable holding the API key.",
        rich_help_panel=MODELS),
    max_concurrency: int | None = typer.Option(
        None, help="Most requests in flight (default: adaptive up to 64 over HTTP; a local "
        "model's entry).", rich_help_panel=RUN),
    max_tokens: int | None = typer.Option(None, help="Reply token limit (default 256).",
                                          rich_help_panel=MODELS),
    timeout_s: float | None = typer.Option(None, help="Seconds per request (default 60).",
                                           rich_help_panel=RUN),
    max_retries: int | None = typer.Option(
        None, help="Retries of a transient failure (429, 5xx, timeout) (default 4).",
        rich_help_panel=RUN),
    describe: bool = typer.Option(True, help="Also ask for a description of every frame.",
                                  rich_help_panel=CONTROLS),
    time_control_share: float = typer.Option(
        1.0, min=0.0, max=1.0, rich_help_panel=CONTROLS,
        help="With --time-flip or --repeat-frames: the share of their cases asked (drawn by "
             "case id, the same cases every run; 1: all)."),
    templates: bool | None = typer.Option(
        None, "--templates/--no-templates", rich_help_panel=CONTROLS,
        help="Also ask up to --prompt-control-cases cases per family in the paraphrase and "
             "lettered-options templates (templates.jsonl): two more calls per such case "
             "(default: the model entry's `templates`, else off)."),
    repeats: int | None = typer.Option(
        None, min=1, rich_help_panel=CONTROLS,
        help="Ask up to --prompt-control-cases cases per family this many times at "
             "--repeat-temperature (repeats.jsonl; 1: no repeats; default: the model entry's "
             "`repeats`, else 1)."),
    repeat_temperature: float | None = typer.Option(
        None, rich_help_panel=CONTROLS,
        help="The temperature of the --repeats calls (must be above 0; default: the model "
             "entry's, else 0.7)."),
    structured: bool | None = typer.Option(
        None, "--structured/--no-structured", rich_help_panel=CONTROLS,
        help="Where the preflight found structured output enforced, also ask up to "
             "--prompt-control-cases cases per family with a JSON schema of their choices "
             "(structured.jsonl; default: the model entry's `structured`, else off)."),
    prompt_control_cases: int | None = typer.Option(
        None, min=1, rich_help_panel=CONTROLS,
        help="Cases per family asked by --templates, --repeats and --structured (drawn by case "
             "id, the same cases every run; default: the model entry's, else 100)."),
    models_file: Path | None = models_file_option(),
    budget_usd: float | None = typer.Option(
        None, rich_help_panel=RUN,
        help="Stop before this invocation could spend more (USD; needs the model's price in the "
             "models file, default: its budget_usd); rerun to continue."),
    batch: bool = typer.Option(
        False, "--batch/--no-batch", rich_help_panel=RUN,
        help="Send the calls through the OpenAI Batch API (half price, results within 24 h); a "
             "batch still in flight is collected by the next run."),
    batch_wait_s: float = typer.Option(
        60.0, rich_help_panel=RUN,
        help="With --batch: how long to wait for the batch before leaving it in flight."),
    **controls: bool,
) -> None:
    """Answer every case of DATASET with one model and write the run folder (no scoring)."""
    from eval_assets.layout import StorageLayout, default_models_file, default_storage_root
    from eval_assets.model_runs.batch import batch_runner_for
    from eval_assets.model_runs.client import open_model
    from eval_assets.model_runs.runner import public_fingerprint, run_model
    from eval_assets.schemas.predictions import (
        PROMPT_CONTROLS_OFF,
        ModelSpec,
        PromptControls,
        load_model_specs,
    )

    env_name_option(api_key_env, "--api-key-env")
    path = models_file or default_models_file()
    declared = {s.name: s for s in load_model_specs(path)} if path.is_file() else {}
    spec = declared.get(model)
    if spec is None:
        if base_url is None:
            raise typer.BadParameter(
                f"{model!r} is not declared in {path} (declared: {sorted(declared)}); pass "
                f"--base-url for an undeclared model", param_hint="--model")
        spec = ModelSpec.model_validate(
            {"name": _folder_name(model), "model": model, "base_url": base_url})
    # The prompt controls: the options given, else the entry's, else off (as the pipeline asks
    # a declared model: its entry's, else the `vlm` resource's, whose defaults these are).
    entry = spec.prompt_controls(PROMPT_CONTROLS_OFF)
    prompt = PromptControls(
        templates=entry.templates if templates is None else templates,
        repeats=entry.repeats if repeats is None else repeats,
        repeat_temperature=(entry.repeat_temperature if repeat_temperature is None
                            else repeat_temperature),
        structured=entry.structured if structured is None else structured,
        prompt_control_cases=(entry.prompt_control_cases if prompt_control_cases is None
                              else prompt_control_cases))
    # The options given override the entry's endpoint fields.
    overrides = {"api_key_env": api_key_env, "max_concurrency": max_concurrency,
                 "max_tokens": max_tokens, "timeout_s": timeout_s, "max_retries": max_retries}
    given = {k: v for k, v in overrides.items() if v is not None}
    spec = ModelSpec.model_validate({"name": spec.name, "price": spec.price,
                                     "budget_usd": spec.budget_usd, "batch": spec.batch,
                                     "endpoint": {
        **spec.endpoint.model_dump(exclude_unset=True), **given}})
    # The default folder carries the dataset's content hash: a dataset regenerated under the
    # same name gets a run folder of its own instead of sharing the old one.
    root = storage_root.resolve() if storage_root else default_storage_root()
    out = output or StorageLayout(root).vqa_run_dir(
        f"{dataset.resolve().name}-{public_fingerprint(dataset)[:12]}", spec.name)
    # Each control's flag, under the run_model keyword that switches it on (a test holds the
    # table's switches to run_model's keywords, which mypy cannot see through a dict).
    switches: dict[str, Any] = {c.switch: controls[c.name] for c in RUN_CONTROLS}
    try:
        with open_model(spec, base_url=base_url) as client:
            endpoint = client.settings.endpoint
            batcher = batch_runner_for(
                client.settings.base_url, endpoint.api_key(), max_tokens=endpoint.max_tokens,
                timeout_s=endpoint.timeout_s, wait_s=batch_wait_s) if batch else None
            result = run_model(dataset, client, out, batch=batcher, describe=describe,
                               **switches,
                               time_control_share=time_control_share,
                               **prompt._asdict(),
                               price=spec.price,
                               budget_usd=budget_usd if budget_usd is not None
                               else spec.budget_usd)
    except (ValueError, FileNotFoundError, RuntimeError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from exc
    answers = result.summary.answers
    typer.echo(f"{spec.name}: {answers.success}/{answers.total} cases answered "
               f"({answers.unmatched_choices} name no choice), {answers.failed} failed; "
               f"{result.calls_made} calls made, {result.skipped} resumed")
    if result.summary.rotations is not None:
        r = result.summary.rotations
        typer.echo(f"rotations: {r.success}/{r.total} answered ({r.unmatched_choices} name no "
                   f"choice), {r.failed} failed")
    if result.summary.descriptions is not None:
        d = result.summary.descriptions
        typer.echo(f"descriptions: {d.success}/{d.total}, {d.failed} failed")
    if result.summary.spatial is not None:
        from eval_assets.model_runs.spatial import spatial_line

        typer.echo(spatial_line(result.summary.spatial))
    typer.echo(f"run folder: {out}")
    _echo_not_asked(dict(result.not_asked or {}))
    _echo_cost(result.summary)
    if result.batch_in_flight is not None:
        typer.echo(f"batch {result.batch_in_flight} in flight (recorded in {out}); rerun the "
                   f"same command later to collect it", err=True)
    if not result.summary.complete:
        errors = {**answers.error_counts}
        for summary in (result.summary.rotations, result.summary.descriptions):
            for category, count in (summary.error_counts if summary else {}).items():
                errors[category] = errors.get(category, 0) + count
        typer.echo(f"incomplete ({errors}); rerun the same command to retry only "
                   f"the failed calls", err=True)
        raise typer.Exit(1)
    cost = result.summary.cost
    if cost is not None and cost.budget is not None and cost.budget.stopped:
        raise typer.Exit(1)  # the controls' calls left by the budget: said above, rerun asks
