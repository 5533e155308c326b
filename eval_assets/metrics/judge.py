"""LLM-as-judge for open-ended answers, compatible with NVIDIA AVLM ``avlm/evals/qa_llm_judge/``.

Rows with ``evaluation_type == "open_ended"`` (schema: :mod:`eval_assets.metrics.avlm_rows`) are
scored 1-10 by any OpenAI-compatible chat endpoint with the AVLM rubric
(:mod:`eval_assets.metrics.judge_prompt`). How a reply is read, and both score rules, are in
:mod:`eval_assets.metrics.judge_reply`.

The judge never invents a score. By default a reply counts only when its ``score`` is an integer
1..10 (or a string or float holding one); anything else is a failure with its category
(``missing_score``, ``score_out_of_range``, ``invalid_score``, ``parse_error``,
``empty_response``, ``oversized_reply``), asked again up to ``reply_tries`` times, then kept in the
failure count and out of the mean. ``avlm_compat: true`` applies AVLM's coercions instead (> 10
divided by 10, round half to even, clamp to 1..10, no score becomes 1), and every coerced row is
counted by kind (``avlm_coercions``) so the numbers can be compared with AVLM's knowingly.

Where we differ from the reference, on purpose: API errors are retried by the project's one
chat client (:mod:`eval_assets.openai_chat`: exponential backoff with jitter, honouring
Retry-After, a Retry-After beyond ``retry_after_max_s`` failing as ``retry_after_too_long``); a
row that still fails is a recorded failure with a category and the run goes on; a summary with
nothing scored says ``null``, not AVLM's 0 (kept in compatibility mode); a reply longer than
``max_reply_chars`` is an ``oversized_reply`` failure in both modes (AVLM has no limit), and a body
over ``max_reply_bytes`` (or a reply over the journal's 65,536 characters) is not even read: a
``reply_too_large`` failure; results keep input order and carry no timestamp, so the same replies
give byte-identical files. Two additions guard the numbers themselves:

- every call is journalled (:mod:`eval_assets.metrics.judge_journal`), so a rerun after a crash
  repeats only the calls that were in flight, and replies are never paid for twice;
- before any row, the judge must pass a calibration (:mod:`eval_assets.metrics.judge_calibration`):
  ranking reference descriptions above corrupted copies. A judge that fails has its scores
  withheld and no row is judged. A judge that is also a model under test is flagged
  ``self_judging``.

``response_format`` (off by default, so requests stay AVLM's) asks the endpoint for structured
output; ``response_format: judgement_schema`` in YAML means :data:`JUDGEMENT_SCHEMA_FORMAT`, the
rubric's reply as a JSON schema, which small local judges cannot write reliably unaided.

Error categories: ``infer_failed``, ``missing_gt``, ``missing_pred``, ``empty_response``,
``parse_error``, ``missing_score``, ``score_out_of_range``, ``invalid_score``,
``oversized_reply``, ``reply_too_large``, ``timeout``, ``rate_limited``,
``retry_after_too_long``, ``api_failed`` (any other failed call: HTTP errors, connection errors,
a 200 that is not a chat completion), ``processing_error``. Every call's token usage and latency
are journalled with it.

The API key is read from the environment variable the config names, handed to the client, and
redacted from every error message and journalled reply; it is never written or logged.

Modules: :mod:`~eval_assets.metrics.judge_config` (``JudgeConfig``: the endpoint and the judge's
settings, the loader of ``judge.yaml``), :mod:`~eval_assets.metrics.judge_client` (``OpenAIJudge``,
``open_judge``), :mod:`~eval_assets.metrics.judge_results` (the output documents) and this one
(``judge_dir``: calibrate, judge the rows, write ``llm_judge/``); their public names are
importable from here too.
"""

from __future__ import annotations

import contextlib
import logging
import time
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval_assets import progress
from eval_assets.journal import exclusive_run_lock
from eval_assets.layout import AVLM_JUDGE_PREDICTIONS, AVLM_JUDGE_RESULTS, AVLM_PREDICTIONS
from eval_assets.metrics.avlm_rows import (
    PredictionRow,
    ScoringWarning,
    read_predictions,
    write_avlm_json,
)
from eval_assets.metrics.judge_calibration import CalibrationReport, calibrate
from eval_assets.metrics.judge_calibration_cache import (
    CalibrationCache,
    cached_calibration_key,
    keepable,
)
from eval_assets.metrics.judge_client import Judge as Judge
from eval_assets.metrics.judge_client import OpenAIJudge as OpenAIJudge
from eval_assets.metrics.judge_client import open_judge as open_judge
from eval_assets.metrics.judge_config import JUDGEMENT_SCHEMA_FORMAT as JUDGEMENT_SCHEMA_FORMAT
from eval_assets.metrics.judge_config import SCORE_ONLY_FORMAT as SCORE_ONLY_FORMAT
from eval_assets.metrics.judge_config import SCORE_ONLY_GUIDANCE as SCORE_ONLY_GUIDANCE
from eval_assets.metrics.judge_config import JudgeConfig as JudgeConfig
from eval_assets.metrics.judge_config import JudgeConfigError as JudgeConfigError
from eval_assets.metrics.judge_journal import (
    JOURNAL_FILE,
    LOCK_FILE,
    journal_cost_usd,
    open_journal,
)
from eval_assets.metrics.judge_reply import JudgeOutcome as JudgeOutcome
from eval_assets.metrics.judge_reply import ScoreError as ScoreError
from eval_assets.metrics.judge_reply import avlm_score as avlm_score
from eval_assets.metrics.judge_reply import extract_json as extract_json
from eval_assets.metrics.judge_reply import normalize_score as normalize_score
from eval_assets.metrics.judge_reply import strict_score as strict_score
from eval_assets.metrics.judge_results import JudgedRow as JudgedRow
from eval_assets.metrics.judge_results import judge_predictions_document, judge_status
from eval_assets.metrics.judge_results import judge_statistics as judge_statistics
from eval_assets.metrics.judge_results import score_distribution as score_distribution
from eval_assets.metrics.judge_results import summarize_judge_results as summarize_judge_results
from eval_assets.schemas.predictions import ModelSpec

log = logging.getLogger(__name__)


def self_judging_models(config: JudgeConfig, specs: Sequence[ModelSpec]) -> list[str]:
    """Names of the models under test that are the judge itself (same model id or served model).

    A model grading its own kind of output is not an independent judge; the results say so.
    """
    judge_ids = {config.model} | ({config.endpoint.serve} if config.endpoint.serve else set())
    return [spec.name for spec in specs
            if judge_ids & ({spec.name, spec.api_model}
                            | ({spec.endpoint.serve} if spec.endpoint.serve else set()))]


def precheck(row: PredictionRow) -> JudgeOutcome | None:
    """The failure a row has before any judge sees it (AVLM's order), or None if judgeable."""
    if row.inference_status != "success":
        return JudgeOutcome.failure("infer_failed",
                                    f"Inference failed: {row.inference_status or 'none'}")
    if not row.ground_truth:
        return JudgeOutcome.failure("missing_gt", "Missing ground truth (gt) field")
    if not row.prediction:
        return JudgeOutcome.failure("missing_pred", "Missing prediction (pred) field")
    return None


def open_ended_rows(rows: Sequence[PredictionRow], limit: int | None = None) -> list[PredictionRow]:
    """The rows the judge scores, in input order, optionally only the first ``limit``."""
    selected = []
    for row in rows:
        if row.evaluation_type is None:
            warnings.warn(f"{row.source}: missing evaluation_type (id={row.id!r}); row skipped",
                          ScoringWarning, stacklevel=2)
        elif row.evaluation_type == "open_ended":
            selected.append(row)
    return selected if limit is None else selected[:max(0, limit)]


def _guarded(judge: Judge, method: str, row: PredictionRow) -> JudgeOutcome:
    try:
        return getattr(judge, method)(row)
    except Exception as exc:  # a plug-in judge's bug must not sink the other rows
        log.exception("judge %s raised on row %s", judge.name, row.id)
        return JudgeOutcome.failure(
            "processing_error", f"Error processing entry: {type(exc).__name__}: {exc}")


def judge_rows(rows: Sequence[PredictionRow], judge: Judge, *, max_workers: int) -> list[JudgedRow]:
    """Judge every row on a bounded thread pool; results come back in input order."""
    if not rows:
        return []
    with progress.task("judge rows", total=len(rows)) as advance:

        def one(row: PredictionRow) -> JudgedRow:
            early = precheck(row)
            judged = JudgedRow(row, early if early is not None else _guarded(judge, "judge", row))
            advance(1)
            return judged

        with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(rows))),
                                thread_name_prefix="judge") as pool:
            return list(pool.map(one, rows))


@dataclass(frozen=True)
class JudgeReport:
    """What :func:`judge_dir` wrote, and what it cost (the costs are not written: they vary).

    ``calls_made`` counts HTTP calls this run made; ``calls_replayed`` replies read back from the
    journal instead.
    """

    predictions: dict[str, Any]
    results: dict[str, Any]
    predictions_path: Path
    results_path: Path
    calibration: CalibrationReport
    journal_path: Path | None = None
    calls_made: int = 0
    calls_replayed: int = 0
    calibration_s: float = 0.0
    judging_s: float = 0.0

    @property
    def status(self) -> str:
        """``scored``, ``nothing scored`` or ``withheld: ...``."""
        return str(self.results["status"])

    @property
    def scored(self) -> bool:
        """True when at least one row has a score."""
        return int(self.results["num_success"]) > 0


def _calibration_scorer(judge: Judge) -> Any:
    method = "score_only" if callable(getattr(judge, "score_only", None)) else "judge"
    return lambda row: _guarded(judge, method, row)


def _calibration(rows: Sequence[PredictionRow], judge: Judge,
                 config: JudgeConfig) -> CalibrationReport:
    """:func:`calibrate` ``judge``, or the outcome kept for the same served model, config and
    calibration requests (:mod:`eval_assets.metrics.judge_calibration_cache`)."""
    key = cached_calibration_key(rows, config, judge)
    cache = CalibrationCache()
    if key is not None:
        kept = cache.get(key)
        if kept is not None:
            log.info("judge %s: calibration %s, kept from %s (same model, config and requests)",
                     judge.name, kept.status, cache.path(key))
            return kept
    report = calibrate(rows, _calibration_scorer(judge), max_pairs=config.calibration_pairs,
                       max_frames=config.calibration_frames,
                       min_agreement=config.calibration_min_agreement, seed=config.seed)
    if key is not None and keepable(report):
        cache.put(key, report)
    return report


def judge_dir(inference_dir: Path, config: JudgeConfig, *, judge: Judge | None = None,
              limit: int | None = None,
              self_judging_models: Sequence[str] = ()) -> JudgeReport:
    """Calibrate the judge, judge ``INFERENCE_DIR/predictions.jsonl``, write ``llm_judge/``.

    ``judge`` defaults to the configured one (:func:`open_judge`, which starts a served model);
    ``limit`` keeps only the first open-ended rows; ``self_judging_models`` names the models
    under test that are the judge itself. An :class:`OpenAIJudge` journals every call in
    ``llm_judge/judge.journal.jsonl``, so a rerun repeats only calls that were in flight. A judge
    that fails calibration judges no row: the results say ``withheld`` and hold no score.
    """
    folder = Path(inference_dir)
    predictions_path, results_path = folder / AVLM_JUDGE_PREDICTIONS, folder / AVLM_JUDGE_RESULTS
    rows = open_ended_rows(read_predictions(folder / AVLM_PREDICTIONS), limit)
    out_dir = predictions_path.parent
    journal_path = out_dir / JOURNAL_FILE
    with contextlib.ExitStack() as stack:
        # The judge first: a missing key must fail before anything is written.
        active: Judge = judge if judge is not None else stack.enter_context(open_judge(config))
        try:
            stack.enter_context(exclusive_run_lock(out_dir / LOCK_FILE))
        except RuntimeError as exc:
            raise JudgeConfigError(str(exc)) from None
        client = active if isinstance(active, OpenAIJudge) else None
        if client is not None:
            try:
                journal = stack.enter_context(open_journal(journal_path))
            except ValueError as exc:
                raise JudgeConfigError(str(exc)) from None
            stack.enter_context(client.journalled(journal))
        made_before = client.calls_made if client else 0
        replayed_before = client.calls_replayed if client else 0
        started = time.monotonic()
        calibration = _calibration(rows, active, config)
        calibrated = time.monotonic()
        if calibration.withheld:
            log.warning("judge %s failed calibration (%d of %d pairs agreed); its scores are "
                        "withheld and no row is judged", active.name, calibration.agreed,
                        calibration.evaluated)
        judged = [] if calibration.withheld else judge_rows(rows, active,
                                                             max_workers=config.max_workers)
        finished = time.monotonic()
        calls_made = (client.calls_made - made_before) if client else 0
        calls_replayed = (client.calls_replayed - replayed_before) if client else 0
    document = judge_predictions_document(
        judged, model_used=active.name, avlm_compat=config.avlm_compat,
        metadata={"inference_dir": str(inference_dir), **config.settings_record(),
                  "model_used": active.name})
    summary = summarize_judge_results(document["results"], avlm_compat=config.avlm_compat)
    status = judge_status(calibration, summary["num_success"])
    document["metadata"].update({"scoring_mode": config.scoring_mode, "status": status,
                                 "self_judging": bool(self_judging_models)})
    summary.update({
        "status": status,
        "scoring_mode": config.scoring_mode,
        "failure_counts": document["error_counts_by_category"],
        "num_withheld": len(rows) if calibration.withheld else 0,
        "self_judging": bool(self_judging_models),
        "self_judging_models": list(self_judging_models),
        "calibration": calibration.model_dump(mode="json"),
    })
    if config.avlm_compat:
        summary["avlm_coercions"] = document["avlm_coercions"]
    if config.price is not None:
        # Every journalled call of this cell, replayed ones included: what the judge cost it.
        summary["cost_usd"] = journal_cost_usd(journal_path, config.price)
    write_avlm_json(predictions_path, document)
    write_avlm_json(results_path, summary)
    stats = document["statistics"]
    log.info("judge %s: %s; %d rows, %d scored, %d failed %s; calibration %s in %.1f s; %d calls "
             "made, %d replayed from the journal", active.name, status, len(rows),
             stats["successful_evaluations"], stats["failed_evaluations"],
             document["error_counts_by_category"], calibration.status, calibrated - started,
             calls_made, calls_replayed)
    return JudgeReport(document, summary, predictions_path, results_path,
                       calibration, journal_path if client else None, calls_made,
                       calls_replayed, calibrated - started, finished - calibrated)
