"""``eval-assets score``: score an AVLM-layout inference folder (MCQ accuracy, LLM judge)."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import typer

from eval_assets.cli_options import (
    JUDGE,
    RUN,
    deprecated_alias,
    models_file_option,
    prefer,
)
from eval_assets.metrics.avlm_rows import PredictionsError

if TYPE_CHECKING:
    from eval_assets.metrics.judge import JudgeReport
    from eval_assets.schemas.predictions import ModelSpec

score_app = typer.Typer(
    no_args_is_help=True,
    help="Score INFERENCE_DIR/predictions.jsonl (AVLM layout): MCQ accuracy or LLM judge.",
)

T = TypeVar("T")

_INFERENCE_DIR_HELP = "Inference folder holding predictions.jsonl; outputs are written inside it."


def _run_reporting(action: Callable[[], T]) -> T:
    """Run ``action``; show skipped-row warnings and turn input errors into exit code 2."""
    from eval_assets.metrics.judge import JudgeConfigError

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = action()
        except (FileNotFoundError, PredictionsError, JudgeConfigError) as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(code=2) from None
        finally:
            for item in caught:
                typer.echo(f"warning: {item.message}", err=True)
    return result


@score_app.command("mcq")
def mcq(inference_dir: Path = typer.Argument(..., help=_INFERENCE_DIR_HELP)) -> None:
    """Write mcq/mcq_results.json (strict, AVLM-compatible) and mcq/mcq_lenient_results.json."""
    from eval_assets.metrics.mcq import score_mcq_dir

    report = _run_reporting(lambda: score_mcq_dir(inference_dir))
    for label, doc in (("strict", report.strict), ("lenient", report.lenient)):
        typer.echo(f"{label}: {doc['num_correct']}/{doc['total_mcq_questions']} correct "
                   f"(pct_correct={doc['pct_correct']:.4f}, parse failed "
                   f"{doc['num_parse_failed']}, inference failed {doc['num_infer_failed']})")
    typer.echo(f"wrote {report.strict_path}")
    typer.echo(f"wrote {report.lenient_path}")


@score_app.command("judge")
def judge(
    inference_dir: Path = typer.Argument(..., help=_INFERENCE_DIR_HELP),
    judge_config: Path | None = typer.Option(
        None, "--judge-config", rich_help_panel=JUDGE,
        help="Judge YAML (base_url, model, api_key_env, ... or serve; default $EVAL_ASSETS_JUDGE "
             "or data/judge.yaml, as the Dagster `judge` resource reads)."),
    max_samples: int | None = typer.Option(
        None, "--max-samples", min=1, help="Judge only the first N open-ended rows.",
        rich_help_panel=RUN),
    avlm_compat: bool = typer.Option(
        False, "--avlm-compat", rich_help_panel=JUDGE,
        help="AVLM's score coercions (>10 divided by 10, rounding, clamping, no score = 1) "
             "instead of failures; every coerced row is counted. Same as avlm_compat: true."),
    models_file: Path | None = models_file_option(
        "Models file: the models under test, to flag a judge that is one of them (default "
        "$EVAL_ASSETS_MODELS or data/models.yaml when it exists, as the Dagster pipeline reads)."),
    config: Path | None = deprecated_alias("--config", "--judge-config", "-c"),
    models: Path | None = deprecated_alias("--models", "--models-file"),
) -> None:
    """Calibrate the judge, then judge open-ended rows; write llm_judge/*.json.

    Exit 0: rows scored. Exit 1: nothing scored (all failed, or withheld by calibration).
    Exit 2: bad input (config, files). Calls are journalled: a rerun repeats only those in flight.
    """
    # Imported here so that other eval-assets commands do not pay for importing the judge.
    from eval_assets.layout import default_judge_file
    from eval_assets.metrics.judge import JudgeConfig, judge_dir, self_judging_models

    config = prefer(judge_config, config) or default_judge_file()
    models = prefer(models_file, models)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

    def run() -> JudgeReport:
        overrides = {"avlm_compat": True} if avlm_compat else {}
        settings = JudgeConfig.from_yaml(config, **overrides)
        flagged = self_judging_models(settings, _models_under_test(models))
        return judge_dir(inference_dir, settings, limit=max_samples,
                         self_judging_models=flagged)

    report = _run_reporting(run)
    summary = report.results
    calibration = report.calibration
    if calibration.status in ("passed", "failed"):
        typer.echo(f"calibration: {calibration.status}, agreement "
                   f"{calibration.agreement or 0:.0%} on {calibration.evaluated} of "
                   f"{calibration.planned} pairs (needs {calibration.min_agreement:.0%}"
                   f"{', stopped early' if calibration.stopped_early else ''}) in "
                   f"{report.calibration_s:.1f} s")
    else:
        typer.echo(f"calibration: {calibration.status} ({calibration.reason})")
    mean = summary["mean_score"]
    failures = ", ".join(f"{k} {v}" for k, v in summary["failure_counts"].items())
    typer.echo(f"judged {summary['total_judged']}: {summary['num_success']} scored, "
               f"{summary['num_failed']} failed{f' ({failures})' if failures else ''}, "
               f"mean_score={'null' if mean is None else f'{mean:.2f}'}")
    coerced = summary.get("avlm_coercions")
    if coerced is not None:
        kinds = ", ".join(f"{k} {v}" for k, v in coerced["by_kind"].items()) or "none"
        typer.echo(f"avlm compat: {coerced['rows']} of {summary['num_success']} scores coerced "
                   f"({kinds})")
    if summary["self_judging"]:
        typer.echo(f"self-judging: the judge is also a model under test "
                   f"({', '.join(summary['self_judging_models'])})")
    typer.echo(f"journal: {report.calls_made} calls made, {report.calls_replayed} replies "
               f"replayed")
    typer.echo(f"wrote {report.predictions_path}")
    typer.echo(f"wrote {report.results_path}")
    if not report.scored:
        if calibration.withheld:
            why = (f"{report.status}: {calibration.agreed} of {calibration.evaluated} "
                   f"calibration pairs ranked the reference above its corruption, "
                   f"{calibration.min_agreement:.0%} needed; no row was judged. Fix: use a "
                   f"judge that can read the rubric (base_url/model in {config}), or lower "
                   f"calibration_min_agreement there if you accept a weaker judge; the pairs "
                   f"and their scores are in {report.results_path}")
        elif not summary["total_judged"]:
            why = (f"nothing scored: {inference_dir} has no open-ended rows to judge. Fix: "
                   f"check evaluation_type in {inference_dir / 'predictions.jsonl'}")
        else:
            why = (f"nothing scored: all {summary['total_judged']} rows failed ({failures}). "
                   f"Fix: see the errors in {report.predictions_path}; transient failures "
                   f"(timeout, rate_limited, api_failed) are retried when you run this again")
        typer.echo(f"error: {why}", err=True)
        raise typer.Exit(code=1)


def _models_under_test(path: Path | None) -> list[ModelSpec]:
    """The declared models under test: ``path``, else the default models file if it exists."""
    from eval_assets.layout import default_models_file
    from eval_assets.metrics.judge import JudgeConfigError
    from eval_assets.schemas.predictions import load_model_specs

    chosen = path if path is not None else default_models_file()
    if path is None and not chosen.is_file():
        return []
    try:
        return load_model_specs(chosen)
    except ValueError as exc:
        raise JudgeConfigError(f"--models-file: {exc}") from None
