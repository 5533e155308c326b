"""The spatial families' gold answers on simulated recordings, with exact (truth) evidence.

    python benchmarks/simulated_truth.py [--seeds 901,902,903] [--frames 120]
                                         [--lidar-rings 16] [--lidar-fov-deg=-15,15]
    python benchmarks/simulated_truth.py --smoke   # one short recording: does it still run?

For each seed (seeds no test uses) ``eval-assets recording simulate`` writes a recording, its
dataset is generated with the ``truth`` detector and segmenter (boxes and masks straight from
the segmentation buffer: what is left is the chain's own error: LiDAR, poses, track fusion,
the families' arithmetic), and ``audit/spatial_labels.jsonl`` is compared with
``R.scene.json`` (:mod:`eval_assets.vqa.spatial.truth`). Prints per seed and family: cases,
checkable cases and the mean MRA (numeric) or agreement (multi-frame); then per family over
all seeds against the simulator's targets (numeric MRA ≥ 0.95, multi-frame agreement 100 %).
Exits 0 either way: the figures are the result.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from eval_assets.perception import PerceptionConfig
from eval_assets.schemas.spatial import AUDIT_SPATIAL_LABELS, SpatialLabel
from eval_assets.sim.catalog import CATALOG
from eval_assets.sim.simulate import SimConfig, simulate_recording
from eval_assets.vqa.authors import AuthorConfig
from eval_assets.vqa.generate import generate_from_recording
from eval_assets.vqa.spatial.truth import MULTI_FRAME, NUMERIC, TruthCheck, check_labels

TARGETS = {**dict.fromkeys(NUMERIC, 0.95), **dict.fromkeys(MULTI_FRAME, 1.0)}


def one_seed(work: Path, seed: int, frames: int, rings: int,
             fov: tuple[float, float]) -> list[TruthCheck]:
    """Simulate, generate with the truth evidence, check against the scene."""
    db = simulate_recording(work / f"sim-{seed}.db", SimConfig(
        seed=seed, frames=frames, lidar_rings=rings, lidar_fov_deg=fov)).db
    out = work / f"dataset-{seed}"
    models = PerceptionConfig(detector="truth", segmenter="truth")
    generate_from_recording(db, out, list(range(frames)), AuthorConfig(vocabulary=list(CATALOG)),
                            models.build_detector(db), models.build_segmenter(db))
    labels = [SpatialLabel.model_validate_json(line) for line in
              (out / "audit" / AUDIT_SPATIAL_LABELS).read_text().splitlines() if line.strip()]
    return check_labels(labels, json.loads(db.with_suffix(".scene.json").read_text()))


def _row(checks: list[TruthCheck], family: str) -> tuple[int, int, float | None]:
    mine = [c for c in checks if c.family == family]
    scored = [c.score for c in mine if c.score is not None]
    return len(mine), len(scored), (sum(scored) / len(scored) if scored else None)


def main() -> int:
    """Run every seed and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="901,902,903")
    parser.add_argument("--frames", type=int, default=120)
    parser.add_argument("--lidar-rings", type=int, default=16)
    parser.add_argument("--lidar-fov-deg", default="-15,15")
    parser.add_argument("--smoke", action="store_true", help="one short recording")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.smoke:
        seeds, args.frames, args.lidar_rings = seeds[:1], 6, 4
    low, high = (float(v) for v in args.lidar_fov_deg.split(","))
    everything: list[TruthCheck] = []
    with tempfile.TemporaryDirectory(prefix="simulated-truth-") as tmp:
        for seed in seeds:
            checks = one_seed(Path(tmp), seed, args.frames, args.lidar_rings, (low, high))
            everything += checks
            print(f"seed {seed} ({args.frames} frames, LiDAR {args.lidar_rings} rings "
                  f"{low:g}..{high:g} deg):")
            for family in (*NUMERIC, *MULTI_FRAME):
                n, checked, score = _row(checks, family)
                shown = "-" if score is None else f"{score:.3f}"
                print(f"  {family:<28} cases {n:>3}  checked {checked:>3}  score {shown}")
    print("all seeds:")
    for family in (*NUMERIC, *MULTI_FRAME):
        n, checked, score = _row(everything, family)
        verdict = "-" if score is None else ("meets" if score >= TARGETS[family] else "misses")
        shown = "-" if score is None else f"{score:.3f}"
        print(f"  {family:<28} checked {checked:>3}  score {shown}  target "
              f"{TARGETS[family]:.2f}: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
