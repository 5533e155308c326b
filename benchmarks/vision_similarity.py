"""Throughput of VisionSimilarity: our batched scoring pass vs Fair Forge's one-pair-per-call loop.

    python benchmarks/vision_similarity.py --n 1000 --model all-mpnet-base-v2
    python benchmarks/vision_similarity.py --smoke   # 20 pairs on MiniLM: does it still run?

Generates N deterministic (description, ground truth) pairs of short distinct sentences, scores
them through ``VisionSimilarity.run`` and through the reference loop (``model.encode([a])``,
``model.encode([b])`` per pair), prints frames/s for each and the speed-up, and exits non-zero if
any stored (rounded) score differs. The model is loaded and warmed up before either timing.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time

import numpy as np

from eval_assets.metrics.embedders import (
    MINILM_MODEL,
    CosineSimilarity,
    SentenceTransformerEmbedder,
    l2_normalise,
)
from eval_assets.metrics.vision import Batch, Dataset, Retriever, VisionSimilarity

SMOKE_N = 20
SUBJECTS = ["A person", "A robot", "A worker", "A child", "A dog", "A visitor", "A courier"]
ACTIONS = ["is standing", "is lying", "is walking", "is waiting", "is kneeling", "is sitting"]
PLACES = [
    "near the entrance",
    "by the red box",
    "beside the blue ball",
    "in the corridor",
    "next to the shelf",
    "at the loading dock",
    "under the stairs",
    "by the window",
]
DETAILS = [
    "with a bag",
    "holding a phone",
    "in a yellow vest",
    "without a helmet",
    "carrying a crate",
    "looking at the camera",
    "facing the wall",
    "in the shadow",
]
EVENTS = [
    "Nothing unusual is happening",
    "Someone needs assistance",
    "The area is blocked",
    "A door was left open",
    "An object fell over",
    "The floor is wet",
    "Lights are off",
]
CAUSES = [
    "after the delivery",
    "during the night shift",
    "since the morning",
    "because of the storm",
    "near closing time",
    "while the alarm sounds",
]


def make_pairs(n: int) -> list[tuple[str, str]]:
    """N distinct deterministic pairs (no randomness: the product is walked in a fixed order)."""
    descriptions = (
        f"{s} {a} {p} {d}." for s, a, p, d in itertools.product(SUBJECTS, ACTIONS, PLACES, DETAILS)
    )
    truths = (
        f"{e} {c}; {s.lower()} is seen {p}."
        for e, c, s, p in itertools.product(EVENTS, CAUSES, SUBJECTS, PLACES)
    )
    pairs = list(itertools.islice(zip(descriptions, truths, strict=False), n))
    if len(pairs) < n:
        raise SystemExit(f"--n {n} is more than the {len(pairs)} distinct pairs available")
    return pairs


class PairsRetriever(Retriever):
    """One session holding every generated pair."""

    def load_dataset(self) -> list[Dataset]:
        pairs: list[tuple[str, str]] = self.kwargs["pairs"]
        return [
            # Fair Forge requires context and query: these pairs have neither.
            Dataset(
                session_id="benchmark",
                assistant_id="generated",
                context="",
                conversation=[
                    Batch(qa_id=f"f{i:05d}", query="", assistant=a, ground_truth_assistant=b)
                    for i, (a, b) in enumerate(pairs)
                ],
            )
        ]


def reference_scores(model: object, pairs: list[tuple[str, str]]) -> list[float]:
    """Fair Forge's way: one encode call per text, one pair at a time."""
    out = []
    for a, b in pairs:
        ea = l2_normalise(np.asarray(model.encode([a]), dtype=np.float32))  # type: ignore[attr-defined]
        eb = l2_normalise(np.asarray(model.encode([b]), dtype=np.float32))  # type: ignore[attr-defined]
        out.append(round(float(np.dot(ea[0], eb[0])), 4))
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns the process exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="number of frames (pairs)")
    parser.add_argument("--model", default="all-mpnet-base-v2", help="embedding model name/path")
    parser.add_argument("--device", default="cpu", help="torch device (default: cpu)")
    parser.add_argument("--batch-size", type=int, default=128, help="our encode batch size")
    parser.add_argument("--repeat", type=int, default=1, help="timed rounds; the fastest counts")
    parser.add_argument("--smoke", action="store_true",
                        help=f"{SMOKE_N} pairs on {MINILM_MODEL}: checks the script still runs")
    args = parser.parse_args(argv)
    if args.smoke:
        args.n, args.model = SMOKE_N, MINILM_MODEL

    pairs = make_pairs(args.n)
    embedder = SentenceTransformerEmbedder(
        args.model, device=args.device, batch_size=args.batch_size
    )
    model = embedder.load()
    model.encode(["warm-up sentence"] * 4, show_progress_bar=False)
    model.encode(["warm-up"], show_progress_bar=False)

    scorer = CosineSimilarity(embedder)
    ours_s = theirs_s = math.inf
    # Cores are shared: alternate the two paths and keep each one's fastest time.
    for _ in range(args.repeat):
        started = time.perf_counter()
        [result] = VisionSimilarity.run(PairsRetriever, scorer=scorer, pairs=pairs)
        ours_s = min(ours_s, time.perf_counter() - started)
        ours = [it.similarity_score for it in result.interactions]

        started = time.perf_counter()
        theirs = reference_scores(model, pairs)
        theirs_s = min(theirs_s, time.perf_counter() - started)

    ours_fps = args.n / ours_s
    theirs_fps = args.n / theirs_s
    print(
        f"model={args.model} device={args.device} n={args.n} batch_size={args.batch_size} "
        f"repeat={args.repeat}"
    )
    print(f"batched (eval_assets):   {ours_s:8.2f} s  {ours_fps:8.1f} frames/s")
    print(f"per pair (Fair Forge):   {theirs_s:8.2f} s  {theirs_fps:8.1f} frames/s")
    print(f"speed-up: {ours_fps / theirs_fps:.2f}x")
    print(
        f"pairs re-encoded one text per call (batched score within "
        f"{scorer.recheck_tolerance:g} of a rounding boundary): {scorer.last_rechecked}"
    )
    mismatches = [(i, a, b) for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b]
    if mismatches:
        print(f"FAIL: {len(mismatches)} of {args.n} stored scores differ:", file=sys.stderr)
        for i, a, b in mismatches[:20]:
            print(f"  pair {i}: batched {a} vs per-pair {b}  {pairs[i]!r}", file=sys.stderr)
        return 1
    print(f"stored scores identical for all {args.n} frames (mean {result.mean_similarity})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
