"""The ``eval-assets`` command line: one console script for the whole project."""


from __future__ import annotations

import os
import sys
import time
from pathlib import Path

# Model loaders (transformers' GGUF conversion, sentence-transformers) draw tqdm bars of their own
# that would interleave with ours. tqdm reads this once, when it is first imported, which is after
# this line: nothing imported above or by this package's __init__ imports it.
os.environ.setdefault("TQDM_DISABLE", "1")

import typer
from rich.markup import escape

from eval_assets.cli_errors import guarded, set_debug
from eval_assets.console import format_seconds, make_console
from eval_assets.metrics.cli import score_app
from eval_assets.predictions.cli import serve_command, vqa_run_command
from eval_assets.vqa.cli import vqa_app

# Plain tracebacks: rich ones walk every local (datasets, models) and can take minutes and GBs.
app = typer.Typer(
    no_args_is_help=True,
    help="Robot recordings to VLM benchmarks, and VLM scores.",
    pretty_exceptions_enable=False,
)
vqa_app.command("run")(vqa_run_command)
app.add_typer(vqa_app, name="vqa")
app.command("serve")(serve_command)
app.add_typer(score_app, name="score")

# Counts shown after a step's name, most telling first; other numeric metadata is left to the UI.
_SHOWN_COUNTS = ("frames", "images", "cases", "answers", "n", "calls_made", "num_success",
                 "num_failed", "n_frames", "accuracy", "mean_similarity", "chair_i", "f1")


@app.callback()
def main_options(
    debug: bool = typer.Option(False, "--debug", help="Show the traceback of any error."),
) -> None:
    """Robot recordings to VLM benchmarks, and VLM scores."""
    set_debug(debug)


def _format_counts(counts: dict[str, int | float]) -> str:
    shown = [(key, counts[key]) for key in _SHOWN_COUNTS if key in counts][:3]
    return ", ".join(f"{key} {value:.3f}" if isinstance(value, float) else f"{key} {value}"
                     for key, value in shown)


@app.command()
@guarded
def run(
    recording: Path = typer.Argument(..., help="A recording file (*.db)."),
    storage_root: Path | None = typer.Option(
        None, help="Output root (default $EVAL_ASSETS_HOME or ./.eval_assets)."
    ),
    model: list[str] = typer.Option(
        [], "--model", help="A model from data/models.yaml (repeatable; default: all)."
    ),
    verbose: bool = typer.Option(
        False, "--verbose", "-v", help="Also print Dagster's event stream (always in the log)."),
) -> None:
    """Build RECORDING's dataset, benchmark the models on it, and print the report path."""
    from eval_assets.pipeline import JobReport, StepReport, run_benchmark

    console = make_console()
    started = time.perf_counter()

    def on_step(step: StepReport) -> None:
        mark = "[green]✓[/]" if step.ok else "[red]✗[/]"
        detail = _format_counts(step.counts) if step.ok else step.error
        console.print(f"  {mark} {step.step:<44} {format_seconds(step.seconds):>9}"
                      + (f"  {escape(detail)}" if detail else ""))

    def on_job(job: JobReport) -> None:
        console.print(f"[bold]{escape(job.label)}[/]: {job.steps} steps in "
                      f"{format_seconds(job.seconds)}")

    outcome = run_benchmark(recording, storage_root, model or None, verbose=verbose,
                            on_step=on_step, on_job=on_job,
                            on_stage=lambda line: console.print(f"[dim]{escape(line)}[/]"))
    console.print(f"done in {format_seconds(time.perf_counter() - started)}; Dagster log: "
                  f"{outcome.log_file}")
    typer.echo(f"leaderboard: {outcome.leaderboard}")
    typer.echo(f"report: {outcome.report}")


@app.command()
@guarded
def demo(
    storage_root: Path | None = typer.Option(None, help="Output root (default ./.eval_assets)."),
    verbose: bool = typer.Option(
        False, "--verbose", "-v", help="Also print Dagster's event stream (always in the log)."),
) -> None:
    """The whole chain on the bundled sample recording with the offline default models."""
    sample = Path(__file__).resolve().parent.parent / "data" / "recordings" / "sample.db"
    run(sample, storage_root, [], verbose)


recording_app = typer.Typer(no_args_is_help=True, help="Create recordings.")
app.add_typer(recording_app, name="recording")


@recording_app.command("synthesize")
@guarded
def recording_synthesize(
    out_db: Path = typer.Argument(..., help="Recording to write (*.db); truth files go beside it."),
    seed: int = typer.Option(0, help="Seed for timestamp jitter, late LiDAR frames, range noise."),
    frames: int = typer.Option(24, help="Number of camera frames (≈2 Hz)."),
) -> None:
    """Render the sample scene into OUT_DB plus OUT.scene.json and OUT.truth.npz."""
    from eval_assets.synth import synthesize_sample

    out = synthesize_sample(out_db, seed=seed, frames=frames)
    for path in (out.db, out.scene_json, out.truth_npz):
        typer.echo(f"{path} ({path.stat().st_size} bytes)")
    typer.echo(f"rendered {frames} frames in {out.render_seconds:.1f} s")


def main() -> None:
    """Console-script entry: ``--debug`` is accepted anywhere on the line, not only first."""
    argv = sys.argv[1:]
    if "--debug" in argv[1:]:
        argv = ["--debug", *(arg for arg in argv if arg != "--debug")]
    app(args=argv, prog_name="eval-assets")
