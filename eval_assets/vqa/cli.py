"""``eval-assets vqa``: generate a VQA dataset from a recording without Dagster (dimOS parity).

    eval-assets vqa generate RECORDING.db --image-index N
    eval-assets vqa generate RECORDING.db --start A --stop B --stride S [--output DIR]
    eval-assets vqa generate RECORDING.db --quality-window 5 --min-brightness 0.1
    eval-assets vqa generate RECORDING.db --time-step 2
    eval-assets vqa generate RECORDING.db     # RECORDING.selection.yaml, or the default policy
    eval-assets vqa generate RECORDING.db --prune-bias [--bias-threshold 0.8 --prune-floor 5]
    eval-assets vqa audit DATASET_DIR [--bias-threshold 0.8]   # re-run the blind audit

Frame selection is the pipeline's (:mod:`eval_assets.frames.selection`); bad frames are skipped
and listed, and the run fails only when more than ``--max-bad-fraction`` of them is bad.
The default output is ``$XDG_STATE_HOME`` (or ``~/.local/state``)
``/eval_assets/<recording-stem>-frames``; it must be absent or empty. Every dataset gets its
blind-solvability audit (``audit/bias.jsonl``, ``audit/bias.json``: :mod:`eval_assets.vqa.bias`);
``--prune-bias`` drops the flagged cases before publishing. ``vqa audit`` re-runs that audit on a
published or edited dataset folder and rewrites its two audit files.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from eval_assets.cli_errors import EXIT_BAD_INPUT, EXIT_FAILED, env_name_option, guarded
from eval_assets.cli_options import AUDIT, FRAMES, INPUT, OUTPUT, PERCEPTION, QUESTIONS

if TYPE_CHECKING:
    from eval_assets.frames import FrameSelectionConfig, PreparedFrames
    from eval_assets.recording.watch import FileState
    from eval_assets.schemas.vqa import AnswerBalance
    from eval_assets.vqa.bias import BiasConfig, FamilyBias

vqa_app = typer.Typer(no_args_is_help=True, help="Generate VQA datasets from recordings.")


@vqa_app.command()
@guarded
def generate(
    recording: Path = typer.Argument(..., help="A recording file (*.db)."),
    image_index: int | None = typer.Option(None, help="Generate from this one frame.",
                                           rich_help_panel=FRAMES),
    start: int | None = typer.Option(None, help="First frame of a range (default 0).",
                                     rich_help_panel=FRAMES),
    stop: int | None = typer.Option(None, help="End of the range, exclusive (default: all).",
                                    rich_help_panel=FRAMES),
    stride: int | None = typer.Option(None, help="Every n-th frame of the range.",
                                      rich_help_panel=FRAMES),
    time_step: float | None = typer.Option(
        None, help="At most one frame per this many seconds of the range.", rich_help_panel=FRAMES),
    quality_window: float | None = typer.Option(
        None, help="The sharpest frame per this many seconds of the range (dimOS "
                   "QualityWindow; not with --stride or --time-step).", rich_help_panel=FRAMES),
    min_brightness: float | None = typer.Option(
        None, help="With --quality-window: only frames brighter than this (0-1).",
        rich_help_panel=FRAMES),
    max_bad_fraction: float | None = typer.Option(
        None, help="Fail when more than this share of the examined frames is bad (default: "
                   "the selection file's, else 0.2).", rich_help_panel=FRAMES),
    output: Path | None = typer.Option(
        None, help="Dataset folder, absent or empty (default under $XDG_STATE_HOME).",
        rich_help_panel=OUTPUT),
    author: str = typer.Option("vocabulary", help="Question author: vocabulary or vlm.",
                               rich_help_panel=QUESTIONS),
    vocabulary: str | None = typer.Option(
        None, help="Comma-separated object names (default: the sample scene's colour/shapes).",
        rich_help_panel=QUESTIONS),
    seed: int = typer.Option(0, help="Seed of the vocabulary author's draws.",
                             rich_help_panel=QUESTIONS),
    max_proposals_per_frame: int = typer.Option(200, help="Proposals kept per frame.",
                                                rich_help_panel=QUESTIONS),
    vlm_base_url: str = typer.Option("", help="OpenAI-compatible endpoint of the vlm author.",
                                     rich_help_panel=QUESTIONS),
    vlm_model: str = typer.Option("", help="Model name of the vlm author.",
                                  rich_help_panel=QUESTIONS),
    vlm_api_key_env: str = typer.Option("", help="Environment variable with its API key.",
                                        rich_help_panel=QUESTIONS),
    detector: str = typer.Option(
        "color", help="Detector: color (offline), moondream, or truth (exact boxes from the "
        "truth files beside a simulated or synthesized recording; refused on any other).",
        rich_help_panel=PERCEPTION),
    segmenter: str = typer.Option(
        "box_region", help="Segmenter: box_region (offline), grabcut, edgetam, or truth (exact "
        "masks; with --detector truth).", rich_help_panel=PERCEPTION),
    moondream_endpoint: str = typer.Option("", help="Moondream Station URL (moondream).",
                                           rich_help_panel=PERCEPTION),
    moondream_api_key_env: str = typer.Option(
        "MOONDREAM_API_KEY", help="Environment variable with the Moondream Cloud key.",
        rich_help_panel=PERCEPTION),
    edgetam_checkpoint: str = typer.Option("", help="EdgeTAM checkpoint file (edgetam).",
                                           rich_help_panel=PERCEPTION),
    objects: str = typer.Option(
        "", help="Where the spatial families' objects come from: lidar (found in the LiDAR, "
        "named only when certain, else marked on the images) or detections (each detector "
        "mask lifted); default: detections with --detector truth, lidar otherwise.",
        rich_help_panel=PERCEPTION),
    references: Path | None = typer.Option(
        None, help="Folder of taught names: <name>/*.png reference images (with optional "
        "<stem>.mask.png) per object name; default: RECORDING's <stem>.objects folder if any.",
        rich_help_panel=PERCEPTION),
    allow_pickle: bool = typer.Option(False, help="Allow pickle-encoded recording payloads.",
                                      rich_help_panel=INPUT),
    prune_bias: bool = typer.Option(
        False, help="Iterative Bias Pruning: drop the cases a pixel-free random forest solves "
                    "(bias score >= --bias-threshold) and refit until none is flagged; "
                    "audit/bias.json records what was dropped and why.", rich_help_panel=AUDIT),
    bias_threshold: float = typer.Option(
        0.8, help="Flag a case whose blind-solvability score is at least this (0-1].",
        rich_help_panel=AUDIT),
    prune_floor: int = typer.Option(
        5, help="With --prune-bias: never leave a family with fewer cases than this.",
        rich_help_panel=AUDIT),
) -> None:
    """Rectify frames, detect objects, propose and answer questions, publish the dataset.

    With no selection option, RECORDING's ``<name>.selection.yaml`` decides, or the default
    policy (every frame up to 300 images, else the sharpest per 5 s)."""
    from pydantic import ValidationError

    from eval_assets.errors import InputError
    from eval_assets.recording import Recording
    from eval_assets.vqa.bias import BiasConfig
    from eval_assets.vqa.generate import default_output_dir, frame_selection

    try:
        bias = BiasConfig(threshold=bias_threshold, prune=prune_bias, prune_floor=prune_floor)
    except ValidationError as exc:
        typer.echo(f"error: --bias-threshold must be in (0, 1] and --prune-floor at least 0 "
                   f"(got {bias_threshold}, {prune_floor}): {exc.errors()[0]['msg']}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from exc
    env_name_option(vlm_api_key_env, "--vlm-api-key-env")
    env_name_option(moondream_api_key_env, "--moondream-api-key-env", "MOONDREAM_API_KEY")
    try:
        Recording.open(recording, allow_pickle=allow_pickle).close()  # refuse a bad file first
        before = _warn_if_recent(recording)
        selection = frame_selection(
            recording, image_index=image_index, start=start, stop=stop, stride=stride,
            time_step=time_step, quality_window=quality_window, min_brightness=min_brightness,
            max_bad_fraction=max_bad_fraction)
    except (InputError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from exc
    names = ([n.strip() for n in vocabulary.split(",") if n.strip()]
             if vocabulary is not None else None)
    author_config = {
        "author": author, **({"vocabulary": names} if names is not None else {}),
        "seed": seed, "max_proposals_per_frame": max_proposals_per_frame,
        "vlm_base_url": vlm_base_url, "vlm_model": vlm_model,
        "vlm_api_key_env": vlm_api_key_env,
    }
    perception = {"detector": detector, "segmenter": segmenter,
                  "moondream_endpoint": moondream_endpoint,
                  "moondream_api_key_env": moondream_api_key_env,
                  "edgetam_checkpoint": edgetam_checkpoint, "objects": objects,
                  "references": str(references) if references is not None else ""}
    _run(recording, output if output is not None else default_output_dir(recording), selection,
         author_config, perception, allow_pickle, before, bias)


def _warn_if_recent(recording: Path) -> FileState:
    """The recording's state now, after a warning when its time says it may still be written.

    A recorder that commits frame by frame leaves nothing pending between frames (SQLite's own
    view, which ``Recording.open`` checks, sees no writer), so only the time tells; the
    recordings sensor waits the quiet period for the same reason.
    """
    from eval_assets.recording.watch import file_state, quiet_seconds, recently_written

    state = file_state(recording)
    why = recently_written(state, quiet_seconds())
    if why is not None:
        typer.echo(f"warning: {recording}: {why}; if a recorder is still writing it, the dataset "
                   "holds only the frames written so far, and the generation fails when the "
                   "file changes meanwhile. Fix: wait until the recorder has finished "
                   "($EVAL_ASSETS_QUIET_S sets the quiet period)", err=True)
    return state


def _print_frames(prepared: PreparedFrames) -> None:
    """The selection and every skipped frame, with its reason."""
    from eval_assets.frames.selection import compact_indices

    record = prepared.selection
    typer.echo(f"selected {len(record.selected)} of {record.image_count} frames: {record.why} "
               f"({compact_indices(record.selected, limit=12)})")
    if prepared.skipped:
        typer.echo(f"skipped {len(prepared.skipped)} frames ({prepared.share.bad} bad of "
                   f"{prepared.share.frames}, limit {prepared.plan.max_bad_fraction:g}):")
        for s in prepared.skipped:
            row = f" row id {s.row_id}" if s.row_id is not None else ""
            typer.echo(f"  frame {s.frame_index} ({s.stream}{row}): {s.reason}: {s.detail}. "
                       f"Fix: {s.fix}")


def _balance(balance: AnswerBalance | None) -> str:
    """`` (answers ...; most common NN %)`` after a family's count: what guessing scores."""
    from eval_assets.vqa.balance import describe

    return "" if balance is None else f" ({describe(balance)})"


def _run(recording: Path, out: Path, selection: tuple[FrameSelectionConfig, Path | None],
         author: Mapping[str, object], perception: Mapping[str, Any],
         allow_pickle: bool, before: FileState, bias: BiasConfig) -> None:
    """Generate and print the summary; bad input exits 2, an unanswerable recording 1, and a
    recording that changed while it was read (``before``: its state at the start) 1."""
    from eval_assets.errors import InputError
    from eval_assets.perception import PerceptionConfig, PerceptionError
    from eval_assets.vqa.authors import AuthorConfig
    from eval_assets.vqa.dataset import DatasetExistsError, NothingAnswerableError
    from eval_assets.vqa.generate import generate_from_recording

    frames, selection_file = selection
    try:
        config = AuthorConfig.model_validate(author)
        models = PerceptionConfig(**perception)
        # The detector is asked about every name of the author's vocabulary.
        summary = generate_from_recording(
            recording, out, frames, config, models.build_detector(recording),
            models.build_segmenter(recording),
            allow_pickle=allow_pickle, selection_file=selection_file, on_frames=_print_frames,
            bias=bias, objects=models.object_source(), namer=models.build_namer(recording))
    except NothingAnswerableError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_FAILED) from exc
    except (InputError, ValueError, DatasetExistsError, PerceptionError) as exc:
        # Dataset exists / bad config / unusable recording: all name the file or field and the
        # fix, so the message is the whole story.
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from exc
    from eval_assets.recording.watch import changed_since

    changed = changed_since(before, recording)
    if changed is not None:
        # The dataset was read from a moving file: some frames are missing or from another
        # moment. Saying so (and failing) beats a dataset of 13 of 24 frames without a word.
        typer.echo(f"error: {recording} changed while the dataset was generated ({changed}): "
                   f"it is still being written, so {summary.path} holds only part of it. Fix: "
                   "wait until the recorder has finished, remove that folder and generate "
                   "again", err=True)
        raise typer.Exit(EXIT_FAILED)
    typer.echo(f"{summary.num_cases} cases from {summary.num_frames} frames "
               f"({summary.num_proposals} proposals) -> {summary.path}")
    for family, n in summary.cases_per_family.items():
        typer.echo(f"  {family}: {n}" + _balance(summary.answers_per_family.get(family)))
    if summary.rejections_per_reason:
        typer.echo("rejected: " + ", ".join(f"{reason} {n}" for reason, n in
                                            summary.rejections_per_reason.items()))
    spatial = summary.spatial_cases_per_family
    typer.echo(f"{sum(spatial.values())} spatial cases (spatial_cases.jsonl)")
    for family, n in spatial.items():
        typer.echo(f"  {family}: {n}" + _balance(summary.spatial_answers_per_family.get(family)))
    if summary.spatial_rejections_per_reason:
        typer.echo("spatial rejected: " + ", ".join(
            f"{reason} {n}" for reason, n in summary.spatial_rejections_per_reason.items()))
    _print_bias(summary.path)


def _print_bias(dataset: Path) -> None:
    """Per family: the mean blind-solvability score, the share flagged, the blind upper bound
    and the answer prior (prior-flagged families marked); then what pruning dropped, if it
    ran."""
    from eval_assets.vqa.bias import read_bias_summary

    summary = read_bias_summary(dataset)
    if summary is None:
        return

    def pct(value: float | None) -> str:
        return "n/a" if value is None else f"{100 * value:.0f} %"

    typer.echo(f"blind solvability (audit/bias.json, flagged at >= {summary.config.threshold:g}):")
    for family, f in summary.families.items():
        mean = "n/a" if f.mean_bias_score is None else f"{f.mean_bias_score:.2f}"
        typer.echo(f"  {family}: mean score {mean}, flagged {pct(f.flagged_share)} of "
                   f"{f.n_scored} scored, blind upper bound {pct(f.blind_upper_bound)}"
                   + _prior(f, summary.prior_margin))
    flagged = [name for name, f in summary.families.items() if f.prior_flagged]
    if flagged:
        typer.echo(f"guessable from the answer prior (most common answer > chance + "
                   f"{100 * (summary.prior_margin or 0):.0f} points): {', '.join(flagged)}")
    if summary.pruning is not None:
        typer.echo(f"pruned {len(summary.pruning.pruned)} cases in "
                   f"{len(summary.pruning.rounds)} fits ({summary.pruning.stopped})")


def _prior(family: FamilyBias, margin: float | None) -> str:
    """``; prior: 'no' 95 % vs chance 50 % PRIOR-FLAGGED``: what the answer prior scores."""
    if family.prior_score is None or family.majority_answer is None:
        return ""
    if family.chance is None:  # a numeric family: the median's score
        return f"; median {family.majority_answer} scores {100 * family.prior_score:.0f} %"
    flag = " PRIOR-FLAGGED" if family.prior_flagged else ""
    return (f"; prior: {family.majority_answer!r} {100 * family.prior_score:.0f} % vs chance "
            f"{100 * family.chance:.0f} %{flag}")


@vqa_app.command()
@guarded
def audit(
    dataset: Path = typer.Argument(..., help="A published dataset folder (cases.jsonl, "
                                   "audit/labels.jsonl), e.g. after editing it."),
    bias_threshold: float | None = typer.Option(
        None, help="Flag a case whose blind-solvability score is at least this (0-1]; default: "
                   "the dataset's audit's, else 0.8.", rich_help_panel=AUDIT),
    folds: int | None = typer.Option(None, help="k of the k-fold over frames (default: as "
                                     "before, else 5).", rich_help_panel=AUDIT),
    seed: int | None = typer.Option(None, help="Seed of the folds and forests (default: as "
                                    "before, else 0).", rich_help_panel=AUDIT),
) -> None:
    """Re-run the blind-solvability audit (per case and per family, the answer prior too) on
    DATASET and rewrite its audit/bias.jsonl and audit/bias.json; never prunes.

    Results scored on the dataset before go stale (the audit is part of its fingerprint)."""
    from pydantic import ValidationError

    from eval_assets.schemas.vqa import AUDIT_LABELS, DATASET_AUDIT, DATASET_CASES
    from eval_assets.vqa.bias import BiasConfig, read_bias_summary
    from eval_assets.vqa.reaudit import reaudit

    missing = [name for name in (DATASET_CASES, f"{DATASET_AUDIT}/{AUDIT_LABELS}")
               if not (dataset / name).is_file()]
    if missing:
        typer.echo(f"error: {dataset} is not a dataset folder of ours (no {', '.join(missing)}); "
                   "pass the folder `eval-assets vqa generate` wrote", err=True)
        raise typer.Exit(EXIT_BAD_INPUT)
    before = read_bias_summary(dataset)
    base = before.config if before is not None else BiasConfig()
    changes = {key: value for key, value in (("threshold", bias_threshold), ("folds", folds),
                                             ("seed", seed)) if value is not None}
    try:
        config = BiasConfig.model_validate({**base.model_dump(), **changes})
    except ValidationError as exc:
        typer.echo(f"error: --bias-threshold must be in (0, 1] and --folds at least 2: "
                   f"{exc.errors()[0]['msg']}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from exc
    result = reaudit(dataset, config)
    flagged = sum(1 for c in result.cases if c.flagged)
    typer.echo(f"{len(result.cases)} cases audited, {flagged} flagged -> "
               f"{dataset / DATASET_AUDIT}")
    _print_bias(dataset)
