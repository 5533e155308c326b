"""VisionSimilarity and VisionHallucination, compatible with Alquimia Fair Forge 3.0.0 ([vision]).

Same inputs give the same numbers and strings as the reference (specs/metrics.md §1), including
its edges: a threshold of any numeric type it accepts (int, bool, Decimal, Fraction, NumPy
scalars) is compared with the scores and printed in the summary as given, so ``1`` prints "1" and
``np.float32(0.3)`` compares in float32; the dataset records accept and reject the fields its
pydantic models do; retrievers may stream sessions or single exchanges (``iteration_level``).

Differences, all deliberate: every frame of a run is embedded in batches (unique strings once),
one scoring pass can feed both metrics (``run_vision_metrics``), an empty conversation gives a
VisionSimilarity result (the reference raises ZeroDivisionError), and a threshold outside [0, 1],
NaN, or not a number (a string, None, an array) is rejected before anything is loaded, by both
metrics (the reference accepts any of them in VisionSimilarity, which ignores it, and in
VisionHallucination fails on non-numbers only once a frame is compared).

Empty sessions: ``mean/min/max_similarity`` are ``None`` (there is nothing to average, and 0.0 would
read as "completely dissimilar") and the similarity summary says "no frames"; VisionHallucination
gives what the reference gives: rate 0.0 and "The model hallucinated in 0 of 0 frames (0%). ...".
"""

from __future__ import annotations

import logging
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, SupportsFloat, cast

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

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
    "IterationLevel",
    "ModelNotFoundError",
    "Retriever",
    "ScoredFrame",
    "ScoredSession",
    "SentenceTransformerEmbedder",
    "SessionMetadata",
    "SimilarityScorer",
    "StreamedBatch",
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
# Fair Forge 3.0.0's message when a retriever hands back an iterator without declaring streaming.
GENERATOR_NEEDS_LEVEL = (
    "When using a generator, you must explicitly set 'iteration_level' ('stream_sessions' or "
    "'stream_batches') in the Retriever."
)


# ----------------------------------------------------------------------------- input models


class Batch(BaseModel):
    """One exchange of a session. Only ``assistant`` and ``ground_truth_assistant`` are read.

    The fields and their types are Fair Forge 3.0.0's ``Batch``, so a record it rejects (an int
    ``qa_id``, a negative ``weight``, a list as ``logprobs``) is rejected here with the same
    pydantic error. Fair Forge requires ``query``; here it defaults to "" so that internal callers
    need not invent one, and the ``run`` entry points reject a Batch that was built without it.
    Extra fields are kept (Fair Forge drops them); neither reads them.
    """

    model_config = ConfigDict(extra="allow")

    qa_id: str
    query: str = ""
    assistant: str
    ground_truth_assistant: str
    observation: str | None = None
    logprobs: dict | None = Field(default_factory=dict)
    agentic: dict | None = Field(default_factory=dict)
    ground_truth_agentic: dict | None = Field(default_factory=dict)
    weight: float | None = Field(default=None, ge=0)


class Dataset(BaseModel):
    """One session (in the pipeline: one recording answered by one model).

    Fair Forge 3.0.0's ``Dataset``: ``language`` may be None; ``context`` and ``conversation`` are
    required there, defaulted here for internal callers and checked by the ``run`` entry points.
    """

    model_config = ConfigDict(extra="allow")

    session_id: str
    assistant_id: str
    language: str | None = "english"
    context: str = ""
    conversation: list[Batch] = Field(default_factory=list)


class IterationLevel(StrEnum):
    """How a retriever hands its data over (Fair Forge 3.0.0's ``IterationLevel``)."""

    FULL_DATASET = "full_dataset"
    STREAM_SESSIONS = "stream_sessions"
    STREAM_BATCHES = "stream_batches"


class SessionMetadata(BaseModel):
    """The session a streamed exchange belongs to (Fair Forge 3.0.0's ``SessionMetadata``)."""

    session_id: str
    assistant_id: str
    language: str | None = "english"
    context: str


class StreamedBatch(BaseModel):
    """One exchange with its session, for ``IterationLevel.STREAM_BATCHES`` retrievers."""

    metadata: SessionMetadata
    batch: Batch


class Retriever(ABC):
    """Loads the datasets to score. Keyword arguments of ``run`` arrive in ``self.kwargs``.

    ``load_dataset`` returns a list (or tuple) of Datasets. To stream, override
    ``iteration_level``: ``STREAM_SESSIONS`` lets it yield Datasets, ``STREAM_BATCHES`` lets it
    yield StreamedBatch items; exchanges of the same session are merged either way.
    """

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs

    @property
    def iteration_level(self) -> IterationLevel:
        """``FULL_DATASET`` unless a subclass streams."""
        return IterationLevel.FULL_DATASET

    @abstractmethod
    def load_dataset(self) -> Iterable[Dataset] | Iterable[StreamedBatch]:
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


# What the reference does with the threshold's value: pydantic's lax float for the stored field.
_FLOAT = TypeAdapter(float)
_THRESHOLD_HINT = "pass a number such as threshold=0.75"


def validate_threshold(threshold: SupportsFloat) -> float:
    """Check ``threshold`` and return it as the float the result's ``threshold`` field stores.

    Accepted: what Fair Forge 3.0.0 can compare with a score and store as a float (int, float,
    bool, Decimal, Fraction, NumPy scalars and 0-d arrays), within [0, 1]. Callers keep using
    the value as given: comparing and printing it as given is what makes the flags and the
    summary match the reference's for every type.

    Raises TypeError for what is not such a number (a string, None, a list, a 1-d array, a complex
    number; the reference fails on these with a TypeError or a pydantic error) and ValueError
    for NaN or a value outside [0, 1] (the reference would flag every frame or none).
    """
    if isinstance(threshold, str | bytes | bytearray):
        # pydantic would parse "0.5", but the reference compares the raw string with each score.
        raise TypeError(
            f"threshold must be a number between 0 and 1, got {threshold!r} "
            f"({type(threshold).__name__}); {_THRESHOLD_HINT}"
        )
    try:
        # score < threshold, in that order, exactly as the reference compares (a float score on
        # the left decides which operand's comparison runs first).
        probe: object = 0.5 < threshold  # type: ignore[operator]  # noqa: SIM300
    except ArithmeticError:
        probe = False  # Decimal("NaN") refuses to be ordered; the NaN check below rejects it
    except TypeError:
        probe = None
    value: float | None = None
    if isinstance(probe, bool | np.bool_):
        try:
            value = _FLOAT.validate_python(threshold)
        except ValidationError:
            value = None
    if value is None:
        raise TypeError(
            f"threshold must be a number between 0 and 1, got {threshold!r} "
            f"({type(threshold).__name__}): it cannot be compared with a similarity score; "
            f"{_THRESHOLD_HINT}"
        )
    # NaN first: a Decimal NaN raises InvalidOperation in the range comparison below.
    if math.isnan(value) or not 0 <= threshold <= 1:  # type: ignore[operator]
        raise ValueError(
            f"threshold must be between 0 and 1 inclusive (a cosine-similarity cut-off), got "
            f"{threshold!r}; {_THRESHOLD_HINT}"
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
        mean: float | None
        low: float | None
        high: float | None
        if n:
            mean = round(sum(scores) / n, 4)
            low = round(min(scores), 4)
            high = round(max(scores), 4)
            summary = (
                f"The model's descriptions have an average similarity of {mean:.0%} with the "
                f"ground truth (min: {low:.0%}, max: {high:.0%}) across {n} frames."
            )
        else:
            mean = low = high = None  # an empty denominator: no similarity, never 0
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
    sessions: Sequence[ScoredSession], threshold: SupportsFloat
) -> list[VisionHallucinationMetric]:
    """VisionHallucination results: a frame hallucinates when its stored score < threshold.

    ``threshold`` is compared and printed as given, as the reference does: ``1`` prints "1" (not
    "1.0"), ``np.float32(0.3)`` compares in float32 (NumPy's promotion rules) and prints its
    float64 expansion, ``Decimal("0.3")`` compares exactly.
    """
    stored_threshold = validate_threshold(threshold)
    results = []
    for s in sessions:
        # Compared as given (see above); typed float only for the checker, nothing converts it.
        flags = [bool(f.similarity_score < cast(float, threshold)) for f in s.frames]
        n = len(flags)
        n_h = sum(flags)
        rate = round(n_h / n, 4) if n else 0.0
        # The reference's sentence also for n == 0 ("0 of 0 frames (0%)"): it does not fail there.
        summary = (
            f"The model hallucinated in {n_h} of {n} frames ({rate:.0%}). A frame is "
            f"considered a hallucination when similarity with the ground truth falls below "
            f"{threshold}."
        )
        results.append(
            VisionHallucinationMetric(
                session_id=s.session_id,
                assistant_id=s.assistant_id,
                hallucination_rate=rate,
                n_hallucinations=n_h,
                n_frames=n,
                threshold=stored_threshold,
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


def _require_fair_forge_fields(datasets: Sequence[Dataset]) -> None:
    """Reject records built without a field Fair Forge 3.0.0 requires (defaulted here).

    Fair Forge's pydantic models fail at construction; ours default ``context``, ``conversation``
    and ``query`` for the pipeline's internal callers, so the ``run`` entry points check that they
    were given, naming the field.
    """
    for position, ds in enumerate(datasets):
        for name in ("context", "conversation"):
            if name not in ds.model_fields_set:
                empty = "''" if name == "context" else "[]"
                raise ValueError(
                    f"dataset #{position} (session_id {ds.session_id!r}) has no {name!r}: Fair "
                    f"Forge requires it; pass {name}={empty} when there is none"
                )
        for index, batch in enumerate(ds.conversation):
            if "query" not in batch.model_fields_set:
                raise ValueError(
                    f"dataset #{position} (session_id {ds.session_id!r}), conversation[{index}] "
                    f"(qa_id {batch.qa_id!r}) has no 'query': Fair Forge requires it; pass the "
                    f"prompt, or query='' when there is none"
                )


def _from_streamed(position: int, item: object) -> Dataset:
    """A one-exchange Dataset from a StreamedBatch (merged with its session later)."""
    if not isinstance(item, StreamedBatch):
        raise TypeError(
            f"item #{position} is a {type(item).__name__}, not an "
            f"eval_assets.metrics.vision.StreamedBatch; a STREAM_BATCHES retriever must yield "
            f"StreamedBatch items"
        )
    meta = item.metadata
    return Dataset(
        session_id=meta.session_id,
        assistant_id=meta.assistant_id,
        language=meta.language,
        context=meta.context,
        conversation=[item.batch],
    )


def _load(retriever: type[Retriever], kwargs: dict[str, Any]) -> list[Dataset]:
    """Instantiate the retriever with ``kwargs`` and load its data as Datasets, checking them.

    Mirrors Fair Forge 3.0.0: any iterable works, but an iterator (a generator) only when the
    retriever declares a streaming ``iteration_level`` (same ValueError otherwise).
    """
    if not (isinstance(retriever, type) and issubclass(retriever, Retriever)):
        raise TypeError(
            f"retriever must be a Retriever subclass (the class, not an instance), got "
            f"{retriever!r}"
        )
    instance = retriever(**kwargs)
    data = instance.load_dataset()
    level = IterationLevel(instance.iteration_level)
    if isinstance(data, Iterator) and level is IterationLevel.FULL_DATASET:
        raise ValueError(GENERATOR_NEEDS_LEVEL)
    if isinstance(data, str | bytes | dict) or not isinstance(data, Iterable):
        raise TypeError(
            f"{retriever.__name__}.load_dataset() returned {type(data).__name__}; it must "
            f"return list[Dataset]"
        )
    if level is IterationLevel.STREAM_BATCHES:
        datasets = [_from_streamed(i, item) for i, item in enumerate(data)]
    else:
        # Checked element by element just below: a retriever may return anything.
        datasets = list(cast(Iterable[Dataset], data))
        for position, ds in enumerate(datasets):
            if not isinstance(ds, Dataset):
                raise TypeError(
                    f"dataset #{position} is a {type(ds).__name__}, not an "
                    f"eval_assets.metrics.vision.Dataset; load_dataset() must return "
                    f"list[Dataset]"
                )
    _require_fair_forge_fields(datasets)
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
        threshold: SupportsFloat = 0.75,
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
        threshold: SupportsFloat = 0.75,
        scorer: SimilarityScorer | None = None,
        verbose: bool = False,
        **kwargs: Any,
    ) -> list[VisionHallucinationMetric]:
        """Score every session of ``retriever(**kwargs)`` and flag frames below ``threshold``."""
        validate_threshold(threshold)
        return hallucination_metrics(_score(retriever, scorer, verbose, kwargs), threshold)


def run_vision_metrics(
    retriever: type[Retriever],
    threshold: SupportsFloat = 0.75,
    scorer: SimilarityScorer | None = None,
    verbose: bool = False,
    **kwargs: Any,
) -> tuple[list[VisionSimilarityMetric], list[VisionHallucinationMetric]]:
    """Both metrics from a single scoring pass (the reference embeds everything twice)."""
    validate_threshold(threshold)
    sessions = _score(retriever, scorer, verbose, kwargs)
    return similarity_metrics(sessions), hallucination_metrics(sessions, threshold)
