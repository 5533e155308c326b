"""The ``eval-assets`` command line: one console script for the whole project."""

from __future__ import annotations

from pathlib import Path

import typer

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


@app.command()
def run(
    recording: Path = typer.Argument(..., help="A recording file (*.db)."),
    storage_root: Path | None = typer.Option(
        None, help="Output root (default $EVAL_ASSETS_HOME or ./.eval_assets)."
    ),
    model: list[str] = typer.Option(
        [], "--model", help="A model from data/models.yaml (repeatable; default: all)."
    ),
) -> None:
    """Build RECORDING's dataset, benchmark the models on it, and print the report path."""
    from eval_assets.pipeline import run_benchmark

    outcome = run_benchmark(recording, storage_root, model or None,
                            progress=lambda line: typer.echo(line, err=True))
    typer.echo(f"leaderboard: {outcome.leaderboard}")
    typer.echo(f"report: {outcome.report}")


@app.command()
def demo(
    storage_root: Path | None = typer.Option(None, help="Output root (default ./.eval_assets)."),
) -> None:
    """The whole chain on the bundled sample recording with the offline default models."""
    sample = Path(__file__).resolve().parent.parent / "data" / "recordings" / "sample.db"
    run(sample, storage_root, [])


recording_app = typer.Typer(no_args_is_help=True, help="Create recordings.")
app.add_typer(recording_app, name="recording")


@recording_app.command("synthesize")
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
