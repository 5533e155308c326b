"""Simulator cost, and the chain's per-frame cost on a simulated vs a synthesized recording.

    python benchmarks/simulate.py [--frames 120] [--chain-frames 24] [--seed 1] [--keep DIR]
    python benchmarks/simulate.py --smoke   # tiny sizes: does it still run?

1. ``eval-assets recording simulate`` of ``--frames`` frames at 640×480 with a 16 × 1024 LiDAR
   in a fresh process: wall and CPU seconds (the machine is shared: the load average before and
   after is printed, and CPU seconds are the steadier figure), the split (setup and settling,
   rendering, ray casting, writing) and the process's peak RSS. Target: ≤ 60 s on 2 cores.
2. The chain ``vqa generate`` (rectify, point clouds, detection and masks, tracks, questions,
   dataset) on a simulated and on a synthesized recording of the same size (``--chain-frames``
   frames at 640×480, every frame selected), each with the default colour evidence and with the
   truth evidence; seconds per frame side by side, run one after the other in one process so the
   load is shared alike.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def simulate_child(frames: int, seed: int, out: Path, rings: int, columns: int) -> None:
    """Simulate one recording in this process and print its figures as one JSON line."""
    from eval_assets.sim.simulate import SimConfig, simulate_recording

    started, cpu = time.perf_counter(), _cpu_s()
    result = simulate_recording(out, SimConfig(seed=seed, frames=frames, lidar_rings=rings,
                                               lidar_columns=columns))
    print(json.dumps({"frames": result.frames, "wall_s": time.perf_counter() - started,
                      "cpu_s": _cpu_s() - cpu, "timings": result.timings,
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "db_mb": result.db.stat().st_size / 1e6}))


def _chain(db: Path, out: Path, frames: int, evidence: str, vocabulary: list[str] | None,
           ) -> tuple[float, int]:
    """Seconds of one ``generate_from_recording`` and the cases it made."""
    from eval_assets.perception import PerceptionConfig
    from eval_assets.vqa.authors import AuthorConfig
    from eval_assets.vqa.generate import generate_from_recording

    models = (PerceptionConfig(detector="truth", segmenter="truth") if evidence == "truth"
              else PerceptionConfig())
    config = AuthorConfig(vocabulary=vocabulary) if vocabulary else AuthorConfig()
    started = time.perf_counter()
    summary = generate_from_recording(db, out, list(range(frames)), config,
                                      models.build_detector(db), models.build_segmenter(db))
    return time.perf_counter() - started, summary.num_cases


def chain_table(work: Path, frames: int, seed: int) -> None:
    """Print the chain's seconds per frame on both recordings, with both evidences."""
    from eval_assets.sim.catalog import CATALOG
    from eval_assets.sim.simulate import SimConfig, simulate_recording
    from eval_assets.synth.stream import synthesize_recording

    sim = simulate_recording(work / "chain-sim.db", SimConfig(seed=seed, frames=frames)).db
    synth = synthesize_recording(work / "chain-synth.db", profile="sample", scene_seed=seed,
                                 frames=frames).db
    print(f"\nchain (vqa generate, {frames} frames at 640x480, every frame), seconds per frame:")
    print(f"{'evidence':>9} {'simulated':>10} {'synthesized':>12} {'cases sim/synth':>16}")
    for evidence in ("color", "truth"):
        row = []
        for db, vocabulary in ((sim, list(CATALOG) if evidence == "truth" else None),
                               (synth, None)):
            out = work / f"dataset-{db.stem}-{evidence}"
            shutil.rmtree(out, ignore_errors=True)
            seconds, cases = _chain(db, out, frames, evidence, vocabulary)
            row.append((seconds / frames, cases))
        print(f"{evidence:>9} {row[0][0]:>9.3f}s {row[1][0]:>11.3f}s "
              f"{row[0][1]:>8}/{row[1][1]}")


def main() -> int:
    """Run the simulation in a child process, then the chain comparison here."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=120, help="frames to simulate")
    parser.add_argument("--chain-frames", type=int, default=24, help="frames for the chain")
    parser.add_argument("--seed", type=int, default=1, help="scene seed")
    parser.add_argument("--keep", type=Path, default=None, help="keep the files in this folder")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks it still runs")
    parser.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    rings, columns = (16, 1024) if not args.smoke else (4, 64)
    if args.smoke:
        args.frames, args.chain_frames = 3, 3
    if args.child is not None:
        simulate_child(args.frames, args.seed, args.child, rings, columns)
        return 0
    work = args.keep or Path(tempfile.mkdtemp(prefix="simulate-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        load_before = os.getloadavg()
        proc = subprocess.run([sys.executable, __file__, "--child", str(work / "sim.db"),
                               "--frames", str(args.frames), "--seed", str(args.seed)]
                              + (["--smoke"] if args.smoke else []),
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return proc.returncode
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        load_after = os.getloadavg()
        split = ", ".join(f"{k} {v:.1f} s" for k, v in r["timings"].items())
        print(f"simulate {r['frames']} frames, 640x480, LiDAR {rings} x {columns}: "
              f"{r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} s CPU ({split}); peak RSS "
              f"{r['peak_rss_mb']:.0f} MB; {r['db_mb']:.1f} MB recording")
        print(f"machine: {os.cpu_count()} CPUs, load average (1 min) {load_before[0]:.2f} before, "
              f"{load_after[0]:.2f} after")
        chain_table(work, args.chain_frames, args.seed)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
