"""Stage: every metric of a (recording, model) partition, then the combined results file.

Each asset reads the model's recorded run and the private side of the recording's dataset, calls
one metric of the library and writes its JSON under the layout; ``benchmark_results`` gathers them
into one ``BenchmarkResult`` per partition for the leaderboard and the report.
"""

# No `from __future__ import annotations`: Dagster checks the context annotation at runtime.

import json
from dataclasses import dataclass
from pathlib import Path

from dagster import (
    AssetDep,
    AssetExecutionContext,
    AssetKey,
    MaterializeResult,
    MetadataValue,
    asset,
)

from eval_assets.atomic import write_text_atomic
from eval_assets.benchmark.inputs import (
    ModelRun,
    PrivateDataset,
    load_annotations,
    load_private_dataset,
    load_run,
)
from eval_assets.benchmark.scoring import (
    avlm_description_rows,
    avlm_mcq_rows,
    judge_scores,
    load_rotations,
    prediction_counts,
    score_chair,
    score_circular,
    score_pope,
    score_vision,
    score_vqa,
    write_jsonl,
)
from eval_assets.defs import keys
from eval_assets.defs.automation_conditions import NIGHT_TAG, OWNERS, RECOMPUTE
from eval_assets.defs.partitions import (
    MODEL_DIM,
    RECORDING_DIM,
    per_recording,
    recording_model_partitions,
)
from eval_assets.defs.resources import JudgeResource, ProjectStorage, ScoringResource
from eval_assets.layout import StorageLayout
from eval_assets.metrics.circular import CircularReport
from eval_assets.metrics.judge import judge_dir
from eval_assets.metrics.mcq import score_mcq_dir
from eval_assets.metrics.pope import PopeResult
from eval_assets.metrics.predictions import InferenceLayout
from eval_assets.metrics.vqa import VqaReport
from eval_assets.model_runs.prompts import DESCRIPTION_PROMPT
from eval_assets.schemas.results import BenchmarkResult, ChairScores, VisionScores
from eval_assets.vqa.dataset import dataset_fingerprint

GROUP = "metrics"
INPUTS = [keys.PREDICTIONS, AssetDep(keys.PRIVATE_LABELS, partition_mapping=per_recording)]


def metric_asset(key: AssetKey, *, deps: list = INPUTS, code_version: str = "1"):
    """A per-(recording, model) metric: same partitions, group, automation and owners."""
    return asset(key=key, partitions_def=recording_model_partitions, group_name=GROUP, deps=deps,
                 code_version=code_version, automation_condition=RECOMPUTE, kinds={"json"},
                 owners=OWNERS)

VQA_FILE = "vqa.json"
CIRCULAR_FILE = "circular.json"  # beside vqa.json: CircularEval, or why it was not measured
POPE_FILE = "pope.json"
VISION_FILE = "vision.json"
CHAIR_FILE = "chair.json"


@dataclass(frozen=True)
class Partition:
    """The inputs every metric of one (recording, model) partition reads."""

    recording: str
    model: str
    layout: StorageLayout
    data: PrivateDataset
    run: ModelRun

    def out_dir(self, metric: AssetKey) -> Path:
        return self.layout.metric_dir(keys.name(metric), self.recording, self.model)


def _partition(context: AssetExecutionContext, storage: ProjectStorage) -> Partition:
    dims = context.partition_key.keys_by_dimension
    recording, model = dims[RECORDING_DIM], dims[MODEL_DIM]
    layout = storage.layout()
    return Partition(recording, model, layout, load_private_dataset(layout.dataset_dir(recording)),
                     load_run(layout.predictions_dir(recording, model)))


def _write_model(path: Path, document: object) -> Path:
    text = document.model_dump_json(indent=2) if hasattr(document, "model_dump_json") \
        else json.dumps(document, indent=2, sort_keys=True)
    write_text_atomic(path, text + "\n")
    return path


def _num(value: float | None) -> str:
    """Three decimals, or n/a for an empty denominator."""
    return "n/a" if value is None else f"{value:.3f}"


@metric_asset(keys.VQA_ACCURACY, code_version="2")
def vqa_accuracy(context: AssetExecutionContext, storage: ProjectStorage) -> MaterializeResult:
    """Choice accuracy overall and per family, Wilson 95% intervals, parse failures, chance;
    and, when the run asked rotations, CircularEval and position bias (``circular.json``)."""
    part = _partition(context, storage)
    report = score_vqa(part.data, part.run, part.recording)
    path = _write_model(part.out_dir(keys.VQA_ACCURACY) / VQA_FILE, report)
    circular = score_circular(
        part.data, part.run,
        load_rotations(part.layout.predictions_dir(part.recording, part.model)), part.recording)
    circular_path = _write_model(
        part.out_dir(keys.VQA_ACCURACY) / CIRCULAR_FILE,
        circular if circular is not None else {"reason": "no rotations asked"})
    rows = [f"| {family} | {s.n} | {_num(s.accuracy)} | [{_num(s.ci_low)}, {_num(s.ci_high)}] | "
            f"{s.parse_failures} | {_num(s.chance)} |" for family, s in report.by_family.items()]
    table = "\n".join(["| family | n | accuracy | 95% CI | parse failures | chance |",
                       "|---|---|---|---|---|---|", *rows])
    overall = report.overall
    meta = {
        "accuracy": overall.accuracy, "ci_low": overall.ci_low, "ci_high": overall.ci_high,
        "n": overall.n, "parse_failure_rate": overall.parse_failure_rate,
        "failed_calls": overall.failed_calls, "by_family": MetadataValue.md(table),
        "path": MetadataValue.path(str(path)),
        "circular": MetadataValue.path(str(circular_path)),
    }
    if circular is not None:
        c = circular.overall
        meta |= {"circular_accuracy": c.accuracy, "circular_n": c.n,
                 "circular_not_asked": c.not_asked, "rotation_accuracy": c.rotation_accuracy,
                 "position_bias_max_gap": c.bias.max_gap, "position_bias_p": c.bias.p_value}
    return MaterializeResult(metadata=meta)


@metric_asset(keys.POPE_PRESENCE)
def pope_presence(context: AssetExecutionContext, storage: ProjectStorage) -> MaterializeResult:
    """POPE accuracy / precision / recall / F1 / yes-ratio on the presence questions."""
    part = _partition(context, storage)
    result = score_pope(part.data, part.run)
    path = part.out_dir(keys.POPE_PRESENCE) / POPE_FILE
    _write_model(path, result if result is not None else {"n": 0, "reason": "no presence answers"})
    meta = {"path": MetadataValue.path(str(path))}
    if result is not None:
        meta |= {"accuracy": result.accuracy, "f1": result.f1, "yes_ratio": result.yes_ratio,
                 "n": result.n}
    return MaterializeResult(metadata=meta)


@metric_asset(keys.MCQ_AVLM)
def mcq_avlm(context: AssetExecutionContext, storage: ProjectStorage) -> MaterializeResult:
    """The cases as an AVLM inference folder, scored by the AVLM MCQ rules (strict + lenient)."""
    part = _partition(context, storage)
    folder = part.out_dir(keys.MCQ_AVLM)
    write_jsonl(InferenceLayout(folder).predictions, avlm_mcq_rows(part.data, part.run))
    report = score_mcq_dir(folder)
    return MaterializeResult(metadata={
        "strict_pct_correct": report.strict["pct_correct"],
        "strict_parse_failed": report.strict["num_parse_failed"],
        "lenient_pct_correct": report.lenient["pct_correct"],
        "mcq_results": MetadataValue.path(str(report.strict_path)),
    })


@metric_asset(keys.DESCRIPTION_JUDGE, deps=[*INPUTS, keys.JUDGE_CONFIG], code_version="2")
def description_judge(context: AssetExecutionContext, storage: ProjectStorage,
                      scoring: ScoringResource, judge: JudgeResource) -> MaterializeResult:
    """LLM-as-judge of the frame descriptions vs the human ones, the frame evidence as metadata.

    The judge first has to pass a calibration on corrupted copies of the human descriptions; if
    it fails, no description is judged and the results say ``withheld``. Calls are journalled in
    the asset's folder, so a rematerialization repeats only the calls a crash interrupted.
    """
    part = _partition(context, storage)
    folder = part.out_dir(keys.DESCRIPTION_JUDGE)
    annotations = load_annotations(scoring.annotations_path(), part.recording)
    rows = avlm_description_rows(part.data, part.run, annotations, DESCRIPTION_PROMPT)
    write_jsonl(InferenceLayout(folder).predictions, rows)
    with judge.judge() as (config, client):
        report = judge_dir(folder, config, judge=client,
                           self_judging_models=judge.self_judging_models(config))
    summary = report.results
    calibration = report.calibration
    if calibration.withheld:
        context.log.warning(f"judge {config.model} {report.status}: its scores are withheld")
    if summary["self_judging"]:
        context.log.warning(f"judge {config.model} is also a model under test "
                            f"({', '.join(summary['self_judging_models'])})")
    return MaterializeResult(metadata={
        "judge_model": config.model, "status": report.status,
        "num_success": summary["num_success"], "num_failed": summary["num_failed"],
        "num_withheld": summary["num_withheld"], "mean_score": summary["mean_score"],
        "self_judging": summary["self_judging"],
        "calibration_status": calibration.status,
        "calibration_agreement": calibration.agreement,
        "calibration_pairs": f"{calibration.agreed}/{calibration.evaluated} agreed "
                             f"({calibration.planned} planned)",
        "calibration_seconds": round(report.calibration_s, 2),
        "judging_seconds": round(report.judging_s, 2),
        "calls_made": report.calls_made, "calls_replayed": report.calls_replayed,
        "errors": MetadataValue.json(report.predictions["error_counts_by_category"]),
        "results": MetadataValue.path(str(report.results_path)),
    })


@metric_asset(keys.VISION_SIMILARITY)
def vision_similarity(context: AssetExecutionContext, storage: ProjectStorage,
                      scoring: ScoringResource) -> MaterializeResult:
    """VisionSimilarity and VisionHallucination of descriptions vs the human annotations."""
    part = _partition(context, storage)
    annotations = load_annotations(scoring.annotations_path(), part.recording)
    scores = score_vision(part.run, annotations, recording=part.recording, model=part.model,
                          scorer=scoring.scorer(), embedder=scoring.embedder,
                          threshold=scoring.hallucination_threshold)
    path = part.out_dir(keys.VISION_SIMILARITY) / VISION_FILE
    _write_model(path, scores if scores is not None else {"reason": "no annotations"})
    meta = {"path": MetadataValue.path(str(path))}
    if scores is not None:
        meta |= {"mean_similarity": scores.mean_similarity,
                 "hallucination_rate": scores.hallucination_rate, "n_frames": scores.n_frames,
                 "summary": scores.similarity_summary}
    return MaterializeResult(metadata=meta)


@metric_asset(keys.CHAIR_HALLUCINATION)
def chair_hallucination(context: AssetExecutionContext, storage: ProjectStorage,
                        scoring: ScoringResource) -> MaterializeResult:
    """CHAIR of the descriptions vs annotated objects (else detector evidence; recorded)."""
    part = _partition(context, storage)
    annotations = load_annotations(scoring.annotations_path(), part.recording)
    scores = score_chair(part.data, part.run, annotations)
    path = part.out_dir(keys.CHAIR_HALLUCINATION) / CHAIR_FILE
    _write_model(path, scores if scores is not None else {"reason": "no described frames"})
    meta = {"path": MetadataValue.path(str(path))}
    if scores is not None:
        meta |= {"chair_i": scores.chair_i, "chair_s": scores.chair_s,
                 "ground_truth_source": scores.ground_truth_source}
    return MaterializeResult(metadata=meta)


def _optional(path: Path, model: type):
    data = read_json(path)
    return None if "reason" in data else model.model_validate(data)


def _optional_file(path: Path, model: type):
    """Like ``_optional``, and None when an older code version wrote no such file."""
    return _optional(path, model) if path.is_file() else None


@metric_asset(keys.BENCHMARK_RESULTS, deps=[
    keys.VQA_ACCURACY, keys.POPE_PRESENCE, keys.MCQ_AVLM, keys.DESCRIPTION_JUDGE,
    keys.VISION_SIMILARITY, keys.CHAIR_HALLUCINATION], code_version="3")
def benchmark_results(context: AssetExecutionContext, storage: ProjectStorage) -> MaterializeResult:
    """Every metric of the partition in one ``BenchmarkResult`` (``results.json``)."""
    part = _partition(context, storage)
    vqa = VqaReport.model_validate_json(
        (part.out_dir(keys.VQA_ACCURACY) / VQA_FILE).read_text(encoding="utf-8"))
    mcq = InferenceLayout(part.out_dir(keys.MCQ_AVLM))
    judged = InferenceLayout(part.out_dir(keys.DESCRIPTION_JUDGE))
    judge_summary = read_json(judged.judge_results)
    judge_model = read_json(judged.judge_predictions)["metadata"]["model_used"]
    result = BenchmarkResult(
        recording=part.recording,
        model=part.model,
        dataset_sha256=dataset_fingerprint(part.data.root),
        predictions=prediction_counts(part.data, part.run, vqa),
        vqa=vqa,
        pope=_optional(part.out_dir(keys.POPE_PRESENCE) / POPE_FILE, PopeResult),
        mcq=read_json(mcq.mcq_results),
        mcq_lenient_pct_correct=read_json(mcq.mcq_lenient_results)["pct_correct"],
        judge=judge_scores(judge_summary, judge_model),
        vision=_optional(part.out_dir(keys.VISION_SIMILARITY) / VISION_FILE, VisionScores),
        chair=_optional(part.out_dir(keys.CHAIR_HALLUCINATION) / CHAIR_FILE, ChairScores),
        circular=_optional_file(part.out_dir(keys.VQA_ACCURACY) / CIRCULAR_FILE,
                                CircularReport),
    )
    layout = storage.layout()
    path = _write_model(layout.results_file(part.recording, part.model), result)
    meta = {"vqa_accuracy": vqa.overall.accuracy, "path": MetadataValue.path(str(path))}
    night = context.run.tags.get(NIGHT_TAG)
    if night:  # a nightly run keeps its results for good, beside the current ones
        kept = _write_model(layout.nightly_results_file(night, part.recording, part.model),
                            result)
        meta["nightly"] = MetadataValue.path(str(kept))
    return MaterializeResult(metadata=meta)


def read_json(path: Path) -> dict:
    """A JSON document written by a metric asset."""
    return json.loads(path.read_text(encoding="utf-8"))
