"""The ``eval-assets`` command line: one console script for the whole project."""


from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

# Model loaders (transformers' GGUF conversion, sentence-transformers) draw tqdm bars of their own
# that would interleave with ours. tqdm reads this once, when it is first imported, which is after
# this line: nothing imported above or by this package's __init__ imports it.
os.environ.setdefault("TQDM_DISABLE", "1")

import typer
from rich.markup import escape

from eval_assets.cli_errors import guarded, set_debug
from eval_assets.cli_options import (
    MODELS,
    OUTPUT,
    RUN,
    SCENE,
    SENSORS,
    SERVER,
    models_file_option,
    storage_root_option,
)
from eval_assets.console import format_seconds, make_console
from eval_assets.errors import InputError
from eval_assets.labels_cli import labels_app
from eval_assets.metrics.cli import score_app
from eval_assets.model_runs.cli import serve_command, vqa_run_command
from eval_assets.vqa.cli import vqa_app
from eval_assets.vqa.declarations import BUILT_IN as _FAMILIES  # noqa: F401 (declares every family)

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
app.add_typer(labels_app, name="labels")

# Counts shown after a step's name, most telling first; other numeric metadata is left to the UI.
_SHOWN_COUNTS = ("frames", "num_skipped", "images", "cases", "answers", "n", "calls_made",
                 "num_success", "num_failed", "n_frames", "accuracy", "mean_similarity", "chair_i",
                 "f1")
# Shown only when non-zero: a skipped frame is news, "skipped 0" on every run is not.
_NEWS_COUNTS = frozenset({"num_skipped"})


@app.callback()
def main_options(
    debug: bool = typer.Option(False, "--debug", help="Show the traceback of any error."),
) -> None:
    """Robot recordings to VLM benchmarks, and VLM scores."""
    set_debug(debug)


def _format_counts(counts: dict[str, int | float]) -> str:
    shown = [(key, counts[key]) for key in _SHOWN_COUNTS
             if key in counts and (counts[key] or key not in _NEWS_COUNTS)][:3]
    return ", ".join(f"{key} {value:.3f}" if isinstance(value, float) else f"{key} {value}"
                     for key, value in shown)


_VERBOSE = typer.Option(False, "--verbose", "-v", rich_help_panel=RUN,
                        help="Also print Dagster's event stream (always in the log).")
_NO_WAIT = typer.Option(
    False, "--no-wait", envvar="EVAL_ASSETS_NO_WAIT", rich_help_panel=RUN,
    help="When another eval-assets run works on the same storage root, exit 2 naming it "
    "instead of waiting for it.")
MODELS_ENV = "EVAL_ASSETS_MODELS"


@contextlib.contextmanager
def _models_file_in_env(models_file: Path | None) -> Iterator[None]:
    """``--models-file`` as ``$EVAL_ASSETS_MODELS``, where the pipeline and its run processes
    read the models file, while the command runs."""
    if models_file is None:
        yield
        return
    if not models_file.is_file():
        raise InputError(f"--models-file {models_file}: no such file. Fix: pass a models file "
                         "(see data/models.yaml), or leave the option out for "
                         "$EVAL_ASSETS_MODELS or data/models.yaml")
    before = os.environ.get(MODELS_ENV)
    os.environ[MODELS_ENV] = str(models_file.resolve())
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(MODELS_ENV, None)
        else:
            os.environ[MODELS_ENV] = before


@app.command()
@guarded
def run(
    recording: Path = typer.Argument(..., help="A recording file (*.db)."),
    models_file: Path | None = models_file_option(),
    model: list[str] = typer.Option(
        [], "--model", help="A model of the models file (repeatable; default: all).",
        rich_help_panel=MODELS),
    storage_root: Path | None = storage_root_option(),
    verbose: bool = _VERBOSE,
    no_wait: bool = _NO_WAIT,
) -> None:
    """Build RECORDING's dataset, benchmark the models on it, and print the report path."""
    with _models_file_in_env(models_file):
        _run(recording, model, storage_root, verbose, no_wait)


def _run(recording: Path, model: list[str], storage_root: Path | None, verbose: bool,
         no_wait: bool) -> None:
    from eval_assets.defs.local import JobReport, StepReport, run_locally

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

    outcome = run_locally(recording, storage_root, model or None, verbose=verbose,
                          wait=not no_wait, on_step=on_step, on_job=on_job,
                          on_stage=lambda line: console.print(f"[dim]{escape(line)}[/]"))
    console.print(f"done in {format_seconds(time.perf_counter() - started)}; Dagster log: "
                  f"{outcome.log_file}")
    typer.echo(f"leaderboard: {outcome.leaderboard}")
    typer.echo(f"report: {outcome.report}")


@app.command()
@guarded
def demo(
    models_file: Path | None = models_file_option(
        "Models file (default $EVAL_ASSETS_MODELS or data/models.yaml: the offline default "
        "models)."),
    storage_root: Path | None = storage_root_option(),
    verbose: bool = _VERBOSE,
    no_wait: bool = _NO_WAIT,
) -> None:
    """The whole chain on the bundled sample recording with the offline default models."""
    sample = Path(__file__).resolve().parent.parent / "data" / "recordings" / "sample.db"
    with _models_file_in_env(models_file):
        _run(sample, [], storage_root, verbose, no_wait)


SENSOR_TIMEOUT_ENV = "DAGSTER_SENSOR_GRPC_TIMEOUT_SECONDS"
SENSOR_TIMEOUT_S = 300
"""What ``eval-assets ui`` gives a sensor evaluation unless the variable is set already."""


@app.command()
@guarded
def ui(
    storage_root: Path | None = storage_root_option(
        "Storage root whose instance to serve (default $EVAL_ASSETS_HOME or ./.eval_assets)."),
    host: str = typer.Option("127.0.0.1", help="Address the webserver listens on.",
                             rich_help_panel=SERVER),
    port: int = typer.Option(3000, help="Port the webserver listens on.", rich_help_panel=SERVER),
) -> None:
    """Start Dagster's UI (webserver) and daemon on the local instance, until Ctrl-C.

    First it brings the instance (<storage root>/dagster_home) to its schema.
    """
    from eval_assets.defs.local import prepare_dagster_home
    from eval_assets.layout import StorageLayout, default_storage_root

    layout = StorageLayout(storage_root.resolve() if storage_root else default_storage_root())
    home = prepare_dagster_home(layout)
    # The code location's runs write under the same storage root as eval-assets run.
    os.environ["EVAL_ASSETS_HOME"] = str(layout.root)
    # The automation sensor is evaluated in the code server (use_user_code_server), whose gRPC
    # call the daemon abandons after DAGSTER_SENSOR_GRPC_TIMEOUT_SECONDS (default 60), failing
    # the tick. At 50 recordings x 5 models on 2 cores at load ~19 the evaluation alone took 25
    # to 57 s (benchmarks/graph_scale_daemon.py): a busy machine must not fail ticks.
    os.environ.setdefault(SENSOR_TIMEOUT_ENV, str(SENSOR_TIMEOUT_S))
    workspace = Path(__file__).resolve().parent.parent / "workspace.yaml"
    target = (["-w", str(workspace)] if workspace.is_file()
              else ["-m", "eval_assets.defs.definitions"])
    beside = Path(sys.executable).parent / "dagster"
    dagster = str(beside) if beside.is_file() else shutil.which("dagster")
    if dagster is None:
        raise InputError(f"no `dagster` command beside {sys.executable} or on PATH. Fix: install "
                         "the project (make setup, or pip install -e .) in this environment.")
    command = [dagster, "dev", *target, "-h", host, "-p", str(port)]
    typer.echo(f"DAGSTER_HOME={home}; starting the webserver on http://{host}:{port} and the "
               "daemon (Ctrl-C stops both)", err=True)
    # dagster dev starts both and stops both on Ctrl-C or SIGTERM; exec hands it our pid.
    # It handles SIGTERM with whatever handles SIGINT (dagster._utils.interrupts), and exec keeps
    # a signal that is ignored ignored: started from a script in the background (`cmd &`, nohup,
    # a supervisor), where the shell ignores SIGINT, it ignored SIGTERM too. Both to default.
    default_interrupts()
    os.execv(command[0], command)


def default_interrupts() -> None:
    """SIGINT and SIGTERM back to their default dispositions (for the program exec'd next)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


recording_app = typer.Typer(no_args_is_help=True, help="Create recordings.")
app.add_typer(recording_app, name="recording")


@recording_app.command("synthesize")
@guarded
def recording_synthesize(
    out_db: Path = typer.Argument(..., help="Recording to write (*.db); truth files go beside it."),
    profile: str = typer.Option(
        "sample", help="sample: 640x480 fisheye at 2 Hz, one ring LiDAR scan per image (the "
        "bundled sample). rig: the Go2 + Mid-360 reference rig, 1280x720 equidistant fisheye at "
        "15 Hz, Mid-360-like LiDAR at 10 Hz in mid360_link, TF world->base_link 20 Hz; written "
        "streaming, so minutes-long recordings need no more memory than short ones.",
        rich_help_panel=SENSORS),
    seed: int = typer.Option(
        0, help="Noise seed: timestamp jitter, late or dropped LiDAR scans, range noise. With "
        "--profile rig it is also the scene seed unless --scene-seed is given.",
        rich_help_panel=SCENE),
    scene_seed: int | None = typer.Option(
        None, help="Scene seed: the room (size, wall and floor colours), object layout, colours "
        "and shapes (from the detector's vocabulary), distractors and the robot's loop. Default: "
        "the fixed sample scene for --profile sample, --seed for --profile rig.",
        rich_help_panel=SCENE),
    frames: int | None = typer.Option(
        None, help="Camera frames (default: 24 for the fixed sample scene, one full lap of the "
        "loop for --profile sample with --scene-seed, 1800 = 120 s for rig).",
        rich_help_panel=SENSORS),
    duration_s: float | None = typer.Option(
        None, "--duration-s", help="Length in seconds instead of --frames (e.g. 300 for "
        "5 minutes: 4500 rig frames).", rich_help_panel=SENSORS),
    truth_every: int | None = typer.Option(
        None, help="Per-frame truth (scene.json frames, truth.npz id maps) for every N-th frame; "
        "0: the scene only, no .truth.npz. Default: 1 for sample, 15 (1 Hz) for rig.",
        rich_help_panel=OUTPUT),
) -> None:
    """Render a synthetic scene into OUT_DB plus OUT.scene.json and OUT.truth.npz.

    Defaults reproduce the bundled sample (data/recordings/sample.db) byte for byte.
    """
    from eval_assets.synth.stream import synthesize_recording

    out = synthesize_recording(out_db, profile=profile, seed=seed, scene_seed=scene_seed,
                               frames=frames, duration_s=duration_s, truth_every=truth_every)
    for path in (out.db, out.scene_json, out.truth_npz):
        if path is not None:
            typer.echo(f"{path} ({path.stat().st_size} bytes)")
    rate = out.frames / out.render_seconds if out.render_seconds > 0 else 0.0
    typer.echo(f"rendered {out.frames} frames and {out.lidar_scans} LiDAR scans in "
               f"{out.render_seconds:.1f} s ({rate:.2f} frames/s)")


@recording_app.command("simulate")
@guarded
def recording_simulate(
    out_db: Path = typer.Argument(..., help="Recording to write (*.db); truth files go beside it."),
    seed: int = typer.Option(0, help="Scene seed: which objects go where, their heading, how they "
                             "settle. Same seed and options, same recording and truth.",
                             rich_help_panel=SCENE),
    frames: int = typer.Option(120, help="Camera frames, spread over the whole drive.",
                               rich_help_panel=SENSORS),
    resolution: str = typer.Option("640x480", help="Camera resolution: 640x480 or 1280x720.",
                                   rich_help_panel=SENSORS),
    objects: int = typer.Option(8, help="Benchmark objects in the scene.", rich_help_panel=SCENE),
    names: str | None = typer.Option(
        None, help="Comma-separated object names to use, cycled (default: duck, teddy bear, mug, "
        "soccer ball, tray, jenga block, lego brick, table).", rich_help_panel=SCENE),
    path: str = typer.Option("loop", help="The husky's drive: loop (rounded rectangle with a "
                             "jog) or figure8; both turn left and right, stop once and revisit "
                             "their first straight.", rich_help_panel=SCENE),
    distractors: int = typer.Option(1, help="Objects outside the vocabulary (background in the "
                                    "truth maps).", rich_help_panel=SCENE),
    lidar_rings: int = typer.Option(16, help="LiDAR rings, evenly spread over --lidar-fov-deg.",
                                    rich_help_panel=SENSORS),
    lidar_columns: int = typer.Option(1024, help="LiDAR rays per ring.", rich_help_panel=SENSORS),
    lidar_fov_deg: str = typer.Option(
        "-15,15", help="Lowest and highest ring elevation in degrees, e.g. -30,2 to spend the "
        "rings on the floor and the objects rather than the empty sky.", rich_help_panel=SENSORS),
    reference_views: int = typer.Option(
        8, help="Reference views per catalog object in the scene, written to OUT.objects/ "
        "(<name>/view_XX.png, its mask, object.json) from viewpoints the drive does not use: "
        "the folder taught names are read from. 0 writes none.", rich_help_panel=OUTPUT),
) -> None:
    """Simulate a PyBullet scene into OUT_DB plus OUT.scene.json, OUT.truth.npz and OUT.objects/.

    A husky with a camera and a 3D LiDAR drives past textured pybullet_data objects on a floor;
    the truth (object sizes and centres from the visual meshes, per-frame instance masks from the
    segmentation buffer) is in the synthesizer's format, so every tool that reads a synthesized
    recording's truth reads this one.
    """
    from eval_assets.sim.simulate import ReferenceViews, SimConfig, simulate_recording

    if reference_views < 0:
        raise InputError(f"--reference-views must be ≥ 0, got {reference_views}; pass 0 for "
                         "none or e.g. --reference-views 8")
    chosen = tuple(n.strip() for n in names.split(",") if n.strip()) if names else ()
    try:
        low, high = (float(v) for v in lidar_fov_deg.split(","))
    except ValueError:
        raise InputError(f"--lidar-fov-deg {lidar_fov_deg!r} is not two numbers; pass the "
                         "lowest and highest elevation, e.g. --lidar-fov-deg=-15,15") from None
    out = simulate_recording(out_db, SimConfig(
        seed=seed, frames=frames, resolution=resolution, objects=objects, names=chosen,
        path=path, distractors=distractors, lidar_rings=lidar_rings,
        lidar_columns=lidar_columns, lidar_fov_deg=(low, high)),
        ReferenceViews(views=reference_views) if reference_views else None)
    for written in (out.db, out.scene_json, out.truth_npz):
        typer.echo(f"{written} ({written.stat().st_size} bytes)")
    if out.objects_dir is not None:
        typer.echo(f"{out.objects_dir}/ (reference views of "
                   f"{sum(1 for d in out.objects_dir.iterdir() if d.is_dir())} objects)")
    typer.echo(f"simulated {out.frames} frames and {out.lidar_scans} LiDAR scans in "
               f"{out.seconds:.1f} s (" + ", ".join(f"{k} {v:.1f} s"
                                                   for k, v in out.timings.items()) + ")")


def main() -> None:
    """Console-script entry: ``--debug`` is accepted anywhere on the line, not only first."""
    argv = sys.argv[1:]
    if "--debug" in argv[1:]:
        argv = ["--debug", *(arg for arg in argv if arg != "--debug")]
    app(args=argv, prog_name="eval-assets")
