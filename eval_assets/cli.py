"""The ``eval-assets`` command line: one console script for the whole project."""

from __future__ import annotations

from pathlib import Path

import typer

app = typer.Typer(no_args_is_help=True, help="Robot recordings to VLM benchmarks, and VLM scores.")


@app.command()
def run(
    recording: Path = typer.Argument(..., help="A recording file (*.db)."),
    storage_root: Path | None = typer.Option(
        None, help="Output root (default $EVAL_ASSETS_HOME or ./.eval_assets)."
    ),
) -> None:
    """Run the per-recording pipeline on RECORDING and print where its outputs are."""
    from eval_assets.pipeline import run_recording

    outcome = run_recording(recording, storage_root)
    for name, folder in outcome.asset_dirs.items():
        typer.echo(f"{name}: {folder}")
    typer.echo(f"run {outcome.run_id} for partition {outcome.partition_key!r} succeeded")


@app.command()
def demo(
    storage_root: Path | None = typer.Option(None, help="Output root (default ./.eval_assets)."),
) -> None:
    """Run the pipeline on the bundled sample recording with the offline default models."""
    sample = Path(__file__).resolve().parent.parent / "data" / "recordings" / "sample.db"
    run(sample, storage_root)
