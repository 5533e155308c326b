"""LLM-as-judge of the frame descriptions against the human ones (the AVLM rubric, 1-10).

The rows are the described, annotated frames, each with its private evidence as metadata. The
judge first has to pass a calibration on corrupted copies of the human descriptions; if it
fails, no description is judged and the scores say ``withheld``. Calls are journalled in the
metric's folder, so a rescoring repeats only the calls a crash interrupted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from eval_assets.jsonio import read_json, write_jsonl
from eval_assets.layout import AVLM_JUDGE_PREDICTIONS, AVLM_JUDGE_RESULTS, AVLM_PREDICTIONS
from eval_assets.metrics.judge import judge_dir
from eval_assets.metrics.judge_calibration import CalibrationReport
from eval_assets.model_runs.prompts import DESCRIPTION_PROMPT
from eval_assets.schemas.annotations import FrameAnnotation
from eval_assets.schemas.results import CellScores
from eval_assets.scoring.inputs import ModelRun, PrivateDataset
from eval_assets.scoring.spec import (
    Cell,
    Column,
    Int,
    Join,
    MetricSpec,
    Note,
    Num,
    ReportTable,
    ScoringInputs,
    Section,
    Text,
    ordered,
    who,
)
from eval_assets.scoring.vision import VISION  # its not-measured record means "no annotations"

NAME = "description_judge"
DESCRIPTION_CLASS = "frame_description"


class JudgeScores(BaseModel):
    """The LLM judge summary (``llm_judge_results.json``) plus which judge produced it.

    ``status`` is ``scored``, ``nothing scored`` or ``withheld: judge failed calibration
    (agreement X%)``; when withheld (``withheld``), no row was judged, ``num_withheld`` rows were
    skipped and every score field is null. ``failure_counts`` are the failed rows by category
    (all in ``num_failed``, none in the mean). ``self_judging`` flags a judge that is also a
    model under test (``self_judging_models``). ``scoring_mode`` is ``strict`` or
    ``avlm_compat``; in the latter ``coerced_rows`` scores were coerced, ``coercions`` by kind.
    """

    model_config = ConfigDict(frozen=True)

    judge_model: str
    total_judged: int
    num_success: int
    num_failed: int
    mean_score: float | None
    median_score: float | None
    min_score: float | None
    max_score: float | None
    score_distribution: dict[str, int]
    status: str = "scored"
    withheld: bool = False
    num_withheld: int = 0
    failure_counts: dict[str, int] = Field(default_factory=dict)
    self_judging: bool = False
    self_judging_models: list[str] = Field(default_factory=list)
    scoring_mode: Literal["strict", "avlm_compat"] = "strict"
    coerced_rows: int = 0
    coercions: dict[str, int] = Field(default_factory=dict)
    calibration: CalibrationReport | None = None


def judge_scores(summary: Mapping[str, Any], judge_model: str) -> JudgeScores:
    """Our record of an ``llm_judge_results.json``, with the trust fields the report shows.

    AVLM writes 0 for the mean, median, min and max when nothing was scored (our judge does too
    in AVLM compatibility mode); a 0 is not a score on a 1–10 scale, so ours says ``None`` there.
    Files written before calibration and strict scoring existed read as ``scored`` / ``strict``.
    """
    scored = summary["num_success"] > 0
    stats = {k: summary[k] if scored else None
             for k in ("mean_score", "median_score", "min_score", "max_score")}
    calibration = summary.get("calibration")
    coercions = summary.get("avlm_coercions") or {}
    status = str(summary.get("status", "scored" if scored else "nothing scored"))
    return JudgeScores(
        judge_model=judge_model, total_judged=summary["total_judged"],
        num_success=summary["num_success"], num_failed=summary["num_failed"],
        score_distribution=summary["score_distribution"], **stats,
        status=status, withheld=status.startswith("withheld"),
        num_withheld=summary.get("num_withheld", 0),
        failure_counts=summary.get("failure_counts", {}),
        self_judging=summary.get("self_judging", False),
        self_judging_models=summary.get("self_judging_models", []),
        scoring_mode=summary.get("scoring_mode", "strict"),
        coerced_rows=coercions.get("rows", 0), coercions=coercions.get("by_kind", {}),
        calibration=None if calibration is None else CalibrationReport.model_validate(calibration),
    )


def evidence_metadata(data: PrivateDataset, frame_index: int) -> dict[str, Any]:
    """The frame's private evidence for the judge: what was detected, where, and how far."""
    truth = data.evidence(frame_index)
    if truth is None:
        return {"frame_index": frame_index, "detections": []}
    detections = [
        {"name": d.name, "box_xyxy": [round(v, 1) for v in d.box_xyxy],
         "mask_area_px": d.mask_area,
         "range_m": None if d.range is None else {"median": round(d.range.median, 3),
                                                   "points": d.range.count}}
        for d in truth.detections
    ]
    return {"frame_index": frame_index, "detections": detections}


def avlm_description_rows(
    data: PrivateDataset, run: ModelRun, annotations: Mapping[int, FrameAnnotation] | None,
    prompt: str,
) -> list[dict[str, Any]]:
    """Open-ended AVLM rows: each annotated frame's description vs the human one, with evidence.

    Without annotations the rows carry no reference answer, and the judge records them as
    ``missing_gt`` failures rather than inventing one.
    """
    rows = []
    for index, (frame_index, record) in enumerate(sorted(run.descriptions.items())):
        reference = annotations.get(frame_index) if annotations else None
        if annotations is not None and reference is None:
            continue
        ok = record.status == "success"
        rows.append({
            "index": index,
            "id": record.frame,
            "class": DESCRIPTION_CLASS,
            "evaluation_type": "open_ended",
            "inference_status": "success" if ok else "failed",
            "ground_truth": reference.description if reference else None,
            "prediction": record.raw_response if ok else None,
            "conversations": [{"from": "human", "value": f"<image>\n{prompt}"}],
            "metadata": evidence_metadata(data, frame_index),
        })
    return rows


def _score(inputs: ScoringInputs) -> JudgeScores:
    handle = inputs.judge
    if handle is None:
        raise ValueError(f"{NAME} needs an opened judge (ScoringInputs.judge)")
    write_jsonl(inputs.out_dir / AVLM_PREDICTIONS, avlm_description_rows(inputs.data, inputs.run,
                                                          inputs.annotations, DESCRIPTION_PROMPT),
                sort_keys=True)
    report = judge_dir(inputs.out_dir, handle.config, judge=handle.client,
                       self_judging_models=handle.self_judging_models)
    summary = report.results
    calibration = report.calibration
    if calibration.withheld:
        inputs.warnings.append(f"judge {handle.config.model} {report.status}: its scores are "
                               "withheld")
    if summary["self_judging"]:
        inputs.warnings.append(f"judge {handle.config.model} is also a model under test "
                               f"({', '.join(summary['self_judging_models'])})")
    inputs.notes.update({
        "calibration_seconds": round(report.calibration_s, 2),
        "judging_seconds": round(report.judging_s, 2),
        "calls_made": report.calls_made, "calls_replayed": report.calls_replayed,
        "errors": report.predictions["error_counts_by_category"],
        "results": report.results_path,
    })
    # What the files say, read back: the record is of what was written.
    judge_model = read_json(inputs.out_dir / AVLM_JUDGE_PREDICTIONS)["metadata"]["model_used"]
    return judge_scores(read_json(inputs.out_dir / AVLM_JUDGE_RESULTS), judge_model)


def _metadata(j: JudgeScores) -> dict[str, Any]:
    c = j.calibration
    return {
        "judge_model": j.judge_model, "status": j.status, "num_success": j.num_success,
        "num_failed": j.num_failed, "num_withheld": j.num_withheld, "mean_score": j.mean_score,
        "self_judging": j.self_judging,
        "calibration_status": c.status if c else None,
        "calibration_agreement": c.agreement if c else None,
        "calibration_pairs": (f"{c.agreed}/{c.evaluated} agreed ({c.planned} planned)"
                              if c else None),
    }


def _pool(cells: Sequence[CellScores]) -> dict[str, Any]:
    judges = [j for _, j in JUDGE.results(cells)]
    success = sum(j.num_success for j in judges)
    failed = sum(j.num_failed for j in judges)
    # mean_score is sum / num_success, so weighting by num_success recovers the pooled mean.
    scored = [(j.mean_score, j.num_success) for j in judges
              if j.num_success and j.mean_score is not None]
    mean = (math.fsum(float(m) * n for m, n in scored) / sum(n for _, n in scored)
            if scored else math.nan)
    return {"judge_mean_score": mean, "judge_success": success, "judge_failed": failed}


LEAD = ("Open-ended answers scored 1–10 by an LLM judge with the AVLM rubric. Failed "
        "judgements are counted by category, never averaged in as zeros; a judge whose "
        "scores are withheld (for example because it failed calibration) shows its status "
        "instead of a number.")
_BANDS = ("excellent_9_10", "good_8", "fair_7", "poor_6", "very_poor_1_5")


def _status(j: JudgeScores) -> str:
    """Why a judge summary has no mean: the judge's own status, else what the counts say."""
    if j.status and j.status != "scored":
        return j.status
    if j.num_success == 0 and j.num_failed:
        return f"not scored: all {j.num_failed:,} judgements failed"
    return "not scored"


def _failures(j: JudgeScores) -> Cell:
    if not j.failure_counts:
        return Int(j.num_failed)
    parts = ", ".join(f"{k} {v:,}" for k, v in sorted(j.failure_counts.items()))
    return Join((Int(j.num_failed), Text(" "), Text(f"({parts})", "ci")))


def _self_judging(cell: CellScores, j: JudgeScores) -> Note:
    if j.judge_model == cell.model:
        why = f"was judged by itself ({j.judge_model})"
    else:
        under_test = ", ".join(j.self_judging_models) or j.judge_model
        why = (f"was judged by {j.judge_model}, which is also under test "
               f"(as {under_test}) and so judged a competitor")
    return Note("notice", (Text(cell.model, "b"), Text(f" on {cell.recording} {why}: these "
                                                       "scores are not independent evidence "
                                                       "of quality.")))


def _scores(cell: CellScores, j: JudgeScores, notes: list[Note]) -> tuple[Cell, Cell, Cell]:
    """Mean, median and min–max cells; a status instead when nothing was scored."""
    if j.withheld or j.mean_score is None or math.isnan(j.mean_score):
        return Text(_status(j), "na"), Num(None), Num(None)
    if j.status and j.status != "scored":
        notes.append(Note("summary", (Text(cell.model, "b"),
                                      Text(f" on {cell.recording}: judge status: {j.status}"))))
    span: Cell = (Num(None) if j.min_score is None
                  else Join((Num(j.min_score, 0), Text("–"), Num(j.max_score, 0))))
    return Num(j.mean_score), Num(j.median_score, 1), span


def _table(cells: Sequence[CellScores]) -> ReportTable:
    rows, notes = [], []
    for cell, j in JUDGE.results(ordered(cells)):
        name: Cell = Text(j.judge_model)
        # The schema's flag, or the plain case of a model judging its own answers.
        if j.self_judging or j.judge_model == cell.model:
            name = Join((name, Text(" "), Text("self-judging", "flag",
                                               title="the judge is also a model under test")))
            notes.append(_self_judging(cell, j))
        mean, median, span = _scores(cell, j, notes)
        if j.scoring_mode == "avlm_compat" and j.coerced_rows:
            kinds = ", ".join(f"{k} {v:,}" for k, v in sorted(j.coercions.items()))
            notes.append(Note("summary", (
                Text(cell.model, "b"),
                Text(f" on {cell.recording}: AVLM compatibility scoring coerced "
                     f"{j.coerced_rows:,} replies into scores{f' ({kinds})' if kinds else ''}."))))
        dist = " / ".join(str(j.score_distribution.get(k, 0)) for k in _BANDS)
        rows.append((*who(cell), name, Int(j.total_judged), Int(j.num_success), _failures(j),
                     mean, median, span, Text(dist)))
    return ReportTable(
        anchor="judge", title="LLM judge", lead=LEAD, rows=tuple(rows), notes=tuple(notes),
        empty="No judged rows.",
        headers=(("Model", False), ("Recording", False), ("Judge", False), ("Judged", True),
                 ("Scored", True), ("Failed", True), ("Mean", True), ("Median", True),
                 ("Min–max", True), ("9–10 / 8 / 7 / 6 / 1–5", True)))


def _not_computed(cells: Sequence[CellScores]) -> list[tuple[str, str]]:
    missing_gt = {c.model: j.failure_counts.get("missing_gt", 0) for c, j in JUDGE.results(cells)}
    unannotated = any(VISION.result(c) is None for c in cells)
    if not (any(missing_gt.values()) or (missing_gt and unannotated)):
        return []
    counts = ", ".join(f"{m}: {n:,}" for m, n in missing_gt.items() if n)
    return [("LLM judge reference",
             "no reference answer: a description without a human annotation has nothing to be "
             "judged against, so the judge records it as a failure (missing_gt), never a score"
             + (f" (missing_gt rows: {counts})" if counts else ""))]


JUDGE: MetricSpec[JudgeScores] = MetricSpec(
    order=60,
    name=NAME, description=__doc__ or "", file="judge.json", version="3", result_model=JudgeScores,
    score=_score, metadata=_metadata, needs=frozenset({"annotations", "judge"}),
    describes_frames=True, label="LLM judge",
    columns=(Column("judge_mean_score"), Column("judge_success", integer=True),
             Column("judge_failed", integer=True)),
    pool=_pool, section=Section("judge", "Judge", _table), not_computed=_not_computed,
)
