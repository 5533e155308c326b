"""VisionSimilarity and VisionHallucination, compatible with Alquimia Fair Forge 3.0.0 ([vision]).

Same inputs give the same numbers and strings as the reference (specs/metrics.md §1). Differences,
all deliberate: every frame of a run is embedded in batches (unique strings once), one scoring pass
can feed both metrics (``run_vision_metrics``), an empty conversation gives a result with
``n_frames == 0`` instead of a ZeroDivisionError, and a threshold outside [0, 1] is rejected.

Empty sessions: ``mean/min/max_similarity`` are ``None`` (there is nothing to average, and 0.0 would
read as "completely dissimilar"); ``hallucination_rate`` is 0.0 as the spec says; both summaries say
"no frames".
"""

from __future__ import annotations

import logging
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from eval_assets.metrics.embedders import (
    CosineSimilarity,
    Embedder,
    ModelNotFoundError,
    SentenceTransformerEmbedder,
    SimilarityScorer,
)

__all__ = [
    "Batch",
    "CosineSimilarity",
    "Dataset",
    "Embedder",
    "ModelNotFoundError",
    "Retriever",
    "ScoredFrame",
    "ScoredSession",
    "SentenceTransformerEmbedder",
    "SimilarityScorer",
    "VisionHallucination",
    "VisionHallucinationInteraction",
    "VisionHallucinationMetric",
    "VisionSimilarity",
    "VisionSimilarityInteraction",
    "VisionSimilarityMetric",
    "hallucination_metrics",
    "run_vision_metrics",
    "score_sessions",
    "similarity_metrics",
    "validate_threshold",
]

logger = logging.getLogger(__name__)

NO_FRAMES_SIMILARITY = (
    "The model's descriptions could not be compared with the ground truth: the session has "
    "no frames."
)
NO_FRAMES_HALLUCINATION = (
    "The model hallucinated in 0 of 0 frames: the session has no frames, so the hallucination "
    "rate is reported as 0%."
)


# ----------------------------------------------------------------------------- input models


class Batch(BaseModel):
    """One exchange of a session. Only ``assistant`` and ``ground_truth_assistant`` are read."""

    model_config = ConfigDict(extra="allow")

    qa_id: str
    query: str = ""
    assistant: str
    ground_truth_assistant: str


class Dataset(BaseModel):
    """One session (in the pipeline: one recording answered by one model)."""

    model_config = ConfigDict(extra="allow")

    session_id: str
    assistant_id: str
    language: str = "english"
    context: str = ""
    conversation: list[Batch] = Field(default_factory=list)


class Retriever(ABC):
    """Loads the datasets to score. Keyword arguments of ``run`` arrive in ``self.kwargs``."""

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs

    @abstractmethod
    def load_dataset(self) -> list[Dataset]:
        """All sessions to score, in the order results should come back."""


# ---------------------------------------------------------------------------- output models


class VisionSimilarityInteraction(BaseModel):
    """One frame's stored (rounded) similarity."""

    qa_id: str
    similarity_score: float


class VisionSimilarityMetric(BaseModel):
    """VisionSimilarity result for one session."""

    session_id: str
    assistant_id: str
    mean_similarity: float | None
    min_similarity: float | None
    max_similarity: float | None
    summary: str
    interactions: list[VisionSimilarityInteraction] = Field(default_factory=list)

    def display(self) -> None:
        """Print the session header, the summary and one line per frame."""
        print(f"Session: {self.session_id}  |  Assistant: {self.assistant_id}")
        print(self.summary)
        print()
        for it in self.interactions:
            print(f"  {it.qa_id}  similarity={it.similarity_score:.2f}")
        print()


class VisionHallucinationInteraction(BaseModel):
    """One frame's stored similarity and whether it counts as a hallucination."""

    qa_id: str
    similarity_score: float
    is_hallucination: bool


class VisionHallucinationMetric(BaseModel):
    """VisionHallucination result for one session."""

    session_id: str
    assistant_id: str
    hallucination_rate: float
    n_hallucinations: int
    n_frames: int
    threshold: float
    summary: str
    interactions: list[VisionHallucinationInteraction] = Field(default_factory=list)

    def display(self) -> None:
        """Print the session header, the summary and one flagged line per frame."""
        print(f"Session: {self.session_id}  |  Assistant: {self.assistant_id}")
        print(self.summary)
        print()
        for it in self.interactions:
            flag = "HALLUCINATION" if it.is_hallucination else "ok"
            print(f"  {it.qa_id}  similarity={it.similarity_score:.2f}  {flag}")
        print()


# ------------------------------------------------------------------------------ scoring pass


@dataclass(frozen=True)
class ScoredFrame:
    """A frame with its stored score: float32 cosine rounded to 4 decimals."""

    qa_id: str
    similarity_score: float


@dataclass(frozen=True)
class ScoredSession:
    """A merged session with every frame scored; input to both metrics."""

    session_id: str
    assistant_id: str
    frames: list[ScoredFrame] = field(default_factory=list)


def validate_threshold(threshold: float) -> float:
    """Return ``threshold`` as a float, or raise ValueError unless it is a number in [0, 1]."""
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        raise ValueError(
            f"threshold must be a number between 0 and 1, got {threshold!r} "
            f"({type(threshold).__name__}); pass e.g. threshold=0.75"
        )
    value = float(threshold)
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise ValueError(
            f"threshold must be between 0 and 1 inclusive (a cosine-similarity cut-off), got "
            f"{threshold!r}; pass e.g. threshold=0.75"
        )
    return value


def _merge_sessions(datasets: Sequence[Dataset]) -> list[tuple[str, str, list[Batch]]]:
    """Group datasets by session_id in first-seen order, keeping the first assistant_id."""
    merged: dict[str, tuple[str, list[Batch]]] = {}
    for position, ds in enumerate(datasets):
        if not isinstance(ds, Dataset):
            raise TypeError(
                f"dataset #{position} is a {type(ds).__name__}, not an "
                f"eval_assets.metrics.vision.Dataset; load_dataset() must return list[Dataset]"
            )
        if ds.session_id not in merged:
            merged[ds.session_id] = (ds.assistant_id, [])
        merged[ds.session_id][1].extend(ds.conversation)
    return [(sid, aid, batches) for sid, (aid, batches) in merged.items()]


def score_sessions(
    datasets: Sequence[Dataset], scorer: SimilarityScorer | None = None
) -> list[ScoredSession]:
    """Merge sessions and score every frame of every session in one batched scorer call.

    ``scorer=None`` uses ``CosineSimilarity(SentenceTransformerEmbedder("all-mpnet-base-v2"))``.
    Stored scores are ``round(score, 4)``; everything downstream uses them.
    """
    sessions = _merge_sessions(datasets)
    candidates = [b.assistant for _, _, batches in sessions for b in batches]
    references = [b.ground_truth_assistant for _, _, batches in sessions for b in batches]
    if not candidates:
        raw: list[float] = []
    else:
        scorer = scorer if scorer is not None else default_scorer()
        raw = scorer.score(candidates, references)
        if len(raw) != len(candidates):
            raise ValueError(
                f"scorer {scorer!r} returned {len(raw)} scores for {len(candidates)} frames"
            )
    out: list[ScoredSession] = []
    cursor = 0
    for sid, aid, batches in sessions:
        frames = [
            ScoredFrame(b.qa_id, round(float(raw[cursor + i]), 4)) for i, b in enumerate(batches)
        ]
        cursor += len(batches)
        out.append(ScoredSession(sid, aid, frames))
    return out


def default_scorer() -> CosineSimilarity:
    """The reference default: cosine over all-mpnet-base-v2 embeddings (loaded offline)."""
    return CosineSimilarity(SentenceTransformerEmbedder("all-mpnet-base-v2"))


# ---------------------------------------------------------------------------- metric builders


def similarity_metrics(sessions: Sequence[ScoredSession]) -> list[VisionSimilarityMetric]:
    """VisionSimilarity results from scored sessions (one per session, same order)."""
    results = []
    for s in sessions:
        scores = [f.similarity_score for f in s.frames]
        n = len(scores)
        if n:
            mean = round(sum(scores) / n, 4)
            low = round(min(scores), 4)
            high = round(max(scores), 4)
            summary = (
                f"The model's descriptions have an average similarity of {mean:.0%} with the "
                f"ground truth (min: {low:.0%}, max: {high:.0%}) across {n} frames."
            )
        else:
            mean = low = high = None
            summary = NO_FRAMES_SIMILARITY
        results.append(
            VisionSimilarityMetric(
                session_id=s.session_id,
                assistant_id=s.assistant_id,
                mean_similarity=mean,
                min_similarity=low,
                max_similarity=high,
                summary=summary,
                interactions=[
                    VisionSimilarityInteraction(qa_id=f.qa_id, similarity_score=f.similarity_score)
                    for f in s.frames
                ],
            )
        )
    return results


def hallucination_metrics(
    sessions: Sequence[ScoredSession], threshold: float
) -> list[VisionHallucinationMetric]:
    """VisionHallucination results: a frame hallucinates when its stored score < threshold."""
    threshold = validate_threshold(threshold)
    results = []
    for s in sessions:
        flags = [f.similarity_score < threshold for f in s.frames]
        n = len(flags)
        n_h = sum(flags)
        rate = round(n_h / n, 4) if n else 0.0
        if n:
            summary = (
                f"The model hallucinated in {n_h} of {n} frames ({rate:.0%}). A frame is "
                f"considered a hallucination when similarity with the ground truth falls below "
                f"{threshold}."
            )
        else:
            summary = NO_FRAMES_HALLUCINATION
        results.append(
            VisionHallucinationMetric(
                session_id=s.session_id,
                assistant_id=s.assistant_id,
                hallucination_rate=rate,
                n_hallucinations=n_h,
                n_frames=n,
                threshold=threshold,
                summary=summary,
                interactions=[
                    VisionHallucinationInteraction(
                        qa_id=f.qa_id, similarity_score=f.similarity_score, is_hallucination=h
                    )
                    for f, h in zip(s.frames, flags, strict=True)
                ],
            )
        )
    return results


# ------------------------------------------------------------------------------- entry points


def _load(retriever: type[Retriever], kwargs: dict[str, Any]) -> list[Dataset]:
    """Instantiate the retriever with ``kwargs`` and load its datasets, checking the types."""
    if not (isinstance(retriever, type) and issubclass(retriever, Retriever)):
        raise TypeError(
            f"retriever must be a Retriever subclass (the class, not an instance), got "
            f"{retriever!r}"
        )
    datasets = retriever(**kwargs).load_dataset()
    if not isinstance(datasets, list):
        raise TypeError(
            f"{retriever.__name__}.load_dataset() returned {type(datasets).__name__}; it must "
            f"return list[Dataset]"
        )
    return datasets


def _score(
    retriever: type[Retriever],
    scorer: SimilarityScorer | None,
    verbose: bool,
    kwargs: dict[str, Any],
) -> list[ScoredSession]:
    started = time.perf_counter()
    sessions = score_sessions(_load(retriever, kwargs), scorer)
    if verbose:
        n = sum(len(s.frames) for s in sessions)
        logger.info(
            "scored %d frames in %d sessions in %.2f s",
            n,
            len(sessions),
            time.perf_counter() - started,
        )
    return sessions


class VisionSimilarity:
    """Mean / min / max similarity of the model's descriptions with the ground truth."""

    @classmethod
    def run(
        cls,
        retriever: type[Retriever],
        threshold: float = 0.75,
        scorer: SimilarityScorer | None = None,
        verbose: bool = False,
        **kwargs: Any,
    ) -> list[VisionSimilarityMetric]:
        """Score every session of ``retriever(**kwargs)``; ``threshold`` is validated, not used."""
        validate_threshold(threshold)
        return similarity_metrics(_score(retriever, scorer, verbose, kwargs))


class VisionHallucination:
    """Share of frames whose similarity with the ground truth falls below a threshold."""

    @classmethod
    def run(
        cls,
        retriever: type[Retriever],
        threshold: float = 0.75,
        scorer: SimilarityScorer | None = None,
        verbose: bool = False,
        **kwargs: Any,
    ) -> list[VisionHallucinationMetric]:
        """Score every session of ``retriever(**kwargs)`` and flag frames below ``threshold``."""
        threshold = validate_threshold(threshold)
        return hallucination_metrics(_score(retriever, scorer, verbose, kwargs), threshold)


def run_vision_metrics(
    retriever: type[Retriever],
    threshold: float = 0.75,
    scorer: SimilarityScorer | None = None,
    verbose: bool = False,
    **kwargs: Any,
) -> tuple[list[VisionSimilarityMetric], list[VisionHallucinationMetric]]:
    """Both metrics from a single scoring pass (the reference embeds everything twice)."""
    threshold = validate_threshold(threshold)
    sessions = _score(retriever, scorer, verbose, kwargs)
    return similarity_metrics(sessions), hallucination_metrics(sessions, threshold)
