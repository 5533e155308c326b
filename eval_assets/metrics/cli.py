"""``eval-assets score``: score an AVLM-layout inference folder (MCQ accuracy, LLM judge)."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import typer

from eval_assets.metrics.predictions import PredictionsError

if TYPE_CHECKING:
    from eval_assets.metrics.judge import JudgeReport

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
    config: Path = typer.Option(..., "--config", "-c",
                                help="Judge YAML (base_url, model, api_key_env, ...)."),
    max_samples: int | None = typer.Option(
        None, "--max-samples", min=1, help="Judge only the first N open-ended rows."),
) -> None:
    """Judge open-ended rows; write llm_judge/llm_judge_predictions.json and _results.json."""
    # Imported here so that other eval-assets commands do not pay for the openai import.
    from eval_assets.metrics.judge import JudgeConfig, judge_dir

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

    def run() -> JudgeReport:
        return judge_dir(inference_dir, JudgeConfig.from_yaml(config), limit=max_samples)

    report = _run_reporting(run)
    summary = report.results
    typer.echo(f"judged {summary['total_judged']}: {summary['num_success']} scored, "
               f"{summary['num_failed']} failed, mean_score={summary['mean_score']:.2f}")
    typer.echo(f"wrote {report.predictions_path}")
    typer.echo(f"wrote {report.results_path}")
