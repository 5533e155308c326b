"""Per-(recording, model) benchmark results: what the metric assets write and the report reads."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from eval_assets.metrics.circular import CircularReport
from eval_assets.metrics.judge_calibration import CalibrationReport
from eval_assets.metrics.pope import PopeResult
from eval_assets.metrics.vqa import VqaReport


class PredictionCounts(BaseModel):
    """How the model-under-test calls went: failures are never filled with answers."""

    model_config = ConfigDict(frozen=True)

    cases: int
    succeeded: int
    failed: int
    parse_failures: int
    descriptions: int
    descriptions_failed: int


class VisionScores(BaseModel):
    """VisionSimilarity + VisionHallucination of the model's descriptions vs human annotations."""

    model_config = ConfigDict(frozen=True)

    embedder: str
    n_frames: int
    mean_similarity: float | None
    min_similarity: float | None
    max_similarity: float | None
    threshold: float
    hallucination_rate: float
    n_hallucinations: int
    similarity_summary: str
    hallucination_summary: str


class ChairScores(BaseModel):
    """CHAIR of the descriptions; ``ground_truth_source`` says which objects counted as present."""

    model_config = ConfigDict(frozen=True)

    chair_i: float
    chair_s: float
    hallucinated_objects: list[str]
    n_captions: int
    ground_truth_source: Literal["annotations", "audit"]


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


class BenchmarkResult(BaseModel):
    """Everything measured for one model on one recording; one ``results.json`` per partition."""

    model_config = ConfigDict(frozen=True)

    recording: str
    model: str
    dataset_sha256: str
    predictions: PredictionCounts
    vqa: VqaReport
    pope: PopeResult | None
    mcq: dict[str, Any]
    mcq_lenient_pct_correct: float | None
    judge: JudgeScores | None
    vision: VisionScores | None
    chair: ChairScores | None
    circular: CircularReport | None = Field(
        default=None, description="CircularEval and position bias; None: no rotations asked")
